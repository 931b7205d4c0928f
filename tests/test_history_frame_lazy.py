"""The frame's nested columns kept as JSON text and decoded when looked at (records/lazy.py): every
value a user reads is the one the in-memory history gives, and pandas' operations on the column
(iloc, iteration, map, equality, slicing, taking, concat, display) behave as on an object column."""

from __future__ import annotations

import threading
import time

import numpy as np
import pandas as pd
import pyarrow as pa
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from mcp_nb.records import disk, encoding
from mcp_nb.records.history import History
from mcp_nb.records.lazy import JsonArray, JsonDtype
from mcp_nb.records.outcome import Outcome

# JSON values as a tool's arguments and results hold them (floats without NaN: NaN != NaN)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _as_file_column(values: list, dictionary: bool) -> JsonArray:
    """The column as a history file holds it: encoded by the writer, read back as text (in two chunks)."""
    objects = np.empty(len(values), dtype=object)
    objects[:] = values
    encoded = encoding.json_column(objects, lambda t: t) if dictionary else encoding.distinct_column(objects, lambda t: t)
    half = len(values) // 2
    return JsonArray.from_texts(pa.chunked_array([encoded.slice(0, half), encoded.slice(half)], type=encoded.type))


@given(st.lists(JSON, max_size=20), st.booleans())
@hsettings(max_examples=150, deadline=None)
def test_a_lazily_decoded_column_gives_the_values_written(values, dictionary):
    column = _as_file_column(values, dictionary)
    assert len(column) == len(values)
    assert column.tolist() == values
    assert [column[i] for i in range(len(values))] == values
    assert list(column) == values
    assert list(column.isna()) == [v is None for v in values]
    series = pd.Series(column)
    plain = pd.Series(values, dtype=object)
    assert series.map(repr).tolist() == list(map(repr, values))
    assert series.map(lambda v: v).equals(plain.map(lambda v: v))  # pandas infers the same type from the values
    assert series.astype(object).tolist() == values
    if values:
        assert series.iloc[-1] == values[-1]
        assert series.iloc[::-1].tolist() == values[::-1]
        assert series.iloc[1:].tolist() == values[1:]
        assert series[series.index % 2 == 0].tolist() == values[::2]


@given(st.lists(JSON, max_size=12), st.lists(JSON, max_size=12), st.booleans())
@hsettings(max_examples=150, deadline=None)
def test_the_file_half_and_the_memory_half_join_into_one_column(older, newer, dictionary):
    # a kernel with a file: its oldest calls read back from the file, its latest still in memory
    joined = JsonArray._concat_same_type([_as_file_column(older, dictionary), JsonArray.held(newer)])
    assert joined.tolist() == older + newer
    assert [joined[i] for i in range(len(joined))] == older + newer
    order = np.arange(len(joined))[::-1]
    assert joined.take(order).tolist() == (older + newer)[::-1]
    both = pd.concat([pd.Series(_as_file_column(older, dictionary)), pd.Series(JsonArray.held(newer))], ignore_index=True)
    assert str(both.dtype) == "json" and both.tolist() == older + newer


def test_memory_rows_are_the_objects_recorded_not_a_json_round_trip():
    kept = ({"a": (1, 2)}, {1: "x"})  # a tuple and an int key: JSON would make them a list and "1"
    column = JsonArray.held(list(kept))
    assert column[0] is kept[0] and column.tolist()[1] is kept[1]


