"""The outside clients of a served kernel, and what they are told when a cell is re-run.

Two eras of the protocol reach a served kernel. A 2025-era client opens a session
(initialize) and keeps a `Connection` the server can write to at any time: it is told
of changes with `notifications/*/list_changed`, and of a subscribed resource's new
version with `notifications/resources/updated`; it may subscribe to resources and set
the level of the log messages it wants. A 2026-07-28 client has no session: it hears of
changes on a `subscriptions/listen` stream it opened, fed by the server's event bus.

`Clients` keeps the connections of the first kind (each forgets itself when it closes),
answers their `resources/subscribe`, `resources/unsubscribe` and `logging/setLevel`, and
watches the registry: after every registration or removal it works out what changed
and tells everyone, on mcp_nb's loop, never raising into the cell that registered.

Each 2025-era client is told by a sender of its own, from what it is owed: which lists
changed, which subscribed resources were updated. A client that stops reading its event
stream blocks only its own sender (until the connection's limits cut it off), never the
others' news; and what it is owed meanwhile is a set, not a queue: a cell re-run four
hundred times while it does not read leaves it owed one `tools/list_changed`, not four
hundred notifications and as many waiting tasks. The notifications say "look again", so
one said after the last change tells as much as one per change.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

from mcp.server.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ToolsListChanged,
)
from mcp.shared.uri_template import UriTemplate
from mcp_types import (
    EmptyResult,
    SetLevelRequestParams,
    SubscribeRequestParams,
    UnsubscribeRequestParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_nb import sdk_compat

SUBSCRIBED = "mcp_nb.subscribed"  # connection.state key: the URIs this client subscribed to
LOG_LEVEL = "mcp_nb.log_level"  # connection.state key: the least severe log level it wants

log = logging.getLogger(__name__)


class Clients:
    """The sessions of the outside clients of one served engine."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self._connections: dict[int, Any] = {}  # id -> Connection, the 2025-era sessions open now
        self._lock = threading.Lock()
        # id -> what that connection is yet to be told: the kinds whose lists changed, and the
        # subscribed URIs updated (on the loop only); a connection in it has its sender running.
        self._owed: dict[int, tuple[set[str], set[str]]] = {}
        self._senders: set[asyncio.Task] = set()
        self._registered = self._snapshot()
        self._bus = sdk_compat.subscription_bus(engine.server)

    # -- the sessions -------------------------------------------------------------------------

    def seen(self, session: Any) -> str | None:
        """Note the connection a request came on; returns the log level its client asked for, if any."""
        connection = sdk_compat.connection_of(session)
        if connection.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return None
        key = id(connection)
        if key not in self._connections:
            with self._lock:
                self._connections[key] = connection
            connection.exit_stack.callback(self._forget, key)
        return connection.state.get(LOG_LEVEL)

    def _forget(self, key: int) -> None:
        with self._lock:
            self._connections.pop(key, None)

    def connections(self) -> list[Any]:
        with self._lock:
            return list(self._connections.values())

    def __len__(self) -> int:
        return len(self._connections)

    # -- the requests only outside clients send --------------------------------------------------

    def install(self) -> None:
        """Answer `resources/subscribe`, `resources/unsubscribe` and `logging/setLevel` on the engine's server."""
        server = sdk_compat.lowlevel(self.engine.server)
        server.add_request_handler("resources/subscribe", SubscribeRequestParams, self._subscribe)
        server.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, self._unsubscribe)
        server.add_request_handler("logging/setLevel", SetLevelRequestParams, self._set_level)
        self.engine.registry.subscribe(self.registry_changed)

    def close(self) -> None:
        self.engine.registry.unsubscribe(self.registry_changed)
        with self._lock:
            self._connections.clear()
        for sender in list(self._senders):  # one may wait on a client that reads nothing
            sender.get_loop().call_soon_threadsafe(sender.cancel)

    async def _subscribe(self, ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
        connection = sdk_compat.connection_of(ctx.session)
        connection.state.setdefault(SUBSCRIBED, set()).add(str(params.uri))
        return EmptyResult()

    async def _unsubscribe(self, ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
        connection = sdk_compat.connection_of(ctx.session)
        connection.state.get(SUBSCRIBED, set()).discard(str(params.uri))
        return EmptyResult()

    async def _set_level(self, ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
        # Applied to this client's later requests by the Recorder (the SDK leaves the filter to us).
        sdk_compat.connection_of(ctx.session).state[LOG_LEVEL] = params.level
        return EmptyResult()

    # -- telling them what changed ------------------------------------------------------------

    def _snapshot(self) -> dict[tuple[str, str], int]:
        return {(entry.kind, entry.key): id(entry) for entry in self.engine.registry.entries()}

    def registry_changed(self) -> None:
        """A registration or removal happened (on whatever thread made it): announce it on the loop."""
        with self._lock:
            before, self._registered = self._registered, self._snapshot()
        changed = {key for key in before.keys() | self._registered.keys() if before.get(key) != self._registered.get(key)}
        if not changed:
            return
        try:
            self.engine.loop.submit(self.announce(changed))
        except RuntimeError:  # the engine is closing: nobody is left to tell
            pass

    async def announce(self, changed: set[tuple[str, str]]) -> None:
        """Tell every client what `changed` (kind, key) pairs mean; a client that is gone is skipped."""
        kinds = {kind for kind, _ in changed}
        resources = {key for kind, key in changed if kind == "resource"}
        for connection in self.connections():
            updated = _updated(resources, connection.state.get(SUBSCRIBED, ()))
            key = id(connection)
            owed = self._owed.get(key)
            if owed is not None:  # its sender is at work: it will tell this too
                owed[0].update(kinds)
                owed[1].update(updated)
                continue
            self._owed[key] = (set(kinds), set(updated))
            sender = asyncio.get_running_loop().create_task(self._tell(key, connection))
            self._senders.add(sender)
            sender.add_done_callback(self._senders.discard)
        events = [
            event
            for kind, event in (
                ("tool", ToolsListChanged()),
                ("prompt", PromptsListChanged()),
                ("resource", ResourcesListChanged()),
            )
            if kind in kinds
        ]
        events += [ResourceUpdated(uri=uri) for uri in sorted(resources) if "{" not in uri]
        for event in events:
            try:
                await self._bus.publish(event)
            except Exception:  # noqa: BLE001
                log.debug("could not publish %r", event, exc_info=True)

    async def _tell(self, key: int, connection: Any) -> None:
        """Send `connection` what it is owed, until it is owed nothing more."""
        try:
            while True:
                kinds, uris = self._owed[key]
                if not kinds and not uris:
                    return
                self._owed[key] = (set(), set())
                try:
                    if "tool" in kinds:
                        await connection.send_tool_list_changed()
                    if "prompt" in kinds:
                        await connection.send_prompt_list_changed()
                    if "resource" in kinds:
                        await connection.send_resource_list_changed()
                    for uri in sorted(uris):
                        await connection.send_resource_updated(uri)
                except Exception:  # noqa: BLE001 - one broken client must not keep the others uninformed
                    log.debug("could not tell a client what changed", exc_info=True)
                    return
        finally:
            self._owed.pop(key, None)


def _updated(changed: set[str], subscribed) -> set[str]:
    """The subscribed URIs a change of these resources (URIs or URI templates) touches."""
    hit = set()
    for uri in subscribed:
        for key in changed:
            if key == uri or ("{" in key and _matches(key, uri)):
                hit.add(uri)
    return hit


def _matches(template: str, uri: str) -> bool:
    try:
        return UriTemplate.parse(template).match(uri) is not None
    except ValueError:
        return False
