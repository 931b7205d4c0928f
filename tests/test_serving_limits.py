"""A served kernel bounds what slow and numerous clients can hold: a connection that does not send
its request head within `header_timeout` is closed, at most `max_connections` are open at once
(those past them wait their turn in the listen backlog, and the slowest open one gives its place),
and none of it leaks the kernel's file descriptors (which it shares with them) or stops a
well-behaved client, or the kernel's own calls, from being answered."""

import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from urllib.parse import urlsplit

import pytest
import warm
from helpers import checkout_env, served_at, write_notebook
from IPython.core.error import UsageError
from nbformat.v4 import new_code_cell
from outside import client

import mcp_nb
from mcp_nb.commands import main


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def fds_before_serving() -> int:
    """The descriptors open once mcp_nb's loop runs (it opens its own at its first call)."""
    assert mcp_nb.call("add", {"a": 0, "b": 0}).ok
    return open_fds()


def settle_fds(expected: int, within: float = 5.0) -> int:
    """The number of open descriptors once it is back to `expected` (or what it is after `within` s)."""
    deadline = time.monotonic() + within
    while open_fds() > expected and time.monotonic() < deadline:
        time.sleep(0.05)
    return open_fds()


@pytest.fixture
def add():
    @mcp_nb.tool()
    def add(a: int, b: int) -> int:
        return a + b


def connect(handle) -> socket.socket:
    return socket.create_connection(("127.0.0.1", handle.port), timeout=10)


def half_sent(handle) -> socket.socket:
    """A connection that starts a request and never finishes its head."""
    sock = connect(handle)
    sock.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{handle.port}\r\nAuthoriz".encode())
    return sock


def until_closed(sock: socket.socket, deadline: float) -> tuple[bytes, float | None]:
    """What the server sent on `sock` before it closed it, and when (None: still open at `deadline`)."""
    said = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return said, None
        sock.settimeout(left)
        try:
            data = sock.recv(65536)
        except TimeoutError:
            return said, None
        except ConnectionResetError:
            return said, time.monotonic()
        if not data:
            return said, time.monotonic()
        said += data


async def call_add(handle) -> str:
    async with client(handle.url, handle.token) as session:
        return (await session.call_tool("add", {"a": 1, "b": 2})).content[0].text


def answered_soon(handle, within: float = 5.0) -> str:
    """`call_add`, tried again until `within` seconds pass should it fail."""
    deadline = time.monotonic() + within
    while True:
        try:
            return asyncio.run(call_add(handle))
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_half_sent_requests_are_closed_after_the_header_timeout_while_a_client_is_answered(add):
    before = fds_before_serving()
    handle = mcp_nb.serve(header_timeout=2.0, max_connections=200)
    served = open_fds()
    started = time.monotonic()
    slow = [half_sent(handle) for _ in range(150)]
    silent = [connect(handle) for _ in range(10)]  # connected, and nothing sent at all
    # While they hang, a well-behaved client and the kernel itself are answered.
    assert asyncio.run(call_add(handle)) == "3"
    assert mcp_nb.call("add", {"a": 2, "b": 2}).content == "4"
    assert time.monotonic() - started < 2.0
    ends = [until_closed(sock, started + 8.0) for sock in slow + silent]
    still_open = sum(1 for _, at in ends if at is None)
    assert still_open == 0, f"{still_open} of {len(ends)} connections still open 8 s later"
    assert min(at for _, at in ends) - started >= 1.9  # not before their time
    assert all(said.startswith(b"HTTP/1.1 408 ") for said, _ in ends[:150])
    assert all(said == b"" for said, _ in ends[150:])  # nothing to answer: closed
    assert handle.refused == {"slow": 160}
    for sock in slow + silent:
        sock.close()
    assert settle_fds(served) == served
    assert asyncio.run(call_add(handle)) == "3"  # still serving
    handle.stop()
    assert settle_fds(before) == before


def read_response(sock: socket.socket) -> bytes:
    """One whole response with a Content-Length (its head, then its body)."""
    said = b""
    while b"\r\n\r\n" not in said:
        said += sock.recv(65536)
    head, _, body = said.partition(b"\r\n\r\n")
    length = int(re.search(rb"content-length: (\d+)", head, re.IGNORECASE).group(1))
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