def test_equality_and_filling_behave_as_on_an_object_column():
    values = [{"a": 1}, None, {"a": 2}, {"a": 1}]
    lazy, plain = pd.Series(_as_file_column(values, False)), pd.Series(values, dtype=object)
    assert (lazy == {"a": 1}).tolist() == (plain == {"a": 1}).tolist() == [True, False, False, True]
    assert lazy.equals(pd.Series(_as_file_column(values, True)))
    assert not lazy.equals(pd.Series(_as_file_column(values[::-1], False)))
    assert lazy.isna().tolist() == plain.isna().tolist()
    assert lazy.reindex([0, 5]).tolist() == [{"a": 1}, None]
    column = _as_file_column(values, True)
    column[1] = {"set": True}  # as a timed-out call's late fate is written into its row
    assert column.tolist() == [{"a": 1}, {"set": True}, {"a": 2}, {"a": 1}]
    assert "{'a': 2}" in repr(lazy.to_frame("arguments")) and "{'a': 2}" in lazy.to_frame("arguments")._repr_html_()


def outcome(i: int) -> Outcome:
    text = str(i)
    return Outcome(
        i,
        "tool",
        "add",
        {"a": i, "nested": [i, {"b": None}]},
        "result",
        "ok",
        text,
        {"result": text},
        False,
        None,
        None,
        None,
        1_750_000_000.0 + i,
        1.0,
        30.0,
    )


def test_a_reopened_frame_has_json_columns_equal_to_memory(tmp_path):
    plain, kept = History(), History()
    kept.keep(tmp_path / "calls.mcpnb", window=1024)
    for i in range(3000):
        plain.record(outcome(i))
        kept.record(outcome(i))
    assert kept.sync()  # and the window trimmed after the last write
    live, mixed, back = plain.to_frame(), kept.to_frame(), History.open(tmp_path / "calls.mcpnb").to_frame()
    for column in ("arguments", "structured_content", "data", "retry"):
        assert live[column].dtype == mixed[column].dtype == back[column].dtype == JsonDtype("json")
        assert live[column].tolist() == mixed[column].tolist() == back[column].tolist(), column
    assert str(back["server_logs"].dtype) == "json[logs]" and str(back["elicitations"].dtype) == "json[tuple]"
    assert back["arguments"].iloc[2999] == {"a": 2999, "nested": [2999, {"b": None}]}
    assert back["progress"].tolist() == [0] * 3000
    both = pd.concat([back.iloc[:10], live.iloc[-10:]], ignore_index=True)
    assert both["arguments"].tolist() == [outcome(i).arguments for i in [*range(10), *range(2990, 3000)]]


def test_a_frame_written_to_parquet_or_feather_reads_back_with_its_json_columns(tmp_path):
    """pandas writes the type's name into the file's metadata and finds the type by it when reading:
    the JSON columns come back as JSON columns with the same values (a held row written as the text
    a history file holds)."""
    kept = History()
    kept.keep(tmp_path / "calls.mcpnb", window=1024)
    for i in range(1100):
        kept.record(outcome(i))
    assert kept.sync()  # and the window trimmed after the last write
    frame = kept.to_frame()  # rows from the file, and the last ones still in memory
    for write, read in ((frame.to_parquet, pd.read_parquet), (frame.to_feather, pd.read_feather)):
        path = tmp_path / f"frame.{write.__name__}"
        write(path)
        back = read(path)
        for column in ("arguments", "structured_content", "data", "retry", "elicitations"):
            assert back[column].dtype == frame[column].dtype, (write.__name__, column)
            assert back[column].tolist() == frame[column].tolist(), (write.__name__, column)


def test_a_writer_that_fell_behind_catches_up_a_bounded_part_at_a_time(tmp_path):
    """Calls waiting for the writer (here: recorded before the file was set, written first) go into
    parts of at most WRITE_MOST calls each, not one part of everything waiting: encoding one part of
    millions took gigabytes while a loop recording Outcomes outran the writer."""
    from mcp_nb.records.writer import WRITE_MOST

    history, n = History(), 2 * WRITE_MOST + 100
    for i in range(n):
        history.record(outcome(i))
    history.keep(tmp_path / "calls.mcpnb", window=1024)
    assert history.sync(60)
    parts = disk.listing(tmp_path / "calls.mcpnb").parts
    assert [p.rows for p in parts] == [WRITE_MOST, WRITE_MOST, 100]
    assert history.in_memory < 1024 + 1024  # written, so memory keeps the window (and the chunk being filled)
    back = History.open(tmp_path / "calls.mcpnb").to_frame(columns=["call_id", "arguments"])
    assert back["call_id"].tolist() == list(range(n)) and back["arguments"].iloc[n - 1]["a"] == n - 1


