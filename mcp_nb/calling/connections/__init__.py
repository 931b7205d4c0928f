"""Connections: one client session to one server each, owned by one task on mcp_nb's loop.

One module per job, from the top down: `kernel` (the kernel's own server, in-process) and
`remote` (an outside server) are the connections; `base`, the session owner they share;
`listing`, what an outside server offers, and `failures`, what a failed connect says; the
transports `stdio` (with `process`, the server's process) and `http`, and `inbound`, what a
server sends that the SDK would drop or choke on; at the bottom `spec`, an outside server as
`connect` names it, and `errors`. Every name other modules use is here.
"""

from mcp_nb.calling.connections.base import LOG_LINES, METHODS, Answer, Connection
from mcp_nb.calling.connections.errors import ConnectError, ConnectionLost
from mcp_nb.calling.connections.inbound import REFUSED_ANSWER
from mcp_nb.calling.connections.kernel import KernelConnection
from mcp_nb.calling.connections.remote import RemoteConnection
from mcp_nb.calling.connections.spec import KERNEL, ServerSpec, shown_url

__all__ = [
    "KERNEL",
    "Answer",
    "LOG_LINES",
    "METHODS",
    "REFUSED_ANSWER",
    "ConnectError",
    "Connection",
    "ConnectionLost",
    "KernelConnection",
    "RemoteConnection",
    "ServerSpec",
    "shown_url",
]
