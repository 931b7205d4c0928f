"""The per-call core: a Call owns each call, from the face that asked to the row it leaves."""

import asyncio
import concurrent.futures
import re
import threading
import time
import warnings

import pytest
from helpers import STARTS_WITHIN, wait_until

import mcp_nb
from mcp_nb.calling.call import Call, CallDepthError
from mcp_nb.registering.loop_watch import LoopBlockedWarning


def causes(history=None):
    frame = (history or mcp_nb.history()).to_frame()
    return list(zip(frame["name"].astype(str), frame["cause"].astype(str), strict=True))


# -- submit returns the Call ---------------------------------------------------------------------


def test_submit_returns_the_call_and_its_future_resolves_to_the_recorded_outcome():
    gate = threading.Event()

    @mcp_nb.tool()
    def slow() -> str:
        gate.wait(10)
        return "done"

    call = mcp_nb.engine().submit("tool", "slow", timeout=5)
    assert isinstance(call, Call) and not call.done()
    assert wait_until(lambda: call in mcp_nb.engine().calls)
    assert call.cancel()
    outcome = call.future.result(timeout=10)  # never CancelledError: the recorded Outcome
    assert (outcome.outcome, outcome.cause, outcome.code, outcome.call_id) == ("timeout", "cancelled", -32800, call.id)
    assert outcome is call.outcome and call.done() and not call.cancel()
    gate.set()
    assert causes() == [("slow", "cancelled")]


def test_a_call_cancelled_before_its_task_starts_is_recorded_too():
    @mcp_nb.tool()
    def quick() -> str:
        return "q"

    eng = mcp_nb.engine()
    hold = threading.Event()
    eng.loop.call_soon(lambda: hold.wait(5))  # keep the loop busy while the call is started and cancelled
    call = eng.submit("tool", "quick")
    assert call.cancel()
    hold.set()
    outcome = call.future.result(timeout=10)
    assert (outcome.cause, outcome.message) == ("cancelled", "Cancelled by the caller before attempt 1 was sent")
    assert outcome.server_fate == "cancelled"
    assert causes() == [("quick", "cancelled")]


# -- arguments as sent ------------------------------------------------------------------------


def test_the_record_keeps_the_arguments_as_sent_not_the_callers_objects():
    @mcp_nb.tool()
    def echo(tags: list[str], meta: dict[str, list[int]]) -> str:
        return ",".join(tags)

    tags, meta = ["a"], {"n": [1]}
    o = mcp_nb.call("echo", {"tags": tags, "meta": meta})
    tags.append("b")
    meta["n"].append(2)
    meta["new"] = [3]
    assert o.arguments == {"tags": ["a"], "meta": {"n": [1]}}
    assert mcp_nb.history().to_frame()["arguments"].tolist() == [{"tags": ["a"], "meta": {"n": [1]}}]
    # tuples are sent as JSON arrays, so that is what the record says
    assert mcp_nb.call("echo", {"tags": ("x", "y"), "meta": {}}).arguments == {"tags": ["x", "y"], "meta": {}}


@pytest.mark.parametrize(
    "arguments, where",
    [
        ({"x": float("nan")}, "'x'"),
        ({"x": float("inf")}, "'x'"),
        ({"x": [1.0, float("-inf")]}, "'x[1]'"),
        ({"p": {"q": [0, {"r": float("nan")}]}}, "'p.q[1].r'"),
    ],
)
def test_nan_and_infinity_are_refused_before_anything_is_sent(arguments, where):
    @mcp_nb.tool()
    def f(x: float = 0.0, p: dict | None = None) -> str:
        return "sent"

    with pytest.raises(ValueError, match=rf"argument {re.escape(where)} is .*JSON has no NaN or infinity"):
        mcp_nb.call("f", arguments)
    with pytest.raises(ValueError, match="JSON has no NaN"):
        mcp_nb.sweep("f", [{"x": 1.0}, arguments], progress=False)
    assert len(mcp_nb.history()) == 0


def test_nan_through_the_magic_is_a_one_line_usage_error(shell):
    @mcp_nb.tool()
    def f(x: float) -> str:
        return "sent"

    for line in ("f x=nan", 'f {"x": NaN}', "f x=inf"):
        result = shell.run_cell(f"%mcp_call {line}")
        assert type(result.error_in_exec).__name__ == "UsageError", line
        assert "JSON has no NaN or infinity" in str(result.error_in_exec)
        assert "\n" not in str(result.error_in_exec)
    assert len(mcp_nb.history()) == 0


# -- cancellation and deadlines ----------------------------------------------------------------------


