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
        """Whether every case passed (and the replay was not stopped)."""
        return bool(self.frame["passed"].all()) and not self.frame.attrs.get("interrupted")

    def _repr_html_(self) -> str:
        return replay_html(self.frame)

    def __repr__(self) -> str:
        return replay_text(self.frame)

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(repr(self))


def _headline(frame: pd.DataFrame) -> str:
    attrs = frame.attrs
    cases = attrs.get("cases", len(frame))
    passed = int(frame["passed"].sum())
    failed = len(frame) - passed
    stopped = f", {cases - len(frame)} not run (stopped)" if attrs.get("interrupted") else ""
    return f"{cases} case{'s' if cases != 1 else ''}: {passed} passed, {failed} failed{stopped}"


def _worst_first(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values("passed", kind="stable")


def replay_text(frame: pd.DataFrame) -> str:
    lines = [f"Replay: {_headline(frame)}"]
    for r in _worst_first(frame).itertuples(index=False):
        mark = "pass" if r.passed else "FAIL"
        lines.append(f"  {mark}  {r.case}  {r.expected}" + ("" if r.passed else f"  got {r.got}"))
        if not r.passed and r.reason:
            lines.extend(f"        {line}" for line in str(r.reason).splitlines())
    return "\n".join(lines)


def _why(reason: object) -> str:
    """Why a case failed: a diff (more than one line) in monospace, anything else in the report's font."""
    if not reason:
        return f'<span style="{MUTED}">as expected</span>'
    text = html.escape(str(reason))
    return (_DIFF if "\n" in text else _SAID).format(text=text)


def replay_html(frame: pd.DataFrame) -> str:
    e = html.escape
    ok = bool(frame["passed"].all()) and not frame.attrs.get("interrupted")
    ink = PASSED if ok else FAILED
    rows = []
    for r in _worst_first(frame).itertuples(index=False):
        status = outlined("passed", PASSED) if r.passed else outlined("failed", FAILED)
        got = e(str(r.got))
        if not r.passed and r.got != r.expected:
            got = f'<span style="{FAILED.text};font-weight:600">{got}</span>'
        line = border("-top")
        rows.append(
            f'<tr><td style="{_SHORT};{line}">{status}</td><td style="{_SHORT};{line}"><code>{e(str(r.case))}</code></td>'
            f'<td style="{_SHORT};{line}">{e(str(r.expected))}</td><td style="{_SHORT};{line}">{got}</td>'
            f'<td style="{_WHY};{line}">{_why(r.reason)}</td></tr>'
        )
    head = "".join(f'<th style="{_CELL}">{h}</th>' for h in ("", "case", "expected", "got", "why"))
    return (
        f'<div class="mcp-nb-replay" style="{UI};{BORDER};{ink.line("-left", "4px")};border-radius:6px;padding:6px 10px;max-width:1100px">'
        f'<div><b>Replay</b>: <span style="{ink.text};font-weight:600">{e(_headline(frame))}</span></div>'
        f'<div style="overflow-x:auto;max-width:100%"><table style="border-collapse:collapse;font-size:0.9em;width:100%">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div></div>"
    )
