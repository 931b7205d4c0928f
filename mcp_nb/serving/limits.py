"""What slow and numerous clients may hold of a served kernel: how many connections it takes, how
long it waits on each, and how large a request's head may be.

The server runs in the kernel's process, so every connection is one of the kernel's own file
descriptors, the ones its cells open files and sockets with. uvicorn bounds neither how many
it takes nor how long a client keeps one waiting outside its keep-alive timer. `Limits` is
the rule, and takes the connections from the listening socket itself; `BoundedH11` is
uvicorn's HTTP/1.1 protocol for one connection, within it.

- **How many** (`max_connections`; by default half the process's descriptor limit, `ulimit
  -n`, and `MOST_CONNECTIONS` at most): a connection is taken from the listening socket only
  while fewer are open. One past them waits in the listen backlog, which the operating system
  keeps (no descriptor of the kernel's), and is taken when one ends: queued, never refused.
  Refusing was worse: with 503 past a cap of 64, 200 SDK clients calling at once got 79 to 92
  answers where the SDK's own app under uvicorn answers all 200, and 150 clients holding
  half-sent heads made an honest client's call fail at once.
- **Who makes room**: when a connection waits to be taken and the others fill every place,
  the one whose request head has been awaited longest gives its place, once that wait has
  lasted `EVICT_AFTER_S`: a half-sent head (an honest client sends its head in one write), or
  a connection that sent nothing in the time the system held it back (TCP_DEFER_ACCEPT, where
  there is one: http.py). Nothing else gives its place early: not a request being served (a
  tool running, an answer or an event stream flowing), nor a connection kept alive between two
  requests (its client may be sending the next one as it closes, and would get no answer: the
  SDK's client does not send a request again), nor a body on its way, nor a client slow to read
  (a client of a busy process can be all of these for a while, and was let go for another just
  like it). Those go at their deadlines, below, and uvicorn closes an idle one after 5 s. So
  however many slow heads there are, each newcomer takes one's place.
- **How long** (`header_timeout`, seconds), whatever the load: from the moment a connection
  opens, and on a kept-alive connection from the first byte of its next request, the head
  must arrive whole within it, or the connection is closed (`408 Request Timeout` first if a
  head was begun). The body then has as long again, plus a second for every `MIN_BODY_RATE`
  bytes it brings (the door reads it: guard.py). A client that stops reading what it is sent
  (the server's writes paused at the transport's high-water mark) is cut off after as long:
  its event stream, or a large answer, would otherwise hold its place and a task forever.
- **How large**: a head over `MAX_HEAD` (16 KiB) is answered `431`, however it arrives. h11
  bounds only a head still incomplete in its buffer: 60 KB of headers arriving in one read
  were parsed and served.

Every connection let go for one of these counts in the handle's `refused` (`slow`, `head`);
none reaches a tool.
"""

from __future__ import annotations

import asyncio
import errno
import math
import re
import socket
from collections.abc import Callable
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from mcp_nb.mistakes import BadValue
from mcp_nb.serving import answers

try:
    import resource
except ImportError:  # Windows: no descriptor limit to read
    resource = None  # type: ignore[assignment]

MOST_CONNECTIONS = 1024
UNKNOWN_LIMIT_CONNECTIONS = 256  # where the descriptor limit cannot be read
DEFAULT_HEADER_TIMEOUT = 10.0  # seconds
MAX_HEAD = 16 * 1024  # bytes: a request's line and headers
MIN_BODY_RATE = 64 * 1024  # bytes a second a body must bring, past its first header_timeout
EVICT_AFTER_S = 0.5  # how long a connection must have kept the server waiting to give its place
CUT_OFF_S = 1.0  # how long a connection let go may take to be sent its last answer
OUT_OF_RESOURCES = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
RESOURCES_BACK_S = 1.0
HEAD_END = re.compile(rb"\n\r?\n")  # where h11 finds the end of a head


