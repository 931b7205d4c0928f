"""Hostile: outside clients of a served kernel that speak HTTP, JSON-RPC or MCP badly.

The door's rules: what a client sends wrong is answered (a status, a JSON-RPC error) and never
runs a tool or reaches the history as a call; nothing a client sends prints into the cell,
breaks the history's views, or keeps another client from its answer; every call a client
makes is recorded once, as what that client got.
"""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY

import mcp_nb
from helpers import checkout_env, wait_until
from outside import post, raw_session



def _meta(name: str = "raw", version: str = "1") -> dict:
    return {PROTOCOL_VERSION_META_KEY: "2026-07-28", CLIENT_INFO_META_KEY: {"name": name, "version": version},
            CLIENT_CAPABILITIES_META_KEY: {}}  # fmt: skip


NAPPING = threading.Event()


@pytest.fixture
def served():
    NAPPING.clear()
    @mcp_nb.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @mcp_nb.tool()
    def echo(text: str) -> str:
        return text

    @mcp_nb.tool()
    def nap(seconds: float) -> str:
        NAPPING.set()
        time.sleep(seconds)
        return f"slept {seconds}"

    handle = mcp_nb.serve()
    yield handle
    handle.stop()


def _headers(handle, name: str = "add") -> dict:
    return {"Authorization": f"Bearer {handle.token}", "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": name}


def _call(name: str, arguments: dict, **extra) -> dict:
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": name, "arguments": arguments, "_meta": _meta()}, **extra}


def _raw_body(name: str, arguments_json: bytes, rid: bytes = b"7") -> bytes:
    return (b'{"jsonrpc":"2.0","id":' + rid + b',"method":"tools/call","params":{"name":"' + name.encode() + b'","arguments":'
            + arguments_json + b',"_meta":' + json.dumps(_meta()).encode() + b"}}")  # fmt: skip


def _still_serves(handle) -> None:
    status, _, text = post(handle.url, _call("add", {"a": 2, "b": 3}), _headers(handle))
    assert status == 200 and '"text":"5"' in text, (status, text)


# -- bodies that are no request ------------------------------------------------------------------


@pytest.mark.parametrize(
    "body, status",
    [(b"not json", 400), (b"", 400), (b"[]", 400), (b"null", 400), (b"\x00\xff\xfe", 400),
     (json.dumps([_call("add", {"a": 1, "b": 2})] * 2).encode(), 400),
     (_raw_body("add", b'{"a":' + b"9" * 5000 + b',"b":2}'), 400),
     (_raw_body("add", b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b',"b":2}'), 400),
     (json.dumps({"jsonrpc": "2.0", "id": 1, "result": {}}).encode(), 400),
     (json.dumps({"jsonrpc": "1.0", "id": 1, "method": "tools/call"}).encode(), 400)],
    ids=["garbage", "empty", "empty batch", "null", "binary", "batch", "huge int", "deep", "a response", "jsonrpc 1.0"],
)  # fmt: skip
def test_a_body_that_is_no_request_is_refused_runs_nothing_and_records_nothing(served, body, status):
    got, _, text = post(served.url, body, _headers(served))
    assert got == status, text
    assert len(mcp_nb.history()) == 0
    _still_serves(served)


@pytest.mark.parametrize("rid", [b"null", b"[1]", b"{}", b"true"], ids=["null", "list", "object", "bool"])
def test_a_request_id_of_a_kind_json_rpc_does_not_allow_is_refused(served, rid):
    got, _, _ = post(served.url, _raw_body("add", b'{"a":1,"b":2}', rid), _headers(served))
    assert got == 400 and len(mcp_nb.history()) == 0


def test_nan_in_arguments_is_the_tools_invalid_arguments_recorded_once(served):
    got, _, text = post(served.url, _raw_body("add", b'{"a":NaN,"b":2}'), _headers(served))
    assert got == 200
    (row,) = mcp_nb.history().to_frame().itertuples()
    assert (row.outcome, row.cause, row.via) == ("tool_error", "invalid_arguments", "http")


def test_an_unknown_method_is_refused_and_records_nothing(served):
    headers = dict(_headers(served), **{"Mcp-Method": "no/such"})
    got, _, text = post(served.url, {"jsonrpc": "2.0", "id": 3, "method": "no/such", "params": {"_meta": _meta()}}, headers)
    assert got == 404 and '"code":-32601' in text and len(mcp_nb.history()) == 0


def test_a_client_progress_past_any_float_leaves_the_server_serving(served):
    headers = dict(_headers(served), **{"Mcp-Method": "notifications/progress"})
    got, _, _ = post(served.url, {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 7, "progress": 10**400}}, headers)
    assert got in (200, 202)
    _still_serves(served)


# -- a client's name and words in the history ------------------------------------------------------


