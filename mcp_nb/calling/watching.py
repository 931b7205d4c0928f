"""Watching a resource: the server says when it changed, and each change is read and recorded.

Two eras, one face (`mcp_nb.watch(uri, server=...)`):

- 2025-11-25 (the handshake): `resources/subscribe`, then a `notifications/resources/updated`
  on the session for each change, until `resources/unsubscribe`;
- 2026-07-28: a `subscriptions/listen` stream whose filter names the resource (the SDK's
  `Client.listen`), held open by a task of the watch's own, until it is stopped.

Each update is read at once with an ordinary read of mcp_nb's (so it is in the history like
any read, with its outcome and its cause), and kept on the watch in the order they came.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Callable

from mcp_types import EmptyResult, SubscribeRequest, SubscribeRequestParams, UnsubscribeRequest, UnsubscribeRequestParams

from mcp_nb.mistakes import BadValue

log = logging.getLogger("mcp_nb")
READ_TIMEOUT_S = 30.0


class Watch:
    """One resource watched on one connection: `updates` holds the reads its changes caused."""

    def __init__(self, engine: Any, connection: Any, uri: str) -> None:
        self.engine, self.connection, self.uri = engine, connection, uri
        self.updates: list[Any] = []  # the Outcome of each read an update caused, oldest first
        self.state = "starting"  # starting | watching | stopped | lost
        self.reason: str | None = None
        self.era: str | None = None
        self._task: asyncio.Task | None = None
        self._listeners: list[Callable[[Watch], None]] = []
        self._reads: set[asyncio.Task] = set()  # the reads its updates started, still running

    # -- on mcp_nb's loop ------------------------------------------------------------------

    async def start(self) -> None:
        client = await self.connection.ready()
        self.era = self.connection.protocol or ""
        if self.era >= "2026":
            acknowledged = asyncio.get_running_loop().create_future()
            self._task = asyncio.get_running_loop().create_task(self._listen(client, acknowledged))
            await acknowledged  # the stream is open (or the server refused it: raised here)
        else:
            await client.session.send_request(SubscribeRequest(params=SubscribeRequestParams(uri=self.uri)), EmptyResult)
            self.connection.watches.append(self)
        self.state = "watching"

    async def _listen(self, client: Any, acknowledged: asyncio.Future) -> None:
        try:
            async with client.listen(resource_subscriptions=[self.uri]) as events:
                acknowledged.set_result(None)
                async for event in events:
                    if getattr(event, "uri", None) == self.uri:
                        self.updated()
            self._ended("the server closed the stream")
        except asyncio.CancelledError:
            raise
        except Exception as err:  # noqa: BLE001 - said on the watch, and raised to `start` when it never opened
            if not acknowledged.done():
                acknowledged.set_exception(err)
            self._ended(f"the stream was lost: {type(err).__name__}: {err}")

    def updated(self) -> None:
        """The server says the resource changed: read it (on the loop)."""
        if self.state != "watching":
            return
        read = asyncio.get_running_loop().create_task(self._read())
        self._reads.add(read)  # held until done: the loop keeps only a weak reference to a task
        read.add_done_callback(self._reads.discard)

    async def _read(self) -> None:
        try:
            outcome = await self.engine.prepare("resource", self.uri, None, READ_TIMEOUT_S, server=self.connection.name).run()
        except Exception:  # noqa: BLE001 - a read that cannot even start is said, and the watch goes on
            log.exception("reading %s after its update failed", self.uri)
            return
        self.updates.append(outcome)
        for listener in list(self._listeners):
            try:
                listener(self)
            except Exception:  # noqa: BLE001 - a broken view never stops the watch
                log.exception("a watch listener failed")

    async def stop_here(self) -> None:
        if self.state in ("stopped", "lost"):
            return
        self.state = "stopped"
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            return
        if self in self.connection.watches:
            self.connection.watches.remove(self)
        client = self.connection._client
        if client is not None:
            try:
                await client.session.send_request(UnsubscribeRequest(params=UnsubscribeRequestParams(uri=self.uri)), EmptyResult)
            except Exception:  # noqa: BLE001 - the watch is stopped either way
                log.debug("unsubscribing from %s failed", self.uri, exc_info=True)

    def _ended(self, reason: str) -> None:
        if self.state == "watching":
            self.state, self.reason = "lost", reason

    # -- from any thread -------------------------------------------------------------------

    def stop(self) -> None:
        """Stop watching (the server is told, where its era lets it be)."""
        self.engine.loop.run(self.stop_here())

    def on_update(self, listener: Callable[[Watch], None]) -> None:
        """Call `listener(watch)` on mcp_nb's loop after each update was read."""
        self._listeners.append(listener)

    def describe(self) -> dict[str, Any]:
        last = self.updates[-1] if self.updates else None
        return {
            "uri": self.uri, "server": self.connection.name, "state": self.state, "reason": self.reason or "",
            "protocol": self.era or "", "updates": len(self.updates),
            "last": None if last is None else {"outcome": last.outcome, "cause": last.cause, "content": last.content, "at": last.started},
        }  # fmt: skip

    def __repr__(self) -> str:
        row = self.describe()
        lines = [f"watching {row['uri']} on {row['server']} ({row['state']}{', ' + row['reason'] if row['reason'] else ''}): "
                 f"{row['updates']} update{'s' if row['updates'] != 1 else ''}"]  # fmt: skip
        if row["last"] is not None:
            last = row["last"]
            when = time.strftime("%H:%M:%S", time.localtime(last["at"]))
            lines.append(f"  last at {when}: {last['outcome']} ({last['cause']}): {' '.join(str(last['content'] or '').split())[:160]}")
        return "\n".join(lines)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


def check_uri(uri: object) -> str:
    if not isinstance(uri, str) or not uri.strip():
        raise BadValue(f"watch takes a resource's URI, got {uri!r}")
    return uri
