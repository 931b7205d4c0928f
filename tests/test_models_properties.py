"""Every reader of what a model or a user writes, against anything: it answers or refuses in one line, never otherwise."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_nb.episodes.loop import read_arguments
from mcp_nb.mistakes import Mistake
from mcp_nb.models.anthropic import from_message, to_messages
from mcp_nb.models.endpoint import _retry_after
from mcp_nb.models.errors import BadReply
from mcp_nb.models.keys import Key
from mcp_nb.models.shape import Reply, read_reply
from mcp_nb.models.standin import StandIn

pytestmark = pytest.mark.timeout(300)
SETTINGS = settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20,
)
keys = st.sampled_from(
    [
        "role",
        "content",
        "tool_calls",
        "choices",
        "message",
        "function",
        "name",
        "arguments",
        "id",
        "usage",
        "type",
        "input",
        "text",
    ]
)
shaped = st.recursive(
    st.none() | st.text(max_size=20) | st.integers(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(keys, children, max_size=5),
    max_leaves=25,
)


@SETTINGS
@given(st.one_of(json_values, shaped))
def test_a_reply_is_read_or_refused_as_a_bad_reply(value):
    try:
        got = read_reply(value)
    except BadReply as err:
        assert "\n" not in str(err)
    else:
        assert isinstance(got, Reply) and all(isinstance(r.arguments, str) and isinstance(r.name, str) for r in got.tool_calls)


@SETTINGS
@given(st.text(max_size=200))
def test_arguments_are_an_object_or_a_reason(text):
    arguments, why = read_arguments(text)
    assert (isinstance(arguments, dict) and why is None) or (arguments is None and isinstance(why, str) and why)


@SETTINGS
@given(st.one_of(json_values, shaped))
def test_a_messages_api_answer_is_read_or_refused_as_a_bad_reply(value):
    try:
        got = from_message(value)
    except BadReply as err:
        assert "\n" not in str(err)
    else:
        assert isinstance(got, Reply)


roles = st.sampled_from(["system", "user", "assistant", "tool"])
conversation = st.lists(
    st.fixed_dictionaries(
        {"role": roles, "content": st.one_of(st.none(), st.text(max_size=20))},
        optional={
            "tool_calls": st.lists(
                st.fixed_dictionaries(
                    {
                        "id": st.text(max_size=5),
                        "function": st.fixed_dictionaries({"name": st.text(max_size=8), "arguments": st.text(max_size=30)}),
                    }
                ),
                max_size=2,
            ),
            "tool_call_id": st.text(max_size=5),
            "is_error": st.booleans(),
        },
    ),
    max_size=8,
)


@SETTINGS
@given(conversation)
def test_any_conversation_translates_for_the_messages_api(messages):
    system, turns = to_messages(messages)
    assert isinstance(system, str)
    assert all(a["role"] != b["role"] for a, b in zip(turns, turns[1:]))  # the API's turns alternate
    assert all(isinstance(block["input"], dict) for t in turns for block in t["content"] if block["type"] == "tool_use")


tools = st.lists(
    st.fixed_dictionaries(
        {
            "type": st.just("function"),
            "function": st.fixed_dictionaries(
                {
                    "name": st.text(min_size=1, max_size=8),
                    "parameters": st.just({"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}),
                }
            ),
        }
    ),
    max_size=3,
)


@SETTINGS
@given(conversation, tools)
def test_the_stand_in_replies_to_any_conversation(messages, offered):
    got = StandIn().decide(messages, offered)
    assert isinstance(got, Reply) and (got.content is not None or got.tool_calls)


@SETTINGS
@given(st.text(max_size=40))
def test_a_retry_after_is_seconds_or_nothing(text):
    got = _retry_after(text)
    assert got is None or got >= 0


def _refusal() -> str:
    with pytest.raises(Mistake) as refused:
        Key("sk-0123-not-a-variable")
    return str(refused.value)


@SETTINGS
@given(st.text(max_size=80))
def test_a_key_is_named_by_a_variable_and_a_refusal_never_repeats_the_text(text):
    try:
        Key(text)
    except Mistake as err:
        assert "\n" not in str(err)
        # Said in the same words whatever was given (a text such as "prom" may stand in them anyway).
        assert str(err) == _refusal()
