"""Sweeps over argument grids, and faults injected on purpose."""

import asyncio
import threading
import time

import pandas as pd
import pytest
from IPython.core.error import UsageError

import mcp_nb
from mcp_nb import Faults, Retry
from mcp_nb.sweeps import Sweep, argument_sets


def test_argument_sets_from_grids_frames_and_lists():
    assert argument_sets({"a": [1, 2], "b": ["x", "y"]}) == [
        {"a": 1, "b": "x"}, {"a": 1, "b": "y"}, {"a": 2, "b": "x"}, {"a": 2, "b": "y"}]
    frame = pd.DataFrame({"a": [1, 2], "b": ["x", None]})
    assert argument_sets(frame) == [{"a": 1, "b": "x"}, {"a": 2}]
    assert argument_sets([{"a": 1}]) == [{"a": 1}]
    with pytest.raises(TypeError, match="lists of values"):
        argument_sets({"a": "text"})


def test_sweep_keeps_input_order_and_records_every_call():
    @mcp_nb.tool()
    async def power(base: int, exp: int) -> int:
        await asyncio.sleep(0.01 * ((base * 7 + exp) % 3))  # finish out of order
        if base == 0 and exp == 0:
            raise ValueError("undefined")
        return base**exp

    frame = mcp_nb.sweep("power", {"base": [0, 2, 3], "exp": [0, 1, 2]}, concurrency=4, progress=False)
    assert frame[["base", "exp"]].values.tolist() == [[b, e] for b in (0, 2, 3) for e in (0, 1, 2)]
    assert frame["outcome"].tolist() == ["tool_error"] + ["result"] * 8
    assert frame["content"].tolist()[1:] == ["0", "0", "1", "2", "4", "1", "3", "9"]
    assert list(frame.columns) == ["base", "exp", "call_id", "attempt", "outcome", "cause", "duration_ms", "content", "code", "message"]
    assert frame.attrs == {"tool": "power", "calls": 9, "completed": 9, "interrupted": False}
    history = mcp_nb.history().to_frame()
    assert len(history) == 9 and sorted(history["call_id"]) == sorted(frame["call_id"])


def test_sweep_runs_concurrently_up_to_the_limit():
    running = {"now": 0, "peak": 0}
    lock = threading.Lock()

    @mcp_nb.tool()
    async def slow(i: int) -> int:
        with lock:
            running["now"] += 1
            running["peak"] = max(running["peak"], running["now"])
        await asyncio.sleep(0.05)
        with lock:
            running["now"] -= 1
        return i

    frame = mcp_nb.sweep("slow", {"i": list(range(20))}, concurrency=5, progress=False)
    assert running["peak"] == 5
    assert frame["content"].tolist() == [str(i) for i in range(20)]


def test_sweep_with_retries_and_bad_input():
    @mcp_nb.tool(read_only=True)
    async def once_busy(i: int) -> int:
        return i

    frame = mcp_nb.sweep("once_busy", [{"i": 1}, {"i": 2}], retry=Retry(retries=1), progress=False)
    assert frame["attempt"].tolist() == [1, 1]
    with pytest.raises(ValueError, match="concurrency"):
        mcp_nb.sweep("once_busy", [{"i": 1}], concurrency=0)
    with pytest.raises(ValueError, match="timeout"):
        mcp_nb.sweep("once_busy", [{"i": 1}], timeout=-1)

    @mcp_nb.tool()
    def side_effect(i: int) -> int:
        return i

    with pytest.raises(ValueError, match="will not retry"):
        mcp_nb.sweep("side_effect", [{"i": 1}], retry=1)
    assert len(mcp_nb.history()) == 2


def test_cancelling_a_sweep_keeps_what_finished():
    @mcp_nb.tool()
    async def step(i: int) -> int:
        await asyncio.sleep(0.02 if i < 4 else 30)
        return i

    eng = mcp_nb.engine()
    sweep = Sweep(eng, "step", argument_sets({"i": list(range(8))}), 4, None, None)
    future = eng.loop.submit(sweep.run())
    deadline = time.monotonic() + 10
    while sweep.done < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)
    future.cancel()  # what a kernel interrupt does to a sync sweep
    assert sweep.finished.wait(10)
    frame = sweep.frame(interrupted=True)
    # Every call that was made has its row: the four that finished, the four cancelled in flight.
    assert frame["i"].tolist() == list(range(8))
    assert frame["cause"].tolist() == ["ok"] * 4 + ["cancelled"] * 4
    assert frame.attrs["interrupted"] and frame.attrs["completed"] == 4
    history = mcp_nb.history().to_frame()
    assert (history["cause"].astype(str) == "ok").sum() == 4
    assert (history["cause"].astype(str) == "cancelled").sum() == 4  # the four in flight


