"""The history file's writer takes the columns the history made of its calls, where it made them.

The history turns its pending calls into columns as the writer's batch falls due, and hands them
over: the writer then encodes them, not building them a second time. A batch the writer takes
before the history made its columns (a frame read in between, a batch due on the writer's clock)
is built by the writer from the calls it was queued, in part or whole. Whichever way each call
went, the file reads back every call once, as memory holds it.
"""

from __future__ import annotations

import threading
import time

import pytest
from helpers import added as outcome

from mcp_nb.records import writer
from mcp_nb.records.history import History
from mcp_nb.records.outcome import Outcome

COMPARED = [
    "call_id",
    "name",
    "arguments",
    "outcome",
    "cause",
    "content",
    "structured_content",
    "message",
    "started_at",
    "duration_ms",
]


def failed(i: int) -> Outcome:
    return Outcome(
        i, "tool", "fails", {"a": i}, "tool_error", "raised", f"no {i}", None, True, None, f"no {i}", None, 1.0 + i, 2.0, 30.0
    )


@pytest.mark.timeout(120)
def test_every_call_reads_back_as_recorded_whoever_made_its_columns(tmp_path, monkeypatch):
    monkeypatch.setattr(writer, "LATENCY_S", 0.05)  # batches due on the writer's clock too, within the test's time
    history = History()
    history.keep(tmp_path / "calls", window=100_000)
    made = 0
    # bursts that fill a batch (due by count), bursts that do not (due on the clock), and frames read
    # in between (memory makes its columns of calls the writer has not taken, and hands none over)
    for burst, then in ((1000, "frame"), (37, "wait"), (960, "none"), (5, "wait"), (2500, "frame"), (700, "wait"), (1, "none")):
        for _ in range(burst):
            history.record(failed(made) if made % 7 == 3 else outcome(made))
            made += 1
        if then == "frame":
            assert len(history.to_frame(last=3)) == 3
        elif then == "wait":
            time.sleep(0.3)
    assert history.sync(60)
    memory = history.to_frame(columns=COMPARED)
    back = History.open(tmp_path / "calls").to_frame(columns=COMPARED)
    assert back["call_id"].tolist() == list(range(made))
    for column in COMPARED:
        assert back[column].tolist() == memory[column].tolist(), column
    history.close()


@pytest.mark.timeout(120)
def test_a_writer_behind_takes_parts_of_the_history_s_columns_and_builds_the_rest(tmp_path, monkeypatch):
    """A slow disk and two threads recording: calls keep coming while a batch is taken and written,
    so the writer takes more than the history had made columns of, and its next batch begins in the
    middle of the history's columns."""
    from mcp_nb.records import disk

    real = disk.write_part

    def slow(*args, **kwargs):
        time.sleep(0.05)
        return real(*args, **kwargs)

    monkeypatch.setattr(disk, "write_part", slow)
    history = History()
    history.keep(tmp_path / "calls", window=100_000)
    made = 8_000

    def record(ids: range) -> None:
        for i in ids:
            history.record(failed(i) if i % 7 == 3 else outcome(i))

    threads = [threading.Thread(target=record, args=(range(k, made, 2),)) for k in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert history.sync(60)
    memory = history.to_frame(columns=COMPARED)
    back = History.open(tmp_path / "calls").to_frame(columns=COMPARED)
    assert sorted(back["call_id"].tolist()) == list(range(made))  # each once, in the order recorded
    for column in COMPARED:
        assert back[column].tolist() == memory[column].tolist(), column
    history.close()


@pytest.mark.timeout(120)
def test_calls_a_few_a_second_leave_the_store_chunks_of_many_calls(tmp_path, monkeypatch):
    """Calls that come slowly: each batch falls due on the writer's clock with a call or two in it.
    The history makes columns for the writer only of a batch of SHARED calls or more (a chunk per
    call or two would cost memory and every frame a concatenation); the writer builds the others,
    and every call is written once. The store's chunk sizes are looked at directly: nothing public
    shows them."""
    from mcp_nb.records.history import SHARED

    monkeypatch.setattr(writer, "LATENCY_S", 0.001)  # every call falls due, as calls a few a second do
    history = History()
    history.keep(tmp_path / "calls", window=100_000)
    made = 3 * SHARED
    for i in range(made):
        history.record(outcome(i))
        time.sleep(0.002)
    sizes = list(history._store.sizes)
    assert sizes and min(sizes) >= SHARED, sizes[:20]
    assert history.sync(60)
    back = History.open(tmp_path / "calls").to_frame(columns=["call_id", "content"])
    assert back["call_id"].tolist() == list(range(made))
    assert back["content"].tolist() == [str(i) for i in range(made)]
    history.close()
