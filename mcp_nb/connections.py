"""A connection: one client session to one server, owned by one task on mcp_nb's loop.

The SDK's `Client` is an anyio context manager whose cancel scopes must be entered and
left by the same task, so a connection keeps one long-lived owner task that enters the
session, parks until `close()`, and leaves it. Calls only borrow the session. Today the
one connection is to the kernel's own server over the SDK's in-memory transport; the
transport is the only part that knows that.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Callable

from mcp import Client

from .structured import check_results_locally

METHODS = {"tool": "tools/call", "resource": "resources/read", "prompt": "prompts/get"}


class Connection:
    """A client session to `server`, opened on first use and re-listed when `version()` moves."""

    def __init__(
        self,
        name: str,
        server: Any,
        *,
        version: Callable[[], int] = lambda: 0,
        observes: Callable[[str, str], bool] = lambda target, key: False,
    ) -> None:
        self.name = name
        self.server = server
        self._version = version
        self.observes = observes  # whether mcp_nb's probe watches the handler a call reaches
        self._client: Client | None = None
        self._opening: asyncio.Future[Client] | None = None
        self._closing: asyncio.Event | None = None
        self._owner: asyncio.Task[None] | None = None
        self._listed = -1

    @property
    def is_open(self) -> bool:
        """Whether the session is open now."""
        return self._client is not None

    async def ready(self) -> Client:
        """The open session (opened now if need be), with the tools of the current version listed."""
        client = self._client or await self._open()
        if self._version() != self._listed:
            await self._relist(client)
        return client

    async def send(self, client: Client, target: str, name: str, arguments: dict[str, Any] | None) -> Any:
        if target == "tool":
            return await client.call_tool(name, arguments)
        if target == "resource":
            return await client.read_resource(name)
        return await client.get_prompt(name, arguments)

    async def _open(self) -> Client:
        if self._opening is None:
            loop = asyncio.get_running_loop()
            self._opening = loop.create_future()
            self._closing = asyncio.Event()
            self._owner = loop.create_task(self._own(self._opening, self._closing))
        return await asyncio.shield(self._opening)

    async def _own(self, ready: asyncio.Future[Client], closing: asyncio.Event) -> None:
        # The one task that enters and leaves the client's context, as anyio requires.
        try:
            async with Client(self.server, cache=None) as client:
                check_results_locally(client.session)  # spares the first call the import of jsonschema
                self._client = client
                ready.set_result(client)
                await closing.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
                self._opening = None
            raise
        finally:
            self._client = None

    async def _relist(self, client: Client) -> None:
        # A re-run cell may have changed a schema: re-list so this session validates
        # against the new one (only after a registration, so calls stay cheap). Should it
        # fail, the SDK still re-lists by itself when the server reports a stale schema.
        version = self._version()
        try:
            await client.list_tools()
        except Exception:
            return
        self._listed = version

    async def close(self, timeout: float = 5.0) -> None:
        """Leave the session in its owner task."""
        if self._closing is not None:
            self._closing.set()
        if self._owner is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self._owner, timeout=timeout)
