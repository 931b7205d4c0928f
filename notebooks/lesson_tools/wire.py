"""The Python SDK's Streamable HTTP server on 127.0.0.1, behind a bearer token, in a thread of the kernel (notebook 07).

    served = Served()                                   # a free port on 127.0.0.1, a random token
    shop = MCPServer("Bookshop", **served.token_check())  # the SDK turns away a request without it
    ...                                                 # the shop's tools
    served.start(shop)                                  # uvicorn, in a thread of this kernel
    served.url, served.headers, served.client()         # what a client needs
    served.stop()                                       # (or the thread ends with the kernel)

The port listens on this machine only, and the token is made here and never written anywhere:
a notebook that prints nothing of it keeps no secret in its saved outputs.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import socket
import threading
import time
from collections.abc import Callable

import httpx2
import uvicorn
from mcp.server import MCPServer
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings


class KeptRecords(logging.Handler):
    """Keep every log record in a list instead of printing it (as pytest's `caplog` does)."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def keep_log_records() -> KeptRecords:
    """Configure the root logger, once, to keep its records in a list: before `MCPServer()` calls
    `logging.basicConfig(level="INFO")`, which then does nothing, and every library's requests stay out of the cells."""
    root = logging.getLogger()
    for handler in root.handlers:
        if isinstance(handler, KeptRecords):
            return handler
    kept = KeptRecords()
    logging.basicConfig(level=logging.INFO, handlers=[kept])
    return kept


class _OneToken:
    """Accept one token, and nothing else (the SDK's token verifier)."""

    def __init__(self, token: str, resource: str) -> None:
        self._token, self._resource = token, resource

    async def verify_token(self, token: str) -> AccessToken | None:
        if secrets.compare_digest(token, self._token):
            return AccessToken(token=token, client_id="this notebook", scopes=[], resource=self._resource)
        return None


class Served:
    """One MCP server over Streamable HTTP on 127.0.0.1, on a port the system picks, behind one random token."""

    def __init__(self) -> None:
        self._token = secrets.token_urlsafe(16)  # the one credential this server accepts
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))  # this machine only, on a free port
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}/mcp"
        self.headers = {"Authorization": f"Bearer {self._token}"}
        self.sent: list[str] = []  # the JSON-RPC method of every message `client()` put on the wire
        self._web: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"<Served {self.url} ({'serving' if self.is_alive() else 'stopped'})>"

    def token_check(self) -> dict:
        """What `MCPServer(...)` takes to turn away every request without this token: an HTTP 401."""
        return {
            "auth": AuthSettings(issuer_url="http://127.0.0.1", resource_server_url=self.url, validate_token_resource=True),
            "token_verifier": _OneToken(self._token, self.url),
        }

    def start(self, server: MCPServer, timeout: float = 10.0) -> Served:
        """Serve `server` in a thread of this kernel; uvicorn's own logging configuration is left out, so its records
        go where the notebook's go."""
        if self._thread is not None:
            raise RuntimeError(f"{self.url} is served already")
        config = uvicorn.Config(server.streamable_http_app(), log_config=None, timeout_graceful_shutdown=1)
        self._web = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._web.run, kwargs={"sockets": [self._listener]}, name=f"mcp-http-{self.url}", daemon=True
        )
        self._thread.start()
        given_up = time.monotonic() + timeout
        while not self._web.started and self._thread.is_alive() and time.monotonic() < given_up:
            time.sleep(0.01)
        if not self._web.started:
            raise RuntimeError(f"the server at {self.url} did not start within {timeout} s")
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving: calls in flight end without an answer."""
        if self._web is not None:
            self._web.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)

    def is_alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def client(self) -> httpx2.AsyncClient:
        """An HTTP client that sends the token and notes in `sent` the method of every JSON-RPC message it sends."""

        async def note(request) -> None:
            if request.content:  # a JSON-RPC message (not the GET a 2025-11-25 session listens on)
                self.sent.append(json.loads(request.content)["method"])

        return httpx2.AsyncClient(headers=self.headers, event_hooks={"request": [note]})


async def until(happened: Callable[[], bool], limit: float = 10.0) -> bool:
    """Wait until happened() is true, or `limit` seconds have passed; return happened()."""
    give_up = time.monotonic() + limit
    while not happened() and time.monotonic() < give_up:
        await asyncio.sleep(0.05)
    return happened()
