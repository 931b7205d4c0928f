"""The adapters against servers on 127.0.0.1 that speak each vendor's documented wire format
(tests/model_servers.py): what they send, what they read back, and every way the answer can fail."""

from __future__ import annotations

import asyncio
import json

import pytest
from mcp.server.mcpserver.exceptions import ToolError
from model_servers import (
    Answer,
    ModelServer,
    anthropic_check,
    anthropic_error,
    completion,
    message,
    openai_check,
    openai_error,
)

import mcp_nb
from mcp_nb import Anthropic, ModelError, OpenAICompatible, agent

pytestmark = pytest.mark.timeout(120)

KEY = "sk-test-0123456789abcdefSECRET"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_author",
            "description": "Who wrote a book",
            "parameters": {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]},
        },
    }
]
ASK = [{"role": "user", "content": "Who wrote 'Dun'?"}]


@pytest.fixture
def key_env(monkeypatch):
    monkeypatch.setenv("MCP_NB_TEST_MODEL_KEY", KEY)
    return "MCP_NB_TEST_MODEL_KEY"


def reply(model, messages=ASK, tools=TOOLS, seconds=20.0):
    async def go():
        async with model.opened() as reply_to:
            return await reply_to(messages, tools, seconds, "call_t1")

    return asyncio.run(go())


def failure(model, **kwargs) -> ModelError:
    with pytest.raises(ModelError) as caught:
        reply(model, **kwargs)
    return caught.value


@pytest.fixture
def books():
    known = {"Dune": "Frank Herbert", "Emma": "Jane Austen"}

    @mcp_nb.tool()
    def get_author(title: str) -> str:
        """Who wrote a book, by its title."""
        if title not in known:
            raise ToolError(f"No book titled {title!r}. Known titles: {', '.join(map(repr, known))}")
        return known[title]

    return known


# -- OpenAI's chat completions ------------------------------------------------------------------


def test_a_tool_call_is_read_and_the_request_is_what_the_api_takes(key_env):
    with ModelServer(openai_check(KEY), [completion(calls=[("get_author", '{"title": "Dun"}')])]) as server:
        got = reply(OpenAICompatible("gpt-test", f"{server.url}/v1", key=key_env))
    assert got.content is None and got.finish == "tool_calls" and (got.prompt_tokens, got.completion_tokens) == (12, 5)
    assert [(r.name, r.arguments) for r in got.tool_calls] == [("get_author", '{"title": "Dun"}')]
    sent = server.requests[0]
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.body["tools"] == TOOLS and sent.body["tool_choice"] == "auto" and sent.body["model"] == "gpt-test"


def test_an_episode_through_an_openai_compatible_endpoint_sends_what_the_api_takes(key_env, books):
    script = [
        completion(calls=[("get_author", '{"title": "Dun"}')]),
        completion(calls=[("get_author", '{"title": "Dune"}')]),
        completion("Frank Herbert wrote Dune."),
    ]
    with ModelServer(openai_check(KEY), script) as server:
        episode = agent("Who wrote 'Dun'?", OpenAICompatible("gpt-test", f"{server.url}/v1", key=key_env))
    assert episode.stop == "answered" and episode.answer == "Frank Herbert wrote Dune.", episode
    assert [o.cause for o in episode.calls] == ["raised", "ok"] and episode.fates() == ["recovered", None]
    assert episode.tokens == 3 * 17
    # The host's verdict (`is_error`) stays out of what the API is sent: it would refuse the field.
    last = server.requests[-1].body["messages"]
    assert [m["role"] for m in last] == ["user", "assistant", "tool", "assistant", "tool"]
    assert last[1]["content"] == ""  # not null: llama.cpp's server refuses an assistant turn whose content is null
    assert last[2] == {"role": "tool", "tool_call_id": "call_0", "content": episode.calls[0].content}


def test_a_rate_limit_that_says_when_is_waited_for_and_retried(key_env):
    script = [openai_error(429, "Rate limit reached", "requests", {"retry-after": "0.2"}), completion("fine")]
    with ModelServer(openai_check(KEY), script) as server:
        got = reply(OpenAICompatible("gpt-test", f"{server.url}/v1", key=key_env))
    assert got.content == "fine" and len(server.requests) == 2


def test_a_rate_limit_without_a_time_is_not_retried(key_env):
    script = [openai_error(429, "You exceeded your current quota", "insufficient_quota"), completion("never")]
    with ModelServer(openai_check(KEY), script) as server:
        err = failure(OpenAICompatible("gpt-test", f"{server.url}/v1", key=key_env))
    assert err.kind == "rate_limited" and err.status == 429 and "exceeded your current quota" in str(err)
    assert len(server.requests) == 1


