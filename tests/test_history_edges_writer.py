"""The history file's writer never makes the thread that records wait, and never calls back.

The writer is fed by a bounded queue: a call is recorded in memory, and handed over, whatever
the writer is doing. Held (its thread blocked in the middle of a write), it holds no call: each
completes and is in memory meanwhile, the file catches up once the writer goes on, nothing lost,
nothing twice. The history and its writer do not import each other in a circle (an import-linter
contract in pyproject.toml, checked by tests/test_house.py); here, the writer is shown to need no
History at all.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pyarrow as pa
import pytest
from helpers import added as outcome

import mcp_nb
from mcp_nb.records import disk
from mcp_nb.records.history import History


@pytest.fixture
def held(monkeypatch):
    """The writer's thread blocked at its first write until `release` is set: `holding` says it is there."""
    holding, release = threading.Event(), threading.Event()
    real = disk.write_part

    def write_part(*args, **kwargs):
        holding.set()
        release.wait(300)
        return real(*args, **kwargs)

    monkeypatch.setattr(disk, "write_part", write_part)
    yield holding, release
    release.set()


def test_a_held_writer_holds_no_call_and_catches_up_after(tmp_path, held):
    from mcp_nb.records.writer import QUEUE_MOST

    holding, release = held

    @mcp_nb.tool()
    def add(a: int) -> int:
        return a

    path = tmp_path / "calls.mcpnb"
    mcp_nb.configure(history_file=str(path))
    history = mcp_nb.history()
    made = [mcp_nb.call("add", {"a": 0}).call_id]
    assert holding.wait(30)  # the writer took the first call and is held writing it
    made += [mcp_nb.call("add", {"a": x}).call_id for x in range(1, 3000)]  # each completes, the writer held
    assert not release.is_set() and len(history) == 3000
    assert history.to_frame(columns=["call_id"])["call_id"].tolist() == made  # in memory meanwhile

    # On mcp_nb's own loop, far past what the writer's queue takes: it never waits either.
    flood = QUEUE_MOST + 10_000
    done = threading.Event()

    async def recording() -> None:
        for i in range(flood):
            history.record(outcome(i))

    threading.Thread(target=lambda: (mcp_nb.engine().loop.run(recording()), done.set()), daemon=True).start()
    assert done.wait(240), "recording on mcp_nb's loop waited for the held writer"
    assert not release.is_set() and not list(path.glob("*.arrow"))  # nothing written yet: the writer is still held
    assert len(history) == 3000 + flood

    release.set()
    assert history.sync(240)
    back = History.open(path).to_frame(columns=["call_id"])["call_id"].tolist()
    assert back == made + list(range(flood))  # every call, in order, once


def test_a_held_writer_is_written_past_by_a_retry_of_another_file(tmp_path, held):
    """A writer held (a disk that hangs) is let go when the file is set elsewhere: the new file gets
    what it lacks, and no call is lost or doubled in either."""
    holding, release = held
    history = History()
    history.keep(tmp_path / "slow.mcpnb")
    for i in range(100):
        history.record(outcome(i))
    assert holding.wait(30)
    stopping = threading.Thread(target=history.keep, args=(tmp_path / "other.mcpnb",), daemon=True)
    stopping.start()  # closing the held writer waits for its last write: from another thread
    for i in range(100, 200):
        history.record(outcome(i))  # recorded meanwhile, in memory
    release.set()
    stopping.join(60)
    assert not stopping.is_alive()
    history.record(outcome(200))
    assert history.sync(60)
    history.close()
    assert History.open(tmp_path / "slow.mcpnb").to_frame()["call_id"].tolist() == list(
        range(len(History.open(tmp_path / "slow.mcpnb")))
    )
    other = History.open(tmp_path / "other.mcpnb").to_frame()["call_id"].tolist()
    assert other == list(range(201))  # the new file lacked them all


def test_the_writer_needs_no_history(tmp_path):
    """The writer is given rows and the names their codes stand for; it never reads a History."""
    from mcp_nb.records.store import Store
    from mcp_nb.records.writer import Writer

    store = Store()
    writer = Writer(tmp_path / "calls.mcpnb", 0, store.vocabularies, lambda text: text)
    for i in range(10):
        assert writer.put(store.add(outcome(i)))
        writer.recorded()
    assert writer.flush(10, 30) and writer.written == 10
    writer.close()
    assert History.open(tmp_path / "calls.mcpnb").to_frame()["call_id"].tolist() == list(range(10))
    assert not writer.alive


def test_the_history_and_its_writer_are_not_a_circle():
    root = Path(__file__).resolve().parent.parent / "mcp_nb" / "records"
    for module in ("writer", "store", "encoding", "decoding", "disk", "reading"):
        text = (root / f"{module}.py").read_text()
        assert "records.history" not in text and "records import history" not in text, module
    writer = (root / "writer.py").read_text()
    assert "records.reading" not in writer and "import reading" not in writer


@pytest.mark.timeout(240)
def test_a_writer_kept_busy_merges_its_parts_past_the_first_level(tmp_path):
    """Recording without a pause, a batch falls due during every merge and is written after its
    result: the writer still merges sixteen parts of a level into one of the next, so the folder
    keeps few parts (with the last sixteen alone looked at, it stopped at the first level)."""
    history = History()
    history.keep(tmp_path / "calls")
    n = 400_000
    for i in range(n):
        history.record(outcome(i))
    assert history.sync(120)
    parts = disk.listing(tmp_path / "calls").parts
    sizes = sorted(part.rows for part in parts)
    assert sum(sizes) == n
    assert sizes[-1] > 16 * 16 * 900, sizes[-5:]  # a part of the second level: sixteen of sixteen batches
    assert len(parts) < 48, len(parts)
    back = History.open(tmp_path / "calls").to_frame(columns=["call_id"])
    assert back["call_id"].tolist() == list(range(n))
    history.close()


@pytest.mark.serial  # how the writer and a busy loop share the GIL: measured with the machine to itself
@pytest.mark.timeout(120)
def test_a_loop_calling_an_async_tool_back_to_back_keeps_the_crash_bound(tmp_path):
    """A sweep of an async tool at concurrency 1 keeps mcp_nb's loop busy without a pause: the
    writer still writes each batch as it falls due, a part of about 960 calls, so a kernel killed
    then loses no more than the crash bound. Woken beside the loop without the GIL lent to it, the
    writer got it in pieces and wrote a part of thousands of calls seconds late."""

    @mcp_nb.tool()
    async def quick(i: int) -> int:
        return i

    mcp_nb.history().keep(tmp_path / "calls")
    n = 8_000
    table = mcp_nb.sweep("quick", [{"i": i} for i in range(n)], concurrency=1, progress=False)
    assert (table["outcome"] == "result").all() and len(table) == n
    assert mcp_nb.history().sync(60)
    written, merged = [], []  # the calls of each batch as written; of each merge of sixteen
    for part in disk.listing(tmp_path / "calls").parts:
        with pa.ipc.open_file(tmp_path / "calls" / part.name) as file:  # a merged part says so in its schema
            (merged if disk.COMPRESSED in (file.schema.metadata or {}) else written).append(part.rows)
    assert sum(written) + sum(merged) == n, (written, merged)
    assert max(written) <= 2 * 1024, sorted(written)  # the crash bound is 1,024: twice that for a loaded machine
