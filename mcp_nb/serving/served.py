"""What an engine's server gains while it is served, whatever the transport, and loses after.

Its outside clients' calls are recorded (`record.Recorder`, server middleware), their
sessions are known and told what a re-run cell changed (`clients.Clients`), and
completion requests are answered from the history (`completion`). The kernel's own
calls pass the middleware untouched.
"""

from __future__ import annotations

import contextlib
from typing import Any

from mcp_nb.serving import completion
from mcp_nb.serving.clients import Clients
from mcp_nb.serving.record import Recorder


class Served:
    """The served side of one engine, for one transport (`via`: "http" or "stdio")."""

    def __init__(self, engine: Any, via: str, answers_seen: bool = False) -> None:
        self.engine = engine
        self.clients = Clients(engine)
        # answers_seen: a door sees every answer leave and settles the history after it
        self.recorder = Recorder(engine, via, self.clients, later=answers_seen)

    def attach(self) -> None:
        self.engine.server.middleware.append(self.recorder)
        self.clients.install()
        completion.install(self.engine)

    def detach(self) -> None:
        """Stop recording and announcing (the handlers stay: only outside clients send those requests)."""
        with contextlib.suppress(ValueError):
            self.engine.server.middleware.remove(self.recorder)
        self.clients.close()

    @property
    def calls(self) -> int:
        """How many outside calls were recorded."""
        return self.recorder.recorded