def default_max_connections() -> int:
    """Half the process's descriptor limit now (its soft RLIMIT_NOFILE), `MOST_CONNECTIONS` at most."""
    if resource is None:
        return UNKNOWN_LIMIT_CONNECTIONS
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return UNKNOWN_LIMIT_CONNECTIONS
    if soft == resource.RLIM_INFINITY or soft < 0:
        return MOST_CONNECTIONS
    return max(1, min(MOST_CONNECTIONS, soft // 2))


def check_limits(max_connections: Any, header_timeout: Any) -> None:
    """Refuse limits that cannot be served with, before anything listens (None: the default)."""
    if max_connections is not None and (
        isinstance(max_connections, bool) or not isinstance(max_connections, int) or max_connections < 1
    ):
        raise BadValue(f"max_connections must be a whole number of connections, 1 or more, got {max_connections!r}")
    if (
        isinstance(header_timeout, bool)
        or not isinstance(header_timeout, (int, float))
        or not math.isfinite(header_timeout)
        or header_timeout <= 0
    ):
        raise BadValue(f"header_timeout must be a positive, finite number of seconds, got {header_timeout!r}")


class Limits:
    """The bounds of one served kernel, and the connections it holds now (on the loop only)."""

    def __init__(self, max_connections: int | None, header_timeout: float, refused: Callable[[str], None]) -> None:
        check_limits(max_connections, header_timeout)
        self.max_connections = max_connections if max_connections is not None else default_max_connections()
        self.header_timeout = float(header_timeout)
        self.refused = refused  # counts a connection let go: "slow", or "head" (too large)
        self.open: dict[BoundedH11, None] = {}  # in the order they were taken
        self.leaving: set[BoundedH11] = set()  # let go, and not yet gone
        self._freed: asyncio.Event | None = None  # set when a connection ends (made on the loop)
        self.head_late = answers.raw(
            408,
            "request_timeout",
            f"the request's head did not come whole in time ({self.header_timeout:g} s, less while other clients wait)",
        )
        self.head_large = answers.raw(
            431, "head_too_large", f"a request's head (its line and headers) may be {MAX_HEAD} bytes at most"
        )

    def protocol(self) -> Callable[..., asyncio.Protocol]:
        """What uvicorn's `Config(http=...)` takes: it makes each connection's protocol."""

        def make(config: Any, server_state: Any, app_state: Any, _loop: Any = None) -> BoundedH11:
            return BoundedH11(config, server_state, app_state, _loop, limits=self)

        return make

    # -- taking connections -----------------------------------------------------------------------

    async def take(self, listener: socket.socket, make: Callable[[], asyncio.Protocol]) -> None:
        """Take connections from `listener` while there is room, until cancelled.

        `make()` gives each its protocol (uvicorn's, bound to its server). While every place is
        held, the next connection is accepted and waits here (one descriptor), and the others
        wait in the listen backlog, until a place frees or a slow connection gives its own.
        """
        loop = asyncio.get_running_loop()
        self._freed = asyncio.Event()
        listener.setblocking(False)
        while True:
            try:
                connection, _ = await loop.sock_accept(listener)
            except (InterruptedError, ConnectionAbortedError):
                continue  # a client gone before it was taken
            except OSError as err:
                if err.errno not in OUT_OF_RESOURCES:
                    raise
                # The process has no descriptor left (or the system no memory): as asyncio's own
                # listeners do, take none for a while; clients wait in the backlog meanwhile.
                await asyncio.sleep(RESOURCES_BACK_S)
                continue
            try:
                await self._room()
            except BaseException:
                connection.close()
                raise
            try:
                await loop.connect_accepted_socket(make, connection)
            except OSError:  # its client went away before it was served: the next one
                connection.close()

    async def _room(self) -> None:
        """Return once fewer than `max_connections` are open, letting the slowest go if it must."""
        assert self._freed is not None
        loop = asyncio.get_running_loop()
        while len(self.open) >= self.max_connections:
            self._freed.clear()
            wait = CUT_OFF_S  # one is on its way out already: its place comes with its end
            if not self.leaving:
                now = loop.time()
                since, slowest = self._slowest(now)
                if slowest is not None and now - since >= EVICT_AFTER_S:
                    slowest.let_go()
                else:  # look again once the slowest has waited long enough, or another may have begun to
                    wait = EVICT_AFTER_S - (now - since) if slowest is not None else EVICT_AFTER_S
            try:
                await asyncio.wait_for(self._freed.wait(), max(wait, 0.01))
            except TimeoutError:
                pass

    def _slowest(self, now: float) -> tuple[float, BoundedH11 | None]:
        """The connection whose request head has been awaited longest, and since when."""
        since, slowest = now, None
        for connection in self.open:
            waiting = connection.waiting_since()
            if waiting is not None and waiting < since:
                since, slowest = waiting, connection
        return since, slowest

    def cut_off_stalled(self) -> None:
        """Cut off every connection whose client reads nothing (when serving stops: its request's
        task would wait on it until uvicorn's grace ran out, and be cancelled with a traceback)."""
        for connection in list(self.open):
            if connection.stalled:
                connection.let_go()

    def ended(self, connection: BoundedH11) -> None:
        self.open.pop(connection, None)
        self.leaving.discard(connection)
        if self._freed is not None:
            self._freed.set()


class BoundedH11(H11Protocol):
    """uvicorn's HTTP/1.1 protocol for one connection, within `Limits`."""

    def __init__(self, config: Any, server_state: Any, app_state: Any, _loop: Any = None, *, limits: Limits) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.limits = limits
        # What the server waits on the client for now: "head" (the next request's, begun or not),
        # "idle" (kept alive between requests), "body", or None (the request is the server's).
        self.phase: str | None = "head"
        self._since = 0.0  # when that wait began
        self._stalled_since: float | None = None  # when its client stopped reading what it is sent
        self._head_timer: asyncio.TimerHandle | None = None
        self._stall_timer: asyncio.TimerHandle | None = None

    @property
    def stalled(self) -> bool:
        return self._stalled_since is not None

    def waiting_since(self) -> float | None:
        """Since when the server has been waiting for this connection's request head (None: it is not)."""
        return self._since if self.phase == "head" and self._stalled_since is None else None

    # -- its place ----------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.limits.open[self] = None
        self._since = self.loop.time()
        self._head_timer = self.loop.call_later(self.limits.header_timeout, self._head_late)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._stall_timer is not None:
            self._stall_timer.cancel()
        self.limits.ended(self)
        super().connection_lost(exc)

    def let_go(self) -> None:
        """Close the connection for keeping the server waiting: for its head (408 if it began one),
        or for reading nothing (cut off: nothing more can be said to it)."""
        transport = self.transport
        if transport is None or self in self.limits.leaving:
            return
        self.limits.leaving.add(self)
        self._disarm()
        self.limits.refused("slow")
        if self._stalled_since is not None:
            transport.abort()  # a close would wait for it to read, and nothing would leave
            return
        if self.phase == "head" and self.conn.trailing_data[0]:
            transport.write(self.limits.head_late)
        transport.close()
        self.loop.call_later(CUT_OFF_S, transport.abort)  # should its client not take even that

    # -- the head: its deadline and its size ----------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE and _too_large(self.conn.trailing_data[0], data):
            self._refuse_large_head()
            return
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        conn = self.conn
        if conn.our_state is h11.DONE and conn.their_state is h11.DONE and _too_large(conn.trailing_data[0]):
            self._refuse_large_head()  # the next request, pipelined behind this one, read already
            return
        super().on_response_complete()  # may start that next request
        self._watch()

    def _refuse_large_head(self) -> None:
        self.limits.leaving.add(self)
        self._disarm()
        self.limits.refused("head")
        self.transport.write(self.limits.head_large)
        self.transport.close()
        self.loop.call_later(CUT_OFF_S, self.transport.abort)

    def _watch(self) -> None:
        """Follow what the server waits on the client for, after what it received or answered."""
        transport = self.transport
        if transport is None or transport.is_closing():
            self._disarm()
            return
        state = self.conn.their_state
        if state is h11.IDLE:
            if self.phase not in ("head", "idle"):  # the last request was answered: kept alive, idle
                self.phase, self._since = "idle", self.loop.time()
            if self.phase == "idle" and self.conn.trailing_data[0]:
                # The first bytes of a head (uvicorn's keep-alive timer stopped at them): from now
                # on it has as long as a new connection has.
                self.phase, self._since = "head", self.loop.time()
                self._head_timer = self.loop.call_later(self.limits.header_timeout, self._head_late)
        elif state is h11.SEND_BODY:
            if self.phase != "body":  # the head has come; the door times the body
                self._disarm()
                self.phase, self._since = "body", self.loop.time()
        elif self.phase is not None:
            self._disarm()
            self.phase = None  # the request is whole: the server's turn

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_late(self) -> None:
        self._head_timer = None
        if self.phase == "head" and self.transport is not None and not self.transport.is_closing():
            self.let_go()

    # -- a client that reads nothing -------------------------------------------------------------------

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._stalled_since is None:
            self._stalled_since = self.loop.time()
            self._stall_timer = self.loop.call_later(self.limits.header_timeout, self._stalled)

    def resume_writing(self) -> None:
        super().resume_writing()
        self._stalled_since = None
        if self._stall_timer is not None:
            self._stall_timer.cancel()
            self._stall_timer = None

    def _stalled(self) -> None:
        self._stall_timer = None
        if self.transport is not None and self._stalled_since is not None:
            self.let_go()  # even when closing already: a close waits for its client to read, forever


def _too_large(pending: bytes, data: bytes = b"") -> bool:
    """Whether a head of which `pending` came before and `data` now, has gone past MAX_HEAD
    without ending (the bytes after its end are a body, or the next request)."""
    if len(pending) + len(data) <= MAX_HEAD:
        return False
    return HEAD_END.search((pending + data)[:MAX_HEAD]) is None
