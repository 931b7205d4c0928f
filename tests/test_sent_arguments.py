"""Arguments taken from DataFrames and arrays are sent as the JSON they stand for, and recorded so.

The commonest arguments a data scientist sends come out of pandas: `frame["x"].iloc[0]` is a
numpy integer, a date column gives Timestamps, a gap gives `pd.NA`. Each is sent as its JSON
value through every face that takes Python values (the sync and async calls, a sweep over a
frame; the magics read literals from their line), the
history records exactly what the server received, and the calls save as cases. A value with
no JSON form is refused before sending, in one line, and nothing is recorded.
"""

from __future__ import annotations

import datetime
import decimal
import enum
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import mcp_nb
from mcp_nb.calling.sent import sent_arguments
from mcp_nb.mistakes import Mistake


@pytest.fixture
def echo():
    @mcp_nb.tool()
    def echo(value: object = None) -> str:
        """Say back, as JSON, the value the server received."""
        return json.dumps(value)

    @mcp_nb.tool()
    def double(x: int) -> int:
        return 2 * x

    return echo


class Colour(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


FRAME = pd.DataFrame(
    {
        "x": [4, 5],
        "f": [0.5, 1.5],
        "ok": [True, False],
        "when": pd.to_datetime(["2026-01-02 03:04:05", "2026-02-03 00:00:00"]),
        "n": pd.array([1, None], dtype="Int64"),
        "s": ["a", "b"],
    }
)

# value -> the JSON value the server receives (and the history records)
SENT = [
    (np.int64(7), 7),
    (np.int8(-3), -3),
    (np.uint64(2**63), 2**63),
    (np.float64(0.25), 0.25),
    (np.float32(1.5), 1.5),
    (np.bool_(True), True),
    (np.str_("é"), "é"),
    (FRAME["x"].iloc[0], 4),
    (FRAME["f"].iloc[1], 1.5),
    (FRAME["ok"].iloc[0], True),
    (FRAME["when"].iloc[0], "2026-01-02T03:04:05"),
    (FRAME["n"].iloc[1], None),
    (FRAME["n"].iloc[0], 1),
    (pd.NA, None),
    (pd.NaT, None),
    (np.datetime64("2026-01-02T03:04"), "2026-01-02T03:04"),
    (np.datetime64("NaT"), None),
    (np.timedelta64(90, "s"), "PT1M30S"),
    (pd.Timedelta(seconds=3), "PT3S"),
    (np.array([1, 2, 3]), [1, 2, 3]),
    (np.array([[1.5], [2.5]]), [[1.5], [2.5]]),
    (FRAME["x"], [4, 5]),
    (FRAME["when"].to_numpy().astype("datetime64[s]"), ["2026-01-02T03:04:05", "2026-02-03T00:00:00"]),
    (FRAME["s"], ["a", "b"]),
    (FRAME.iloc[0].to_dict()["x"], 4),
    (datetime.datetime(2026, 1, 2, 3, 4, 5), "2026-01-02T03:04:05"),
    (datetime.date(2026, 1, 2), "2026-01-02"),
    (decimal.Decimal("1.50"), "1.50"),
    (Colour.RED, "red"),
    (Level.HIGH, 3),
    ({1: "a"}, {"1": "a"}),
    ((1, np.int64(2)), [1, 2]),
    ({"deep": [np.float64(1.0), {"when": pd.Timestamp("2026-03-04")}]}, {"deep": [1.0, {"when": "2026-03-04T00:00:00"}]}),
]


@pytest.mark.parametrize(("value", "wire"), SENT, ids=[f"{type(v).__name__}-{i}" for i, (v, _) in enumerate(SENT)])
def test_a_value_is_sent_as_the_json_it_stands_for_and_recorded_so(echo, value, wire):
    o = mcp_nb.call("echo", {"value": value})
    assert o.outcome == "result", (o.cause, o.message)
    assert json.loads(o.content) == wire  # what the server received
    recorded = mcp_nb.history().to_frame().iloc[-1].arguments["value"]
    assert recorded == wire and type(recorded) is type(wire)  # what the history says was sent


def test_the_value_from_a_frame_in_the_issue_is_a_result_and_saves_as_a_case(echo, tmp_path):
    o = mcp_nb.call("double", {"x": FRAME["x"].iloc[0]})
    assert (o.outcome, o.structured_content) == ("result", {"result": 8})
    path = tmp_path / "cases.json"
    mcp_nb.history().to_cases(path)
    assert json.loads(path.read_text())["cases"][0]["arguments"] == {"x": 4}


def test_a_sweep_over_a_frame_and_over_its_columns(echo):
    # A sweep's grid is a DataFrame (one call per row) or lists of values: numpy values both ways.
    by_row = mcp_nb.sweep("double", FRAME[["x"]], progress=False)
    by_column = mcp_nb.sweep("double", {"x": FRAME["x"].to_numpy()}, progress=False)
    assert by_row["outcome"].tolist() == by_column["outcome"].tolist() == ["result", "result"]
    calls = mcp_nb.history().to_frame().sort_values("call_id")
    assert calls["arguments"].tolist() == [{"x": 4}, {"x": 5}] * 2


NO_JSON = [
    (object(), "argument 'value' is a object, which has no JSON form"),
    (FRAME, "argument 'value' is a DataFrame, which has many JSON forms"),
    (np.float64("nan"), "argument 'value' is nan: JSON has no NaN or infinity"),
    (np.array([1.0, np.inf]), "argument 'value[1]' is inf: JSON has no NaN or infinity"),
    ({(1, 2): "a"}, "argument 'value' has the key (1, 2) (tuple): JSON's keys are strings"),
    (b"\xff\xfe", "argument 'value' is a bytes, which has no JSON form"),
]


@pytest.mark.parametrize(("value", "said"), NO_JSON, ids=[type(v).__name__ for v, _ in NO_JSON])
def test_a_value_with_no_json_form_is_refused_before_sending_in_one_line(echo, value, said):
    with pytest.raises(Mistake) as refused:
        mcp_nb.call("echo", {"value": value})
    assert str(refused.value).startswith(said) and "\n" not in str(refused.value)
    assert len(mcp_nb.history()) == 0  # nothing was sent, so nothing is recorded


def test_the_async_face_refuses_it_the_same_way(echo):
    import asyncio

    with pytest.raises(Mistake, match="DataFrame, which has many JSON forms"):
        asyncio.run(mcp_nb.acall("echo", {"value": FRAME}))
    assert len(mcp_nb.history()) == 0


SCALARS = (
    hnp.from_dtype(np.dtype("int64"))
    | hnp.from_dtype(np.dtype("float64"), allow_nan=False, allow_infinity=False)
    | hnp.from_dtype(np.dtype("bool"))
    | hnp.from_dtype(np.dtype("int32"))
    | hnp.from_dtype(np.dtype("float32"), allow_nan=False, allow_infinity=False)
)


@settings(max_examples=300, deadline=None)
@given(
    st.recursive(
        SCALARS | st.none() | st.text(max_size=5),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
        max_leaves=12,
    )
)
def test_any_numpy_scalar_nesting_is_recorded_as_the_json_round_trip_of_what_pydantic_writes(value):
    from pydantic_core import to_json

    sent = sent_arguments({"v": value})
    # The record is plain JSON (no numpy left), and the SDK's own writer sends the same text.
    assert json.loads(json.dumps(sent)) == sent
    assert json.loads(to_json(sent)) == sent
