"""Streamable HTTP: an answer with the request's id that is no valid message fails its call at once;
a progress no float can hold leaves the call and the connection alone.

The stdio side is tests/test_hostile_peers.py (`..._fails_its_call_at_once_not_at_the_deadline`),
where mcp_nb's own transport reads the line again for its id. Over HTTP the SDK's transport knows
which request a POST's answer belongs to, as a JSON body or as an event of an SSE stream, and
makes its own error of what it cannot validate: the same answers here, both ways, must be
`invalid_response` long before the deadline, and the connection must stay. The SDK's dispatcher
converts a progress with `float()` whatever the transport: mcp_nb's guard on the read stream
(`connections/inbound.py`) is tested here over HTTP as over stdio in test_hostile_peers.py.
"""

from __future__ import annotations

import json
import time
from http.server import BaseHTTPRequestHandler

import pytest
from helpers import http_served

import mcp_nb


def broken(rid: object) -> dict[str, bytes]:
    """Each answer to the request `rid` that is no message the protocol allows."""
    head = b'{"jsonrpc": "2.0", "id": ' + json.dumps(rid).encode()
    return {
        "huge_int": head + b', "result": {"content": [], "structuredContent": {"v": ' + b"9" * 5000 + b"}}}",
        "deep": head + b', "result": {"content": [], "structuredContent": {"v": ' + b"[" * 100000 + b"]" * 100000 + b"}}}",
        "surrogate": head + b', "result": {"content": [{"type": "text", "text": "lone \\ud800 surrogate"}]}}',
        "error_odd": head + b', "error": {"code": "not a number", "message": ["not", "text"]}}',
        "result_list": head + b', "result": [1, 2, 3]}',
    }


TOOLS = list(broken(0))
HUGE = 10**400
PROGRESSES = {"progress_huge": {"progress": HUGE, "total": 5}, "total_huge": {"progress": 1, "total": HUGE}}


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
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "broken", "version": "1"},
            }
        elif method == "tools/list":
            names = [f"{name}_{how}" for name in TOOLS for how in ("json", "sse")] + list(PROGRESSES)
            result = {"tools": [{"name": name, "inputSchema": {"type": "object"}} for name in names]}
        elif method == "tools/call" and message["params"]["name"] in PROGRESSES:
            token = message["params"].get("_meta", {}).get("progressToken", ident)
            progress = {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": token, **PROGRESSES[message["params"]["name"]]},
            }
            answer = {"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": "after the progress"}]}}
            events = b"".join(b"event: message\ndata: " + json.dumps(m).encode() + b"\n\n" for m in (progress, answer))
            return self._send(200, "text/event-stream", events)
        elif method == "tools/call":
            name, _, how = message["params"]["name"].rpartition("_")
            answer = broken(ident)[name]
            if how == "json":
                return self._send(200, body=answer)
            return self._send(200, "text/event-stream", b"event: message\ndata: " + answer + b"\n\n")
        else:
            result = {}
        self._send(200, body=json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}).encode())


@pytest.fixture(scope="module")
def broken_url():
    with http_served(Handler) as url:
        yield f"{url}/mcp"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("how", ["json", "sse"])
@pytest.mark.parametrize("tool", TOOLS)
def test_an_answer_that_is_no_valid_message_fails_its_call_at_once_over_http(broken_url, tool, how):
    mcp_nb.connect("broken", broken_url, timeout=10)
    started = time.monotonic()
    o = mcp_nb.call(f"{tool}_{how}", server="broken", timeout=15)
    assert (o.outcome, o.cause) == ("protocol_error", "invalid_response"), (o.outcome, o.cause, o.message)
    assert time.monotonic() - started < 10
    assert mcp_nb.servers().loc["broken", "state"] == "connected"
    assert len(mcp_nb.history()) == 1


@pytest.mark.timeout(120)
@pytest.mark.parametrize("tool", PROGRESSES)
def test_a_progress_past_any_float_leaves_an_http_call_and_its_connection_alone(broken_url, tool):
    mcp_nb.connect("broken", broken_url, timeout=10)
    o = mcp_nb.call(tool, server="broken", timeout=15)
    assert (o.outcome, o.content) == ("result", "after the progress"), (o.outcome, o.cause, o.message)
    said = [log.message for log in o.server_logs if "past any float" in log.message]
    assert len(said) == 1 and "an integer of 401 digits" in said[0], said
    again = mcp_nb.call(tool, server="broken", timeout=15)
    assert again.outcome == "result", (again.outcome, again.cause, again.message)