def _cancelled_while_hog_holds_the_loop(eng, call, head_start: float):
    """Run `call`; after `head_start` s an async tool, hog, holds mcp_nb's loop for 0.6 s, and
    0.3 s into that the call's task is cancelled (an interrupt, a reset): the cancellation is
    delivered in the same turn of the loop as whatever deadline passed meanwhile. Returns
    ("cancelled" or "returned", the call's Outcome)."""

    holding = threading.Event()

    @mcp_nb.tool()
    async def hog() -> str:
        holding.set()
        time.sleep(0.6)  # holds mcp_nb's loop across the deadline  # noqa: ASYNC251
        return "done"

    def interrupt(task) -> None:
        # 0.3 s into the hold, counted from when it began (not from when it was asked for, which a
        # loaded machine can put late): the cancellation lands while the loop is held
        holding.wait(30)
        time.sleep(0.3)
        eng.loop.call_soon(task.cancel)

    async def scenario():
        task = asyncio.ensure_future(call.run())
        await asyncio.sleep(head_start)
        threading.Thread(target=interrupt, args=(task,), daemon=True).start()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LoopBlockedWarning)
            await eng.prepare("tool", "hog", timeout=5).run()
        try:
            await task
        except asyncio.CancelledError:
            return "cancelled", call.outcome
        return "returned", call.outcome

    return eng.loop.run(scenario())


@pytest.mark.serial  # the interrupt is timed against a held loop
def test_a_cancellation_that_lands_with_the_deadline_is_passed_on_not_swallowed():
    @mcp_nb.tool()
    async def slow() -> str:
        await asyncio.sleep(30)
        return "never"

    eng = mcp_nb.engine()
    # While hog holds the loop, an interrupt (or a reset) asks for the task to stop; it is
    # delivered in the same turn of the loop as slow's deadline.
    how, outcome = _cancelled_while_hog_holds_the_loop(eng, eng.prepare("tool", "slow", timeout=0.2), 0.05)
    assert how == "cancelled"  # before, the deadline path took the cancellation for its own
    assert (outcome.outcome, outcome.cause) == ("timeout", "deadline")
    assert causes() == [("hog", "ok"), ("slow", "deadline")]


def test_reset_while_a_sync_call_waits_in_another_thread_gives_a_recorded_cancelled_outcome():
    gate = threading.Event()

    @mcp_nb.tool()
    async def wait_long() -> str:
        gate.set()
        await asyncio.sleep(60)
        return "never"

    old = mcp_nb.engine()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(mcp_nb.call, "wait_long")
        assert gate.wait(10)
        mcp_nb.reset()
        outcome = waiting.result(timeout=10)  # before: a bare CancelledError
    assert (outcome.outcome, outcome.cause) == ("timeout", "cancelled")
    assert causes(old.history) == [("wait_long", "cancelled")]


def test_reset_during_a_sweep_returns_the_partial_frame(capsys):
    @mcp_nb.tool()
    async def step(i: int) -> int:
        await asyncio.sleep(0.01 if i < 3 else 60)
        return i

    old = mcp_nb.engine()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        sweeping = pool.submit(mcp_nb.sweep, "step", {"i": list(range(6))}, concurrency=6, progress=False)
        assert wait_until(lambda: len(old.history) == 3)
        mcp_nb.reset()
        frame = sweeping.result(timeout=20)  # before: a bare CancelledError
    assert frame["i"].tolist() == list(range(6))
    assert frame["cause"].tolist() == ["ok"] * 3 + ["cancelled"] * 3
    assert frame.attrs["interrupted"] and frame.attrs["completed"] == 3
    assert "stopped by mcp_nb.reset()" in capsys.readouterr().out
    assert len(old.history) == 6


# -- nesting ------------------------------------------------------------------------------------


def test_a_nested_call_keeps_its_own_bookkeeping_and_the_outer_call_stays_in_flight():
    release = threading.Event()

    @mcp_nb.tool()
    async def inner() -> str:
        return "inner"

    @mcp_nb.tool()
    async def outer() -> str:
        got = await mcp_nb.acall("inner")
        await asyncio.to_thread(release.wait, 10)
        return f"outer after {got.content}"

    eng = mcp_nb.engine()
    call = eng.submit("tool", "outer")
    assert wait_until(lambda: len(eng.history) == 1)  # inner is recorded, outer still runs
    # Before, the inner call's bookkeeping took the outer one out of the calls in flight.
    assert call in eng.calls and not call.done()
    release.set()
    assert call.future.result(timeout=10).content == "outer after inner"
    assert causes() == [("inner", "ok"), ("outer", "ok")]
    assert call not in eng.calls


