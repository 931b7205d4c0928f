"""A frame read back from a history file is the user's to change, as one of the history in memory is:
every column can be written to, and writing changes neither the file nor the next frame read."""

from __future__ import annotations

import pandas as pd
import pytest

import mcp_nb
from mcp_nb.records.history import History

pytestmark = pytest.mark.timeout(120)


def calls_in_a_file(tmp_path, n: int):
    path = tmp_path / "calls.mcpnb"
    mcp_nb.configure(history_file=str(path))

    @mcp_nb.tool()
    def square(x: int) -> int:
        return x * x

    mcp_nb.sweep("square", {"x": list(range(n))}, progress=False)
    mcp_nb.call("square", {"x": "not a number"})  # a tool error among them
    mcp_nb.configure(history_file=None)  # written whole
    return path


def write_into_every_column(frame: pd.DataFrame) -> None:
    """What a user does with a frame: fix a value of each column, add to a column of numbers."""
    first = frame.index[0]
    frame.loc[first, "duration_ms"] = 0.0
    frame.loc[first, "call_id"] = 0
    frame.loc[first, "content"] = "mine"
    for column in frame.columns:
        value = frame[column].iloc[-1]
        frame.at[first, column] = value
    frame["duration_ms"] *= 2
    frame["attempt"] += 1
    frame.loc[first, "outcome"] = "timeout"
    frame.loc[first, "started_at"] = pd.Timestamp("2026-01-01", tz="UTC")


@pytest.mark.parametrize("n", [5, 2500], ids=["one part", "several parts"])
def test_every_column_of_a_frame_read_from_a_file_can_be_written_and_the_file_keeps_its_calls(tmp_path, n):
    path = calls_in_a_file(tmp_path, n)
    before = History.open(path).to_frame()
    assert len(before) == n + 1
    frame = History.open(path).to_frame()
    write_into_every_column(frame)
    assert frame.loc[frame.index[0], "outcome"] == "timeout" and frame["attempt"].min() == 2
    again = History.open(path).to_frame()
    pd.testing.assert_frame_equal(again, before)


def test_a_frame_of_some_columns_and_of_the_last_calls_can_be_written_too(tmp_path):
    path = calls_in_a_file(tmp_path, 5)
    for frame in (History.open(path).to_frame(last=3), History.open(path).to_frame(columns=["call_id", "duration_ms"])):
        frame.loc[frame.index[0], "duration_ms"] = 0.0
        frame.loc[frame.index[0], "call_id"] = 0
        frame["duration_ms"] += 1.0
    again = History.open(path).to_frame()
    assert (again["call_id"] > 0).all() and (again["duration_ms"] != 1.0).all()
