"""One JSON POST to a model's endpoint, the way both adapters need it: bounded retries, one-line errors.

Raw HTTP with httpx2 (the MCP SDK's own HTTP client, so no dependency is added), rather than the
vendors' client libraries: what is logged stays mcp_nb's to decide (no request options or headers
at DEBUG; `registering.log_secrets` scrubs what httpx2 logs), a retry never waits past what the
episode has left (a vendor client's retries know nothing of its budget), and no second copy of
httpx, pydantic models and the vendors' typed errors is loaded for two documented JSON shapes.

Retried, at most `retries` times: a 429 that says when to come back (`retry-after`), a 5xx
(Anthropic's 529 "overloaded" included) and a connection that failed before any answer, waiting
`retry-after` when the answer gives it, else 0.5 s, 1 s, 2 s... A 429 without `retry-after` (a
spending limit, not a rate) is not retried; nor is any other status, a timeout (the model took
its time: a retry would take it again) or a reply that is not JSON. A wait that would end past
the caller's deadline is not waited: the error says what was asked.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx2

from mcp_nb.mistakes import one_line, read_json
from mcp_nb.models.errors import ModelError
from mcp_nb.models.keys import scrub

RETRIED_STATUSES = frozenset({500, 502, 503, 504, 529})
FIRST_WAIT_S = 0.5
LONGEST_WAIT_S = 60.0  # a retry-after longer than this is not waited for: the error says it
LARGEST_ANSWER = 32 * 1024 * 1024  # bytes of an answer read; a longer one is refused, not kept
CONNECT_S = 10.0


def where(url: str) -> str:
    """An endpoint's address as messages name it: scheme, host and port, no credentials, no query."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    return f"{parts.scheme}://{host}" + (f":{parts.port}" if parts.port else "")


class Endpoint:
    """POST JSON to `url` with `headers()` (read at each request: a key is never kept here)."""

    def __init__(self, url: str, headers: Callable[[], Mapping[str, str]], retries: int = 2) -> None:
        if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
            raise ValueError(f"retries must be a whole number >= 0, got {retries!r}")
        self.url = url
        self.headers = headers
        self.retries = retries
        self.shown = where(url)

    @contextlib.asynccontextmanager
    async def opened(self) -> AsyncIterator[httpx2.AsyncClient]:
        """A client for the requests of one episode or evaluation, on the loop that runs them."""
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(None, connect=CONNECT_S), follow_redirects=False) as client:
            yield client

    async def post(self, client: httpx2.AsyncClient, body: Mapping[str, Any], seconds: float) -> Any:
        """The decoded JSON answer, within `seconds` in all (retries and their waits included)."""
        deadline = time.monotonic() + seconds
        attempt = 0
        while True:
            attempt += 1
            left = deadline - time.monotonic()
            if left <= 0:
                raise ModelError("timeout", f"{self.shown} did not answer within {seconds:g} s")
            try:
                async with asyncio.timeout(left):
                    status, headers, raw = await self._send(client, body)
            except TimeoutError:
                raise ModelError("timeout", f"{self.shown} did not answer within {seconds:g} s") from None
            except (httpx2.ConnectError, httpx2.RemoteProtocolError, httpx2.ReadError, httpx2.WriteError) as err:
                failure = ModelError("unreachable", f"{self.shown} could not be reached: {_said(err)}")
                wait = FIRST_WAIT_S * 2 ** (attempt - 1)
            except httpx2.HTTPError as err:
                raise ModelError("unreachable", f"{self.shown} could not be reached: {_said(err)}") from None
            else:
                if status < 400:
                    return _decoded(raw, self.shown)
                failure = _status_error(self.shown, status, headers, raw)
                retryable = status in RETRIED_STATUSES or (status == 429 and failure.retry_after is not None)
                if not retryable:
                    raise failure
                wait = failure.retry_after if failure.retry_after is not None else FIRST_WAIT_S * 2 ** (attempt - 1)
            if attempt > self.retries:
                raise failure
            if wait > LONGEST_WAIT_S or time.monotonic() + wait >= deadline:
                failure.args = (
                    f"{failure.args[0]}; it asked to wait {wait:g} s, past the time left ({max(0.0, deadline - time.monotonic()):.3g} s)",
                )
                raise failure
            await asyncio.sleep(wait)

    async def _send(self, client: httpx2.AsyncClient, body: Mapping[str, Any]) -> tuple[int, Any, bytes]:
        content = json.dumps(body, ensure_ascii=False, allow_nan=False).encode()
        headers = {"content-type": "application/json", "accept": "application/json", **self.headers()}
        async with client.stream("POST", self.url, content=content, headers=headers) as answer:
            chunks, size = [], 0
            async for chunk in answer.aiter_bytes():
                size += len(chunk)
                if size > LARGEST_ANSWER:
                    raise ModelError("bad_reply", f"{self.shown} sent more than {LARGEST_ANSWER // 2**20} MB: not read")
                chunks.append(chunk)
            return answer.status_code, answer.headers, b"".join(chunks)


def _said(err: BaseException) -> str:
    return one_line(scrub(f"{type(err).__name__}: {err}" if str(err) else type(err).__name__))


def _decoded(raw: bytes, shown: str) -> Any:
    """The answer's JSON, with every key this process knows taken out of it first: a model (or an
    endpoint) that echoes the key in its words or a tool's arguments puts it nowhere here."""
    text = scrub(raw.decode("utf-8", "replace"))
    try:
        return read_json(text)
    except ValueError:
        raise ModelError(
            "bad_reply", f"{shown} answered with something that is not JSON: {one_line(text, 120) or 'nothing'}"
        ) from None


def _status_error(shown: str, status: int, headers: Any, raw: bytes) -> ModelError:
    """The error an error status means, its message from the body as OpenAI and Anthropic write it."""
    text = raw.decode("utf-8", "replace")
    said = text
    try:
        body = read_json(raw)
    except ValueError:
        body = None
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping):
            kind, message = error.get("type"), error.get("message")
            said = f"{kind}: {message}" if isinstance(kind, str) and kind and message else str(message or kind or text)
        elif isinstance(error, str):
            said = error
    retry_after = _retry_after(headers.get("retry-after")) if status in (429, *RETRIED_STATUSES) else None
    kind = "rate_limited" if status == 429 else "http_error"
    message = f"HTTP {status} from {shown}: {one_line(scrub(said), 200) or 'no reason given'}"
    return ModelError(kind, message, status=status, retry_after=retry_after)


def _retry_after(value: str | None) -> float | None:
    """`retry-after` in seconds: a number of seconds, or an HTTP date."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - time.time()
    return max(0.0, seconds) if seconds == seconds and seconds != float("inf") else None
