"""A request the SDK refuses before any handler is not a call: it is not recorded, and nothing
recorded can break a later request.

An outside client sent `prompts/get` with its arguments as a list: the SDK answered it as invalid
params, and it was recorded anyway; from then on `completion/complete` for that prompt failed
with -32603 for every client until the history was cleared.
"""

from __future__ import annotations

import json

import pytest
from outside import post, raw_session

import mcp_nb


@pytest.fixture
def served():
    @mcp_nb.prompt()
    def review(title: str) -> str:
        return f"Review {title}"

    assert mcp_nb.get_prompt("review", {"title": "Dune"}).ok
    handle = mcp_nb.serve()
    try:
        yield handle, raw_session(handle)
    finally:
        handle.stop()


def rpc(handle, headers, ident: int, method: str, params) -> dict:
    status, _, text = post(handle.url, {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}, headers)
    body = text[text.index("{") :] if "{" in text else text  # an SSE frame's data, or plain JSON
    return json.loads(body.splitlines()[0] if body.startswith("{") and "\n" in body else body)


@pytest.mark.parametrize("arguments", [["Dune"], {"title": 1}, "Dune"], ids=["a-list", "a-number", "a-string"])
def test_a_refused_prompt_request_is_not_recorded_and_completion_still_answers(served, arguments):
    handle, headers = served
    refused = rpc(handle, headers, 2, "prompts/get", {"name": "review", "arguments": arguments})
    assert refused["error"]["code"] == -32602  # invalid params, from the SDK
    assert len(mcp_nb.history()) == 1  # the kernel's own call only
    completed = rpc(
        handle,
        headers,
        3,
        "completion/complete",
        {"ref": {"type": "ref/prompt", "name": "review"}, "argument": {"name": "title", "value": "D"}},
    )
    assert completed["result"]["completion"]["values"] == ["Dune"]
    answered = rpc(handle, headers, 4, "prompts/get", {"name": "review", "arguments": {"title": "Emma"}})
    assert "result" in answered and len(mcp_nb.history()) == 2  # a good one is recorded as ever