def test_sync_sweep_returns_partial_results_on_interrupt(monkeypatch):
    @mcp_nb.tool()
    async def step(i: int) -> int:
        await asyncio.sleep(0.01 if i < 3 else 30)
        return i

    import concurrent.futures

    original = concurrent.futures.Future.result
    state = {"polls": 0}

    def interrupting_result(self, timeout=None):
        # The third wait of the polling loop is "interrupted", as Ctrl-C or the stop button does.
        if timeout == 0.1:
            state["polls"] += 1
            if state["polls"] == 5:
                raise KeyboardInterrupt
        return original(self, timeout)

    monkeypatch.setattr(concurrent.futures.Future, "result", interrupting_result)
    frame = mcp_nb.sweep("step", {"i": list(range(6))}, concurrency=6, progress=False)
    assert frame["cause"].tolist() == ["ok"] * 3 + ["cancelled"] * 3 and frame.attrs["interrupted"]
    assert frame.attrs["completed"] == 3


def test_progress_bar_counts_every_call(capsys):
    @mcp_nb.tool()
    async def quick(i: int) -> int:
        return i

    mcp_nb.sweep("quick", {"i": list(range(12))}, concurrency=3)
    err = capsys.readouterr().err
    assert "sweep quick" in err and "12/12" in err


# -- faults ---------------------------------------------------------------------------------------


def test_fault_spec_parsing_and_validation():
    f = Faults.parse("latency=0.5, tool_error=0.1,crash=0.05,protocol_error=0.05,seed=1")
    assert (f.latency, f.tool_error, f.crash, f.protocol_error, f.seed) == (0.5, 0.1, 0.05, 0.05, 1)
    assert f.describe() == "latency=0.5,tool_error=0.1,crash=0.05,protocol_error=0.05,seed=1"
    for bad, message in [("crash=2", "probability"), ("wobble=1", "unknown fault"), ("crash", "key=value"),
                         ("tool_error=0.6,crash=0.6", "add up"), ("latency=-1", "latency"), ("seed=x", "seed")]:
        with pytest.raises(ValueError, match=message):
            Faults.parse(bad)


def register_echo(**kwargs):
    @mcp_nb.tool(read_only=True, **kwargs)
    def echo(i: int) -> int:
        return i


def test_injected_faults_classify_like_real_ones():
    register_echo()
    causes = {}
    for kind, expected in [("tool_error", ("tool_error", "raised")), ("crash", ("tool_error", "crash")),
                           ("protocol_error", ("protocol_error", "mcp_error"))]:
        mcp_nb.inject("echo", {kind: 1.0})
        o = mcp_nb.call("echo", {"i": 1})
        causes[kind] = (o.outcome, o.cause)
        assert causes[kind] == expected
    assert mcp_nb.call("echo", {"i": 1}).code == -32050
    mcp_nb.inject("echo", None)
    assert mcp_nb.call("echo", {"i": 1}).outcome == "result"


def test_injected_latency_times_out_like_a_slow_handler():
    register_echo(inject="latency=0.5")
    o = mcp_nb.call("echo", {"i": 1}, timeout=0.1)
    assert (o.outcome, o.cause) == ("timeout", "deadline")


def test_seeded_injection_is_reproducible_whatever_the_order():
    def outcomes(order):
        mcp_nb.reset()
        register_echo(inject="tool_error=0.3,crash=0.2,seed=7")
        return {i: mcp_nb.call("echo", {"i": i}).outcome for i in order}

    forward = outcomes(range(40))
    backward = outcomes(reversed(range(40)))
    assert forward == backward
    assert {"result", "tool_error"} <= set(forward.values())

    mcp_nb.reset()
    register_echo(inject="tool_error=0.3,crash=0.2,seed=7")
    swept = mcp_nb.sweep("echo", {"i": list(range(40))}, concurrency=8, progress=False)
    assert dict(zip(swept["i"], swept["outcome"], strict=True)) == forward


def test_retries_get_past_injected_busy_errors():
    register_echo(inject="protocol_error=0.5,seed=3")
    frame = mcp_nb.sweep("echo", {"i": list(range(30))}, retry=Retry(retries=6, codes=(-32050,), backoff=0.001),
                         progress=False)
    assert (frame["outcome"] == "result").all()
    assert frame["attempt"].max() > 1
    history = mcp_nb.history().to_frame()
    assert (history["code"] == -32050).sum() == (frame["attempt"] - 1).sum()


def test_inject_magic_card_listing_and_rerun(shell):
    result = shell.run_cell('%%mcp_tool --inject "crash=1,seed=1"\ndef boom(i: int) -> int:\n    return i\n')
    assert result.result.faults == "crash=1,seed=1"
    assert "faults injected: crash=1,seed=1" in repr(result.result)
    assert mcp_nb.registered().loc[0, "faults"] == "crash=1,seed=1"
    assert mcp_nb.call("boom", {"i": 1}).cause == "crash"
    shell.run_cell("%%mcp_tool\ndef boom(i: int) -> int:\n    return i\n")  # the cell decides: no more faults
    assert mcp_nb.call("boom", {"i": 1}).outcome == "result"
    bad = shell.run_cell('%%mcp_tool --inject "crash=3"\ndef boom(i: int) -> int:\n    return i\n')
    assert isinstance(bad.error_in_exec, UsageError) and "probability" in str(bad.error_in_exec)
    with pytest.raises(ValueError, match="no tool named 'ghost'"):
        mcp_nb.inject("ghost", "crash=1")