def test_a_wait_past_the_time_left_is_not_waited(key_env):
    script = [openai_error(429, "Rate limit reached", "requests", {"retry-after": "30"}), completion("never")]
    with ModelServer(openai_check(KEY), script) as server:
        err = failure(OpenAICompatible("gpt-test", f"{server.url}/v1", key=key_env), seconds=2.0)
    assert err.kind == "rate_limited" and "asked to wait 30 s" in str(err) and len(server.requests) == 1


def test_server_errors_are_retried_a_bounded_number_of_times(key_env):
    with ModelServer(openai_check(KEY), [openai_error(503, "busy", "server_error")] * 5) as server:
        err = failure(OpenAICompatible("gpt-test", f"{server.url}/v1", key=key_env, retries=2))
    assert err.kind == "http_error" and err.status == 503 and len(server.requests) == 3


def test_a_refused_key_is_said_without_the_key(key_env, monkeypatch):
    monkeypatch.setenv(key_env, "sk-wrong-key-000000000000")
    with ModelServer(openai_check(KEY), []) as server:
        err = failure(OpenAICompatible("gpt-test", f"{server.url}/v1", key=key_env))
    assert err.status == 401 and "Incorrect API key" in str(err)
    assert "sk-wrong-key" not in str(err) and "***" in str(err)


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (Answer(200, b"<html><body>502 Bad Gateway</body></html>"), "not JSON"),
        (Answer(200, {"choices": []}), "no choices"),
        (Answer(200, {"choices": [{"message": {"role": "user", "content": "x"}}]}), "not one of role"),
        (
            Answer(200, {"choices": [{"message": {"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]}}]}),
            "names no tool",
        ),
        (Answer(200, {"choices": [{"message": {"role": "assistant", "content": 42}}]}), "content is text"),
        (Answer(200, b""), "not JSON"),
    ],
)
def test_a_malformed_answer_is_a_bad_reply(key_env, answer, said):
    with ModelServer(openai_check(KEY), [answer]) as server:
        err = failure(OpenAICompatible("gpt-test", f"{server.url}/v1", key=key_env))
    assert err.kind == "bad_reply" and said in str(err)


def test_a_slow_endpoint_times_out(key_env):
    with ModelServer(openai_check(KEY), [Answer(200, {}, pause=3.0)]) as server:
        err = failure(OpenAICompatible("gpt-test", f"{server.url}/v1", key=key_env), seconds=0.5)
    assert err.kind == "timeout" and "0.5 s" in str(err)


def test_an_endpoint_that_is_not_there_is_unreachable():
    with ModelServer(openai_check(), []) as server:
        url = server.url
    err = failure(OpenAICompatible("local", f"{url}/v1", retries=1))
    assert err.kind == "unreachable" and "127.0.0.1" in str(err)


def test_a_local_endpoint_is_sent_no_key():
    with ModelServer(openai_check(), [completion("hello")]) as server:
        got = reply(OpenAICompatible("smol", f"{server.url}/v1", temperature=0, options={"seed": 7}))
    assert got.content == "hello"
    assert "authorization" not in server.requests[0].headers
    assert server.requests[0].body["temperature"] == 0 and server.requests[0].body["seed"] == 7


# -- Anthropic's Messages API -------------------------------------------------------------------


def test_a_tool_use_is_read_with_its_stop_reason_and_usage(key_env):
    usage = {"input_tokens": 10, "cache_creation_input_tokens": 3, "cache_read_input_tokens": 2, "output_tokens": 4}
    with ModelServer(anthropic_check(KEY), [message("Let me look.", [("get_author", {"title": "Dun"})], usage=usage)]) as server:
        got = reply(Anthropic("claude-test", key=key_env, base_url=server.url))
    assert got.content == "Let me look." and got.finish == "tool_calls" and (got.prompt_tokens, got.completion_tokens) == (15, 4)
    assert [(r.id, r.name, json.loads(r.arguments)) for r in got.tool_calls] == [("toolu_0", "get_author", {"title": "Dun"})]
    sent = server.requests[0]
    assert sent.headers["x-api-key"] == KEY and sent.headers["anthropic-version"] == "2023-06-01"
    assert sent.body["tools"] == [
        {"name": "get_author", "description": "Who wrote a book", "input_schema": TOOLS[0]["function"]["parameters"]}
    ]
    assert sent.body["tool_choice"] == {"type": "auto"} and sent.body["max_tokens"] == 1024


@pytest.mark.parametrize(
    ("stop", "finish"),
    [
        ("end_turn", "stop"),
        ("max_tokens", "length"),
        ("stop_sequence", "stop"),
        ("refusal", "content_filter"),
        ("pause_turn", "pause_turn"),
    ],
)
def test_stop_reasons_are_read_as_chat_completions_name_them(key_env, stop, finish):
    with ModelServer(anthropic_check(KEY), [message("…", stop=stop)]) as server:
        got = reply(Anthropic("claude-test", key=key_env, base_url=server.url))
    assert got.finish == finish


def test_an_episode_through_the_messages_api_answers_each_tool_use_with_its_result(key_env, books):
    script = [
        message(None, [("get_author", {"title": "Dun"})]),
        message(None, [("get_author", {"title": "Dune"})]),
        message("Frank Herbert."),
    ]
    with ModelServer(anthropic_check(KEY), script) as server:
        episode = agent("Who wrote 'Dun'?", Anthropic("claude-test", key=key_env, base_url=server.url), system="Use the tools.")
    assert episode.stop == "answered" and episode.answer == "Frank Herbert.", episode
    assert episode.fates() == ["recovered", None]
    second = server.requests[1].body
    assert second["system"] == "Use the tools."
    assert second["messages"][1]["content"] == [
        {"type": "tool_use", "id": "toolu_0", "name": "get_author", "input": {"title": "Dun"}}
    ]
    result = second["messages"][2]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_0" and result["is_error"] is True
    assert "No book titled 'Dun'" in result["content"]
    assert server.requests[2].body["messages"][4]["content"][0]["is_error"] is False


def test_overloaded_and_rate_limited_answers_are_retried(key_env):
    script = [
        anthropic_error(529, "overloaded_error", "Overloaded"),
        anthropic_error(
            429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit", {"retry-after": "0.1"}
        ),
        message("done"),
    ]
    with ModelServer(anthropic_check(KEY), script) as server:
        got = reply(Anthropic("claude-test", key=key_env, base_url=server.url, retries=2))
    assert got.content == "done" and len(server.requests) == 3


@pytest.mark.parametrize(
    ("answer", "kind", "said"),
    [
        (
            anthropic_error(400, "invalid_request_error", "messages: at least one message is required"),
            "http_error",
            "invalid_request_error: messages",
        ),
        (anthropic_error(429, "rate_limit_error", "spend limit reached"), "rate_limited", "spend limit"),
        (
            anthropic_error(413, "request_too_large", "Request exceeds the maximum allowed number of bytes"),
            "http_error",
            "request_too_large",
        ),
        (Answer(200, {"type": "message", "content": "not a list"}), "bad_reply", "no message"),
        (Answer(200, {"type": "error", "error": {"type": "api_error", "message": "x"}}), "bad_reply", "no message"),
        (Answer(200, {"type": "message", "content": [{"type": "tool_use", "input": {}}]}), "bad_reply", "names no tool"),
        (Answer(200, b'{"type": "message", "content": ['), "bad_reply", "not JSON"),
    ],
)
def test_errors_and_malformed_messages_are_said_in_one_line(key_env, answer, kind, said):
    with ModelServer(anthropic_check(KEY), [answer]) as server:
        err = failure(Anthropic("claude-test", key=key_env, base_url=server.url))
    assert err.kind == kind and said in str(err) and "\n" not in str(err)


def test_a_wrong_key_is_refused_and_never_quoted(key_env, monkeypatch):
    monkeypatch.setenv(key_env, "sk-ant-wrong-0000000000")
    with ModelServer(anthropic_check(KEY), []) as server:
        err = failure(Anthropic("claude-test", key=key_env, base_url=server.url))
    assert err.status == 401 and "authentication_error" in str(err) and "sk-ant-wrong" not in str(err)


def test_a_conversation_the_api_would_refuse_is_never_sent(key_env):
    # The tool result of a call, then the user's words, in one user turn: the API's own rule.
    messages = [
        *ASK,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "toolu_9", "type": "function", "function": {"name": "get_author", "arguments": "not json"}}],
        },
        {"role": "tool", "tool_call_id": "toolu_9", "content": "bad", "is_error": True},
        {"role": "user", "content": "Try again."},
    ]
    with ModelServer(anthropic_check(KEY), [message("ok")]) as server:
        got = reply(Anthropic("claude-test", key=key_env, base_url=server.url), messages=messages)
    assert got.content == "ok"
    sent = server.requests[0].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[1]["content"][0]["input"] == {"_arguments": "not json"}
    assert [b["type"] for b in sent[2]["content"]] == ["tool_result", "text"]
