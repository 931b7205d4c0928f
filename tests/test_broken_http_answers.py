"""An HTTP server whose answer to a call is no JSON-RPC at all: `invalid_response`, never `mcp_error`.

A proxy's login page, an HTML error page with status 200, a body cut short: the SDK's client
turns each into a JSON-RPC error of its own making (-32600, -32700), although no handler
raised anything. The server here is a few lines of the standard library's HTTP server that
answers the handshake and the listing correctly, then each call with a broken answer.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler

import pytest
from helpers import http_served

import mcp_nb

BROKEN = {  # tool -> (content type, body) of its 200 answer
    "login_page": ("text/html; charset=utf-8", b"<html><body>Please sign in</body></html>"),
    "cut_json": ("application/json", b'{"jsonrpc": "2.0", "id": '),
    "not_jsonrpc": ("application/json", b'{"hello": "world"}'),
}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # quiet
        pass

    def _send(self, status: int, kind: str = "application/json", body: bytes = b"") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # no stream of server messages
        self._send(405)

    def do_DELETE(self):
        self._send(200)

    def do_POST(self):
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        method, ident = message.get("method"), message.get("id")
        if ident is None:
            return self._send(202)
        if method == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "broken", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": [{"name": name, "inputSchema": {"type": "object"}} for name in BROKEN]}
        elif method == "tools/call":
            return self._send(200, *BROKEN[message["params"]["name"]])
        else:
            result = {}
        self._send(200, body=json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}).encode())


@pytest.fixture(scope="module")
def broken_url():
    with http_served(Handler) as url:
        yield f"{url}/mcp"


@pytest.mark.parametrize("tool", BROKEN)
def test_a_broken_answer_is_an_invalid_response_and_the_connection_stays(broken_url, tool):
    mcp_nb.connect("broken", broken_url, timeout=10)
    o = mcp_nb.call(tool, server="broken", timeout=10)
    assert (o.outcome, o.cause) == ("protocol_error", "invalid_response"), (o.cause, o.code, o.message)
    assert o.message.startswith(
        ("Unexpected content type: text/html", "Failed to parse JSON response: ")
    )  # the SDK's words, kept
    assert mcp_nb.servers().loc["broken", "state"] == "connected"
