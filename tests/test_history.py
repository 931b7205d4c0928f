"""Every call is recorded; the frame, the summary and the exports."""

import contextlib
import json
import threading
from pathlib import Path

import pandas as pd
import pytest

import mcp_nb
from mcp_nb.records.history import COLUMNS


def register():
    @mcp_nb.tool()
    def square(x: int) -> int:
        if x < 0:
            raise ValueError("negative")
        return x * x


def documented_columns():
    """The frame's columns as the reference lists them: docs/outcomes.md shows `mcp_nb.COLUMNS`,
    made into the page at every build (docs/_ext/reference_pages.py)."""
    page = (Path(__file__).resolve().parent.parent / "docs" / "outcomes.md").read_text(encoding="utf-8")
    assert "<!-- reference: columns -->" in page, "docs/outcomes.md no longer lists the history's columns"
    return list(mcp_nb.COLUMNS)


def test_eight_threads_times_250_calls_give_exactly_2000_rows():
    register()
    errors = []

    def worker(k):
        try:
            for i in range(250):
                mcp_nb.call("square", {"x": -1 if i % 10 == 0 else i})
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    frame = mcp_nb.history().to_frame()
    assert len(frame) == 2000
    assert frame["call_id"].is_unique
    assert frame["outcome"].value_counts().to_dict() == {"result": 1800, "tool_error": 200, "protocol_error": 0, "timeout": 0}


def test_frame_columns_and_types():
    register()
    mcp_nb.call("square", {"x": 3})
    mcp_nb.call("square", {"x": -1})
    mcp_nb.call("square", {"x": "a"})
    mcp_nb.read("nothing://here")
    frame = mcp_nb.history().to_frame()
    assert list(frame.columns) == documented_columns()  # the promise, not the code's own constant
    assert frame["outcome"].tolist() == ["result", "tool_error", "tool_error", "protocol_error"]
    assert frame["cause"].tolist() == ["ok", "crash", "invalid_arguments", "not_found"]
    assert frame["is_error"].tolist() == [False, True, True, pd.NA]
    assert frame["code"].tolist() == [pd.NA, pd.NA, pd.NA, -32602]
    assert str(frame["started_at"].dtype) == "datetime64[ns, UTC]"
    assert frame["started_at"].is_monotonic_increasing
    assert (frame["duration_ms"] > 0).all()
    assert frame["arguments"].tolist()[:2] == [{"x": 3}, {"x": -1}]
    assert [len(logs) for logs in frame["server_logs"]] == [0, 1, 1, 1]
    assert frame["server_fate"].isna().all()


def test_summary_counts_every_outcome_with_totals():
    register()
    for x in (1, 2, -1):
        mcp_nb.call("square", {"x": x})
    mcp_nb.call("missing")
    summary = mcp_nb.history().summary()
    assert list(summary.columns) == ["result", "tool_error", "protocol_error", "timeout", "total"]
    assert summary.index.names == ["server", "target", "name"]
    assert summary.loc[("kernel", "tool", "square")].tolist() == [2, 1, 0, 0, 3]
    assert summary.loc[("kernel", "tool", "missing")].tolist() == [0, 1, 0, 0, 1]
    assert summary.loc[("total", "", "")].tolist() == [2, 2, 0, 0, 4]


def test_clear_and_magic(shell, capsys):
    register()
    mcp_nb.call("square", {"x": 2})
    h = shell.run_line_magic("mcp_history", "")
    assert h is mcp_nb.history()
    assert "mcp-nb-result" in h._repr_html_() and "History: 1 calls" in repr(h)
    assert shell.run_line_magic("mcp_history", "--summary").loc[("total", "", ""), "total"] == 1
    shell.run_line_magic("mcp_history", "--clear")
    assert "1 calls forgotten" in capsys.readouterr().out
    assert len(mcp_nb.history()) == 0 and mcp_nb.history().to_frame().empty


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_exports_read_back(tmp_path, fmt):
    register()
    mcp_nb.call("square", {"x": 4})
    mcp_nb.call("square", {"x": -4})
    path = tmp_path / f"history.{fmt}"
    getattr(mcp_nb.history(), f"to_{fmt}")(path)
    back = {"csv": pd.read_csv, "json": pd.read_json, "parquet": pd.read_parquet}[fmt](path)
    assert len(back) == 2 and list(back.columns) == list(COLUMNS)
    assert back["outcome"].astype(str).tolist() == ["result", "tool_error"]
    assert json.loads(back["arguments"].iloc[0]) == {"x": 4}
    assert json.loads(back["server_logs"].iloc[1])[0]["level"] == "ERROR"


def test_history_display_limits_rows():
    register()
    mcp_nb.configure(history_rows=3)
    for x in range(5):
        mcp_nb.call("square", {"x": x})
    text = repr(mcp_nb.history())
    assert "(last 3 of 5" in text and text.count("square") == 3


