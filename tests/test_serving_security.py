"""A served kernel refuses what it must, over real HTTP: each refusal has its status, is counted,
and never reaches a tool or the history. The same request with nothing wrong is answered and
recorded, so every refusal here is the door's doing."""

import socket

import pytest
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY
from outside import post

import mcp_nb
from mcp_nb.serving import guard

RAN = []


@pytest.fixture
def served():
    RAN.clear()

    @mcp_nb.tool()
    def add(a: int, b: int) -> int:
        RAN.append((a, b))
        return a + b

    handle = mcp_nb.serve()
    yield handle
    handle.stop()


def call_add(token: str | None, **headers) -> tuple[dict, dict]:
    """A complete 2026-07-28 `tools/call` of `add` (one POST, no session), and its headers."""
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {
            "name": "add",
            "arguments": {"a": 1, "b": 2},
            "_meta": {
                PROTOCOL_VERSION_META_KEY: "2026-07-28",
                CLIENT_INFO_META_KEY: {"name": "raw", "version": "1"},
                CLIENT_CAPABILITIES_META_KEY: {},
            },
        },
    }
    sent = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "add"}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    sent.update(headers)
    return body, sent


def nothing_recorded():
    return len(mcp_nb.history()) == 0 and RAN == []


def test_the_complete_request_is_answered_and_recorded(served):
    status, _, text = post(served.url, *call_add(served.token))
    assert status == 200 and '"text":"3"' in text
    (row,) = mcp_nb.history().to_frame().itertuples()
    assert (row.name, row.outcome, row.via, row.client) == ("add", "result", "http", "raw 1")
    assert RAN == [(1, 2)] and served.refused == {}


def test_no_token_is_401_and_nothing_runs(served):
    status, headers, _ = post(served.url, *call_add(None))
    assert status == 401 and headers.get("www-authenticate", "").startswith("Bearer")
    assert nothing_recorded() and served.refused == {"token": 1}


@pytest.mark.parametrize("authorization", ["Bearer wrong", "Basic {token}", "{token}", "Bearer {token}x", "Bearer"])
def test_a_wrong_token_is_401_and_nothing_runs(served, authorization):
    body, headers = call_add(None, Authorization=authorization.format(token=served.token))
    status, _, _ = post(served.url, body, headers)
    assert status == 401
    assert nothing_recorded() and served.refused == {"token": 1}


def test_the_token_is_compared_in_constant_time(served, monkeypatch):
    compared = []
    real = guard.hmac.compare_digest

    def spy(a, b):
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(guard.hmac, "compare_digest", spy)
    post(served.url, *call_add("not-it"))
    assert compared == [(b"not-it", served.token.encode())]


@pytest.mark.parametrize("host", ["evil.example.com", "evil.example.com:{port}", "127.0.0.1:1", "127.0.0.1", "LOCALHOST:{port}"])
def test_a_host_that_is_not_this_server_is_421_even_with_the_token(served, host):
    body, headers = call_add(served.token, Host=host.format(port=served.port))
    status, _, _ = post(served.url, body, headers)
    assert status == 421
    assert nothing_recorded() and served.refused == {"host": 1}


def test_every_local_name_of_the_server_is_accepted(served):
    for name in ("127.0.0.1", "localhost", "[::1]"):
        status, _, _ = post(served.url, *call_add(served.token, Host=f"{name}:{served.port}"))
        assert status == 200, name
    assert len(RAN) == 3


@pytest.mark.parametrize("origin", ["http://evil.example.com", "https://127.0.0.1:{port}", "http://localhost:1", "null"])
def test_an_origin_that_is_not_this_server_is_403_even_with_the_token(served, origin):
    body, headers = call_add(served.token, Origin=origin.format(port=served.port))
    status, _, _ = post(served.url, body, headers)
    assert status == 403
    assert nothing_recorded() and served.refused == {"origin": 1}


def test_the_servers_own_origin_is_accepted(served):
    status, _, _ = post(served.url, *call_add(served.token, Origin=f"http://localhost:{served.port}"))
    assert status == 200 and RAN == [(1, 2)]


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_an_oversized_body_is_413_and_nothing_runs(chunked):
    @mcp_nb.tool()
    def add(a: int, b: int) -> int:
        RAN.append((a, b))
        return a + b

    RAN.clear()
    handle = mcp_nb.serve(max_body=4096)
    try:
        body, headers = call_add(handle.token)
        body["params"]["arguments"]["padding"] = "x" * 8192
        status, _, _ = post(handle.url, body, headers, chunked=chunked)
        assert status == 413
        assert nothing_recorded() and handle.refused == {"body": 1}
        status, _, _ = post(handle.url, *call_add(handle.token), chunked=chunked)
        assert status == 200 and RAN == [(1, 2)]  # under the cap, the same way, it goes through
    finally:
        handle.stop()


def test_the_default_bind_address_is_loopback_only(served):
    assert served.url.startswith("http://127.0.0.1:")
    assert served._socket.getsockname()[0] == "127.0.0.1"
    outward = _an_outward_address()
    if outward is not None:  # this machine's address on its network: nothing listens there
        with pytest.raises(OSError):
            socket.create_connection((outward, served.port), timeout=2).close()


def test_tokens_are_random_and_long():
    first = mcp_nb.serve()
    token = first.token
    first.stop()
    second = mcp_nb.serve()
    try:
        assert token != second.token and len(token) >= 43 and len(second.token) >= 43
    finally:
        second.stop()


def test_without_auth_on_loopback_host_and_origin_are_still_checked():
    RAN.clear()

    @mcp_nb.tool()
    def add(a: int, b: int) -> int:
        RAN.append((a, b))
        return a + b

    handle = mcp_nb.serve(dangerously_no_auth=True)
    try:
        assert handle.token is None
        assert post(handle.url, *call_add(None))[0] == 200
        assert post(handle.url, *call_add(None, Host="evil.example.com"))[0] == 421
        assert post(handle.url, *call_add(None, Origin="http://evil.example.com"))[0] == 403
        assert handle.refused == {"host": 1, "origin": 1} and RAN == [(1, 2)]
    finally:
        handle.stop()


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.1", "example.com"])
def test_going_without_the_token_is_refused_off_loopback_and_nothing_listens(host):
    with pytest.raises(ValueError, match="dangerously_no_auth is refused"):
        mcp_nb.serve(host=host, dangerously_no_auth=True)
    from mcp_nb.serving import current

    assert current(mcp_nb.engine()) is None


def test_off_loopback_the_token_is_required():
    handle = mcp_nb.serve(host="0.0.0.0")
    try:
        assert handle.token is not None
        assert post(handle.url, *call_add(None))[0] == 401
        assert post(handle.url, *call_add(handle.token))[0] == 200
    finally:
        handle.stop()


def _an_outward_address() -> str | None:
    # Connecting a UDP socket sends nothing; it only picks the interface a packet would leave by.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))
        except OSError:
            return None
        address = probe.getsockname()[0]
    return None if address.startswith("127.") else address
