"""A served kernel under load and slow clients (issue 40): every honest client is answered, however
many call at once, and slow clients (a head, a body, or an answer they never finish) give their
places up instead of locking the others out. Real outside clients on 127.0.0.1: the SDK's client,
and raw sockets for what no honest client sends. Behaviour is checked by counting and ordering,
with generous time limits; how fast is benchmarks/bench_serving.py's to say."""

import asyncio
import json
import socket
import time

import pytest
from helpers import wait_until
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY
from outside import client

import mcp_nb
from mcp_nb.serving import limits

RAN = []


@pytest.fixture
def tools():
    RAN.clear()

    @mcp_nb.tool()
    def add(a: int, b: int) -> int:
        RAN.append((a, b))
        return a + b

    @mcp_nb.tool()
    def size(text: str) -> int:
        return len(text)

    @mcp_nb.tool()
    def big(n: int) -> str:
        return "x" * n


# -- outside clients ----------------------------------------------------------------------------------


async def sdk_add(handle, a: int, b: int = 1) -> str:
    async with client(handle.url, handle.token) as session:
        return (await session.call_tool("add", {"a": a, "b": b})).content[0].text


def at_once(handle, how_many: int) -> list[str]:
    """`how_many` SDK clients calling `add` at once; each one's answer, or what it raised."""

    async def one(i: int) -> str:
        try:
            return await sdk_add(handle, i)
        except Exception as err:  # noqa: BLE001 - counted, not raised: the test says how many failed
            return f"failed: {err!r}"[:300]

    async def every():
        return await asyncio.gather(*(one(i) for i in range(how_many)))

    return asyncio.run(every())