def test_a_clients_name_of_100_kb_and_control_characters_is_kept_bounded_and_shown_safely(served):
    name = "evil\n\x1b[31m<script>alert(1)</script>\u202e" + "n" * 100_000
    body = dict(_call("echo", {"text": "hi"}), params={"name": "echo", "arguments": {"text": "hi"}, "_meta": _meta(name)})
    got, _, _ = post(served.url, body, _headers(served, "echo"))
    assert got == 200
    (row,) = mcp_nb.history().to_frame().itertuples()
    assert len(row.client) <= 200 and "\n" not in row.client and "\x1b" not in row.client
    for shown in (repr(mcp_nb.history()), mcp_nb.history()._repr_html_()):
        assert "\x1b" not in shown and "\u202e" not in shown and "<script>" not in shown and len(shown) < 50_000


def test_a_lone_surrogate_a_client_sends_leaves_the_history_and_its_views_readable(served):
    got, _, text = post(served.url, _raw_body("echo", b'{"text":"a\\ud800b"}'), _headers(served, "echo"))
    assert got == 200
    assert wait_until(lambda: len(mcp_nb.history()) == 1)
    assert mcp_nb.history().to_frame()["content"].tolist() == ["a\ud800b"]
    for shown in (repr(mcp_nb.history()), mcp_nb.history()._repr_html_()):
        shown.encode("utf-8")  # a notebook can save it


def test_a_lone_surrogate_a_client_sends_is_written_to_the_history_file_with_the_calls_after_it(served, tmp_path):
    mcp_nb.configure(history_file=str(tmp_path / "calls"))
    post(served.url, _raw_body("echo", b'{"text":"a\\ud800b"}'), _headers(served, "echo"))
    _still_serves(served)
    assert wait_until(lambda: len(mcp_nb.history()) == 2)
    assert mcp_nb.history().sync()
    back = mcp_nb.History.open(tmp_path / "calls").to_frame()
    assert back["content"].tolist() == ["a\ud800b", "5"]
    assert back["arguments"].tolist() == [{"text": "a\ud800b"}, {"a": 2, "b": 3}]


# -- two requests of one session -----------------------------------------------------------------


def _raw_post(port: int, headers: dict, body: dict, out: list, label: str) -> None:
    data = json.dumps(body).encode()
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                     f"Accept: application/json, text/event-stream\r\n{head}Content-Length: {len(data)}\r\n\r\n".encode() + data)  # fmt: skip
        got = b""
        try:
            while b'"result"' not in got and b'"error"' not in got:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                got += chunk
        except TimeoutError:
            got += b"<no answer>"
    out.append((label, got.decode(errors="replace")))


@pytest.mark.timeout(60)
def test_a_second_request_with_an_id_in_flight_on_its_session_is_refused_and_the_first_gets_its_answer(served):
    session = raw_session(served)
    port = int(served.url.rsplit(":", 1)[1].split("/")[0])
    out: list = []
    nap = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "nap", "arguments": {"seconds": 0.8}}}
    first = threading.Thread(target=_raw_post, args=(port, session, nap, out, "first"))
    first.start()
    assert NAPPING.wait(10)  # the first is in flight
    again = dict(nap, params={"name": "nap", "arguments": {"seconds": 0.1}})
    _raw_post(port, session, again, out, "second")
    first.join()
    said = dict(out)
    assert "slept 0.8" in said["first"], said["first"][-300:]
    assert said["second"].startswith("HTTP/1.1 409") and "in flight on this session" in said["second"], said["second"]
    assert served.refused.get("duplicate id") == 1
    assert wait_until(lambda: len(mcp_nb.history()) == 1)
    (row,) = mcp_nb.history().to_frame().itertuples()
    assert (row.outcome, row.arguments) == ("result", {"seconds": 0.8})


# -- what reaches the cell -------------------------------------------------------------------------

SCRIPT = """
import socket, ssl, sys, time, mcp_nb
handle = mcp_nb.serve()
port = int(handle.url.rsplit(":", 1)[1].split("/")[0])
context = ssl.create_default_context()
context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
for _ in range(3):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
            with context.wrap_socket(raw, server_hostname="localhost"):
                pass
    except (ssl.SSLError, OSError):
        pass
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        raw.sendall(b"\\x00\\x01 GARBAGE\\r\\n\\r\\n")
        raw.recv(200)
time.sleep(0.5)
print("REFUSED", handle.refused, flush=True)
handle.stop()
"""


@pytest.mark.timeout(120)
def test_a_client_speaking_tls_or_garbage_to_a_served_kernel_prints_nothing_into_the_cell():
    run = subprocess.run([sys.executable, "-c", textwrap.dedent(SCRIPT)], env=checkout_env(), capture_output=True, text=True, timeout=100)
    assert "REFUSED" in run.stdout, run.stderr[-2000:]
    assert run.stderr == "", run.stderr[-2000:]


def test_a_handler_configured_by_the_user_still_hears_uvicorn(served, caplog):
    with caplog.at_level("WARNING", logger="uvicorn.error"):
        port = int(served.url.rsplit(":", 1)[1].split("/")[0])
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
            raw.sendall(b"\x00\x01 GARBAGE\r\n\r\n")
            assert raw.recv(200).startswith(b"HTTP/1.1 400")
        assert wait_until(lambda: "Invalid HTTP request received." in caplog.text)
    _still_serves(served)
