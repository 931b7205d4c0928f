"""Sweeps over argument grids, and faults injected on purpose."""

import asyncio
import collections
import dataclasses
import threading

import pandas as pd
import pytest
from helpers import FakeClock, interrupted_when, wait_until
from IPython.core.error import UsageError
from mcp import MCPError
from mcp.server.mcpserver.exceptions import ToolError

import mcp_nb
from mcp_nb import Faults, Retry
from mcp_nb.batch import core
from mcp_nb.batch.sweeps import argument_sets
from mcp_nb.registering import faults as faults_module


def test_argument_sets_from_grids_frames_and_lists():
    assert argument_sets({"a": [1, 2], "b": ["x", "y"]}) == [
        {"a": 1, "b": "x"},
        {"a": 1, "b": "y"},
        {"a": 2, "b": "x"},
        {"a": 2, "b": "y"},
    ]
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
    assert list(frame.columns) == [
        "base",
        "exp",
        "call_id",
        "attempt",
        "outcome",
        "cause",
        "duration_ms",
        "content",
        "code",
        "message",
    ]
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


# Ways one attempt fails that a policy can retry: the policy, and how the failed attempt is recorded.
TRANSIENT = {
    "busy code": ("busy", Retry(retries=1, codes=(-32050,)), ("protocol_error", "mcp_error")),
    "deadline": ("timeout", Retry(retries=1), ("timeout", "deadline")),
    "tool error": ("tool_error", Retry(retries=1, tool_errors=True), ("tool_error", "raised")),
}


@pytest.mark.parametrize("how, rule, failed", TRANSIENT.values(), ids=TRANSIENT.keys())
def test_a_sweep_retries_every_argument_set_that_fails_once(how, rule, failed):
    seen = collections.Counter()

    @mcp_nb.tool(read_only=True)
    async def once_busy(i: int) -> int:
        seen[i] += 1
        if seen[i] == 1:  # the first attempt of each argument set fails
            if how == "busy":
                raise MCPError(code=-32050, message="busy")
            if how == "tool_error":
                raise ToolError("not yet")
            await asyncio.sleep(30)  # the deadline ends it
        return i

    clock = FakeClock()
    # a deadline the second attempts meet on a loaded machine: each must answer within it
    frame = mcp_nb.sweep("once_busy", {"i": [1, 2, 3]}, timeout=1.0, retry=dataclasses.replace(rule, sleep=clock), progress=False)
    assert frame["attempt"].tolist() == [2, 2, 2]
    assert frame["outcome"].tolist() == ["result"] * 3 and frame["content"].tolist() == ["1", "2", "3"]
    assert seen == {1: 2, 2: 2, 3: 2}
    assert clock.waits == pytest.approx([0.1] * 3)
    history = mcp_nb.history().to_frame()
    for call_id in frame["call_id"]:
        attempts = history[history["call_id"] == call_id].sort_values("attempt")
        assert attempts["attempt"].tolist() == [1, 2]
        assert list(zip(attempts["outcome"].astype(str), attempts["cause"].astype(str))) == [failed, ("result", "ok")]
        assert attempts["backoff_s"].tolist() == pytest.approx([0.0, 0.1])
    assert len(history) == 6


def test_bad_sweep_input_raises_before_anything_is_sent():
    @mcp_nb.tool(read_only=True)
    async def echo(i: int) -> int:
        return i

    @mcp_nb.tool()
    def side_effect(i: int) -> int:
        return i

    with pytest.raises(ValueError, match="concurrency"):
        mcp_nb.sweep("echo", [{"i": 1}], concurrency=0)
    with pytest.raises(ValueError, match="timeout"):
        mcp_nb.sweep("echo", [{"i": 1}], timeout=-1)
    with pytest.raises(ValueError, match="will not retry"):
        mcp_nb.sweep("side_effect", [{"i": 1}], retry=1)
    assert len(mcp_nb.history()) == 0


