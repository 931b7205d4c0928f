"""What a connection raises: it could not be made, or it is gone.

The bottom of the package: every other module of it may raise these, and this one imports
none of them.
"""

from __future__ import annotations

from mcp_nb.mistakes import Failure


class ConnectError(Failure, RuntimeError):
    """A server could not be connected (`mcp_nb.connect`): the message is one line, and says
    why in the terms of the step that failed: the command that is not there, the HTTP status
    the server refused with, the OAuth step that gave up. Nothing was kept."""


class ConnectionLost(Failure, RuntimeError):
    """The connection is gone (the process exited, the stream closed); calls are recorded as `disconnected`."""
