"""The kernel's own server, in-process: a connection whose catalog is the registry.

The SDK's in-memory transport reaches the `MCPServer` the cells register on; what the server
offers is read from the registry (no listing to wait for), and the session lists the tools again
only after a registration changed them, so a call costs nothing more for it.
"""

from __future__ import annotations

import logging

from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_nb import sdk_compat
from mcp_nb.calling.connections.base import Connection
from mcp_nb.calling.connections.spec import KERNEL
from mcp_nb.calling.era import check_mode, sdk_mode
from mcp_nb.registering.registry import Registration, Registry

log = logging.getLogger(__package__)


class KernelConnection(Connection):
    """The kernel's own server, in-process: what it offers is the registry.

    `mode` pins the protocol era, as `connect(mode=)` does for an outside server; left out, the
    SDK's in-process client goes straight to the current era (2026-07-28: each request handed to
    the server in the caller's task). At the handshake era (`era.HANDSHAKE_ERA`) the SDK runs the
    server on its in-memory streams, JSON-RPC as over a wire, and carries the caller's context
    variables with each message: the probe and the log capture still find the call's trace."""

    def __init__(self, server: MCPServer, registry: Registry, mode: str | None = None) -> None:
        super().__init__(KERNEL)
        self.server = server
        self.registry = registry
        if mode is not None:
            self.mode = check_mode(mode)
        self._listed = -1
        registry.subscribe(self._changed)

    def _client_for(self) -> Client:
        if self.mode:
            return Client(self.server, cache=None, elicitation_callback=self._elicited, mode=sdk_mode(self.mode))
        return Client(self.server, cache=None, elicitation_callback=self._elicited)

    async def _opened(self, client: Client) -> None:
        if self.protocol in MODERN_PROTOCOL_VERSIONS:
            # Each request carries the client's capabilities at 2026-07-28: a tool that cannot
            # reach its request cannot ask a question, so its calls go without the elicitation one.
            sdk_compat.lighten_tool_calls(client.session, self.registry.reaches_request, ("elicitation",))

    def open_session(self) -> Client | None:
        return self._client if self.state == "connected" and self.registry.version == self._listed else None

    async def ready(self) -> Client:
        """The open session, with the tools of the registry's current version listed."""
        client = self._client or await self._open()
        if self.registry.version != self._listed:
            await self._relist(client)
        return client

    async def _relist(self, client: Client) -> None:
        # A re-run cell may have changed a schema: re-list so this session validates
        # against the new one (only after a registration, so calls stay cheap). Should it
        # fail, the SDK still re-lists by itself when the server reports a stale schema.
        version = self.registry.version
        try:
            await client.list_tools()
        except Exception:  # noqa: BLE001 - the next call re-lists, or the SDK does
            log.debug("re-listing the kernel's tools failed", exc_info=True)
            return
        self._listed = version

    def entries(self) -> list[Registration]:
        return self.registry.entries()

    def get(self, kind: str, key: str) -> Registration | None:
        return self.registry.get(kind, key)

    def input_schema(self, target: str, key: str) -> dict[str, object] | None:
        return self.registry.input_schema(target, key)

    def annotations(self, name: str) -> ToolAnnotations | None:
        hints: ToolAnnotations | None = self.registry.annotations(name)
        return hints

    def observes(self, target: str, key: str) -> bool:
        return self.registry.observes(target, key)

    def reaches_request(self, name: str) -> bool:
        return self.registry.reaches_request(name)

    def reached(self, target: str, key: str) -> tuple[Registration, dict[str, str] | None] | None:
        return self.registry.reached(target, key)

    def target_text(self) -> str:
        return "the kernel's own MCPServer"
