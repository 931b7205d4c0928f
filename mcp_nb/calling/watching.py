"""Watching a resource: the server says when it changed, and the resource is read and recorded.

Two eras, one face (`mcp_nb.watch(uri, server=...)`):

- 2025-11-25 (the handshake): `resources/subscribe`, then a `notifications/resources/updated`
  on the session for each change, until `resources/unsubscribe`;
- 2026-07-28: a `subscriptions/listen` stream whose filter names the resource (the SDK's
  `Client.listen`), held open by a task of the watch's own, until it is stopped.

A change is read with an ordinary read of mcp_nb's (so it is in the history like any read, with
its outcome and its cause). One read runs at a time: the changes said while it runs are read
once, by one more read after it, so a burst of notices costs a few reads and the last change is
always read. The watch keeps the latest KEPT reads (`updates`); the history has every one. A
watch whose connection is lost or closed says so (`lost`, with the reason), on either era (on
the handshake era over HTTP, where nothing else would tell, a ping every PING_S finds out).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Callable
from typing import Any

from mcp import MCPError
from mcp_types import (
    EmptyResult,
    PingRequest,
    SubscribeRequest,
    SubscribeRequestParams,
    UnsubscribeRequest,
    UnsubscribeRequestParams,
)

from mcp_nb.calling.era import is_handshake
from mcp_nb.elicitation import in_thread
from mcp_nb.mistakes import BadValue
from mcp_nb.sdk_compat import CONNECTION_CLOSED, HTTP_STATUS_TEXTS

log = logging.getLogger("mcp_nb")
READ_TIMEOUT_S = 30.0
KEPT = 100  # the reads a watch keeps on itself (`updates`), the latest; the history keeps them all
# How long a watch waits for its listeners after a read, before it goes on without them (their
# worker thread cannot be stopped: it is left to finish by itself).
LISTENERS_S = 10.0
# On the handshake era over HTTP nothing is sent while a watch waits, so nothing would notice that
# the server went away: the watch pings it this often, and one that cannot be reached is lost.
PING_S = 5.0


class Watch:
    """One resource watched on one connection: `updates` holds the latest reads its changes caused."""

    def __init__(self, engine: Any, connection: Any, uri: str) -> None:
        self.engine, self.connection, self.uri = engine, connection, uri
        self._updates: collections.deque[Any] = collections.deque(maxlen=KEPT)
        self.reads = 0  # every read a change caused (each in the history)
        self.notices = 0  # every change the server said
        self.state = "starting"  # starting | watching | stopped | lost
        self.reason: str | None = None
        self.era: str | None = None
        self._task: asyncio.Task[None] | None = None
        self._listeners: list[Callable[[Watch], None]] = []
        self._reading: asyncio.Task[None] | None = None  # the read in flight (one at a time)
        self._pinging: asyncio.Task[None] | None = None  # the handshake era over HTTP: is the server still there
        self._again = False  # the server said it changed while that read ran

    @property
    def updates(self) -> list[Any]:
        """The Outcome of each read a change caused, oldest first: the latest KEPT of them (the
        history has every one). A copy: the loop goes on adding while you look."""
        return list(self._updates)

    # -- on mcp_nb's loop ------------------------------------------------------------------

    async def start(self) -> None:
        client = await self.connection.ready()
        self.era = self.connection.protocol or ""
        if not is_handshake(self.era):
            acknowledged = asyncio.get_running_loop().create_future()
            self._task = asyncio.get_running_loop().create_task(self._listen(client, acknowledged))
            await acknowledged  # the stream is open (or the server refused it: raised here)
        else:
            await client.session.send_request(SubscribeRequest(params=SubscribeRequestParams(uri=self.uri)), EmptyResult)
            if self.connection.transport == "http":
                self._pinging = asyncio.get_running_loop().create_task(self._ping(client))
        self.connection.watches.append(self)  # the connection says when it is lost or closed (`ended`)
        self.state = "watching"

    async def _ping(self, client: Any) -> None:
        """Ping the server every PING_S while the watch waits: a server that cannot be reached
        (or that lost the session) has lost the connection, and the watch with it."""
        while True:
            await asyncio.sleep(PING_S)
            if self.state != "watching":
                return
            try:
                # The request itself: the SDK's helper warns that ping is gone at 2026-07-28, and
                # this is only sent on the handshake era, where it is not.
                await asyncio.wait_for(client.session.send_request(PingRequest(), EmptyResult), READ_TIMEOUT_S)
            except TimeoutError:
                continue  # slow is not gone
            except MCPError as err:
                if err.code != CONNECTION_CLOSED and err.error.message not in HTTP_STATUS_TEXTS:
                    continue  # it answered, with an error: it is there
                self.connection.lost(f"the server did not answer a ping ({err.error.message})")
                return
            except Exception as err:  # noqa: BLE001 - the transport failed: the server is out of reach
                self.connection.lost(f"the server did not answer a ping ({type(err).__name__}: {err})")
                return

    async def _listen(self, client: Any, acknowledged: asyncio.Future[None]) -> None:
        try:
            async with client.listen(resource_subscriptions=[self.uri]) as events:
                acknowledged.set_result(None)
                async for event in events:
                    if getattr(event, "uri", None) == self.uri:
                        self.updated()
            self.ended("the server closed the stream")
        except asyncio.CancelledError:
            raise
        except Exception as err:  # noqa: BLE001 - said on the watch, and raised to `start` when it never opened
            if not acknowledged.done():
                acknowledged.set_exception(err)
            self.ended(f"the stream was lost: {type(err).__name__}: {err}")

    def updated(self) -> None:
        """The server says the resource changed: read it, or read it again once the read in
        flight ends (on the loop)."""
        if self.state != "watching":
            return
        self.notices += 1
        if self._reading is not None:
            self._again = True
            return
        self._reading = asyncio.get_running_loop().create_task(self._read_while_changed())

    async def _read_while_changed(self) -> None:
        try:
            while True:
                self._again = False
                await self._read()
                if not self._again or self.state != "watching":
                    return
        finally:
            self._reading = None

    async def _read(self) -> None:
        try:
            outcome = await self.engine.prepare("resource", self.uri, None, READ_TIMEOUT_S, server=self.connection.name).run()
        except Exception:  # noqa: BLE001 - a read that cannot even start is said, and the watch goes on
            if self.state == "watching" and not self.engine.closed:
                log.exception("reading %s after its update failed", self.uri)
            return
        self.reads += 1
        self._updates.append(outcome)
        if self._listeners:
            await self._tell()

    async def _tell(self) -> None:
        """Each listener, in a thread of its own (`in_thread`): a listener is the user's code, and may block."""
        telling = asyncio.ensure_future(in_thread(self._tell_each, list(self._listeners)))
        done, _ = await asyncio.wait({telling}, timeout=LISTENERS_S)
        if not done:
            log.warning(
                "a listener of the watch on %s has not returned after %g s; the watch goes on without waiting for it",
                self.uri,
                LISTENERS_S,
            )

    def _tell_each(self, listeners: list[Callable[[Watch], None]]) -> None:
        for listener in listeners:
            try:
                listener(self)
            except Exception:  # noqa: BLE001 - a broken view never stops the watch
                log.exception("a watch listener failed")

    async def stop_here(self) -> None:
        if self.state in ("stopped", "lost"):
            return
        self.state = "stopped"
        if self._pinging is not None:
            self._pinging.cancel()
        if self in self.connection.watches:
            self.connection.watches.remove(self)
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            return
        client = self.connection.client
        if client is not None:
            try:
                await client.session.send_request(UnsubscribeRequest(params=UnsubscribeRequestParams(uri=self.uri)), EmptyResult)
            except Exception:  # noqa: BLE001 - the watch is stopped either way
                log.debug("unsubscribing from %s failed", self.uri, exc_info=True)

    def ended(self, reason: str) -> None:
        """No more changes can come: the stream, or the connection, is gone (on the loop)."""
        if self.state in ("starting", "watching"):
            self.state, self.reason = "lost", reason
            if self in self.connection.watches:
                self.connection.watches.remove(self)
            if self._pinging is not None and self._pinging is not asyncio.current_task():
                self._pinging.cancel()

    # -- from any thread -------------------------------------------------------------------

    def stop(self) -> None:
        """Stop watching (the server is told, where its era lets it be)."""
        self.engine.loop.run(self.stop_here())

    def on_update(self, listener: Callable[[Watch], None]) -> None:
        """Call `listener(watch)` after each update was read, in a worker thread (never on
        mcp_nb's loop); the next read waits for it up to LISTENERS_S seconds."""
        self._listeners.append(listener)

    def describe(self) -> dict[str, Any]:
        kept = self._updates
        last = kept[-1] if kept else None
        return {
            "uri": self.uri,
            "server": self.connection.name,
            "state": self.state,
            "reason": self.reason or "",
            "protocol": self.era or "",
            "updates": self.reads,
            "notices": self.notices,
            "last": None
            if last is None
            else {"outcome": last.outcome, "cause": last.cause, "content": last.content, "at": last.started},
        }

    def __repr__(self) -> str:
        row = self.describe()
        kept = f" (the last {len(self._updates)} kept)" if row["updates"] > len(self._updates) else ""
        lines = [
            f"watching {row['uri']} on {row['server']} ({row['state']}{', ' + row['reason'] if row['reason'] else ''}): "
            f"{row['updates']} update{'s' if row['updates'] != 1 else ''}{kept}"
        ]
        if row["last"] is not None:
            last = row["last"]
            when = time.strftime("%H:%M:%S", time.localtime(last["at"]))
            lines.append(
                f"  last at {when}: {last['outcome']} ({last['cause']}): {' '.join(str(last['content'] or '').split())[:160]}"
            )
        return "\n".join(lines)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


def check_uri(uri: object) -> str:
    if not isinstance(uri, str) or not uri.strip():
        raise BadValue(f"watch takes a resource's URI, got {uri!r}")
    return uri
