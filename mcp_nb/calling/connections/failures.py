"""What a failed connection says: one bounded line, in the terms of what went wrong.

Not a traceback, nor the whole of what a peer sent (an 8 MB error page): anyio's groups opened,
what the network met said as what it means (nobody listening, TLS to a plain server, a name
that does not resolve), an HTTP refusal said as what it means here before the server's own
words, and every peer's text made safe (`mistakes.one_line`).
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Sequence
from typing import cast

from mcp_nb.calling.connections.http import HttpError
from mcp_nb.calling.connections.spec import ServerSpec, url_secrets
from mcp_nb.calling.oauth import answer_text, find
from mcp_nb.mistakes import LINE_LIMIT, one_line


def reason(err: BaseException) -> str:
    """The innermost useful message of an exception, in one bounded line: anyio's groups
    ("unhandled errors in a TaskGroup") opened, what the transport met said as what it means,
    and a peer's words (a server's error message) made safe (`one_line`)."""
    inner = _inside(err)
    while len(inner) == 1:
        err = inner[0]
        inner = _inside(err)
    if inner:
        return one_line("; ".join(reason(e) for e in inner), 2 * LINE_LIMIT)
    met = _met(err)
    if met is not None:
        return met
    line = one_line(err)
    return f"{type(err).__name__}: {line}" if line else type(err).__name__


def _inside(err: BaseException) -> tuple[BaseException, ...]:
    """What an exception group holds (nothing, for any other exception)."""
    if isinstance(err, BaseExceptionGroup):
        return cast("BaseExceptionGroup[BaseException]", err).exceptions
    return ()


def _met(err: BaseException) -> str | None:
    """What the network said when nothing MCP could answer: nobody listening, a TLS handshake
    with a plain server, a name that does not resolve."""
    refused = find(err, lambda e: isinstance(e, ConnectionRefusedError))
    if refused is not None:
        return "nothing is listening there (connection refused)"
    tls = find(err, lambda e: isinstance(e, ssl.SSLError))
    if tls is not None:
        plain = any(words in str(tls) for words in ("WRONG_VERSION_NUMBER", "record layer failure", "http request"))
        return f"the TLS handshake failed ({one_line(tls)})" + (
            "; the server speaks plain HTTP: connect with http://" if plain else ""
        )
    unknown = find(err, lambda e: isinstance(e, socket.gaierror))
    if unknown is not None:
        return f"the server's host name does not resolve ({one_line(unknown)})"
    return None


def http_reason(spec: ServerSpec, error: HttpError) -> str:
    """An HTTP error answer at connect, said as what it means here, then in the server's
    words (`answer_text`): `HTTP 401: the token was refused; the server said: ...`."""
    status = error.status
    headers = {key.lower(): value for key, value in spec.headers.items()}
    bearer = spec.oauth is not None or headers.get("authorization", "").lower().startswith("bearer ")
    given = bearer or spec.auth is not None or "authorization" in headers or bool(url_secrets(spec.url))
    if status == 401:
        if not given:
            meaning = "the server asks for credentials and none were sent (connect with headers={'Authorization': 'Bearer ...'} or auth=)"
        else:
            meaning = "the token was refused" if bearer else "the credentials were refused"
    elif status == 403:
        meaning = "the server refused the request" + (" with these credentials" if given else "")
    elif status == 404:
        meaning = "nothing answers at this path (a server's MCP endpoint is often .../mcp)"
    elif status == 405:
        meaning = "this URL does not take MCP's requests (is it the server's MCP endpoint?)"
    elif status >= 500:
        meaning = "the server failed"
    else:
        meaning = "the server refused the request"
    words = answer_text(error.body) if error.body else ""
    return f"HTTP {status}: {meaning}" + (f"; the server said: {words}" if words else "")


def refusal(statuses: Sequence[int], errors: Sequence[HttpError]) -> HttpError | None:
    """The last 401 or 403 answer, when nothing succeeded after it: the server refused the
    credentials, whatever the SDK tried next (at 2026-07-28 it falls back to the handshake,
    which a modern server answers with a 400 that says nothing of why)."""
    answered = list(statuses)
    last = max((i for i, status in enumerate(answered) if status in (401, 403)), default=None)
    if last is None or any(status < 300 for status in answered[last + 1 :]):
        return None
    return next((e for e in reversed(errors) if e.status in (401, 403)), None)
