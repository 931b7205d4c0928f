"""How changes to a server's surface look: a diff's report, and the changes on a registration card.

Drawn with the shared looks of `views/theme.py`; read like a code review: what breaks a client
first (in the error ink), then what no rule knows (in the tool_error ink: look at it), then
what is compatible (muted). A change is handed in as anything with the fields of
`surface_diff.Change` (a `Change`, a row of the diff's frame): this module imports neither.
Nothing printed varies from run to run.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from mcp_nb.mistakes import visible
from mcp_nb.views.theme import BORDER, CELL, ERROR, INKS, MONO, MUTED, UI, border, compact_json, escape, outlined

if TYPE_CHECKING:
    import pandas as pd

BREAKING_INK, UNKNOWN_INK, COMPATIBLE_INK = ERROR, INKS["tool_error"], INKS["result"]
_CELL = f"{CELL};text-align:left;vertical-align:top"


def verdict(breaking: Any) -> str:
    """The word a change is shown with: breaking, unknown or compatible."""
    if breaking is True:
        return "breaking"
    return "compatible" if breaking is False else "unknown"


def _rank(change: Any) -> int:
    return {"breaking": 0, "unknown": 1, "compatible": 2}[verdict(change.breaking)]


def worst_first(changes: Iterable[Any]) -> list[Any]:
    return sorted(changes, key=_rank)


def _entry(change: Any) -> str:
    return "the server" if change.kind == "server" else f"{change.kind} {visible(change.name, inline=True)}"


def headline(changes: list[Any]) -> str:
    """`3 changes: 1 breaking, 1 unknown, 1 compatible`, or `no changes`."""
    if not changes:
        return "no changes"
    said = [verdict(c.breaking) for c in changes]
    parts = [f"{said.count(v)} {v}" for v in ("breaking", "unknown", "compatible") if said.count(v)]
    return f"{len(changes)} change{'s' if len(changes) != 1 else ''}: " + ", ".join(parts)


# -- a registration card's part ------------------------------------------------------------------------


def changes_text(changes: Iterable[Any], indent: str = "  ") -> list[str]:
    """One line per change, the worst first: `breaking: `title` became required`."""
    return [f"{indent}{verdict(c.breaking)}: {visible(c.why, inline=True)}" for c in worst_first(changes)]


def changes_html(changes: Iterable[Any], title: str = "what changed for clients") -> str:
    """The changes as a short list under a heading, for a card: the verdict, then why."""
    changes = worst_first(changes)
    if not changes:
        return ""
    items = "".join(
        f'<div style="margin:1px 0">{_chip(c.breaking)} {escape(c.why)} '
        f'<span style="{MUTED};{MONO};font-size:0.85em">{escape(c.where)}</span></div>'
        for c in changes
    )
    return f'<div class="mcp-nb-changes" style="margin-top:4px"><div style="{MUTED};font-size:0.85em">{escape(title)}: {escape(headline(changes))}</div>{items}</div>'


def _chip(breaking: Any) -> str:
    word = verdict(breaking)
    ink = {"breaking": BREAKING_INK, "unknown": UNKNOWN_INK, "compatible": COMPATIBLE_INK}[word]
    return outlined(word, ink, size="0.8em")


# -- a diff's report -----------------------------------------------------------------------------------


class DiffReport:
    """A surface diff's frame (`.frame`), shown as a report; what `%mcp_diff` returns."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self.frame = frame

    @property
    def breaking(self) -> bool:
        """Whether any change breaks a client."""
        return bool((self.frame["breaking"].map(verdict) == "breaking").any())

    def _repr_html_(self) -> str:
        return diff_html(self.frame)

    def __repr__(self) -> str:
        return diff_text(self.frame)

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(repr(self))


def _title(frame: pd.DataFrame) -> str:
    old, new = frame.attrs.get("old"), frame.attrs.get("new")
    return f"{old} → {new}" if old and new else "surface diff"