def test_an_inner_deadline_is_the_inner_calls_alone():
    @mcp_nb.tool()
    async def slow() -> str:
        await asyncio.sleep(30)
        return "never"

    @mcp_nb.tool()
    async def outer() -> str:
        got = await mcp_nb.acall("slow", timeout=0.1)
        return f"inner ended {got.outcome}/{got.cause}"

    o = mcp_nb.call("outer", timeout=10)
    assert (o.outcome, o.content) == ("result", "inner ended timeout/deadline")
    assert causes() == [("slow", "deadline"), ("outer", "ok")]


def test_a_tool_calling_itself_without_a_base_case_stops_at_the_depth_limit_with_the_chain():
    @mcp_nb.tool()
    def countdown(n: int) -> int:
        return mcp_nb.call("countdown", {"n": n - 1}).content

    o = mcp_nb.call("countdown", {"n": 100})
    # Before: 45 levels exhausted the SDK's worker threads and everything waited for its deadline.
    # The deepest level crashed (CallDepthError); each level above returned that crash's text where
    # its `-> int` promised an integer, which the server's output check refused: invalid_output.
    assert (o.outcome, o.cause) == ("tool_error", "invalid_output")
    frame = mcp_nb.history().to_frame()
    assert len(frame) == 10 and frame["cause"].astype(str).tolist() == ["crash"] + ["invalid_output"] * 9
    deepest = frame.iloc[0]["server_logs"][0]
    kind, text = deepest.exceptions[-1]
    assert kind == "CallDepthError"
    assert "calls nest 11 deep, over the limit of 10: " + " → ".join(["countdown"] * 11) in text
    # Nothing keeps running after the outer call returned: no call is in flight, none is added.
    assert not mcp_nb.engine().calls
    assert len(mcp_nb.history()) == 10


def test_the_depth_limit_is_a_setting_and_holds_for_async_tools(shell):
    @mcp_nb.tool()
    async def ping(n: int) -> str:
        if n == 0:
            return "pong"
        return (await mcp_nb.acall("ping", {"n": n - 1})).content

    shell.run_line_magic("config", "McpMagics.max_depth = 3")
    try:
        assert mcp_nb.call("ping", {"n": 2}).content == "pong"
        mcp_nb.history().clear()
        mcp_nb.call("ping", {"n": 5})
        frame = mcp_nb.history().to_frame()
        # The third level's attempt at a fourth is refused inside its handler: that call
        # crashes, and the two above it return its error text.
        assert frame["cause"].astype(str).tolist() == ["crash", "ok", "ok"]
        kinds = dict(frame.iloc[0]["server_logs"][0].exceptions)
        assert "over the limit of 3: ping → ping → ping → ping" in kinds["CallDepthError"]
        with pytest.raises(ValueError, match="max_depth must be between 1 and 32"):
            mcp_nb.configure(max_depth=0)
    finally:
        mcp_nb.configure(max_depth=10)


def test_a_handler_that_outlives_its_call_cannot_start_new_calls():
    @mcp_nb.tool()
    def add(a: int, b: int) -> int:
        return a + b

    started, outlived = threading.Event(), threading.Event()

    @mcp_nb.tool()
    def late() -> int:
        started.set()
        outlived.wait(30)
        return mcp_nb.call("add", {"a": 1, "b": 2}).content

    o = mcp_nb.call("late", timeout=STARTS_WITHIN)
    outlived.set()
    assert started.is_set() and (o.outcome, o.cause) == ("timeout", "deadline")
    assert wait_until(lambda: o.server_fate == "completed")
    assert (o.fate_outcome, o.fate_cause) == ("tool_error", "crash")
    assert causes() == [("late", "deadline")]  # the nested call was refused, not made


def test_the_sync_face_on_mcp_nbs_own_loop_is_refused_with_the_fix():
    @mcp_nb.tool()
    async def nested() -> str:
        try:
            mcp_nb.call("nested")
        except RuntimeError as err:
            return str(err)
        return "no error"

    assert "use the async form" in mcp_nb.call("nested").content


# -- whatever a tool raises, the call is recorded -------------------------------------------------


class Escape(BaseException):
    """A BaseException of the tool's own."""