@pytest.mark.parametrize(
    "calls, concurrency, in_flight", [(6, 6, {3, 4, 5}), (8, 2, {3, 4})], ids=["all in flight", "some never sent"]
)
def test_interrupting_a_sweep_returns_what_finished_and_records_the_calls_in_flight(capsys, calls, concurrency, in_flight):
    started = set()

    @mcp_nb.tool()
    async def step(i: int) -> int:
        if i >= 3:
            started.add(i)
            await asyncio.sleep(30)  # still running when the stop button is pressed
        return i

    def three_finished_and_the_rest_in_flight():
        return len(mcp_nb.history()) == 3 and started == in_flight

    with interrupted_when(three_finished_and_the_rest_in_flight):
        frame = mcp_nb.sweep("step", {"i": list(range(calls))}, concurrency=concurrency, progress=False)

    assert f"sweep of 'step' interrupted: 3 of {calls} calls finished" in capsys.readouterr().out
    assert frame.attrs == {"tool": "step", "calls": calls, "completed": 3, "interrupted": True}
    # Every call that was made has its row, in input order: those that finished, those cancelled in flight.
    assert frame["i"].tolist() == sorted({0, 1, 2} | in_flight)
    assert frame["cause"].tolist() == ["ok"] * 3 + ["cancelled"] * len(in_flight)
    assert frame["content"].tolist()[:3] == ["0", "1", "2"]

    history = mcp_nb.history().to_frame()
    sent = {
        args["i"]: (outcome, cause)
        for args, outcome, cause in zip(
            history["arguments"], history["outcome"].astype(str), history["cause"].astype(str), strict=True
        )
    }
    # The finished calls and the cancelled ones are recorded; the calls never sent are not.
    assert sent == {0: ("result", "ok"), 1: ("result", "ok"), 2: ("result", "ok")} | {
        i: ("timeout", "cancelled") for i in in_flight
    }
    assert (history.loc[history["cause"] == "cancelled", "code"] == -32800).all()
    # The handlers in flight were cancelled too, not left running.
    assert wait_until(lambda: set(mcp_nb.history().to_frame()["server_fate"].dropna()) == {"cancelled"})


@pytest.mark.filterwarnings("ignore::mcp_nb.registering.loop_watch.LoopBlockedWarning")  # the tool holds the loop on purpose
@pytest.mark.parametrize("stopped_by", ["interrupt", "stop event"])
def test_a_stopped_sweep_whose_calls_cannot_record_themselves_in_time_still_has_a_row_for_each(
    capsys, caplog, monkeypatch, stopped_by
):
    # The interleaving that lost rows, forced: the call in flight cannot record its cancellation
    # before the sweep builds its frame, because its handler holds mcp_nb's loop until the frame
    # is built (as a loaded machine, or a long synchronous step, can hold it past the bounded
    # wait). The batch records that call as cancelled itself; the call's own record, once the
    # loop is free, is dropped: one row in the frame, one in the history.
    monkeypatch.setattr(core, "STOP_WAIT_S", 0.3)
    holding, release = threading.Event(), threading.Event()

    @mcp_nb.tool()
    async def hold(i: int) -> int:
        if i == 1:
            holding.set()
            release.wait(timeout=60)  # holds the loop on purpose, until the frame is built
            await asyncio.sleep(30)
        return i

    if stopped_by == "interrupt":
        with interrupted_when(holding.is_set):
            frame = mcp_nb.sweep("hold", {"i": [0, 1, 2]}, concurrency=1, progress=False)
    else:
        # The async face's waiter cancelled (a notebook's interrupted `await`), the same stop.
        async def sweep_then_cancel():
            task = asyncio.ensure_future(
                asyncio.to_thread(lambda: core.wait(sweep, 3, None, "sweep of 'hold'", "calls finished", stop=stop))
            )
            await asyncio.to_thread(holding.wait, 30)
            stop.set()
            return await task

        from mcp_nb.batch.sweeps import Sweep

        sweep, stop = Sweep(mcp_nb.engine(), "hold", [{"i": 0}, {"i": 1}, {"i": 2}], 1, None, None), threading.Event()
        assert asyncio.run(sweep_then_cancel()) is True
        frame = sweep.frame(True)
    release.set()
    assert frame["i"].tolist() == [0, 1]  # call 2 was never started: no row, no record
    assert frame["cause"].tolist() == ["ok", "cancelled"] and frame["code"].tolist()[1] == -32800
    assert "stopped batch: 1 call(s) in flight had not recorded themselves after 0.3 s" in caplog.text
    # Once the handler lets go, the call's own cancellation is not recorded a second time.
    assert wait_until(lambda: mcp_nb.history().to_frame()["server_fate"].astype(str).tolist()[-1] == "cancelled")
    history = mcp_nb.history().to_frame()
    assert history["call_id"].tolist() == frame["call_id"].tolist()
    assert history["cause"].astype(str).tolist() == ["ok", "cancelled"]


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
    for bad, message in [
        ("crash=2", "probability"),
        ("wobble=1", "unknown fault"),
        ("crash", "key=value"),
        ("tool_error=0.6,crash=0.6", "add up"),
        ("latency=-1", "latency"),
        ("seed=x", "seed"),
    ]:
        with pytest.raises(ValueError, match=message):
            Faults.parse(bad)


