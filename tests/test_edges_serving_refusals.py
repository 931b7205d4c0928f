"""What a client refused by a served kernel is told (issue 40): every refusal is its HTTP status with
a JSON body naming the reason (RFC 6750's shape), the 401 says in its challenge what RFC 6750 has
it say, and an outside SDK client raises exactly what docs/serving.md shows."""

import asyncio
import json
import re
import traceback
from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR
from outside import client, post

import mcp_nb

DOCS = Path(__file__).resolve().parent.parent / "docs" / "serving.md"
CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


@pytest.fixture
def served():
    @mcp_nb.tool()
    def add(a: int, b: int) -> int:
        return a + b

    handle = mcp_nb.serve()
    yield handle
    handle.stop()


def error_of(text: str) -> dict:
    said = json.loads(text)
    assert set(said) == {"error", "error_description"}, said
    return said


def test_no_token_is_a_401_with_a_bare_challenge_and_a_json_body_saying_why(served):
    status, headers, text = post(served.url, CALL)
    assert status == 401
    assert headers["www-authenticate"] == 'Bearer realm="mcp_nb"'  # RFC 6750 3.1: no error code without credentials
    assert headers["content-type"] == "application/json" and headers["connection"] == "close"
    error = error_of(text)
    assert error["error"] == "invalid_token"
    assert error["error_description"].startswith("a bearer token is required")


@pytest.mark.parametrize("authorization", ["Bearer not-the-token", "Basic dXNlcjpwYXNz", "Bearer"])
def test_a_refused_token_is_a_401_saying_invalid_token(served, authorization):
    status, headers, text = post(served.url, CALL, {"Authorization": authorization})
    assert status == 401
    assert headers["www-authenticate"] == (
        'Bearer realm="mcp_nb", error="invalid_token", error_description="the bearer token was refused"'
    )
    assert error_of(text) == {
        "error": "invalid_token",
        "error_description": "the bearer token sent is not this server's (it changes every time the server starts)",
    }
    assert served.token not in text and served.refused == {"token": 1}


@pytest.mark.parametrize(
    ("headers", "status", "code"),
    [
        ({"Host": "evil.example.com"}, 421, "misdirected_request"),
        ({"Origin": "http://evil.example.com"}, 403, "forbidden_origin"),
    ],
)
def test_every_refusal_at_the_door_is_json_naming_its_reason(served, headers, status, code):
    sent = {"Authorization": f"Bearer {served.token}", **headers}
    got, answer_headers, text = post(served.url, CALL, sent)
    assert got == status and answer_headers["content-type"] == "application/json"
    assert error_of(text)["error"] == code


def test_a_body_over_the_cap_sent_in_chunks_is_refused_at_the_door_with_413():
    handle = mcp_nb.serve(max_body=1000)
    try:
        body = json.dumps({**CALL, "params": {"pad": "x" * 5000}}).encode()
        status, headers, text = post(handle.url, body, {"Authorization": f"Bearer {handle.token}"}, chunked=True)
    finally:
        handle.stop()
    assert status == 413 and headers.get("connection") == "close"
    assert error_of(text)["error"] == "body_too_large"
    assert handle.refused == {"body": 1}


def leaves(group: BaseException) -> list[BaseException]:
    if isinstance(group, BaseExceptionGroup):
        return [leaf for inner in group.exceptions for leaf in leaves(inner)]
    return [group]


def documented_refusal() -> str:
    """The text blocks docs/serving.md shows under "What a refused client sees"."""
    page = DOCS.read_text()
    section = page[page.index("### What a refused client sees") :]
    section = section[: section.index("\n## ")]
    return "\n".join(re.findall(r"```text\n(.*?)```", section, re.S))


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_an_outside_sdk_client_with_a_wrong_token_raises_what_the_docs_show(served, mode):
    async def refused():
        async with client(served.url, "a-wrong-token", mode=mode) as session:
            await session.list_tools()

    with pytest.raises(BaseExceptionGroup) as raised:
        asyncio.run(refused())
    group = raised.value
    assert [type(leaf) for leaf in leaves(group)] == [MCPError]
    (leaf,) = leaves(group)
    assert leaf.code == INTERNAL_ERROR  # the SDK's word for a 4xx whose body is no JSON-RPC error
    shown = documented_refusal()
    # The page shows the group's first line and the error inside, as Python prints them.
    assert traceback.format_exception_only(type(group), group)[0].strip() in shown
    assert traceback.format_exception_only(type(leaf), leaf)[0].strip() in shown
