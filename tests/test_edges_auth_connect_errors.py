"""A connect that fails is one line that says what happened, in `mcp_nb.connect` (ConnectError) and in
`%mcp_connect` (UsageError): a served kernel that refuses a wrong token ("HTTP 401: the token was
refused") or none, a 403, a wrong path, a server that fails, nobody listening, TLS to a plain server,
a server that hangs up mid-handshake or answers the handshake with an error whose message holds a
fake traceback, an 8 MB body. Never the SDK's "ExceptionGroup: unhandled errors in a TaskGroup",
never a peer's page pasted in, never a secret the request carried."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading

import pytest

import mcp_nb

TOKEN_ECHO = "Bearer s3cret-token-the-server-echoes"
PAGE = '<html>\n<head><title>Forbidden</title></head>\n<body>\nTraceback (most recent call last):\n  File "x"\n</body></html>'


def one_line(said: str) -> None:
    assert said.isprintable() and len(said.splitlines()) == 1, said
    assert len(said) < 700, (len(said), said[:300])
    assert "ExceptionGroup" not in said and "TaskGroup" not in said and "Traceback" not in said, said


@contextlib.contextmanager
def answering(answer):
    """A loopback HTTP peer: `answer(head, body)` gives the bytes sent back (None: hang up)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)

    def serve_one(peer: socket.socket) -> None:
        with peer:
            peer.settimeout(10)
            data = b""
            try:
                while b"\r\n\r\n" not in data:
                    chunk = peer.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, _, body = data.partition(b"\r\n\r\n")
                length = re.search(rb"content-length: *(\d+)", head, re.I)
                while length and len(body) < int(length.group(1)):
                    body += peer.recv(65536)
                out = answer(head, body)
                if out:
                    peer.sendall(out)
            except OSError:
                pass

    def accept() -> None:
        while True:
            try:
                peer, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve_one, args=(peer,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
    finally:
        listener.close()


def http(status: str, body: str | bytes, kind: str = "text/html") -> bytes:
    data = body.encode() if isinstance(body, str) else body
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode() + data
    )


def handshake_error(head: bytes, body: bytes) -> bytes:
    asked = json.loads(body)
    error = {
        "code": -32603,
        "message": 'the database is down\nTraceback (most recent call last):\n  File "srv.py"\n\x1b[31mKeyError',
    }
    return http("200 OK", json.dumps({"jsonrpc": "2.0", "id": asked.get("id"), "error": error}), "application/json")


# (the peer, what the message says after the URL)
PEERS = {
    "403 with a page": (
        lambda h, b: http("403 Forbidden", PAGE),
        'HTTP 403: the server refused the request with these credentials; the server said: an HTML page titled "Forbidden"',
    ),
    "404": (lambda h, b: http("404 Not Found", "no such endpoint", "text/plain"), "HTTP 404: nothing answers at this path"),
    "500 with a page": (
        lambda h, b: http("500 Internal Server Error", PAGE),
        'HTTP 500: the server failed; the server said: an HTML page titled "Forbidden"',
    ),
    "502, 8 MB": (
        lambda h, b: http("502 Bad Gateway", "E" * (8 << 20), "text/plain"),
        "HTTP 502: the server failed; the server said: EEEE",
    ),
    "401 echoing the token": (
        lambda h, b: http("401 Unauthorized", f"invalid credentials: {TOKEN_ECHO}", "text/plain"),
        "HTTP 401: the token was refused; the server said: invalid credentials: ***",
    ),
    "hangs up": (lambda h, b: None, "RemoteProtocolError: Server disconnected without sending a response."),
    "an error at initialize": (handshake_error, "MCPError: the database is down …"),
}


@pytest.mark.parametrize("peer", sorted(PEERS))
def test_a_peer_that_fails_the_connect_is_said_in_one_line(peer, shell):
    answer, said = PEERS[peer]
    headers = {"Authorization": TOKEN_ECHO}
    with answering(answer) as url:
        with pytest.raises(mcp_nb.ConnectError) as raised:
            mcp_nb.connect("peer", url, headers=headers, mode="2025-11-25", timeout=20)
        message = str(raised.value)
        one_line(message)
        assert message.startswith(f"could not connect to 'peer' ({url}): {said}"), message
        assert "s3cret-token" not in message
        result = shell.run_cell(f"%mcp_connect peer {url} --mode 2025-11-25 --timeout 20 --header 'Authorization: {TOKEN_ECHO}'")
    assert type(result.error_in_exec).__name__ == "UsageError" and str(result.error_in_exec) == message
    assert list(mcp_nb.servers().index) == ["kernel"]


@pytest.fixture
def served():
    handle = mcp_nb.serve()
    yield handle
    handle.stop()


@pytest.mark.parametrize("mode", ["auto", "2025-11-25", "2026-07-28"])
def test_a_served_kernel_refusing_a_wrong_token_says_401_the_token_was_refused(served, shell, mode):
    wrong = {"Authorization": "Bearer not-the-served-token"}
    with pytest.raises(mcp_nb.ConnectError) as raised:
        mcp_nb.connect("kernel2", served.url, headers=wrong, mode=mode)
    message = str(raised.value)
    one_line(message)
    assert (
        message
        == f"could not connect to 'kernel2' ({served.url}): HTTP 401: the token was refused; the server said: invalid_token: the bearer token sent is not this server's (it changes every time the server starts)"
    )
    result = shell.run_cell(
        f"%mcp_connect kernel2 {served.url} --mode {mode} --header 'Authorization: Bearer not-the-served-token'"
    )
    assert type(result.error_in_exec).__name__ == "UsageError" and str(result.error_in_exec) == message
    # None at all: the message says how to give one.
    with pytest.raises(
        mcp_nb.ConnectError, match=r"HTTP 401: the server asks for credentials and none were sent \(connect with headers="
    ) as raised:
        mcp_nb.connect("kernel2", served.url, mode=mode)
    one_line(str(raised.value))
    # The right one connects, through the same magic.
    assert shell.run_cell(
        f"%mcp_connect kernel2 {served.url} --mode {mode} --header 'Authorization: Bearer {served.token}'"
    ).success
    assert mcp_nb.servers().loc["kernel2", "state"] == "connected"


def test_a_wrong_path_on_a_served_kernel_is_a_404_that_says_so(served):
    with pytest.raises(mcp_nb.ConnectError) as raised:
        mcp_nb.connect("kernel2", served.url.removesuffix("/mcp") + "/nope", headers={"Authorization": f"Bearer {served.token}"})
    one_line(str(raised.value))
    assert "HTTP 404: nothing answers at this path (a server's MCP endpoint is often .../mcp)" in str(raised.value)


def test_nobody_listening_and_tls_to_a_plain_server_say_what_they_are(served, shell):
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(mcp_nb.ConnectError) as raised:
        mcp_nb.connect("nobody", f"http://127.0.0.1:{port}/mcp")
    one_line(str(raised.value))
    assert str(raised.value).endswith("): nothing is listening there (connection refused)")
    tls = served.url.replace("http://", "https://")
    with pytest.raises(mcp_nb.ConnectError) as raised:
        mcp_nb.connect("tls", tls, headers={"Authorization": f"Bearer {served.token}"})
    one_line(str(raised.value))
    assert "the TLS handshake failed" in str(raised.value) and "the server speaks plain HTTP: connect with http://" in str(
        raised.value
    )
    result = shell.run_cell(f"%mcp_connect nobody http://127.0.0.1:{port}/mcp")
    assert type(result.error_in_exec).__name__ == "UsageError" and "nothing is listening there" in str(result.error_in_exec)
