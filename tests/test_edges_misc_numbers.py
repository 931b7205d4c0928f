"""Numbers JSON cannot carry (NaN, Infinity, -Infinity) in what tools, resources and prompts return,
and in what outside servers send: refused with the cause `non_json_number`, never recorded as an
ordinary result, and never written to a client as anything but valid JSON."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.types import CallToolResult, TextContent
from outside import post, raw_session
from pydantic import BaseModel

import mcp_nb
from mcp_nb.numbers import is_non_finite, is_number, non_finite_at

NAN_SERVER = [sys.executable, str(Path(__file__).parent / "servers" / "edges_misc_nan.py")]


class Reading(BaseModel):
    sensor: str
    value: float


@dataclasses.dataclass
class Summary:
    counts: list
    spread: float


# (what the tool returns, what the refusal says of the number and where it is)
NON_JSON = [
    pytest.param(lambda: float("nan"), "is NaN", id="a float"),
    pytest.param(lambda: {"mean": float("inf"), "n": 3}, "holds Infinity at $.mean", id="a dict"),
    pytest.param(lambda: [1.0, 2.0, float("-inf")], "holds -Infinity at $[2]", id="a list"),
    pytest.param(lambda: {"rows": [{"x": 1}, {"x": np.float64("nan")}]}, "holds NaN at $.rows[1].x", id="numpy float64"),
    pytest.param(lambda: {"x": np.float32("inf")}, "holds Infinity at $.x", id="numpy float32"),
    pytest.param(
        lambda: {"table": pd.DataFrame({"a": [1.0, None]}).to_dict("records")}, "holds NaN at $.table[1].a", id="pandas records"
    ),
    pytest.param(lambda: Reading(sensor="t1", value=float("nan")), "holds NaN at $.value", id="a pydantic model"),
    pytest.param(lambda: Summary(counts=[1, 2], spread=float("inf")), "holds Infinity at $.spread", id="a dataclass"),
    pytest.param(
        lambda: CallToolResult(content=[TextContent(type="text", text="ok")], structured_content={"v": float("nan")}),
        "holds NaN at $.structuredContent.v",
        id="a CallToolResult",
    ),
]


@pytest.mark.parametrize("make, said", NON_JSON)
@pytest.mark.parametrize("is_async", [False, True], ids=["def", "async def"])
def test_a_tool_that_returns_a_number_json_cannot_carry_is_refused_saying_where(make, said, is_async):
    if is_async:

        async def stats():
            await asyncio.sleep(0)
            return make()

    else:

        def stats():
            return make()

    mcp_nb.tool("stats")(stats)
    outcome = mcp_nb.call("stats")
    assert (outcome.outcome, outcome.cause, outcome.is_error) == ("tool_error", "non_json_number", True)
    assert outcome.content.startswith(f"Error executing tool stats: the result {said}, a number JSON cannot carry")
    assert outcome.structured_content is None
    row = mcp_nb.history().to_frame().iloc[-1]
    assert (row["outcome"], row["cause"]) == ("tool_error", "non_json_number")
    mcp_nb.expect(outcome, "tool_error", "non_json_number")


def test_a_tool_declared_to_return_a_float_that_returns_nan_is_refused_by_the_server_not_by_the_client():
    # Before: the server sent {"result": null} for `-> float` (its own schema broken), and the
    # kernel's client refused that as a multi-line protocol_error / invalid_output.
    @mcp_nb.tool()
    def ratio(a: float, b: float) -> float:
        return a / b if b else float("nan")

    assert mcp_nb.call("ratio", {"a": 1, "b": 2}).structured_content == {"result": 0.5}
    refused = mcp_nb.call("ratio", {"a": 1, "b": 0})
    assert (refused.outcome, refused.cause) == ("tool_error", "non_json_number")
    assert "\n" not in refused.content and "the result is NaN" in refused.content


@pytest.mark.parametrize(
    "value",
    [
        "NaN",  # the tool's own text: not a number
        {"text": "Infinity", "n": 10**400},  # an int is finite however long
        pd.DataFrame({"a": [1.0, float("nan")]}),  # written as its text by the SDK: no number on the wire
        np.array([1.0, np.nan]),  # the same
        [1.5, -0.0, 1e308],
    ],
    ids=["a string", "a long int", "a DataFrame", "an array", "finite floats"],
)
def test_what_json_can_carry_stays_an_ordinary_result(value):
    @mcp_nb.tool()
    def plain():
        return value

    outcome = mcp_nb.call("plain")
    assert (outcome.outcome, outcome.cause) == ("result", "ok"), outcome.content


def test_a_resource_and_a_prompt_that_return_nan_are_refused_with_a_json_rpc_error():
    @mcp_nb.resource("stats://mean")
    def mean() -> dict:
        return {"mean": float("nan")}

    @mcp_nb.prompt()
    def scale() -> float:
        return float("inf")

    read = mcp_nb.read("stats://mean")
    assert (read.outcome, read.cause, read.code) == ("protocol_error", "non_json_number", -32603)
    assert read.message.startswith("the result holds NaN at $.mean, a number JSON cannot carry")
    prompt = mcp_nb.get_prompt("scale")
    assert (prompt.outcome, prompt.cause, prompt.code) == ("protocol_error", "non_json_number", -32603)
    assert prompt.message.startswith("the result is Infinity, a number JSON cannot carry")


def _strict(text: str):
    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_a_served_kernel_sends_outside_clients_only_valid_json_that_says_why():
    @mcp_nb.tool()
    def ratio() -> float:
        return float("nan")

    @mcp_nb.tool()
    def spread():
        return {"high": float("inf")}

    @mcp_nb.resource("stats://mean")
    def mean() -> dict:
        return {"mean": float("-inf")}

    handle = mcp_nb.serve()
    headers = raw_session(handle)
    requests = [
        ("tools/call", {"name": "ratio", "arguments": {}}),
        ("tools/call", {"name": "spread", "arguments": {}}),
        ("resources/read", {"uri": "stats://mean"}),
    ]
    answers = []
    for number, (method, params) in enumerate(requests, start=10):
        status, _, text = post(handle.url, {"jsonrpc": "2.0", "id": number, "method": method, "params": params}, headers)
        assert status == 200, text
        events = [_strict(line[len("data: ") :]) for line in text.splitlines() if line.startswith("data: ") and line[6:].strip()]
        (answer,) = [event for event in events if event.get("id") == number]
        answers.append(answer)
    for answer in answers[:2]:
        result = answer["result"]
        assert result["isError"] is True and "structuredContent" not in result  # no null that breaks `-> float`
        (block,) = result["content"]
        assert "a number JSON cannot carry" in block["text"]
        _strict(json.dumps(block["text"]))
    assert answers[2]["error"]["code"] == -32603 and "holds -Infinity at $.mean" in answers[2]["error"]["message"]
    served = mcp_nb.history().to_frame()
    served = served[served["via"] == "http"]
    assert served["cause"].astype(str).tolist() == ["non_json_number"] * 3
    assert served["outcome"].astype(str).tolist() == ["tool_error", "tool_error", "protocol_error"]


def test_an_outside_server_that_sends_nan_literals_is_refused_by_the_client():
    # Python's json module writes NaN as a bare literal; the SDK's reader takes it. A strict client
    # cannot read such an answer, so mcp_nb's does not pass it on as a result.
    mcp_nb.connect("nan", NAN_SERVER)
    mean = mcp_nb.call("mean", server="nan")
    assert (mean.outcome, mean.cause) == ("protocol_error", "non_json_number")
    assert "the answer holds NaN at $.structuredContent.value" in mean.message
    spread = mcp_nb.call("spread", server="nan")  # no output schema: refused all the same
    assert (spread.outcome, spread.cause) == ("protocol_error", "non_json_number")
    assert "Infinity at $.structuredContent.high[1]" in spread.message
    count = mcp_nb.call("count", server="nan")
    assert (count.outcome, count.cause, count.structured_content) == ("result", "ok", {"value": 3})


def test_nan_in_arguments_is_refused_as_nan_in_results():
    @mcp_nb.tool()
    def echo(x: float) -> float:
        return x

    with pytest.raises(ValueError, match="JSON has no NaN or infinity"):
        mcp_nb.call("echo", {"x": float("nan")})
    with pytest.raises(ValueError, match="JSON has no NaN or infinity"):
        mcp_nb.call("echo", {"x": np.float32("-inf")})
    assert mcp_nb.call("echo", {"x": 10**20}).cause == "ok"


# -- the one check ----------------------------------------------------------------------------------

_floats = st.floats(allow_nan=True, allow_infinity=True)
_json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | _floats | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
    max_leaves=20,
)


def _at(value, path):
    for step in path:
        value = value[step]
    return value


@settings(deadline=None, max_examples=300)
@given(_json_like)
def test_the_walk_finds_a_non_finite_number_exactly_when_json_refuses_the_value(value):
    found = non_finite_at(value)
    try:
        json.dumps(value, allow_nan=False)
    except ValueError:
        assert found is not None
        path, number = found
        assert _at(value, path) is number and math.isfinite(number) is False
    else:
        assert found is None


@settings(deadline=None, max_examples=300)
@given(st.one_of(st.integers(), _floats, st.booleans(), st.text(max_size=2), st.none()))
def test_is_number_is_what_a_strict_json_writer_writes_as_a_number(value):
    try:
        written = json.dumps(value, allow_nan=False)
    except ValueError:
        written = None
    number = written is not None and not isinstance(value, (bool, str)) and value is not None
    assert is_number(value) is number
    assert is_non_finite(value) is (isinstance(value, float) and not math.isfinite(value))


def test_is_number_takes_numpy_and_long_ints_and_no_bools():
    assert is_number(np.int64(3)) and is_number(np.float32(0.5)) and is_number(10**400)
    assert not is_number(np.float64("nan")) and not is_number(True) and not is_number("1") and not is_number(None)
    assert is_non_finite(np.float16("inf")) and not is_non_finite(10**400)
    looped: list = []
    looped.append(looped)
    assert non_finite_at(looped) is None  # a value that holds itself is walked once


def test_an_output_schema_bound_beyond_a_float_s_range_is_checked_not_a_client_error():
    # JSON's numbers have no range: an outside server may bound a count by 10**400. mcp_nb's own
    # check of structured results asked math.isfinite of the bound, which raised OverflowError.
    mcp_nb.connect("nan", NAN_SERVER)
    huge = mcp_nb.call("huge", server="nan")
    assert (huge.outcome, huge.cause, huge.structured_content) == ("result", "ok", {"n": 10**401})