def request(handle, tool: str, arguments: dict, token: str | None = "", *, extra: bytes = b"") -> tuple[bytes, bytes]:
    """A 2026-07-28 `tools/call` as raw bytes: (its head, its body)."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": tool,
                "arguments": arguments,
                "_meta": {
                    PROTOCOL_VERSION_META_KEY: "2026-07-28",
                    CLIENT_INFO_META_KEY: {"name": "raw", "version": "1"},
                    CLIENT_CAPABILITIES_META_KEY: {},
                },
            },
        }
    ).encode()
    token = handle.token if token == "" else token
    head = (
        (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{handle.port}\r\nContent-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
            f"Mcp-Method: tools/call\r\nMcp-Name: {tool}\r\nContent-Length: {len(body)}\r\n"
            + (f"Authorization: Bearer {token}\r\n" if token else "")
        ).encode()
        + extra
        + b"\r\n"
    )
    return head, body


def connect(handle, receive_buffer: int | None = None) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if receive_buffer is not None:  # before connecting: it sets the window the server may fill
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.settimeout(30)
    sock.connect(("127.0.0.1", handle.port))
    return sock


def half_sent_head(handle) -> socket.socket:
    sock = connect(handle)
    sock.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{handle.port}\r\nAuthoriz".encode())
    return sock


def until_closed(sock: socket.socket, within: float) -> tuple[bytes, float | None]:
    """What the server sent on `sock` before closing it, and when (None: still open after `within` s)."""
    said, deadline = b"", time.monotonic() + within
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


def read_all(sock: socket.socket, within: float) -> int:
    """How many bytes `sock` receives until it is closed or reset (or `within` s pass)."""
    size, deadline = 0, time.monotonic() + within
    try:
        while time.monotonic() < deadline:
            sock.settimeout(max(deadline - time.monotonic(), 0.01))
            data = sock.recv(1 << 20)
            if not data:
                break
            size += len(data)
    except (ConnectionResetError, TimeoutError):
        pass
    return size


def status_of(said: bytes) -> int | None:
    return int(said.split(b" ", 2)[1]) if said.startswith(b"HTTP/1.1 ") else None


def answer(sock: socket.socket, within: float = 60.0) -> bytes:
    """One whole response with a Content-Length."""
    said, deadline = b"", time.monotonic() + within
    while b"\r\n\r\n" not in said or len(said.partition(b"\r\n\r\n")[2]) < _length(said):
        sock.settimeout(max(deadline - time.monotonic(), 0.01))
        data = sock.recv(65536)
        if not data:
            break
        said += data
    return said


def _length(said: bytes) -> int:
    for line in said.partition(b"\r\n\r\n")[0].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


# -- many honest clients ---------------------------------------------------------------------------------


def test_two_hundred_sdk_clients_calling_at_once_are_all_answered(tools):
    handle = mcp_nb.serve()
    try:
        answers = at_once(handle, 200)
    finally:
        handle.stop()
    failed = [a for a in answers if a.startswith("failed")]
    assert not failed, f"{len(failed)} of 200 failed, the first: {failed[0]}"
    assert answers == [str(i + 1) for i in range(200)]
    assert sorted(RAN) == sorted((i, 1) for i in range(200))
    assert handle.refused == {}
    assert handle.calls == 200


def test_more_clients_than_places_wait_their_turn_and_none_is_refused(tools):
    # Eight places for sixty clients: the others wait in the listen backlog, and are answered.
    handle = mcp_nb.serve(max_connections=8)
    try:
        answers = at_once(handle, 60)
    finally:
        handle.stop()
    assert answers == [str(i + 1) for i in range(60)], [a for a in answers if a.startswith("failed")][:1]
    assert handle.calls == 60 and "connections" not in handle.refused


# -- slow heads ------------------------------------------------------------------------------------------


def test_a_hundred_and_fifty_half_sent_heads_do_not_keep_an_honest_client_out(tools):
    handle = mcp_nb.serve(header_timeout=3.0)
    slow = [half_sent_head(handle) for _ in range(150)]
    try:
        assert asyncio.run(sdk_add(handle, 1, 2)) == "3"  # was 503 at once: the cap was full of them
        ends = [until_closed(sock, 60.0) for sock in slow]
    finally:
        for sock in slow:
            sock.close()
        handle.stop()
    assert all(at is not None for _, at in ends), "a half-sent head was never closed"
    assert {status_of(said) for said, _ in ends} == {408}
    assert handle.refused == {"slow": 150} and RAN == [(1, 2)]


def test_when_every_place_is_held_by_a_slow_head_the_slowest_gives_its_place_up(tools):
    # Five places, five slow heads, and a deadline they would not reach during the test: only
    # giving a place up lets the honest client in.
    handle = mcp_nb.serve(max_connections=5, header_timeout=120.0)
    slow = [half_sent_head(handle) for _ in range(5)]
    try:
        time.sleep(limits.EVICT_AFTER_S + 0.2)  # they have kept the server waiting long enough
        assert asyncio.run(sdk_add(handle, 2, 2)) == "4"
        ends = [until_closed(sock, 0.5) for sock in slow]
    finally:
        for sock in slow:
            sock.close()
        handle.stop()
    let_go = [said for said, at in ends if at is not None]
    # The honest client took one place (two, with its client's second connection), never more.
    assert 1 <= len(let_go) <= 3 and all(status_of(said) == 408 for said in let_go)
    assert ends[0][1] is not None  # the first to come, the slowest, went first
    assert handle.refused == {"slow": len(let_go)} and RAN == [(2, 2)]


# -- slow bodies -----------------------------------------------------------------------------------------


def trickle(handle, socks: list[socket.socket], bodies: list[bytes], for_s: float) -> None:
    """Send the bodies a byte at a time to each socket, every 0.3 s, for `for_s` seconds."""
    sent, deadline = 1, time.monotonic() + for_s
    while time.monotonic() < deadline:
        time.sleep(0.3)
        for sock, body in zip(socks, bodies):
            try:
                sock.send(body[sent : sent + 1])
            except OSError:
                pass  # let go already
        sent += 1


def test_bodies_trickled_a_byte_at_a_time_are_answered_408_and_keep_no_one_out_for_long(tools):
    handle = mcp_nb.serve(max_connections=3, header_timeout=2.0)
    head, body = request(handle, "add", {"a": 5, "b": 5})
    slow = [connect(handle) for _ in range(3)]
    for sock in slow:
        sock.sendall(head + body[:1])
    try:
        trickle(handle, slow, [body] * 3, for_s=1.0)
        # Every place is held by a trickled body: the honest client waits its turn (in the
        # listen backlog), which comes at their deadline.
        honest = connect(handle)
        honest.sendall(b"".join(request(handle, "add", {"a": 1, "b": 1})))
        said = answer(honest)
        assert status_of(said) == 200 and b'"text":"2"' in said  # was 503
        honest.close()
        trickle(handle, slow, [body] * 3, for_s=4.0)  # past their deadline, trickling still
        ends = [until_closed(sock, 30.0) for sock in slow]
    finally:
        for sock in slow:
            sock.close()
        handle.stop()
    assert all(at is not None for _, at in ends), "a trickled body was never let go"
    assert [status_of(said) for said, _ in ends] == [408, 408, 408]
    assert b"not received in time" in ends[-1][0]  # a JSON-RPC error says why
    assert RAN == [(1, 1)] and handle.refused == {"slow": 3}


@pytest.mark.parametrize("sent", [0, 1], ids=["no byte of it", "one byte of it"])
def test_a_body_that_stops_coming_is_answered_408_at_its_deadline(tools, sent):
    handle = mcp_nb.serve(header_timeout=1.0)
    head, body = request(handle, "add", {"a": 1, "b": 2})
    sock = connect(handle)
    try:
        sock.sendall(head + body[:sent])
        said, at = until_closed(sock, 30.0)  # held for as long as its client liked, before
    finally:
        sock.close()
        handle.stop()
    assert status_of(said) == 408 and at is not None
    assert json.loads(said.partition(b"\r\n\r\n")[2]) == {
        "error": "request_timeout",
        "error_description": "the request body was not received in time",
    }
    assert RAN == [] and handle.refused == {"slow": 1}


def test_a_body_that_comes_at_a_fair_rate_may_take_longer_than_the_deadline(tools):
    # The deadline grows with what a body brings: a megabyte in 64 KiB pieces, five a second,
    # takes three seconds against a deadline of one, and is served.
    handle = mcp_nb.serve(header_timeout=1.0)
    head, body = request(handle, "size", {"text": "y" * (1 << 20)})
    sock = connect(handle)
    try:
        sock.sendall(head)
        for start in range(0, len(body), 64 * 1024):
            sock.sendall(body[start : start + 64 * 1024])
            time.sleep(0.2)
        said = answer(sock)
    finally:
        sock.close()
        handle.stop()
    assert status_of(said) == 200 and f'"text":"{1 << 20}"'.encode() in said
    assert handle.refused == {}


@pytest.mark.parametrize(
    ("token", "length", "refused"),
    [
        (None, None, 401),  # no token
        ("not-the-token", None, 401),
        ("", 5 * 1024 * 1024, 413),  # more than the body cap, declared
    ],
)
def test_a_body_still_coming_after_a_refusal_does_not_hold_the_connection(tools, token, length, refused):
    handle = mcp_nb.serve(header_timeout=60.0)
    head, body = request(handle, "add", {"a": 1, "b": 2}, token)
    if length is not None:
        head = head.replace(f"Content-Length: {len(body)}".encode(), f"Content-Length: {length}".encode())
    sock = connect(handle)
    try:
        sock.sendall(head + body[:1])
        said, at = until_closed(sock, 10.0)  # it kept its connection until its client left, before
    finally:
        sock.close()
        handle.stop()
    assert status_of(said) == refused and at is not None
    assert b"connection: close" in said.lower()
    assert RAN == []


# -- the head's size --------------------------------------------------------------------------------------


def send_pieces(sock: socket.socket, data: bytes, piece: int) -> None:
    for start in range(0, len(data), piece):
        try:
            sock.sendall(data[start : start + piece])
        except OSError:
            return  # refused and closed before the rest: as it should be
        time.sleep(0.002)


@pytest.mark.parametrize("how", ["in one read", "in small pieces", "pipelined behind a request"])
def test_a_head_over_16_kib_is_answered_431_however_it_arrives(tools, how):
    handle = mcp_nb.serve()
    many = b"".join(b"X-Note-%d: v\r\n" % i for i in range(5000))  # about 60 KB of small headers
    head, body = request(handle, "add", {"a": 1, "b": 2}, extra=many)
    sock = connect(handle)
    try:
        if how == "in one read":
            sock.sendall(head + body)
        elif how == "in small pieces":
            send_pieces(sock, head + body, 1000)
        else:
            sock.sendall(b"".join(request(handle, "add", {"a": 3, "b": 4})) + head + body)
        said, at = until_closed(sock, 30.0)
    finally:
        sock.close()
        handle.stop()
    if how == "pipelined behind a request":
        first = said.partition(b"\r\n\r\n")
        assert status_of(said) == 200 and b'"text":"7"' in first[2]
        said = said[said.index(b"HTTP/1.1 ", 1) :]
    assert status_of(said) == 431 and at is not None
    assert b"16384 bytes at most" in said
    assert RAN == ([(3, 4)] if how == "pipelined behind a request" else [])
    assert handle.refused == {"head": 1}


def test_a_head_within_16_kib_is_served(tools):
    handle = mcp_nb.serve()
    some = b"".join(b"X-Note-%d: v\r\n" % i for i in range(1000))  # about 13 KB
    head, body = request(handle, "add", {"a": 1, "b": 2}, extra=some)
    assert len(head) < limits.MAX_HEAD
    sock = connect(handle)
    try:
        send_pieces(sock, head + body, 1000)
        said = answer(sock)
    finally:
        sock.close()
        handle.stop()
    assert status_of(said) == 200 and RAN == [(1, 2)]


# -- a client that reads nothing --------------------------------------------------------------------------


def test_a_client_that_never_reads_its_answer_is_cut_off_and_keeps_no_one_out(tools):
    handle = mcp_nb.serve(max_connections=2, header_timeout=2.0)
    # An answer of 16 MB to clients whose window is a few KB, who never read: the server's
    # writes stall, and each would hold its place (and the answer) for as long as it liked.
    deaf = []
    for _ in range(2):
        sock = connect(handle, receive_buffer=4096)
        sock.sendall(b"".join(request(handle, "big", {"n": 16 * 1024 * 1024})))
        deaf.append(sock)
    try:
        time.sleep(1.0)
        assert asyncio.run(sdk_add(handle, 1, 2)) == "3"  # was 503, then their places, forever
        # Each is cut off once it has read nothing for header_timeout, and that client took a
        # place. Read then: each answer ends short, where it would come whole.
        assert wait_until(lambda: handle.refused.get("slow", 0) == 2, 60.0), handle.refused
        got = [read_all(sock, 30.0) for sock in deaf]
    finally:
        for sock in deaf:
            sock.close()
        handle.stop()
    assert all(size < 16 * 1024 * 1024 for size in got), got
    assert handle.refused.get("slow", 0) == 2
