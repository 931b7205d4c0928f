"""What a kernel's first call would pay once, done before it where that is free.

A first call used to import `jsonschema` inside the SDK's client (about a second in a
Jupyter environment); `structured.py` now spares it that. What remains is opening the
client session: starting mcp_nb's loop thread and the MCP handshake with the in-kernel
server, 10 to 20 ms. `%load_ext mcp_nb` starts that on the loop thread and returns, so
the first call finds the session open.

Nothing heavier is done ahead, on purpose: under JupyterLab's Run All the next cells
follow at once, and whatever a background thread computes is taken from them (one GIL).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp_nb.calling.engine import Engine


def open_session_early(engine: Engine) -> None:
    """Open the engine's client session in the background; a failure is left to the first call.

    The first call would open it anyway (`Connection.ready` is where every call waits
    for it), and a failed attempt is forgotten there, so the call retries and reports.
    """
    engine.loop.submit(engine.connection.ready())
