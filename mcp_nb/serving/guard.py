"""The door of a served kernel: every HTTP request passes these checks before the MCP transport sees it.

In order: the Host header (421 when it names another server: DNS rebinding), the Origin
header (403 when a web page of another origin sent it), the bearer token (401, compared
in constant time), the body's declared size (413). A refused request never reaches the
SDK's transport, so no tool runs and no call is recorded; it is counted in `Refusals`,
which the serving handle shows.

Behind this door the SDK's transport checks Host and Origin again, with the same lists,
and caps the body it reads at the same size: a body sent without a declared size (chunked)
that grows past it gets the SDK's 413 before anything parses it, and is counted too (the
SDK answers 413 for nothing else).

After every response has left, the door calls `answered` (the history records the calls
it answered then, off the answer's path). The door also knows the requests it let in:
`end_requests()` ends those still running when serving stops (a 2026-07-28 call is one
request, outside any session the SDK would end), each answered or cut off cleanly, so its
call is recorded as cancelled and nothing is left running.
"""

from __future__ import annotations

import asyncio
import hmac
import threading
from collections import Counter
from typing import Callable

from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_nb.serving.policy import Policy

# reason -> (status, body); the reasons are the keys of `Refusals`
REFUSED = {
    "host": (421, "Invalid Host header"),
    "origin": (403, "Invalid Origin header"),
    "token": (401, "Missing or invalid bearer token"),
    "body": (413, "Request body too large"),
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

    def __init__(self, app: ASGIApp, policy: Policy, refusals: Refusals, answered: Callable[[], None] | None = None) -> None:
        self.app = app
        self.policy = policy
        self.refusals = refusals
        self.answered = answered  # called after every response has left (the history settles then)
        self._token = policy.token.encode() if policy.token is not None else None
        # The requests let in and still running: each one's task (uvicorn runs a request in a task
        # of its own), and whether `end_requests` has cancelled it. A task, not an anyio cancel
        # scope: a scope's entry and exit cost as much as every check of this door together, on
        # every request, for the one moment serving stops.
        self._in_flight: dict[asyncio.Task, bool] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # uvicorn runs with no lifespan and no WebSocket: nothing else comes
            await self.app(scope, receive, send)
            return
        reason = self.refusal(scope["headers"])
        if reason is not None:
            await self.refuse(reason, scope, receive, send)
            return
        await self._admitted(scope, receive, send)

    def refusal(self, headers: list[tuple[bytes, bytes]]) -> str | None:
        """Why a request with these (raw ASGI) headers is refused, or None."""
        # Names come lowercased. The first of a repeated header counts, as for the SDK's check
        # behind this door: read backwards into a dict, the first one is written last.
        first = dict(reversed(headers))
        host, origin = first.get(b"host"), first.get(b"origin")
        authorization, length = first.get(b"authorization"), first.get(b"content-length")
        # Exact matches, as the SDK makes them.
        if host is None or host.decode("latin-1") not in self.policy.hosts:
            return "host"
        if origin is not None and origin.decode("latin-1") not in self.policy.origins:
            return "origin"
        if self._token is not None and not self._authorized(authorization or b""):
            return "token"
        if length is not None and length.isdigit() and int(length) > self.policy.max_body:
            return "body"
        return None

    def _authorized(self, header: bytes) -> bool:
        scheme, _, presented = header.partition(b" ")
        # compare_digest's time does not depend on where the first difference is, so a
        # caller cannot guess the token a character at a time.
        matches = hmac.compare_digest(presented.strip(), self._token)
        return scheme.lower() == b"bearer" and matches

    async def refuse(self, reason: str, scope: Scope, receive: Receive, send: Send) -> None:
        self.refusals.add(reason)
        status, text = REFUSED[reason]
        headers = {"WWW-Authenticate": 'Bearer realm="mcp_nb"'} if reason == "token" else None
        await Response(text, status_code=status, headers=headers, media_type="text/plain")(scope, receive, send)

    def end_requests(self) -> None:
        """End every request still running (on the loop, when serving stops)."""
        for task in list(self._in_flight):
            self._in_flight[task] = True
            task.cancel()

    async def _admitted(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = finished = False

        async def watch(message) -> None:
            nonlocal started, finished
            if message["type"] == "http.response.start":
                started = True
                if message["status"] == 413:  # the SDK's cap, on a body that did not declare its size
                    self.refusals.add("body")
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                finished = True
                await send(message)
                if self.answered is not None:
                    self.answered()
                return
            await send(message)

        task = asyncio.current_task()
        in_flight = self._in_flight
        in_flight[task] = False
        try:
            await self.app(scope, receive, watch)
            ended = in_flight.pop(task)
            if ended:  # cancelled by end_requests(), but the app answered anyway: the count stays even
                task.uncancel()
            return
        except asyncio.CancelledError:
            # The task is suspended inside the app whenever end_requests() runs (nothing here
            # awaits outside it), so the cancellation is always delivered in there.
            if not in_flight.pop(task, False) or task.uncancel() > 0:
                raise  # not ours, or somebody else's too (uvicorn's own shutdown)
        except BaseException:
            in_flight.pop(task, None)
            raise
        # Ended by end_requests(): answer, or close what was begun.
        if not started:
            await Response("Serving stopped", status_code=503, media_type="text/plain")(scope, receive, send)
        elif not finished:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
