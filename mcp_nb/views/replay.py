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
        reason = PRE.format(text=e(str(r.reason))) if r.reason else f'<span style="{MUTED}">as expected</span>'
        line = border("-top")
        rows.append(
            f'<tr><td style="{CELL};{line}">{status}</td><td style="{CELL};{line}"><code>{e(str(r.case))}</code></td>'
            f'<td style="{CELL};{line}">{e(str(r.expected))}</td><td style="{CELL};{line}">{got}</td>'
            f'<td style="{CELL};{line}">{reason}</td></tr>'
        )
    head = "".join(f'<th style="text-align:left;{CELL}">{h}</th>' for h in ("", "case", "expected", "got", "why"))
    return (
        f'<div class="mcp-nb-replay" style="{UI};{BORDER};{ink.line("-left", "4px")};border-radius:6px;padding:6px 10px;max-width:900px">'
        f'<div><b>Replay</b>: <span style="{ink.text};font-weight:600">{e(_headline(frame))}</span></div>'
        f'<div style="overflow-x:auto;max-width:100%"><table style="border-collapse:collapse;font-size:0.9em">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div></div>"
    )
