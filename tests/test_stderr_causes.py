"""An outside stdio server's prompt failures, told by its stderr however its logging draws it.

The Python SDK answers every prompt failure with one text; only the exception the server logged
tells a missing argument from an unknown prompt or a crash. Where `rich` is installed (many
environments have it), the SDK's logging draws that exception in a box and wraps it at 80
columns, so its one line arrives as several. The real servers of test_connections.py show the
whole path; these hold the reading of each shape.
"""

from __future__ import annotations

import pytest

from mcp_nb.records.classify import protocol_error_cause
from mcp_nb.records.trace import ServerLog, ServerTrace
from mcp_nb.sdk_compat import INTERNAL_ERROR_TEXT

PLAIN = ["ERROR Error getting prompt review", "ValueError: Missing required arguments: {'title'}"]
DRAWN = [
    "                             │ ❱ 1371 │   │   │   raise ValueErr │              ",
    "                             ╰───────────────────────────────────╯              ",
    "                             ValueError: Missing required                       ",
    "                             arguments: {'title'}                               ",
]
UNKNOWN = ["                             ValueError: Unknown prompt:                      ", "     nope          "]
# A crash whose drawn traceback shows the SDK's source beside it: the source is not the exception.
CRASH = ['│   1370 │ raise ValueError(f"Missing required arguments: {missing}") │', "RuntimeError: the catalog is down"]


def _cause(lines: list[str]) -> str:
    trace = ServerTrace(0.0)
    for line in lines:
        trace.add(ServerLog(level="STDERR", logger="books stderr", message=line, source="stderr"))
    return protocol_error_cause("prompt", -32603, trace, INTERNAL_ERROR_TEXT, local=False)


@pytest.mark.parametrize(
    ("lines", "cause"),
    [(PLAIN, "invalid_arguments"), (DRAWN, "invalid_arguments"), (UNKNOWN, "not_found"), (CRASH, "crash"), ([], "crash")],
    ids=["plain", "drawn-and-wrapped", "unknown-wrapped", "crash-beside-source", "silent"],
)
def test_a_prompt_failure_is_read_from_the_stderr_the_server_wrote(lines, cause):
    assert _cause(lines) == cause