@pytest.mark.parametrize("exc", [Escape("own"), GeneratorExit(), KeyboardInterrupt(), SystemExit(3)])
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_tool_raising_a_base_exception_is_a_recorded_crash(exc, kind):
    if kind == "sync":

        @mcp_nb.tool(name="odd")
        def odd() -> str:
            raise exc

    else:

        @mcp_nb.tool(name="odd")
        async def odd() -> str:
            raise exc

    o = mcp_nb.call("odd")
    assert (o.outcome, o.cause) == ("tool_error", "crash")
    kinds = [k for k, _ in o.server_logs[0].exceptions]
    assert kinds[kinds.index("HandlerExit") + 1] == type(exc).__name__
    assert causes() == [("odd", "crash")]
    assert mcp_nb.call("odd").cause == "crash"  # and mcp_nb keeps working


@pytest.mark.parametrize("exc", [Escape("own"), GeneratorExit()])
def test_resources_and_prompts_raising_base_exceptions_are_recorded_crashes(exc):
    @mcp_nb.resource("odd://static")
    def odd_resource() -> str:
        raise exc

    @mcp_nb.prompt()
    def odd_prompt() -> str:
        raise exc

    assert mcp_nb.read("odd://static").cause == "crash"
    assert mcp_nb.get_prompt("odd_prompt").cause == "crash"
    assert causes() == [("odd://static", "crash"), ("odd_prompt", "crash")]


def test_a_base_exception_from_a_handler_mcp_nb_did_not_register_is_still_recorded():
    @mcp_nb.server().tool()
    def raw() -> str:
        raise Escape("escapes the SDK")

    o = mcp_nb.call("raw")
    assert (o.outcome, o.cause) == ("protocol_error", "client_error")
    assert "Escape" in o.message
    assert causes() == [("raw", "client_error")]


def test_a_tool_raising_cancelled_error_itself_is_a_crash_not_a_cancellation():
    @mcp_nb.tool()
    async def fake() -> str:
        raise asyncio.CancelledError()

    @mcp_nb.tool()
    def fake_sync() -> str:
        raise asyncio.CancelledError()

    assert mcp_nb.call("fake").cause == "crash"
    assert mcp_nb.call("fake_sync").cause == "crash"


# -- an async tool that blocks mcp_nb's loop ----------------------------------------------------------


def test_the_sync_face_returns_at_the_deadline_while_an_async_tool_holds_the_loop():
    release = threading.Event()

    started = threading.Event()

    @mcp_nb.tool()
    async def hog() -> str:
        started.set()
        release.wait(20)  # no await: holds mcp_nb's event loop  # noqa: ASYNC251
        return "done"

    @mcp_nb.tool()
    def quick() -> str:
        return "q"

    assert mcp_nb.call("quick").ok  # the session is open
    other = {}

    def concurrent_call():
        other["outcome"] = mcp_nb.call("quick", timeout=0.3)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        thread = threading.Thread(target=concurrent_call)
        o = mcp_nb.call("hog", timeout=STARTS_WITHIN)
        # Returned while the handler still holds the loop (before, it returned `result` when
        # the handler let go).
        assert started.is_set() and not release.is_set()
        assert (o.outcome, o.cause, o.code) == ("timeout", "deadline", -32001)
        assert "mcp_nb's event loop was held by async tool 'hog'" in o.message
        thread.start()
        thread.join(10)
        assert (other["outcome"].cause, not release.is_set()) == ("deadline", True)
        assert "held by async tool 'hog'" in other["outcome"].message
        release.set()
        assert wait_until(lambda: o.server_fate == "completed")
        mcp_nb.call("hog", timeout=5)  # a second block: the warning is not repeated
    assert (o.fate_outcome, o.fate_cause) == ("result", "ok")
    (warning,) = [log for log in o.server_logs if log.logger == "mcp_nb"]
    assert warning.level == "WARNING" and "async tool 'hog' blocked mcp_nb's event loop for" in warning.message
    assert "plain `def`" in warning.message and "asyncio.to_thread" in warning.message
    blocked = [w for w in caught if issubclass(w.category, LoopBlockedWarning)]
    assert len(blocked) == 1 and "hog" in str(blocked[0].message)
    # Every call is in the history once: the two timeouts recorded by the waiting threads.
    assert causes() == [("quick", "ok"), ("hog", "deadline"), ("quick", "deadline"), ("hog", "ok")]
    # The call that never got sent while the loop was held was dropped, not sent late.
    assert other["outcome"].server_fate == "cancelled"


def test_an_async_tool_that_awaits_is_not_reported():
    @mcp_nb.tool()
    async def polite() -> str:
        await asyncio.sleep(0.2)
        return "ok"

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        o = mcp_nb.call("polite")
    assert o.ok and not [log for log in o.server_logs if log.logger == "mcp_nb"]
    assert not [w for w in caught if issubclass(w.category, LoopBlockedWarning)]


