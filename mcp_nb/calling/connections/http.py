"""The streamable HTTP transport: the SDK's, with what it drops about each answer kept, and what
it would choke on taken out (`inbound.Guarded`).

The SDK's transport turns an HTTP error answer into a stand-in message ("Unauthorized"); the
call's record wants the status and the body the server sent. Each answer's status is noted,
each error answer's status and body (bounded) with the request it answered, and each step of
an OAuth flow (where it went and what came back: never a body, a token or a query).
"""

from __future__ import annotations

import collections
import contextlib
import logging
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, cast

import httpx2
from mcp.client.streamable_http import streamable_http_client

from mcp_nb import sdk_compat
from mcp_nb.calling.connections.inbound import Guarded
from mcp_nb.calling.oauth import step_of
from mcp_nb.mistakes import read_json

if TYPE_CHECKING:  # the SDK names no public alias for a transport's two streams
    from mcp.client._transport import TransportStreams

log = logging.getLogger(__package__)

ERROR_BODY_CHARS = 2000  # what is kept of an error answer's body: enough for any error message, not a page


class HttpError:
    """An HTTP error answer: the request's method and params, the status, and the start of the body."""

    __slots__ = ("method", "params", "status", "body")

    def __init__(self, method: str, params: dict[str, object], status: int, body: str) -> None:
        self.method, self.params, self.status, self.body = method, params, status, body

    def answers(self, method: str, params: dict[str, object]) -> bool:
        """Whether this answered the request `method` whose params hold `params`."""
        return self.method == method and all(self.params.get(k) == v for k, v in params.items())


def _request_of(content: bytes) -> tuple[str, dict[str, object]]:
    """The JSON-RPC method and params a request's body sent ("" and {} for a body that is no request)."""
    try:
        sent: object = read_json(content or b"{}")
    except ValueError:
        return "", {}
    if not isinstance(sent, dict):
        return "", {}
    request = cast("dict[str, object]", sent)
    method, params = request.get("method"), request.get("params")
    return (method if isinstance(method, str) else ""), (cast("dict[str, object]", params) if isinstance(params, dict) else {})


class HttpTransport:
    """The SDK's streamable HTTP transport, with the user's headers on every request, and each
    error answer's status and body noted (`errors`), every answer's status (`statuses`)."""

    def __init__(
        self,
        url: str,
        headers: dict[str, str],
        auth: httpx2.Auth | None = None,
        step: Callable[[str], None] | None = None,
        said: Callable[[str], None] = lambda line: None,
    ) -> None:
        self.url, self.headers, self.auth = url, headers, auth
        self.said = said  # what mcp_nb took out of the server's messages (`inbound.Guarded`), said on the connection
        self.errors: collections.deque[HttpError] = collections.deque(maxlen=64)  # newest last
        self.statuses: collections.deque[int] = collections.deque(maxlen=32)  # every answer's, newest last
        self.step = step  # files each OAuth step in the connection's log
        self._stack: contextlib.AsyncExitStack | None = None

    async def _answered(self, response: httpx2.Response) -> None:
        self.statuses.append(response.status_code)
        request = response.request
        if self.step is not None:
            try:
                step = step_of(request)
            except Exception:  # noqa: BLE001 - a request whose body cannot be read is no step of the flow
                step = None
            if step is not None:  # where it went and what came back; never a body, a token or a query
                url = request.url
                self.step(f"{step}: {request.method} {url.scheme}://{url.netloc.decode()}{url.path} -> {response.status_code}")
        if response.status_code < 400:
            return
        try:
            body = (await response.aread()).decode("utf-8", errors="replace")[:ERROR_BODY_CHARS]
        except Exception:  # noqa: BLE001 - the status alone still says what happened
            log.debug("could not read the body of an HTTP %s answer", response.status_code, exc_info=True)
            body = ""
        method, params = _request_of(request.content)
        self.errors.append(HttpError(method, params, response.status_code, body))

    def error_for(self, method: str, params: dict[str, object]) -> HttpError | None:
        """The error answer to the request `method` with `params`, taken (newest first), if it had one."""
        for i in range(len(self.errors) - 1, -1, -1):
            error = self.errors[i]
            if error.answers(method, params):
                del self.errors[i]
                return error
        return None

    async def __aenter__(self) -> TransportStreams:
        self._stack = contextlib.AsyncExitStack()
        try:
            http = sdk_compat.http_client(self.headers, self.auth)
            http.event_hooks["response"].append(self._answered)
            http = await self._stack.enter_async_context(http)
            read, write = await self._stack.enter_async_context(streamable_http_client(self.url, http_client=http))
            return cast("TransportStreams", (Guarded(read, self.said), write))
        except BaseException:
            await self._stack.aclose()
            raise

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> bool | None:
        if self._stack is not None:
            return await self._stack.__aexit__(kind, error, traceback)
        return None