def test_a_script_that_records_faster_than_the_file_is_written_is_paced(tmp_path, monkeypatch):
    """A thread that runs no event loop (a script recording Outcomes in a loop) waits once the
    writer's queue is three quarters full, until it is half empty: memory holds the window and a
    bounded backlog, whatever the pace. The writer is slowed here (a part takes 20 ms more to encode)."""
    from mcp_nb.records import writer as writing

    slow_table = writing.encoding.table
    monkeypatch.setattr(writing.encoding, "table", lambda *a: (time.sleep(0.02), slow_table(*a))[1])
    history = History()
    history.keep(tmp_path / "calls.mcpnb", window=1024)
    writer = history._writer  # read as the benchmark reads it: how far the writer is
    behind = []
    history.subscribe(lambda o: behind.append(len(history) - writer.written) if o is not None else None)
    n = writing.QUEUE_MOST + 20_000
    for i in range(n):
        history.record(outcome(i))
    assert history.sync(60)
    assert len(behind) == n and max(behind) <= writing.QUEUE_MOST + writing.WRITE_MOST  # queued, and one part being written
    assert History.open(tmp_path / "calls.mcpnb").to_frame(columns=["call_id"])["call_id"].tolist() == list(range(n))


def test_a_batch_due_during_a_merge_is_written_between_its_steps(tmp_path, monkeypatch):
    """A merge of many parts takes longer than a batch may wait; the batch that fell due meanwhile is
    written between the merge's steps, not after it (calls went unwritten for 0.9 s, 3,008 of them,
    while a merge of 245,000 calls ran beside a loop calling back to back). The merge is held here
    until the next batch is due."""
    from mcp_nb.records import writer as writing

    started, go, seen = threading.Event(), threading.Event(), []
    real_merge = writing.disk.merge

    def held_merge(folder, names, into, tables=None, between=lambda: None):
        started.set()
        go.wait(30)
        return real_merge(folder, names, into, tables, lambda: (between(), seen.append(writer.written)))

    monkeypatch.setattr(writing.disk, "merge", held_merge)
    history = History()
    history.keep(tmp_path / "calls.mcpnb")
    writer = history._writer
    i = 0
    while not started.is_set() and i < 40 * writing.WRITE_AT:
        history.record(outcome(i))
        i += 1
    assert started.wait(30)
    merged_up_to = i
    for _ in range(2 * (writing.WRITE_AT + writing.GRACE)):  # a batch falls due
        history.record(outcome(i))
        i += 1
    go.set()
    assert history.sync(60)
    assert seen and max(seen) > merged_up_to  # a batch after the merged parts was written during the merge
    back = History.open(tmp_path / "calls.mcpnb").to_frame(columns=["call_id"])
    assert back["call_id"].tolist() == list(range(i))


def test_the_frames_one_pandas_private_is_where_it_was_checked():
    """records/frame.py wraps the times' array with pandas' private `DatetimeArray._simple_new` (its
    public constructors copy it); a pandas upgrade that moves it fails here, by name."""
    from mcp_nb.records import frame

    assert frame.pandas_problems() == []
    assert any(pd.__version__ == r or pd.__version__.startswith(r + ".") for r in frame.PANDAS_CHECKED), (
        f"pandas {pd.__version__} is not one frame.PANDAS_CHECKED lists: check DatetimeArray._simple_new, then add it"
    )
    seconds = np.array([1_750_000_000.25, 1_750_000_001.5])
    times = frame.utc_times(frame.nanoseconds(seconds))
    assert list(times) == list(pd.to_datetime(seconds, unit="s", utc=True))
