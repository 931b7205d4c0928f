"""The door of a served kernel: every HTTP request passes these checks before the MCP transport sees it.

In order: the Host header (421 when it names another server: DNS rebinding), the Origin
header (403 when a web page of another origin sent it), the bearer token (401, compared
in constant time), the body's size (413, before it is parsed). A refused request never
reaches the SDK's transport, so no tool runs and no call is recorded; it is counted in
`Refusals`, which the serving handle shows.

The SDK's transport checks Host and Origin again behind this door, with the same lists.

The door also knows the requests it let in: `end_requests()` ends those still running when
serving stops (a 2026-07-28 call is one request, outside any session the SDK would end), each
answered or cut off cleanly, so its call is recorded as cancelled and nothing is left running.
"""

from __future__ import annotations

import hmac
import threading
from collections import Counter

import anyio

from mcp.server.transport_security import RequestBodyLimitMiddleware
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from .policy import Policy

# reason -> (status, body); the reasons are the keys of `Refusals`
REFUSED = {
    "host": (421, "Invalid Host header"),
    "origin": (403, "Invalid Origin header"),
    "token": (401, "Missing or invalid bearer token"),
    "body": (413, "Request body too large"),
    "websocket": (403, "WebSocket is not served"),
}


class Refusals:
    """How many requests were refused, by reason (thread-safe: counted on the loop, read anywhere)."""

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def add(self, reason: str) -> None:
        with self._lock:
            self._counts[reason] += 1

    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    @property
    def total(self) -> int:
        with self._lock:
            return sum(self._counts.values())


class Guard:
    """An ASGI app: `policy`'s checks in front of `app`."""

    def __init__(self, app: ASGIApp, policy: Policy, refusals: Refusals) -> None:
        self.app = app
        self.policy = policy
        self.refusals = refusals
        self._token = policy.token.encode() if policy.token is not None else None
        self._in_flight: set[anyio.CancelScope] = set()  # the requests let in and still running

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "websocket":
            self.refusals.add("websocket")
            await send({"type": "websocket.close", "code": 1008})
            return
        if kind != "http":
            await self.app(scope, receive, send)
            return
        reason = self.refusal(Headers(scope=scope))
        if reason is not None:
            await self.refuse(reason, scope, receive, send)
            return
        await self._within_limit(scope, receive, send)

    def refusal(self, headers: Headers) -> str | None:
        """Why a request with these headers is refused, or None."""
        # Exact matches, as the SDK's own check behind this door makes them.
        if headers.get("host", "") not in self.policy.hosts:
            return "host"
        origin = headers.get("origin")
        if origin is not None and origin not in self.policy.origins:
            return "origin"
        if self._token is not None and not self._authorized(headers.get("authorization", "")):
            return "token"
        return None

    def _authorized(self, header: str) -> bool:
        scheme, _, presented = header.partition(" ")
        # compare_digest's time does not depend on where the first difference is, so a
        # caller cannot guess the token a character at a time.
        matches = hmac.compare_digest(presented.strip().encode(), self._token)
        return scheme.lower() == "bearer" and matches

    async def refuse(self, reason: str, scope: Scope, receive: Receive, send: Send) -> None:
        self.refusals.add(reason)
        status, text = REFUSED[reason]
        headers = {"WWW-Authenticate": 'Bearer realm="mcp_nb"'} if reason == "token" else None
        await Response(text, status_code=status, headers=headers, media_type="text/plain")(scope, receive, send)

    def end_requests(self) -> None:
        """End every request still running (on the loop, when serving stops)."""
        for running in list(self._in_flight):
            running.cancel()

    async def _within_limit(self, scope: Scope, receive: Receive, send: Send) -> None:
        # The SDK's limit reads the body (or its Content-Length) before the transport runs,
        # and answers 413 itself; a 413 sent before the transport was reached is a refusal.
        reached = started = finished = False

        async def transport(scope: Scope, receive: Receive, send: Send) -> None:
            nonlocal reached
            reached = True
            await self.app(scope, receive, send)

        async def watch(message) -> None:
            nonlocal started, finished
            if message["type"] == "http.response.start":
                started = True
                if not reached and message["status"] == 413:
                    self.refusals.add("body")
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                finished = True
            await send(message)

        with anyio.CancelScope() as running:
            self._in_flight.add(running)
            try:
                await RequestBodyLimitMiddleware(transport, self.policy.max_body)(scope, receive, watch)
            finally:
                self._in_flight.discard(running)
        if running.cancelled_caught:  # ended by end_requests(): answer, or close what was begun
            if not started:
                await Response("Serving stopped", status_code=503, media_type="text/plain")(scope, receive, send)
            elif not finished:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
