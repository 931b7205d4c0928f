"""The history as a table: the calls' rows as HTML and text, in the order they started when output is stable.

Concurrent calls are recorded in the order they end; the stable views sort by call id, which
calls get as they start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

from mcp_nb.mistakes import visible
from mcp_nb.views.theme import (
    CELL,
    FILLS,
    HISTORY_MS_CELL,
    HISTORY_MS_HEADER,
    MUTED,
    UI,
    badge,
    escape,
    is_stable,
)

# -- History ------------------------------------------------------------------------------------

_SHOWN = ["call_id", "target", "name", "outcome", "cause", "content", "code", "message"]


def _outside(frame: pd.DataFrame) -> bool:
    """Whether outside clients made any of these calls (only then is who made each one shown)."""
    return bool((frame["via"].astype(str) != "kernel").any())


def _via(row) -> str:
    return (
        "" if str(row.via) == "kernel" else _cell(f"{row.via}" + (f" {row.client}" if isinstance(row.client, str) else ""), NAME)
    )


def _counts(frame: pd.DataFrame) -> str:
    counts = frame["outcome"].value_counts()
    return ", ".join(f"{name} {int(counts.get(name, 0))}" for name in FILLS)


# Characters of a name (a tool's, a URI, a client's) and of a cell's tooltip a table shows: a
# server or a client may send megabytes where a name goes, and every row would carry them.
NAME, TOOLTIP = 120, 1000


def _cell(value: Any, limit: int) -> str:
    """A value in one cell: on one line, safe to show (`mistakes.visible`), at most `limit` characters."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    text = visible(" ".join(str(value)[: 4 * limit].split()))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _code(value: Any) -> str:
    # The code column is a nullable integer: a call without a JSON-RPC error has <NA> there.
    try:
        return str(int(value))
    except (TypeError, ValueError):  # <NA>, NaN or None
        return ""


def _in_order(frame: pd.DataFrame) -> pd.DataFrame:
    # Calls are recorded as they end, which for concurrent calls is a matter of timing; ids
    # are given out as calls start, and a retried call's attempts share its id: shown by id,
    # a list of calls reads in the order they were made.
    return frame.sort_values(["call_id", "attempt"], kind="stable")


def _other_servers(frame: pd.DataFrame) -> bool:
    """Whether any of these calls went to an outside server (only then is each call's server shown)."""
    return bool((frame["server"].astype(str) != "kernel").any())


def history_text(frame: pd.DataFrame, rows: int, stable: bool | None = None) -> str:
    if frame.empty:
        return "History: no calls yet"
    head = f"History: {len(frame)} calls ({_counts(frame)})"
    ordered = _in_order(frame).tail(rows)
    tail = ordered[(["server"] if _other_servers(frame) else []) + _SHOWN].copy()
    tail["name"] = [_cell(v, NAME) for v in tail["name"].astype(object)]
    tail["content"] = [_cell(v, 40) for v in tail["content"].astype(object)]
    tail["message"] = [_cell(v, 40) for v in tail["message"].astype(object)]
    tail["code"] = [_code(v) for v in tail["code"]]
    if _outside(frame):
        tail["via"] = [_via(r) for r in ordered.itertuples(index=False)]
    note = f"\n(last {rows} of {len(frame)}; the whole history: mcp_nb.history().to_frame())" if len(frame) > rows else ""
    return head + "\n" + tail.to_string(index=False) + note


def history_html(frame: pd.DataFrame, rows: int, stable: bool | None = None) -> str:
    stable = is_stable(stable)
    if frame.empty:
        return f'<div style="{MUTED}">History: no calls yet</div>'
    tail = _in_order(frame).tail(rows)
    outside, servers = _outside(frame), _other_servers(frame)
    body = []
    for r in tail.itertuples(index=False):
        shown = r.content if r.content is not None else (r.message or "")
        shown = "" if shown is None else str(shown)
        cells = [
            str(r.call_id),
            *([escape(_cell(r.server, NAME))] if servers else []),
            escape(r.target),
            f"<code>{escape(_cell(r.name, NAME))}</code>",
            badge(str(r.outcome)),
            escape(r.cause),
            *([escape(_via(r))] if outside else []),
            _code(r.code),
        ]
        left = "".join(f'<td style="text-align:left;{CELL}">{cell}</td>' for cell in cells)
        # the duration, then the content cell as far as its title attribute
        body.append(
            f'<tr>{left}{HISTORY_MS_CELL(stable, ms=r.duration_ms)}{escape(shown[:TOOLTIP])}">{escape(shown[:200])}</td></tr>'
        )
    more = (
        f'<div style="{MUTED};font-size:0.85em">last {rows} of {len(frame)} calls; '
        f"the whole history: <code>mcp_nb.history().to_frame()</code></div>"
        if len(frame) > rows
        else ""
    )
    names = ["call", *(["server"] if servers else []), "target", "name", "outcome", "cause", *(["via"] if outside else [])]
    head = (
        "".join(f'<th style="text-align:left;{CELL}">{h}</th>' for h in names)
        + HISTORY_MS_HEADER(stable)  # the code and ms headers
        + f'<th style="text-align:left;{CELL}">content / message</th>'
    )
    # A page narrower than the table (the docs site's column) scrolls it instead of cutting it off.
    return (
        f'<div class="mcp-nb-history" style="{UI}">'
        f"<div><b>History</b>: {len(frame)} calls ({escape(_counts(frame))})</div>"
        f'<div style="overflow-x:auto;max-width:100%"><table style="border-collapse:collapse;font-size:0.9em">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>{more}</div>"
    )
