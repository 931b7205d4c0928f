"""What slow and numerous clients may hold of a served kernel: a deadline for each request's head,
and a cap on the connections open at once.

The server runs in the kernel's process, so each connection is one of the kernel's own file
descriptors, and uvicorn bounds neither: its keep-alive timer runs only between requests,
and a connection that opens and sends nothing, or half a request head, was held until the
client went away (150 such connections were all still open after 6 s). `BoundedH11` is
uvicorn's HTTP/1.1 protocol with both bounds added, one instance per connection:

- **the head's deadline** (`header_timeout`, seconds): from the moment a connection opens,
  and on a kept-alive connection from the first byte of its next request, the request's
  head must arrive whole within it. Otherwise a connection that had begun one gets `408
  Request Timeout`, one that sent nothing is closed without a word. Once the head has come
  the request belongs to the app (a long SSE stream, a slow tool): no deadline then. The
  head's size is bounded by h11 already (16 KiB), the body's by the door (`max_body`).
- **the cap** (`max_connections`): a connection past it never reaches the app. It gets `503
  Service Unavailable` (`Connection: close`, `Retry-After`) as soon as its head arrives, and
  is closed if the head does not come within `REFUSE_WITHIN_S` (the shorter of that and the
  head's deadline). Those waiting for their 503 are capped too, at `max_connections` more:
  past both, a connection is dropped the moment it is accepted. So however many connect,
  the server holds at most twice `max_connections` of the kernel's descriptors, and each
  connection it drops or closes gives its descriptor back at once.

Every connection refused or timed out is counted in the handle's `refused`
(`connections`, `slow`), beside the door's reasons. No tool runs for any of them.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any, Callable

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from mcp_nb.mistakes import BadValue

DEFAULT_MAX_CONNECTIONS = 64
DEFAULT_HEADER_TIMEOUT = 10.0  # seconds
REFUSE_WITHIN_S = 1.0  # how long a connection past the cap may take to send the head its 503 answers
RETRY_AFTER_S = 1


def check_limits(max_connections: Any, header_timeout: Any) -> None:
    """Refuse limits that cannot be served with, before anything listens."""
    if isinstance(max_connections, bool) or not isinstance(max_connections, int) or max_connections < 1:
        raise BadValue(f"max_connections must be a whole number of connections, 1 or more, got {max_connections!r}")
    if (
        isinstance(header_timeout, bool)
        or not isinstance(header_timeout, (int, float))
        or not math.isfinite(header_timeout)
        or header_timeout <= 0
    ):
        raise BadValue(f"header_timeout must be a positive, finite number of seconds, got {header_timeout!r}")


def _plain(status: int, reason: str, text: str, *extra: tuple[bytes, bytes]) -> tuple[list[tuple[bytes, bytes]], bytes]:
    body = text.encode()
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
        *extra,
    ]
    return headers, body


class Limits:
    """The bounds of one served kernel, and the connections it holds now (on the loop only)."""

    def __init__(self, max_connections: int, header_timeout: float, refused: Callable[[str], None]) -> None:
        check_limits(max_connections, header_timeout)
        self.max_connections = max_connections
        self.header_timeout = float(header_timeout)
        self.refused = refused  # counts a connection refused ("connections") or timed out ("slow")
        self.admitted: set[BoundedH11] = set()
        self.refusing: set[BoundedH11] = set()
        text = f"Too many connections (this server takes {max_connections} at once); try again shortly"
        self._busy = _plain(503, "Service Unavailable", text, (b"retry-after", str(RETRY_AFTER_S).encode()))
        slow = f"Request head not received within {self.header_timeout:g} s"
        headers, body = _plain(408, "Request Timeout", slow)
        self.timed_out = b"HTTP/1.1 408 Request Timeout\r\n" + b"".join(n + b": " + v + b"\r\n" for n, v in headers)
        self.timed_out += b"\r\n" + body

    def protocol(self) -> Callable[..., asyncio.Protocol]:
        """What uvicorn's `Config(http=...)` takes: it makes each connection's protocol."""

        def make(config: Any, server_state: Any, app_state: Any, _loop: Any = None) -> BoundedH11:
            return BoundedH11(config, server_state, app_state, _loop, limits=self)

        return make

    async def busy(self, scope: Any, receive: Any, send: Any) -> None:
        """The app a connection past the cap gets: 503, and the connection closes."""
        headers, body = self._busy
        await send({"type": "http.response.start", "status": 503, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": False})


class BoundedH11(H11Protocol):
    """uvicorn's HTTP/1.1 protocol for one connection, within `Limits`."""

    def __init__(self, config: Any, server_state: Any, app_state: Any, _loop: Any = None, *, limits: Limits) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.limits = limits
        self._head_timer: asyncio.TimerHandle | None = None

    # -- the cap ------------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        limits = self.limits
        if len(limits.admitted) < limits.max_connections:
            limits.admitted.add(self)
            self._arm(limits.header_timeout)
            return
        limits.refused("connections")
        if len(limits.refusing) >= limits.max_connections:
            transport.abort()  # past both caps: its descriptor is given back now
            return
        limits.refusing.add(self)
        self.app = limits.busy  # its head, when it comes, is answered 503 and goes no further
        self._arm(min(REFUSE_WITHIN_S, limits.header_timeout))

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.limits.admitted.discard(self)
        self.limits.refusing.discard(self)
        super().connection_lost(exc)

    # -- the head's deadline ------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch_head()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # may start the next request, pipelined behind this one
        self._watch_head()

    def _watch_head(self) -> None:
        """Time the head of the request the connection is sending now, if it has begun one."""
        if self.transport is None or self.transport.is_closing():
            self._disarm()
        elif self.conn.their_state is not h11.IDLE:
            self._disarm()  # its head has come: the request is the app's
        elif self._head_timer is None and self.conn.trailing_data[0]:
            # The first bytes of a head on a kept-alive connection (uvicorn's keep-alive timer
            # stopped at them): from now it has as long as a new connection has.
            self._arm(self.limits.header_timeout)

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._head_timer = self.loop.call_later(seconds, self._head_late)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_late(self) -> None:
        self._head_timer = None
        transport = self.transport
        if transport is None or transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        if self in self.limits.admitted:
            self.limits.refused("slow")
            if self.conn.trailing_data[0]:  # a request was begun: say why it ends
                transport.write(self.limits.timed_out)
        transport.close()