def test_listeners_hear_every_call_and_clear_and_a_broken_one_loses_nothing():
    register()
    heard = []

    def broken(outcome):
        raise RuntimeError("a view that fails")

    mcp_nb.history().subscribe(broken)
    mcp_nb.history().subscribe(lambda o: heard.append(None if o is None else o.call_id))
    first = mcp_nb.call("square", {"x": 1})
    mcp_nb.history().clear()
    assert heard == [first.call_id, None]
    assert len(mcp_nb.history()) == 0
    mcp_nb.call("square", {"x": 2})
    assert len(mcp_nb.history()) == 1


def test_registry_listeners(shell):
    changes = []
    mcp_nb.engine().registry.subscribe(lambda: changes.append(len(mcp_nb.registered())))
    shell.run_cell("%%mcp_tool\ndef a() -> int:\n    return 1\n")
    shell.run_cell("%%mcp_tool\ndef a() -> int:\n    return 2\n")
    mcp_nb.remove("a")
    assert changes == [1, 1, 0]


def _answered(call_id: int, name: str = "late"):
    from mcp_nb.records.outcome import Outcome

    return Outcome(
        call_id=call_id,
        target="tool",
        name=name,
        arguments={},
        outcome="result",
        cause="ok",
        content="x",
        structured_content=None,
        is_error=False,
        code=None,
        message=None,
        data=None,
        started=0.0,
        duration_ms=1.0,
        timeout_s=float("nan"),
        via="http",
    )


def test_calls_recorded_later_are_in_every_view_in_the_order_they_came(caplog):
    history = mcp_nb.history()
    heard = []
    history.subscribe(lambda o: heard.append(None if o is None else o.call_id))
    built = []

    def later(call_id):
        def build():
            built.append(call_id)
            if call_id == 3:
                raise RuntimeError("a bug in building an Outcome")
            return _answered(call_id)

        return build

    history.record_later(later(1))
    history.record_later(later(2))
    assert built == []  # nothing is built on the answer's path
    assert len(history) == 2 and built == [1, 2]  # a reader settles first
    history.record_later(later(3))
    history.record_later(later(4))
    history.record(_answered(5, "now"))  # one recorded at once comes after those answered before it
    assert list(history.to_frame()["call_id"]) == [1, 2, 4, 5]
    assert heard == [1, 2, 4, 5]
    assert "an answered call could not be recorded" in caplog.text  # said, and the next call still recorded
    history.record_later(later(6))
    history.clear()  # clear records what was waiting first (heard), then forgets everything (heard once)
    assert len(history) == 0 and heard[-2:] == [6, None]


@contextlib.contextmanager
def counts_read(history):
    """`len(history)`, read over and over on a thread of its own while the block runs; yields
    the list of what it read."""
    stop = threading.Event()
    seen: list[int] = []

    def reader():
        while not stop.is_set():
            seen.append(len(history))

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        yield seen
    finally:
        stop.set()
        thread.join()


def test_a_reader_on_another_thread_settles_without_losing_or_doubling_a_call():
    history = mcp_nb.history()
    with counts_read(history) as seen:
        for i in range(2000):
            history.record_later(lambda i=i: _answered(i))
            if i % 7 == 0:
                history.settle()
    ids = list(history.to_frame()["call_id"])
    assert ids == list(range(2000))
    assert seen == sorted(seen)  # the count never went back


def test_a_listener_that_reads_the_history_while_calls_are_settled_neither_hangs_nor_reorders():
    history = mcp_nb.history()
    lengths = []
    history.subscribe(lambda o: lengths.append(len(history)))  # reads, so it settles, from inside a settle
    for i in range(5):
        history.record_later(lambda i=i: _answered(i))
    done = threading.Event()
    thread = threading.Thread(target=lambda: (history.settle(), done.set()), daemon=True)
    thread.start()
    assert done.wait(10), "settling hung on its own lock"
    assert list(history.to_frame()["call_id"]) == list(range(5))
    assert len(lengths) == 5


def test_the_count_never_goes_back_while_a_sweep_records_on_the_loop():
    # The panel shows len(history) while calls are recorded on mcp_nb's loop thread; each 1,024
    # rows the store turns its pending rows into columns, and a read halfway through it once
    # counted the rows neither here nor there.
    @mcp_nb.tool()
    def tick(i: int) -> int:
        return i

    history = mcp_nb.history()
    with counts_read(history) as seen:
        swept = mcp_nb.sweep("tick", {"i": range(4000)}, concurrency=16, progress=False)
    assert (swept["outcome"] == "result").all() and len(history) == 4000
    backwards = sum(1 for a, b in zip(seen, seen[1:]) if b < a)
    assert backwards == 0, f"{backwards} of {len(seen)} reads went back"
