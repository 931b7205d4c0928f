"""How a replay looks: the cases that failed first, each with expected, got and why.

Drawn with the shared looks of `views/theme.py`. No duration is printed: a replay's view is
read as a test report, and the frame keeps `duration_ms` for whoever wants it.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


from mcp_nb.views.theme import (
    BORDER,
    CELL,
    ERROR,
    INKS,
    MUTED,
    PRE,
    UI,
    border,
    outlined,
)

PASSED = INKS["result"]
FAILED = ERROR
# JupyterLab right-aligns a table's cells, and a pre inherits it: a diff lost its indentation.
# Every cell says how it aligns; the short ones stay on one line.
_CELL = f"{CELL};text-align:left;vertical-align:top"
_SHORT = f"{_CELL};white-space:nowrap"
# The why column takes the room the others leave (the table is as wide as the report), and
# never less than a diff's line needs to read.
_WHY = f"{_CELL};min-width:24em"
_DIFF = PRE.replace('style="', 'style="text-align:left;', 1)  # a diff: monospace, its lines as written
_SAID = '<div style="margin:0;white-space:pre-wrap;overflow-wrap:break-word;text-align:left">{text}</div>'


class ReplayReport:
    """A replay's frame (`.frame`), shown as a coloured report; what `%mcp_replay` returns."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self.frame = frame

    @property
    def passed(self) -> bool:
        """Whether every case passed (and the replay was not stopped); across protocol eras, also
        whether every case was answered alike at every era."""
        return _ok(self.frame)

    def _repr_html_(self) -> str:
        return replay_html(self.frame)

    def __repr__(self) -> str:
        return replay_text(self.frame)

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(repr(self))


def _ok(frame: pd.DataFrame) -> bool:
    return bool(frame["passed"].all()) and not frame.attrs.get("interrupted") and not frame.attrs.get("differing")


def _eras(frame: pd.DataFrame) -> bool:
    """Whether the frame is a replay across protocol eras (a row per case and era)."""
    return "mode" in frame.columns


def _headline(frame: pd.DataFrame) -> str:
    attrs = frame.attrs
    cases = attrs.get("cases", len(frame))
    passed = int(frame["passed"].sum())
    failed = len(frame) - passed
    if _eras(frame):
        modes = attrs.get("modes", [])
        runs = cases * len(modes)
        stopped = f", {runs - len(frame)} not run (stopped)" if attrs.get("interrupted") else ""
        differing = len(attrs.get("differing", ()))
        eras = f"; {differing} case{'s' if differing != 1 else ''} answered otherwise at another era" if differing else ""
        return (
            f"{cases} case{'s' if cases != 1 else ''} at {' and '.join(modes)}: {passed} passed, {failed} failed{stopped}{eras}"
        )
    stopped = f", {cases - len(frame)} not run (stopped)" if attrs.get("interrupted") else ""
    return f"{cases} case{'s' if cases != 1 else ''}: {passed} passed, {failed} failed{stopped}"


def _case(r) -> str:
    """The case's name, and across eras the era it ran at."""
    return f"{r.case} @ {r.mode}" if hasattr(r, "mode") else str(r.case)


def _why_of(r) -> str:
    """Why the row fails: its reason, and across eras how its answer differs from the first era's."""
    return "\n".join(part for part in (str(r.reason or ""), str(getattr(r, "era_difference", "") or "")) if part)


def _fine(r) -> bool:
    return bool(r.passed) and not getattr(r, "era_difference", "")


def _worst_first(frame: pd.DataFrame) -> list:
    return sorted(frame.itertuples(index=False), key=_fine)


def replay_text(frame: pd.DataFrame) -> str:
    lines = [f"Replay: {_headline(frame)}"]
    for r in _worst_first(frame):
        mark = "pass" if r.passed else "FAIL"
        if r.passed and not _fine(r):
            mark = "ERAS"
        lines.append(f"  {mark}  {_case(r)}  {r.expected}" + ("" if r.passed else f"  got {r.got}"))
        if not _fine(r):
            lines.extend(f"        {line}" for line in _why_of(r).splitlines())
    return "\n".join(lines)


def _why(reason: object) -> str:
    """Why a case failed: a diff (more than one line) in monospace, anything else in the report's font."""
    if not reason:
        return f'<span style="{MUTED}">as expected</span>'
    text = html.escape(str(reason))
    return (_DIFF if "\n" in text else _SAID).format(text=text)


def replay_html(frame: pd.DataFrame) -> str:
    e = html.escape
    ok = _ok(frame)
    ink = PASSED if ok else FAILED
    rows = []
    for r in _worst_first(frame):
        status = outlined("passed", PASSED) if r.passed else outlined("failed", FAILED)
        if r.passed and not _fine(r):
            status = outlined("eras differ", FAILED)
        got = e(str(r.got))
        if not r.passed and r.got != r.expected:
            got = f'<span style="{FAILED.text};font-weight:600">{got}</span>'
        line = border("-top")
        rows.append(
            f'<tr><td style="{_SHORT};{line}">{status}</td><td style="{_SHORT};{line}"><code>{e(str(r.case))}</code></td>'
            + (f'<td style="{_SHORT};{line}">{e(str(r.mode))}</td>' if _eras(frame) else "")
            + f'<td style="{_SHORT};{line}">{e(str(r.expected))}</td><td style="{_SHORT};{line}">{got}</td>'
            f'<td style="{_WHY};{line}">{_why(_why_of(r))}</td></tr>'
        )
    heads = ("", "case", "era", "expected", "got", "why") if _eras(frame) else ("", "case", "expected", "got", "why")
    head = "".join(f'<th style="{_CELL}">{h}</th>' for h in heads)
    return (
        f'<div class="mcp-nb-replay" style="{UI};{BORDER};{ink.line("-left", "4px")};border-radius:6px;padding:6px 10px;max-width:1100px">'
        f'<div><b>Replay</b>: <span style="{ink.text};font-weight:600">{e(_headline(frame))}</span></div>'
        f'<div style="overflow-x:auto;max-width:100%"><table style="border-collapse:collapse;font-size:0.9em;width:100%">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div></div>"
    )
