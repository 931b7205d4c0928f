"""Fault specs and sweep grids: every malformed one is refused with one clear line, and nothing changes."""

import asyncio
import dataclasses
import math

import pandas as pd
import pytest
from IPython.core.error import UsageError

import mcp_nb
from mcp_nb import Faults


def register_echo(**kwargs):
    @mcp_nb.tool(read_only=True, **kwargs)
    def echo(i: int) -> int:
        return i


# -- fault specs: numbers out of range, in every spelling ------------------------------------------

BAD_NUMBERS = [
    ("latency", "nan"),
    ("latency", "inf"),
    ("latency", "-inf"),
    ("latency", "1e999"),
    ("latency", "-1"),
    ("latency", "3601"),
    ("tool_error", "nan"),
    ("tool_error", "inf"),
    ("crash", "-inf"),
    ("crash", "1.5"),
    ("protocol_error", "nan"),
    ("protocol_error", "-0.1"),
]


def spellings(key, text):
    """The same fault written the four ways a user can write it."""
    value = float(text)
    return {
        "string": f"{key}={text}",
        "dict": {key: value},
        "Faults": lambda: Faults(**{key: value}),
        "tool(inject=)": lambda: mcp_nb.tool(inject=f"{key}={text}"),
    }


@pytest.mark.parametrize("key, text", BAD_NUMBERS, ids=[f"{k}={t}" for k, t in BAD_NUMBERS])
def test_a_non_finite_or_out_of_range_number_is_refused_everywhere_and_changes_nothing(shell, key, text):
    register_echo(inject="crash=1,seed=1")
    for face, spec in spellings(key, text).items():
        with pytest.raises(ValueError, match=key) as caught:
            spec() if callable(spec) else mcp_nb.inject("echo", spec)
        assert "\n" not in str(caught.value), face
        assert mcp_nb.registered().loc[0, "faults"] == "crash=1,seed=1", face
    bad = shell.run_cell(f'%%mcp_tool --read-only --inject "{key}={text}"\ndef echo(i: int) -> int:\n    return i\n')
    assert isinstance(bad.error_in_exec, UsageError) and key in str(bad.error_in_exec)
    # What was injected before is still what every call gets, and calls keep working.
    assert mcp_nb.call("echo", {"i": 1}).cause == "crash"
    mcp_nb.inject("echo", None)
    assert mcp_nb.call("echo", {"i": 1}).outcome == "result"


@pytest.mark.parametrize(
    "spec, message",
    [
        ("seed=nan", "seed takes a whole number"),
        ("seed=1.5", "seed takes a whole number"),
        ({"seed": 1.5}, "seed must be a whole number"),
        ({"seed": float("nan")}, "seed must be a whole number"),
        ({"seed": True}, "seed must be a whole number"),
        ({"latency": "0.5"}, "latency must be a number"),
        ({"crash": None}, "crash must be a number"),
        ("latency=1,latency=2", "latency is given twice"),
        ("latency=", "latency takes a number"),
        ("tool_error=0.5,crash=0.5,protocol_error=0.1", "add up to more than 1"),
    ],
)
def test_other_malformed_specs_are_refused(spec, message):
    register_echo()
    with pytest.raises(ValueError, match=message):
        mcp_nb.inject("echo", spec)
    assert mcp_nb.registered().loc[0, "faults"] == ""  # nothing injected: an empty cell, never NaN


def test_the_largest_allowed_numbers_work():
    f = Faults.parse("latency=3600,tool_error=0.5,crash=0.25,protocol_error=0.25,seed=-3")
    assert f.describe() == "latency=3600,tool_error=0.5,crash=0.25,protocol_error=0.25,seed=-3"
    assert Faults(tool_error=0.7, crash=0.2, protocol_error=0.1).tool_error == 0.7  # sums to 1 in floating point, roughly


def test_faults_are_values_equal_when_they_describe_the_same_faults():
    assert Faults.parse("crash=1") == Faults.parse("crash=1") == Faults(crash=1.0) == Faults(crash=1)
    assert Faults.parse("crash=1,seed=2") != Faults.parse("crash=1,seed=3")
    assert Faults.parse("latency=0.5") != Faults.parse("latency=0.25")
    used = Faults.parse("tool_error=0.5,seed=1")
    for i in range(5):
        used.draw({"i": i})  # a seeded spec remembers what it has seen; that is not what it is
    assert used == Faults.parse("tool_error=0.5,seed=1")
    assert len({Faults.parse("crash=1"), Faults(crash=1.0)}) == 1


