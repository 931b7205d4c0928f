"""The door of a served kernel: every HTTP request passes these checks before the MCP transport sees it.

In order: the Host header (421 when it names another server: DNS rebinding), the Origin
header (403 when a web page of another origin sent it), the bearer token (401, compared
in constant time), the body's declared size (413). A refused request never reaches the
SDK's transport, so no tool runs and no call is recorded; it is counted in `Refusals`,
which the serving handle shows. Its answer's body is JSON naming the reason (`answers`);
the 401 also says, in `WWW-Authenticate`, what RFC 6750 has it say (`error="invalid_token"`
when a token was sent and refused, no error code when none was). A
refusal closes the connection (`Connection: close`): a body sent after it is neither read
nor waited for, and a client refused holds no connection open between requests (where it
would keep a place of `limits.Limits` that only a slow client's gives up).

Then the door reads the body itself, whole, before the SDK sees the request: within
`body_timeout` seconds, plus a second for every `MIN_BODY_RATE` bytes it brings (408
otherwise: a body trickled a byte at a time would hold its connection, and a task, as long
as its client liked), and at most `max_body` bytes however it is sent (413: a chunked body
declares no size). The SDK then reads what the door read; a client that goes away in the
middle has nothing sent to it and runs nothing. Behind the door the SDK's transport checks
Host and Origin again, with the same lists, and caps the body again.

After every response has left, the door calls `answered` (the history records the calls
it answered then, off the answer's path). The door also knows the requests it let in:
`end_requests()` ends those still running when serving stops (a 2026-07-28 call is one
request, outside any session the SDK would end), each answered or cut off cleanly, so its
call is recorded as cancelled and nothing is left running.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import threading
from collections import Counter
from collections.abc import Callable

from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_nb.mistakes import read_json
from mcp_nb.serving import answers
from mcp_nb.serving.limits import DEFAULT_HEADER_TIMEOUT, MIN_BODY_RATE
from mcp_nb.serving.policy import Policy

# reason -> (status, error code, what the client is told); the reasons are the keys of `Refusals`
REFUSED = {
    "host": (421, "misdirected_request", "the Host header does not name this server"),
    "origin": (403, "forbidden_origin", "the Origin header names another site"),
    "token": (401, "invalid_token", "a bearer token is required (Authorization: Bearer <token>); none was sent"),
    "wrong token": (401, "invalid_token", "the bearer token sent is not this server's (it changes every time the server starts)"),
    "body": (413, "body_too_large", "the request body is over this server's limit"),
    "slow": (408, "request_timeout", "the request body was not received in time"),
}
REALM = b'Bearer realm="mcp_nb"'
STOPPED = ("serving_stopped", "serving was stopped")


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

    def __init__(
        self,
        app: ASGIApp,
        policy: Policy,
        refusals: Refusals,
        answered: Callable[[], None] | None = None,
        body_timeout: float = DEFAULT_HEADER_TIMEOUT,
    ) -> None:
        self.app = app
        self.policy = policy
        self.refusals = refusals
        self.answered = answered  # called after every response has left (the history settles then)
        self.body_timeout = body_timeout
        self._token = policy.token.encode() if policy.token is not None else None
        # The requests let in and still running: each one's task (uvicorn runs a request in a task
        # of its own), and whether `end_requests` has cancelled it. A task, not an anyio cancel
        # scope: a scope's entry and exit cost as much as every check of this door together, on
        # every request, for the one moment serving stops.
        self._in_flight: dict[asyncio.Task, bool] = {}
        # The (session, request id) of each request in flight on a 2025-11-25 session: the SDK
        # sends an answer by its request's id, so a second request with an id still in flight
        # took the first one's stream, and the first client waited for an answer that had gone
        # (while the history said it was answered). Such a request is refused (409) instead.
        self._ids: set[tuple[bytes, str]] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # uvicorn runs with no lifespan and no WebSocket: nothing else comes
            await self.app(scope, receive, send)
            return
        reason = self.refusal(scope["headers"])
        if reason is not None:
            await self.refuse(reason, send)
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
            return "token" if not authorization else "wrong token"
        if length is not None and length.isdigit() and int(length) > self.policy.max_body:
            return "body"
        return None

    def _authorized(self, header: bytes) -> bool:
        scheme, _, presented = header.partition(b" ")
        # compare_digest's time does not depend on where the first difference is, so a
        # caller cannot guess the token a character at a time.
        matches = hmac.compare_digest(presented.strip(), self._token)
        return scheme.lower() == b"bearer" and matches

    async def refuse(self, reason: str, send: Send) -> None:
        """Answer a refused request: its status, and a JSON body saying why; the connection closes."""
        self.refusals.add("token" if reason == "wrong token" else reason)
        status, code, text = REFUSED[reason]
        body = answers.error_body(code, text)
        extra = []
        if status == 401:
            # RFC 6750, 3.1: no error code when no credentials were sent; invalid_token when they were refused.
            challenge = REALM + (
                b', error="invalid_token", error_description="the bearer token was refused"' if reason == "wrong token" else b""
            )
            extra.append((b"www-authenticate", challenge))
        headers = answers.headers(body, *extra)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": False})

    async def _body(self, scope: Scope, receive: Receive, send: Send) -> tuple[Receive | None, bytes]:
        """Read the request's body whole within its time and size; returns what the app is to
        receive instead of `receive` (None: refused, or its client went away), and the body."""
        if not _body_may_follow(scope["headers"]):
            return receive, b""
        loop = asyncio.get_running_loop()
        started = loop.time()
        chunks, size = [], 0
        try:
            async with asyncio.timeout_at(started + self.body_timeout) as deadline:
                while True:
                    message = await receive()
                    if message["type"] != "http.request":
                        return None, b""  # http.disconnect: nobody is left to answer
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > self.policy.max_body:
                        await self.refuse("body", send)
                        return None, b""
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        break
                    deadline.reschedule(started + self.body_timeout + size / MIN_BODY_RATE)
        except TimeoutError:
            await self.refuse("slow", send)
            return None, b""
        body = b"".join(chunks)
        whole: list[dict] = [{"type": "http.request", "body": body, "more_body": False}]

        async def replay():
            return whole.pop() if whole else await receive()

        return replay, body

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
        claimed = None
        try:
            receive, body = await self._body(scope, receive, send)
            if receive is None:
                in_flight.pop(task)
                return
            claimed = self._claim_id(scope, body)
            if claimed is False:
                in_flight.pop(task)
                await self._refuse_duplicate(send)
                return
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
        finally:
            if claimed:
                self._ids.discard(claimed)
        # Ended by end_requests(): answer, or close what was begun.
        if not started:
            body = answers.error_body(*STOPPED)
            await send({"type": "http.response.start", "status": 503, "headers": answers.headers(body)})
            await send({"type": "http.response.body", "body": body, "more_body": False})
        elif not finished:
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    def _claim_id(self, scope: Scope, body: bytes) -> tuple[bytes, str] | None | bool:
        """The (session, id) this request now holds, None when it holds none (no session, no
        request), False when another request in flight on its session holds that id."""
        if scope["method"] != "POST" or not body:
            return None
        session = next((value for name, value in scope["headers"] if name == b"mcp-session-id"), None)
        if session is None:
            return None  # 2026-07-28, or an initialize: each request has its own answer stream
        key = _request_key(body)
        if key is None:
            return None
        claimed = (session, key)
        if claimed in self._ids:
            return False
        self._ids.add(claimed)
        return claimed

    async def _refuse_duplicate(self, send: Send) -> None:
        self.refusals.add("duplicate id")
        body = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: another request with this id is in flight on this session"}}'
        await send({"type": "http.response.start", "status": 409, "headers": answers.headers(body)})
        await send({"type": "http.response.body", "body": body, "more_body": False})


def _request_key(body: bytes) -> str | None:
    """A request's id as a key (its JSON text: 5 and "5" are two ids), or None for what is no request."""
    if b'"id"' not in body:
        return None  # a notification or a response carries no id a request could share
    try:
        message = read_json(body)
    except ValueError:
        return None  # the SDK answers what is no JSON itself
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return None
    return json.dumps(message["id"], sort_keys=True)


def _body_may_follow(headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether a request with these headers may carry a body (a size other than 0, or chunks)."""
    for name, value in headers:
        if name == b"transfer-encoding" or (name == b"content-length" and value.strip() != b"0"):
            return True
    return False
