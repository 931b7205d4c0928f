"""What a served kernel tells a client whose request it will not serve, whoever refuses it.

Every refusal, at the door (401, 403, 413, 421, 408 for a body) or below it (408 for a head,
431), is an HTTP status whose body is JSON naming the reason, in the shape RFC 6750 gives a
refused bearer token (and the SDK's own auth middleware answers with): `{"error": CODE,
"error_description": TEXT}`. It is not a JSON-RPC error on purpose: an MCP client reads a
JSON-RPC error in a 4xx body as the server's answer to its request, and mcp_nb's own client
then took a refused connection for a server offering nothing (at 2026-07-28, where no
handshake comes first); a refusal must stay an HTTP failure.

A refusal closes its connection (`Connection: close`): the rest of what its client sends is
not read or waited for, and a refused client keeps no connection open.
"""

from __future__ import annotations

import json
from http import HTTPStatus


def error_body(code: str, text: str) -> bytes:
    """What a refused client is told: a short code and a sentence."""
    return json.dumps({"error": code, "error_description": text}).encode()


def headers(body: bytes, *extra: tuple[bytes, bytes]) -> list[tuple[bytes, bytes]]:
    """The headers of a refusal carrying `body` (ASGI's raw form); it closes the connection."""
    return [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *extra,
        (b"connection", b"close"),
    ]


def raw(status: int, code: str, text: str) -> bytes:
    """A whole HTTP/1.1 response, for a connection no app has seen; it closes the connection."""
    body = error_body(code, text)
    head = f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n".encode()
    head += b"".join(name + b": " + value + b"\r\n" for name, value in headers(body))
    return head + b"\r\n" + body