def register_echo(**kwargs):
    @mcp_nb.tool(read_only=True, **kwargs)
    def echo(i: int) -> int:
        return i


def test_injected_faults_classify_like_real_ones():
    register_echo()
    causes = {}
    for kind, expected in [
        ("tool_error", ("tool_error", "raised")),
        ("crash", ("tool_error", "crash")),
        ("protocol_error", ("protocol_error", "mcp_error")),
    ]:
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


def test_a_seeded_spec_remembers_a_bounded_number_of_argument_sets(monkeypatch):
    monkeypatch.setattr(faults_module, "SEEN_KEPT", 50)

    def fates(spec, i, n):
        return [spec.draw({"i": i}) for _ in range(n)]

    # An argument set whose first and second draws differ: which one it gets can be told.
    k = next(i for i in range(1000) if len(set(fates(Faults.parse("tool_error=0.5,seed=2"), i, 2))) == 2)
    first, second = fates(Faults.parse("tool_error=0.5,seed=2"), k, 2)

    spec = Faults.parse("tool_error=0.5,seed=2")
    assert spec.draw({"i": k}) == first
    for other in range(1000, 1049):  # as many others as a retry may see drawn in between, and it is kept
        spec.draw({"i": other})
    assert spec.draw({"i": k}) == second  # the retry's next draw
    for other in range(2000, 2500):
        spec.draw({"i": other})
    assert len(spec.drawn()) == 50  # the argument sets drawn last, not all 551
    assert spec.draw({"i": k}) == first  # forgotten: it draws as if never sent


def test_draws_made_elsewhere_count_as_the_specs_own():
    here = Faults.parse("tool_error=0.3,crash=0.3,seed=9")
    for i in [1, 2, 2, 3, 3, 3]:
        here.draw({"i": i})
    elsewhere = Faults.parse("tool_error=0.3,crash=0.3,seed=9")  # a copy in a worker process
    elsewhere.count(here.drawn())
    assert elsewhere.drawn() == here.drawn() and elsewhere == here
    assert [elsewhere.draw({"i": i}) for i in range(6)] == [here.draw({"i": i}) for i in range(6)]


def test_retries_get_past_injected_busy_errors():
    register_echo(inject="protocol_error=0.5,seed=3")
    frame = mcp_nb.sweep("echo", {"i": list(range(30))}, retry=Retry(retries=6, codes=(-32050,), backoff=0.001), progress=False)
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