def test_the_depth_error_is_a_runtime_error_for_code_that_catches_it():
    assert issubclass(CallDepthError, RuntimeError)


def test_a_sync_tool_returning_a_coroutine_or_a_generator_is_a_crash_that_says_why():
    async def later() -> str:
        return "never run"

    @mcp_nb.tool()
    def returns_coroutine() -> str:
        return later()

    @mcp_nb.tool()
    def returns_generator() -> str:
        return (c for c in "abc")

    for name, kind in (("returns_coroutine", "an awaitable"), ("returns_generator", "a generator")):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # "coroutine ... was never awaited" would fail here
            o = mcp_nb.call(name)
        assert (o.outcome, o.cause) == ("tool_error", "crash"), o
        kinds = dict(o.server_logs[0].exceptions)
        assert f"tool '{name}' returned {kind}" in kinds["NotAResult"]


def test_a_call_whose_task_never_ran_is_answered_when_the_engine_closes():
    # What start() leaves behind when the loop stops before the task it asked for is made.
    @mcp_nb.tool()
    def quick() -> str:
        return "q"

    eng = mcp_nb.engine()
    assert mcp_nb.call("quick").ok
    stranded = eng.prepare("tool", "quick")
    future = stranded.future
    eng.calls.add(stranded)
    mcp_nb.reset()
    outcome = future.result(timeout=5)
    assert (outcome.cause, outcome.message) == ("cancelled", "Cancelled by the caller before attempt 1 was sent")
    assert causes(eng.history) == [("quick", "ok"), ("quick", "cancelled")]


# -- deadlines that reset on progress keep every guarantee ---------------------------------------


def _reporting_tool():
    from mcp.server.mcpserver import Context

    @mcp_nb.tool()
    async def ticks(steps: int, pause: float, ctx: Context) -> str:
        for i in range(steps):
            await asyncio.sleep(pause)
            await ctx.report_progress(i + 1, steps)
        return "ticked"


def test_the_waiting_thread_follows_a_deadline_that_progress_moves():
    _reporting_tool()
    # 6 s of work against a 2 s timeout (STARTS_WITHIN: the first progress 0.75 s after the handler
    # starts): a waiting thread that kept the first deadline would record a timeout of its own a
    # second after it (the loop answering), long before the end.
    o = mcp_nb.call("ticks", {"steps": 8, "pause": 0.75}, timeout=STARTS_WITHIN, reset_on_progress=True, progress=False)
    assert (o.outcome, o.deadline_resets) == ("result", 8), o
    assert causes() == [("ticks", "ok")]


@pytest.mark.serial  # the interrupt is timed against a held loop
def test_a_resetting_deadline_that_fires_with_another_cancellation_passes_it_on():
    _reporting_tool()

    eng = mcp_nb.engine()
    call = eng.prepare("tool", "ticks", {"steps": 1000, "pause": 0.02}, timeout=0.2, reset_on_progress=True, max_timeout=0.25)
    # After a few events (the deadline was reset, the ceiling is near), hog holds the loop
    # and the interrupt comes in the same turn as the ceiling.
    how, outcome = _cancelled_while_hog_holds_the_loop(eng, call, 0.1)
    assert how == "cancelled"  # the interrupt that came with the ceiling goes on
    assert (outcome.outcome, outcome.cause) == ("timeout", "max_timeout")
    assert outcome.deadline_resets >= 1
    assert causes() == [("hog", "ok"), ("ticks", "max_timeout")]


def test_a_deadline_that_fired_is_not_revived_and_a_restart_never_passes_the_ceiling():
    from mcp_nb.calling.deadline import Deadlines

    async def scenario():
        loop = asyncio.get_running_loop()
        deadlines = Deadlines(loop)
        sleeper = asyncio.ensure_future(asyncio.sleep(30))
        fired = deadlines.start(0.01, sleeper)
        await asyncio.sleep(0.05)
        assert fired.expired
        assert deadlines.restart(fired, 10.0, loop.time() + 10) is None  # a late event changes nothing
        waiter = asyncio.ensure_future(asyncio.sleep(30))
        entry = deadlines.start(5.0, waiter)
        moved = deadlines.restart(entry, 5.0, loop.time() + 0.05)  # clamped to the ceiling
        assert entry.task is None and moved.task is waiter and moved.when <= loop.time() + 0.05
        try:
            await waiter
        except asyncio.CancelledError:
            return moved.expired
        return False

    assert mcp_nb.engine().loop.run(scenario()) is True
