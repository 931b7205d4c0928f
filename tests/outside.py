"""Outside clients of a served kernel, for the tests: the SDK's client over HTTP, and raw HTTP requests."""

from __future__ import annotations

import contextlib
import http.client
import json
from urllib.parse import urlsplit

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw-test", "version": "1"}},
}


@contextlib.asynccontextmanager
async def client(url: str, token: str | None, mode: str = "auto", **options):
    """The SDK's `Client` over streamable HTTP, sending the bearer token (mode "legacy": a 2025 session)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode, **options) as session:
            yield session


def post(url: str, body: bytes | dict, headers: dict[str, str] | None = None, chunked: bool = False):
    """One raw POST with exactly these headers (Host included when given); returns (status, headers, text)."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    sent = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **(headers or {})}
    try:
        connection.putrequest("POST", parts.path, skip_host="Host" in sent, skip_accept_encoding=True)
        for name, value in sent.items():
            connection.putheader(name, value)
        if chunked:
            connection.putheader("Transfer-Encoding", "chunked")
            connection.endheaders()
            for start in range(0, len(data), 65536):
                piece = data[start : start + 65536]
                connection.send(f"{len(piece):X}\r\n".encode() + piece + b"\r\n")
            connection.send(b"0\r\n\r\n")
        else:
            connection.putheader("Content-Length", str(len(data)))
            connection.endheaders(data)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read().decode(errors="replace")
    finally:
        connection.close()


def raw_session(handle) -> dict[str, str]:
    """A raw client's session with a served kernel: initialize sent, and the headers every later
    request carries (the token, the session's id, the protocol version)."""
    auth = {"Authorization": f"Bearer {handle.token}"}
    status, headers, text = post(handle.url, INITIALIZE, auth)
    assert status == 200, text
    session = {key: value for key, value in headers.items() if key.lower() == "mcp-session-id"}
    return {**auth, **session, "MCP-Protocol-Version": INITIALIZE["params"]["protocolVersion"]}