def test_a_spec_cannot_be_changed_after_it_is_checked():
    f = Faults.parse("latency=0.1")
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.latency = math.nan


@pytest.mark.parametrize("private", ["_seen", "_lock"])
def test_private_fields_are_not_faults(private):
    register_echo()
    with pytest.raises(ValueError, match=f"unknown fault '{private}'"):
        mcp_nb.inject("echo", {private: {}})
    with pytest.raises(ValueError, match=f"unknown fault '{private}'"):
        mcp_nb.inject("echo", f"{private}=1")
    with pytest.raises(TypeError):
        Faults(**{private: {}})
    assert mcp_nb.registered().loc[0, "faults"] == ""  # nothing injected: an empty cell, never NaN


def test_tool_and_inject_take_the_same_spellings():
    register_echo(inject={"crash": 1, "seed": 4})
    assert mcp_nb.registered().loc[0, "faults"] == "crash=1,seed=4"
    register_echo(inject=Faults(tool_error=1))
    assert mcp_nb.call("echo", {"i": 1}).cause == "raised"
    with pytest.raises(TypeError, match="a spec string, a dict, a Faults or None, got int"):
        mcp_nb.tool(inject=3)
    with pytest.raises(TypeError, match="got list"):
        mcp_nb.inject("echo", ["crash=1"])


# -- sweep grids: say what a grid must be ----------------------------------------------------------

GRID_RULE = "a grid is a dict of value lists, a DataFrame, or a list of argument dicts"

BAD_GRIDS = [
    ([1, 2], f"{GRID_RULE}: item 0 is int"),
    ([{"i": 1}, 2], f"{GRID_RULE}: item 1 is int"),
    (["i=1"], f"{GRID_RULE}: item 0 is str"),
    ([[("i", 1)]], f"{GRID_RULE}: item 0 is list"),
    ("i=1", f"{GRID_RULE}, not a str"),
    (b"i", f"{GRID_RULE}, not a bytes"),
    (3, f"{GRID_RULE}, not an int"),
    (None, f"{GRID_RULE}, not None"),
    (pd.Series([1, 2]), f"{GRID_RULE}, not a Series"),
    ({"i": 1}, "grid values must be lists of values to try; 'i' is an int"),
    ({"i": "123"}, "grid values must be lists of values to try; 'i' is a str"),
    ({"i": {"a": 1}}, "grid values must be lists of values to try; 'i' is a dict"),
    ({1: [1, 2]}, "argument names are strings; the grid has 1"),
    ([{"i": 1}, {2: 1}], "argument names are strings; item 1 has 2"),
    (pd.DataFrame([[1, 2]]), "argument names are strings; the DataFrame has column 0"),
    (pd.DataFrame([[1, 2]], columns=["i", "i"]), "the DataFrame has the column 'i' twice"),
]


@pytest.mark.parametrize("grid, message", BAD_GRIDS, ids=[str(i) for i in range(len(BAD_GRIDS))])
def test_a_malformed_grid_is_refused_with_what_a_grid_must_be(grid, message):
    register_echo()
    with pytest.raises(TypeError if "twice" not in message else ValueError) as caught:
        mcp_nb.sweep("echo", grid, progress=False)
    assert str(caught.value) == message
    assert len(mcp_nb.history()) == 0


def test_the_async_sweep_refuses_the_same_grids():
    register_echo()

    async def refusals():
        found = []
        for grid, _ in BAD_GRIDS:
            try:
                await mcp_nb.asweep("echo", grid)
            except (TypeError, ValueError) as err:
                found.append(str(err))
        return found

    assert asyncio.run(refusals()) == [message for _, message in BAD_GRIDS]
    assert len(mcp_nb.history()) == 0


def test_every_grid_shape_still_sweeps():
    register_echo()

    def values(grid):
        return mcp_nb.sweep("echo", grid, progress=False)["content"].tolist()

    assert values({"i": [1, 2]}) == ["1", "2"]
    assert values({"i": range(2)}) == ["0", "1"]
    assert values({"i": (x for x in (5, 6))}) == ["5", "6"]
    assert values([{"i": 3}, {"i": 4}]) == ["3", "4"]
    assert values({"i": n} for n in (7,)) == ["7"]
    assert values(pd.DataFrame({"i": [8, 9]})) == ["8", "9"]
    assert values([]) == []