def answered_call(handle, sock: socket.socket) -> bytes:
    """A whole 2026-07-28 call of `add` on `sock`, and its answer (the connection kept alive)."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "add",
                "arguments": {"a": 1, "b": 2},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        }
    ).encode()
    sock.sendall(
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{handle.port}\r\nAuthorization: Bearer {handle.token}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        f"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: add\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    return read_response(sock)


def test_a_kept_alive_connection_that_half_sends_its_next_request_is_closed_too(add):
    handle = mcp_nb.serve(header_timeout=1.0)
    sock = connect(handle)
    # A whole request, answered, the connection kept alive...
    answer = answered_call(handle, sock)
    assert answer.startswith(b"HTTP/1.1 200 ") and b"connection: close" not in answer.lower()
    # ...then half of the next one: the keep-alive timer stops at its first byte, this one does not.
    sock.sendall(b"GET /mcp HTTP/1.1\r\nHo")
    started = time.monotonic()
    said, at = until_closed(sock, started + 4.0)
    assert at is not None, "the half-sent second request was never timed out"
    assert said.startswith(b"HTTP/1.1 408 ") and 0.9 <= at - started
    sock.close()
    handle.stop()


def test_a_refused_client_keeps_no_connection_and_the_kernel_is_unharmed(add):
    handle = mcp_nb.serve(max_connections=4, header_timeout=30.0)
    refused = []
    for _ in range(4):  # each asks once, without the token: 401, and its connection closes
        sock = connect(handle)
        sock.sendall(f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{handle.port}\r\n\r\n".encode())
        refused.append(until_closed(sock, time.monotonic() + 10.0))
        sock.close()
    assert all(said.startswith(b"HTTP/1.1 401 ") and at is not None for said, at in refused)
    assert asyncio.run(call_add(handle)) == "3"  # no place is held by them
    assert mcp_nb.call("add", {"a": 2, "b": 2}).content == "4"  # the kernel's own calls go on
    assert handle.refused == {"token": 4}
    assert len(mcp_nb.history()) == 2  # the refused requests reached no tool
    handle.stop()


def test_kept_alive_connections_between_requests_keep_their_places_and_a_newcomer_waits_its_turn(add):
    # An idle kept-alive connection is not let go for a newcomer (its client may be sending its
    # next request as it closes): the newcomer waits until one ends, then is answered.
    handle = mcp_nb.serve(max_connections=2, header_timeout=30.0)
    idle = [connect(handle) for _ in range(2)]
    for sock in idle:
        assert answered_call(handle, sock).startswith(b"HTTP/1.1 200 ")
    waiting = threading.Thread(target=lambda: got.append(asyncio.run(call_add(handle))))
    got: list[str] = []
    waiting.start()
    time.sleep(2.0)
    assert got == []  # still waiting: both places are held by connections owing nothing
    assert answered_call(handle, idle[0]).startswith(b"HTTP/1.1 200 ")  # and they are served as ever
    idle[0].close()  # one ends: the newcomer takes its place
    waiting.join(60)
    assert got == ["3"]
    idle[1].close()
    assert handle.refused == {}
    handle.stop()


def test_a_flood_of_connections_holds_a_bounded_number_of_descriptors_and_leaks_none(add):
    before = fds_before_serving()
    handle = mcp_nb.serve(max_connections=10, header_timeout=1.0)
    served = open_fds()
    flood = [connect(handle) for _ in range(300)]
    # The server takes ten, and one more waits to be given a place; the others wait in the listen
    # backlog, which costs the kernel no descriptor. Measured while it lets them go one by one.
    highest = 0
    flooded = time.monotonic()
    while time.monotonic() - flooded < 3.0:
        highest = max(highest, open_fds() - served - len(flood))
        time.sleep(0.02)
    assert highest <= 10 + 1, f"the server held {highest} descriptors for 300 connections"
    assert mcp_nb.call("add", {"a": 2, "b": 2}).content == "4"  # the kernel can still open what it needs
    for sock in flood:
        sock.close()
    assert settle_fds(served, within=30.0) == served
    assert answered_soon(handle) == "3"
    handle.stop()
    assert settle_fds(before) == before


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"max_connections": 0}, "max_connections must be"),
        ({"max_connections": 2.5}, "max_connections must be"),
        ({"max_connections": True}, "max_connections must be"),
        ({"header_timeout": 0}, "header_timeout must be"),
        ({"header_timeout": -1}, "header_timeout must be"),
        ({"header_timeout": float("nan")}, "header_timeout must be"),
        ({"header_timeout": float("inf")}, "header_timeout must be"),
        ({"header_timeout": "10"}, "header_timeout must be"),
    ],
)
def test_bad_limits_are_refused_in_one_line(options, said):
    with pytest.raises(ValueError, match=said):
        mcp_nb.serve(**options)


def test_serving_again_with_other_limits_is_refused_and_the_same_returns_the_handle():
    handle = mcp_nb.serve(max_connections=7, header_timeout=3.0)
    assert mcp_nb.serve(max_connections=7, header_timeout=3.0) is handle
    with pytest.raises(ValueError, match="other settings"):
        mcp_nb.serve(max_connections=8, header_timeout=3.0)
    with pytest.raises(ValueError, match="other settings"):
        mcp_nb.serve(max_connections=7)
    handle.stop()


def test_the_magic_takes_the_limits(shell, add):
    handle = shell.run_line_magic("mcp_serve", "--max-connections 3 --header-timeout 1")
    try:
        assert (handle.limits.max_connections, handle.limits.header_timeout) == (3, 1.0)
        held = [half_sent(handle) for _ in range(3)]
        said, at = until_closed(held[0], time.monotonic() + 4.0)
        assert at is not None and said.startswith(b"HTTP/1.1 408 ")
        for sock in held:
            sock.close()
    finally:
        shell.run_line_magic("mcp_serve", "--stop")
    with pytest.raises(UsageError, match="header_timeout must be"):
        shell.run_line_magic("mcp_serve", "--header-timeout 0")


def test_the_command_takes_the_limits(tmp_path):
    notebook = write_notebook(
        tmp_path,
        new_code_cell("%load_ext mcp_nb"),
        new_code_cell("%%mcp_tool\ndef add(a: int, b: int) -> int:\n    return a + b"),
    )
    process = subprocess.Popen(
        warm.python("-m", "mcp_nb", "serve", str(notebook), "--http", "--max-connections", "2", "--header-timeout", "1"),
        env=checkout_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url, token, _ = served_at(process)
        port = urlsplit(url).port

        class At:
            pass

        at = At()
        at.port, at.url, at.token = port, url, token
        held = [half_sent(at) for _ in range(2)]
        answer, closed = until_closed(held[0], time.monotonic() + 4.0)
        assert closed is not None and answer.startswith(b"HTTP/1.1 408 ")
        # Two places, both held by a slow head a moment ago: the client is answered all the same.
        assert asyncio.run(call_add(at)) == "3"
        for sock in held:
            sock.close()
        process.terminate()
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stderr.close()
        process.stdout.close()


def test_every_face_has_the_same_defaults(shell):
    import inspect

    from mcp_nb.serving import limits

    assert inspect.signature(mcp_nb.serve).parameters["max_connections"].default is None
    assert inspect.signature(mcp_nb.serve).parameters["header_timeout"].default == limits.DEFAULT_HEADER_TIMEOUT
    handle = shell.run_line_magic("mcp_serve", "")
    try:
        assert handle.limits.max_connections == limits.default_max_connections()
        assert handle.limits.header_timeout == limits.DEFAULT_HEADER_TIMEOUT
        assert mcp_nb.serve() is handle  # the magic's defaults are the function's
    finally:
        handle.stop()


@pytest.mark.parametrize(("soft", "places"), [(256, 128), (1024, 512), (100_000, 1024)])
def test_by_default_it_takes_half_the_descriptors_the_process_may_open_and_1024_at_most(soft, places):
    # In a process of its own: the limit is the process's, and the test's must stay as it is.
    script = (
        "import resource, mcp_nb\n"
        "hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]\n"
        f"soft = {soft} if hard == resource.RLIM_INFINITY else min({soft}, hard)\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))\n"
        "handle = mcp_nb.serve()\n"
        "print(soft, handle.limits.max_connections)\n"
        "handle.stop()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], env=checkout_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    soft_set, taken = map(int, done.stdout.split())
    assert taken == min(places, soft_set // 2)


def test_the_commands_limits_go_with_http(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["serve", str(tmp_path / "shop.ipynb"), "--header-timeout", "3"])
    assert exit_.value.code == 2
    assert "--max-connections and --header-timeout go with --http" in capsys.readouterr().err
