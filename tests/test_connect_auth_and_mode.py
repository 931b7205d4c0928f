"""`connect(..., auth=, mode=)`: credentials through an httpx2 Auth, the protocol era as the user
asks for it, a refused connection said as the refusal it is, and a server whose one listing is
broken still connected. Against real servers: a notebook served by `mcp_nb.serve()` (which
requires a bearer token) and a bare JSON-RPC server over stdio."""

import sys
from pathlib import Path

import httpx
import httpx2
import pytest
from IPython.core.error import UsageError

import mcp_nb

BROKEN = [sys.executable, str(Path(__file__).parent / "servers" / "broken_listing.py")]
MODES = ("auto", "2025-11-25", "2026-07-28")


class Bearer(httpx2.Auth):
    """The simplest Auth: a fixed token on every request (the SDK's OAuth providers are Auths too)."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.requests = 0

    def auth_flow(self, request):
        self.requests += 1
        request.headers["Authorization"] = f"Bearer {self.token}"
        yield request


@pytest.fixture
def served():
    @mcp_nb.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @mcp_nb.prompt()
    def greet(name: str) -> str:
        return f"Say hello to {name}"

    handle = mcp_nb.serve()
    yield handle
    handle.stop()


@pytest.mark.parametrize(
    "options, said",
    [
        ({"auth": 42}, "auth must be an httpx2.Auth"),
        ({"auth": "Bearer abc"}, "a fixed token goes in headers="),
        ({"auth": httpx.BasicAuth("ann", "pw")}, "the SDK's transport is built on httpx2"),
        ({"mode": "legacy"}, "mode must be one of 'auto', '2025-11-25', '2026-07-28'"),
        ({"mode": None}, "mode must be one of"),
    ],
)
def test_bad_auth_or_mode_is_one_line_and_connects_nothing(options, said):
    with pytest.raises(ValueError, match=said) as raised:
        mcp_nb.connect("srv", "http://127.0.0.1:9/mcp", **options)
    assert "\n" not in str(raised.value)
    assert list(mcp_nb.servers().index) == ["kernel"]


def test_auth_is_for_a_url_not_a_command():
    with pytest.raises(ValueError, match="auth is for a URL"):
        mcp_nb.connect("srv", BROKEN, auth=Bearer("t"))


def test_the_magic_takes_auth_by_variable_and_mode(shell, served):
    shell.user_ns["creds"] = Bearer(served.token)
    connection = shell.run_line_magic("mcp_connect", f"me {served.url} --auth creds --mode 2025-11-25")
    assert connection.describe()["protocol"] == "2025-11-25"
    assert shell.run_line_magic("mcp_call", "add a=2 b=3 --server me").content == "5"
    for line, said in (
        (f"me {served.url} --auth nowhere", "no variable of that name"),
        (f"me {served.url} --auth 'a b'", "--auth takes the name of a variable"),
        (f"me {served.url} --mode legacy", "mode must be one of"),
    ):
        with pytest.raises(UsageError, match=said):
            shell.run_line_magic("mcp_connect", line)
    assert connection.describe()["state"] == "connected"  # a refused line left the connection as it was


@pytest.mark.parametrize("mode", MODES)
def test_each_mode_speaks_its_era_and_lists_what_the_server_offers(served, mode):
    auth = Bearer(served.token)
    connection = mcp_nb.connect("me", served.url, auth=auth, mode=mode)
    row = connection.describe()
    # auto asks the server (server/discover), which speaks 2026-07-28; a pinned era is used as pinned.
    assert row["protocol"] == ("2026-07-28" if mode == "auto" else mode)
    # Pinned at 2026-07-28 the server was never asked what it offers: every kind is listed anyway.
    assert sorted((e.kind, e.name) for e in connection.entries()) == [("prompt", "greet"), ("tool", "add")]
    assert row["unavailable"] == ""
    shown = f"protocol {row['protocol']}" + ("" if mode == "auto" else " (pinned)")
    assert shown in repr(connection) and shown in connection._repr_html_()
    outcome = mcp_nb.call("add", {"a": 1, "b": 2}, server="me")
    assert (outcome.outcome, outcome.content) == ("result", "3")
    assert auth.requests >= 2  # every request went through the Auth
    # The history says which era each call went over: the call made here, and the same call as
    # the served notebook recorded it from its outside client (this very connection).
    frame = mcp_nb.history().to_frame()
    made, served_side = frame[frame["via"] == "kernel"].iloc[-1], frame[frame["via"] == "http"].iloc[-1]
    assert outcome.protocol == made["protocol"] == served_side["protocol"] == row["protocol"]


@pytest.mark.parametrize("mode", MODES)
def test_a_refused_connection_says_401_whatever_the_sdk_tried_next(served, mode):
    # At 2026-07-28 the SDK answers a 401 to server/discover by falling back to the handshake,
    # which a modern server refuses with a 400 about a missing header: that is not why it failed.
    for options in ({}, {"auth": Bearer("wrong")}):
        with pytest.raises(mcp_nb.ConnectError) as raised:
            mcp_nb.connect("me", served.url, mode=mode, **options)
        said = str(raised.value)
        # the served kernel's refusal is RFC 6750's JSON, which the message reads as "error: description"
        assert "HTTP 401: " in said and "the server said: invalid_token: " in said and '"error"' not in said, said
        # "HTTP 400", not a bare "400": the server's port may hold those digits (127.0.0.1:44003)
        assert "MCP-Protocol-Version" not in said and "HTTP 400" not in said and "400 Bad" not in said
        assert ("the credentials were refused" in said) == ("auth" in options)
        assert ("none were sent (connect with headers=" in said) == ("auth" not in options)
        assert "wrong" not in said
    assert list(mcp_nb.servers().index) == ["kernel"]


def test_the_token_is_kept_nowhere_a_record_is(served):
    auth = Bearer(served.token)
    connection = mcp_nb.connect("me", served.url, auth=auth)
    mcp_nb.call("add", {"a": 1, "b": 2}, server="me")
    mcp_nb.call("nope", server="me")
    written = [
        mcp_nb.history().to_frame().to_json(default_handler=str, date_format="iso"),
        mcp_nb.servers().to_json(default_handler=str, date_format="iso"),
        repr(connection),
        connection._repr_html_(),
        " ".join(str(line) for line in connection.logs),
    ]
    assert not [text for text in written if served.token in text]


def test_one_broken_listing_leaves_the_tools_and_says_what_broke():
    connection = mcp_nb.connect("broken", BROKEN)
    assert [(e.kind, e.name) for e in connection.entries()] == [("tool", "ping"), ("resource", "notes")]
    row = connection.describe()
    assert row["state"] == "connected"
    assert (
        "resource templates listing is not one the protocol allows (1 problem; first: resourceTemplates: Field required)"
        in row["unavailable"]
    )
    assert "prompts/list with error -32603: the prompt store is down" in row["unavailable"]
    assert "unavailable: " in repr(connection) and "unavailable: " in connection._repr_html_()
    warned = [line.message for line in connection.logs if line.level == "WARNING"]
    assert len(warned) == 2 and all(message.endswith("none listed") for message in warned)
    assert mcp_nb.call("ping", server="broken").content == "pong"