def _values(change: Any) -> str:
    if change.change == "added":
        return f"+ {compact_json(change.after, 100)}"
    if change.change == "removed":
        return f"- {compact_json(change.before, 100)}"
    return f"{compact_json(change.before, 60)} → {compact_json(change.after, 60)}"


def diff_text(frame: pd.DataFrame) -> str:
    rows = worst_first(frame.itertuples(index=False))
    lines = [f"Surface diff ({_title(frame)}): {headline(rows)}"]
    for c in rows:
        lines.append(f"  {verdict(c.breaking):<10}  {_entry(c)}  {visible(c.where, inline=True)}")
        lines.append(f"              {visible(c.why, inline=True)}")
        lines.append(f"              {_values(c)}")
    return "\n".join(lines)


def diff_html(frame: pd.DataFrame) -> str:
    e = escape
    rows = worst_first(frame.itertuples(index=False))
    worst = verdict(rows[0].breaking) if rows else "compatible"
    ink = {"breaking": BREAKING_INK, "unknown": UNKNOWN_INK, "compatible": COMPATIBLE_INK}[worst]
    body = []
    for c in rows:
        line = border("-top")
        body.append(
            f'<tr><td style="{_CELL};white-space:nowrap;{line}">{_chip(c.breaking)}</td>'
            f'<td style="{_CELL};white-space:nowrap;{line}">{e(c.kind)} <code>{e(c.name)}</code></td>'
            f'<td style="{_CELL};{line}">{e(c.why)}<div style="{MUTED};{MONO};font-size:0.85em;overflow-wrap:anywhere">'
            f"{e(c.where)} &nbsp; {e(_values(c))}</div></td></tr>"
        )
    head = "".join(f'<th style="{_CELL}">{h}</th>' for h in ("", "entry", "what changed"))
    table = (
        f'<div style="overflow-x:auto;max-width:100%"><table style="border-collapse:collapse;font-size:0.9em;width:100%">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
        if rows
        else ""
    )
    return (
        f'<div class="mcp-nb-surface-diff" style="{UI};{BORDER};{ink.line("-left", "4px")};border-radius:6px;padding:6px 10px;max-width:1100px">'
        f'<div><b>Surface diff</b> <span style="{MUTED}">{e(_title(frame))}</span>: '
        f'<span style="{ink.text};font-weight:600">{e(headline(rows))}</span></div>{table}</div>'
    )


# -- two calls compared (the panel's pinned calls) ---------------------------------------------------


def _one(value: Any) -> str:
    return "(nothing)" if getattr(value, "absent", False) else compact_json(value, 80)


def comparison_html(first: Any, second: Any, differences: list[Any]) -> str:
    """Two calls of one tool side by side: where they differ (`records.compare.Difference`s), each
    place with its value in the first call and in the second."""

    def e(value: Any) -> str:
        return escape(value)

    head = f"{e(first.target)} <code>{e(first.name)}</code>: call #{e(first.call_id)} against call #{e(second.call_id)}"
    if not differences:
        return f'<div class="mcp-nb-call-diff" style="{UI}"><b>{head}</b>: <span style="{MUTED}">the same arguments and the same answer</span></div>'
    body = "".join(
        f'<tr><td style="{_CELL};{border("-top")}"><code>{e(d.what)}</code></td>'
        f'<td style="{_CELL};{border("-top")};{MONO};font-size:0.85em">{e(_one(d.before))}</td>'
        f'<td style="{_CELL};{border("-top")};{MONO};font-size:0.85em">{e(_one(d.after))}</td></tr>'
        for d in differences
    )
    heads = "".join(f'<th style="{_CELL}">{h}</th>' for h in ("where", f"#{e(first.call_id)}", f"#{e(second.call_id)}"))
    return (
        f'<div class="mcp-nb-call-diff" style="{UI};{BORDER};border-radius:6px;padding:6px 10px;margin-top:6px">'
        f"<div><b>{head}</b>: {len(differences)} difference{'s' if len(differences) != 1 else ''}</div>"
        f'<table style="border-collapse:collapse;font-size:0.9em"><thead><tr>{heads}</tr></thead><tbody>{body}</tbody></table></div>'
    )
