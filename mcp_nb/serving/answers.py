"""What a served kernel tells a client whose request it will not serve, whoever refuses it.

Every refusal, at the door (401, 403, 413, 421, 431, 408 for a body) or below it (408 for a
head, 431 for a head read in pieces), is an HTTP status whose body is a JSON-RPC error naming
the reason. An MCP client reads that body: the SDK's client raises the error it holds, with
its message, where a body of plain text leaves it only "Server returned an error response".
The id is null: the request's own id was never read.

A refusal closes its connection (`Connection: close`): the rest of what its client sends is
not read or waited for, and a refused client keeps no connection open.
"""

from __future__ import annotations

import json
from http import HTTPStatus

from mcp_types import CONNECTION_CLOSED, INVALID_REQUEST


def error_body(text: str, code: int = INVALID_REQUEST) -> bytes:
    """A JSON-RPC error answering no particular request."""
    return json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": text}}).encode()


def headers(body: bytes, *extra: tuple[bytes, bytes]) -> list[tuple[bytes, bytes]]:
    """The headers of a refusal carrying `body` (ASGI's raw form); it closes the connection."""
    return [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *extra, (b"connection", b"close")]


def raw(status: int, text: str, *extra: tuple[bytes, bytes]) -> bytes:
    """A whole HTTP/1.1 response, for a connection no app has seen; it closes the connection."""
    body = error_body(text)
    head = f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n".encode()
    head += b"".join(name + b": " + value + b"\r\n" for name, value in headers(body, *extra))
    return head + b"\r\n" + body


__all__ = ["CONNECTION_CLOSED", "INVALID_REQUEST", "error_body", "headers", "raw"]
