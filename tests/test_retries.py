"""Retries: backoff, attempt limits, idempotency, one history row per attempt."""

import asyncio
import dataclasses
import time

import pytest
from helpers import STARTS_WITHIN, FakeClock
from IPython.core.error import UsageError
from mcp import MCPError
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent

import mcp_nb
from mcp_nb import Retry


def flaky_tool(fail_times, how="timeout", read_only=True):
    """A tool that fails `fail_times` times (as `how`), then answers; returns its call counter."""
    calls = {"n": 0}

    @mcp_nb.tool(read_only=read_only)
    async def flaky(x: int) -> str:
        calls["n"] += 1
        if calls["n"] <= fail_times:
            fail(how, calls["n"])
            if how == "timeout":
                await asyncio.sleep(30)
            if how == "returned":
                return CallToolResult(content=[TextContent(type="text", text="not yet")], is_error=True)
        return f"ok after {calls['n']}"

    return calls


def fail(how, n):
    """Raise the failure `how` (the ones a handler raises; the others are up to the caller)."""
    if how == "busy":
        raise MCPError(code=-32050, message=f"busy ({n})")
    if how == "tool_error":
        raise ToolError(f"not yet ({n})")
    if how == "crash":
        raise KeyError(n)


def always_busy():
    """A read-only tool that answers "busy" (-32050) every time; returns its call counter."""
    calls = {"n": 0}

    @mcp_nb.tool(read_only=True)
    def busy() -> str:
        calls["n"] += 1
        fail("busy", calls["n"])

    return calls


# Policies and the waits the retry loop must sleep between their attempts, written out by hand.
WAITS = {
    "the documents' 100, 200, 400 ms": (Retry(), [0.1, 0.2, 0.4]),
    "factor 3, capped at 5 s": (Retry(retries=5, backoff=0.5, factor=3, max_backoff=5), [0.5, 1.5, 4.5, 5, 5]),
    "factor 1 is a constant wait": (Retry(retries=4, backoff=0.25, factor=1), [0.25, 0.25, 0.25, 0.25]),
    "a cap below the first wait": (Retry(retries=3, backoff=2, max_backoff=1), [1, 1, 1]),
    "no backoff": (Retry(retries=2, backoff=0), [0, 0]),
    "no retries": (Retry(retries=0), []),
}


@pytest.mark.parametrize("rule, waits", WAITS.values(), ids=WAITS.keys())
def test_the_retry_loop_sleeps_the_backoff_times_the_factor_up_to_the_cap(rule, waits):
    calls = always_busy()
    clock = FakeClock()
    final = mcp_nb.call("busy", retry=dataclasses.replace(rule, codes=(-32050,), sleep=clock))
    assert clock.waits == pytest.approx(waits)
    assert (final.outcome, final.code, final.attempt) == ("protocol_error", -32050, len(waits) + 1)
    assert calls["n"] == len(waits) + 1
    frame = mcp_nb.history().to_frame()
    assert frame["attempt"].tolist() == list(range(1, len(waits) + 2))
    assert frame["backoff_s"].tolist() == pytest.approx([0.0, *waits])  # each row: the wait slept before it


def test_jitter_adds_a_bounded_random_part_on_top_of_each_capped_wait():
    always_busy()
    clock = FakeClock()
    mcp_nb.call("busy", retry=Retry(retries=6, max_backoff=1, jitter=0.05, codes=(-32050,), sleep=clock))
    capped = [0.1, 0.2, 0.4, 0.8, 1, 1]
    added = [wait - base for wait, base in zip(clock.waits, capped, strict=True)]
    assert all(-1e-9 <= extra <= 0.05 + 1e-9 for extra in added), added
    assert len(set(added)) > 1  # random, not a fixed offset (six equal draws: probability zero)
    assert mcp_nb.history().to_frame()["backoff_s"].tolist() == pytest.approx([0.0, *clock.waits])


def test_timeouts_are_retried_with_exponential_backoff_and_linked_in_the_history():
    flaky_tool(2)
    clock = FakeClock()
    # A deadline the third attempt meets on a loaded machine: it must answer within it.
    final = mcp_nb.call("flaky", {"x": 1}, timeout=1.0, retry=Retry(retries=3, sleep=clock))
    assert (final.outcome, final.content, final.attempt) == ("result", "ok after 3", 3)
    assert clock.waits == pytest.approx([0.1, 0.2])
    frame = mcp_nb.history().to_frame()
    assert frame["call_id"].tolist() == [final.call_id] * 3
    assert frame["attempt"].tolist() == [1, 2, 3]
    assert frame["outcome"].astype(str).tolist() == ["timeout", "timeout", "result"]
    assert frame["backoff_s"].tolist() == pytest.approx([0.0, 0.1, 0.2])


def test_real_waits_follow_the_backoff():
    flaky_tool(2)
    started = time.perf_counter()
    # the third attempt answers within its deadline: one a loaded machine starts it well within
    final = mcp_nb.call("flaky", {"x": 1}, timeout=STARTS_WITHIN, retry=Retry(retries=2, backoff=0.2))
    elapsed = time.perf_counter() - started
    assert final.attempt == 3 and final.outcome == "result"
    # two deadlines and two waits (0.2 s, 0.4 s)
    assert elapsed >= 2 * STARTS_WITHIN + 0.6


def test_attempts_are_capped_and_the_last_outcome_is_returned():
    flaky_tool(10)
    clock = FakeClock()
    final = mcp_nb.call("flaky", {"x": 1}, timeout=0.05, retry=Retry(retries=2, sleep=clock))
    assert (final.outcome, final.cause, final.attempt) == ("timeout", "deadline", 3)
    assert len(mcp_nb.history()) == 3 and len(clock.waits) == 2


def test_chosen_protocol_codes_are_retried_others_are_not():
    flaky_tool(1, how="busy")
    clock = FakeClock()
    assert mcp_nb.call("flaky", {"x": 1}, retry=Retry(codes=(-32050,), sleep=clock)).attempt == 2
    mcp_nb.history().clear()
    flaky_tool(1, how="busy")
    once = mcp_nb.call("flaky", {"x": 1}, retry=Retry(sleep=clock))
    assert (once.outcome, once.code, once.attempt) == ("protocol_error", -32050, 1)


# Every way a tool reports a tool error, and the cause each is recorded with.
TOOL_ERRORS = [("tool_error", "raised"), ("crash", "crash"), ("returned", "returned")]


@pytest.mark.parametrize("how, cause", TOOL_ERRORS)
def test_tool_errors_are_not_retried_unless_asked(how, cause):
    calls = flaky_tool(1, how=how)
    clock = FakeClock()
    first = mcp_nb.call("flaky", {"x": 1}, retry=Retry(sleep=clock))
    assert (first.outcome, first.cause, first.attempt) == ("tool_error", cause, 1)
    assert calls["n"] == 1 and clock.waits == []
    assert len(mcp_nb.history()) == 1


@pytest.mark.parametrize("how, cause", TOOL_ERRORS)
def test_tool_errors_are_retried_when_asked(how, cause):
    calls = flaky_tool(2, how=how)
    clock = FakeClock()
    final = mcp_nb.call("flaky", {"x": 1}, retry=Retry(tool_errors=True, sleep=clock))
    assert (final.outcome, final.content, final.attempt) == ("result", "ok after 3", 3)
    assert calls["n"] == 3 and clock.waits == pytest.approx([0.1, 0.2])
    frame = mcp_nb.history().to_frame()
    assert frame["call_id"].tolist() == [final.call_id] * 3
    assert frame["attempt"].tolist() == [1, 2, 3]
    assert frame["outcome"].astype(str).tolist() == ["tool_error", "tool_error", "result"]
    assert frame["cause"].astype(str).tolist() == [cause, cause, "ok"]
    assert frame["backoff_s"].tolist() == pytest.approx([0.0, 0.1, 0.2])


def test_a_tool_error_that_persists_uses_every_attempt_and_is_the_answer():
    calls = flaky_tool(10, how="tool_error")
    clock = FakeClock()
    final = mcp_nb.call("flaky", {"x": 1}, retry=Retry(retries=2, tool_errors=True, sleep=clock))
    assert (final.outcome, final.cause, final.attempt) == ("tool_error", "raised", 3)
    assert final.content == "Error executing tool flaky: not yet (3)"  # the last attempt's, not the first's
    assert calls["n"] == 3 and len(clock.waits) == 2
    assert mcp_nb.history().to_frame()["outcome"].astype(str).tolist() == ["tool_error"] * 3


def test_non_idempotent_tools_are_refused_before_anything_is_sent():
    @mcp_nb.tool()
    def charge(amount: int) -> str:
        return "charged"

    with pytest.raises(ValueError, match="will not retry tool 'charge'.*could repeat its side effects"):
        mcp_nb.call("charge", {"amount": 5}, retry=2)
    with pytest.raises(ValueError, match="will not retry tool 'nope'"):
        mcp_nb.call("nope", retry=True)
    assert len(mcp_nb.history()) == 0
    forced = mcp_nb.call("charge", {"amount": 5}, retry=Retry(force=True))
    assert forced.outcome == "result"


def test_idempotent_annotation_allows_retries():
    calls = {"n": 0}

    @mcp_nb.tool(idempotent=True)
    def put(key: str) -> str:
        calls["n"] += 1
        fail("busy" if calls["n"] == 1 else None, calls["n"])
        return key

    final = mcp_nb.call("put", {"key": "a"}, retry=Retry(codes=(-32050,), sleep=FakeClock()))
    assert (final.outcome, final.content, final.attempt) == ("result", "a", 2)
    assert calls["n"] == 2


@pytest.mark.parametrize("target", ["resource", "prompt"])
@pytest.mark.parametrize("how, outcome, cause", [("busy", "protocol_error", "mcp_error"), ("timeout", "timeout", "deadline")])
def test_resources_and_prompts_are_retried_without_annotations(target, how, outcome, cause):
    calls = {"n": 0}

    async def handler(topic: str) -> str:
        calls["n"] += 1
        if calls["n"] == 1:
            fail(how, 1)
            await asyncio.sleep(30)  # how == "timeout": the deadline ends the first attempt
        return f"about {topic}"

    clock = FakeClock()
    rule = Retry(codes=(-32050,), sleep=clock)
    # The deadline ends the first attempt of a timeout; the second must answer within it, which a
    # tenth of a second did not on a loaded machine (a third attempt was made).
    timeout = 1.0 if how == "timeout" else 10.0
    if target == "resource":
        mcp_nb.resource("notes://{topic}")(handler)
        final = mcp_nb.read("notes://dune", timeout=timeout, retry=rule)
    else:
        mcp_nb.prompt("notes")(handler)
        final = mcp_nb.get_prompt("notes", {"topic": "dune"}, timeout=timeout, retry=rule)
    assert (final.outcome, final.attempt) == ("result", 2) and "about dune" in final.content
    assert calls["n"] == 2 and clock.waits == pytest.approx([0.1])
    frame = mcp_nb.history().to_frame()
    assert frame["target"].astype(str).tolist() == [target, target]
    assert frame["call_id"].tolist() == [final.call_id] * 2
    assert list(zip(frame["outcome"].astype(str), frame["cause"].astype(str))) == [(outcome, cause), ("result", "ok")]
    assert frame["backoff_s"].tolist() == pytest.approx([0.0, 0.1])


@pytest.mark.parametrize("bad", [-1, 1.5, "3", [1], object()])
def test_bad_retry_arguments_raise_and_record_nothing(bad):
    calls = flaky_tool(0)
    with pytest.raises((ValueError, TypeError), match="retry|retries"):
        mcp_nb.call("flaky", {"x": 1}, retry=bad)
    assert len(mcp_nb.history()) == 0 and calls["n"] == 0


NAN, INF = float("nan"), float("inf")
BAD_POLICIES = [
    ({"retries": -1}, "retries must be a whole number >= 0"),
    ({"retries": 2.0}, "retries must be a whole number >= 0"),
    ({"retries": True}, "retries must be a whole number >= 0"),
    ({"backoff": -0.1}, "backoff must be a finite number of seconds >= 0"),
    ({"backoff": NAN}, "backoff must be a finite number of seconds >= 0"),
    ({"backoff": INF}, "backoff must be a finite number of seconds >= 0"),
    ({"backoff": "0.1"}, "backoff must be a finite number of seconds >= 0"),
    ({"max_backoff": NAN}, "max_backoff must be a finite number of seconds >= 0"),
    ({"max_backoff": INF}, "max_backoff must be a finite number of seconds >= 0"),
    ({"jitter": INF}, "jitter must be a finite number of seconds >= 0"),
    ({"jitter": NAN}, "jitter must be a finite number of seconds >= 0"),
    ({"factor": 0.5}, "factor must be a finite number >= 1"),
    ({"factor": NAN}, "factor must be a finite number >= 1"),
    ({"factor": INF}, "factor must be a finite number >= 1"),
    ({"factor": True}, "factor must be a finite number >= 1"),
    ({"codes": -32050}, "codes must be a tuple of error codes"),
    ({"codes": "-32050"}, "codes must be a tuple of error codes"),
    ({"codes": ("busy",)}, "codes must be whole numbers, got 'busy'"),
    ({"codes": (-32050.5,)}, "codes must be whole numbers, got -32050.5"),
    ({"codes": (True,)}, "codes must be whole numbers, got True"),
    ({"on_timeout": "no"}, "on_timeout must be True or False"),
    ({"tool_errors": 1}, "tool_errors must be True or False"),
    ({"force": None}, "force must be True or False"),
    ({"sleep": 0.1}, "sleep must be a coroutine function"),
]


@pytest.mark.parametrize("fields, message", BAD_POLICIES, ids=[repr(f) for f, _ in BAD_POLICIES])
def test_a_bad_policy_is_refused_when_it_is_made_with_one_clear_line(fields, message):
    # Before: NaN waits slept 0 s, an infinite jitter waited forever, 1.5 became code 1, "no" meant yes.
    with pytest.raises((ValueError, TypeError)) as refused:
        Retry(**fields)
    assert str(refused.value).startswith(message) and "\n" not in str(refused.value)


def test_a_bad_backoff_in_the_magic_is_a_usage_error(shell):
    calls = flaky_tool(0)
    for line, message in [
        ("--retries 1 --backoff nan", "backoff must be a finite number"),
        ("--retries 1 --backoff inf", "backoff must be a finite number"),
    ]:
        with pytest.raises(UsageError, match=message):
            shell.run_line_magic("mcp_call", f"flaky x=1 {line}")
    assert len(mcp_nb.history()) == 0 and calls["n"] == 0


def test_codes_may_be_any_sequence_of_whole_numbers():
    import numpy

    assert Retry(codes=[-32050, -32001]).codes == (-32050, -32001)
    assert Retry(codes=()).codes == ()
    (code,) = Retry(codes=numpy.array([-32050])).codes  # a column of a frame, say
    assert code == -32050 and type(code) is int


def test_magic_retries(shell):
    flaky_tool(1, how="timeout")
    o = shell.run_line_magic("mcp_call", "flaky x=1 --timeout 0.05 --retries 2 --backoff 0.01")
    assert (o.outcome, o.attempt) == ("result", 2)
    with pytest.raises(UsageError, match="--retries takes a whole number"):
        shell.run_line_magic("mcp_call", "flaky x=1 --retries many")

    @mcp_nb.tool()
    def charge(amount: int) -> str:
        return "charged"

    with pytest.raises(UsageError, match="will not retry tool 'charge'"):
        shell.run_line_magic("mcp_call", "charge amount=1 --retries 1")


def test_read_fallback_keeps_the_failure_in_the_history():
    @mcp_nb.resource("cfg://{name}")
    def cfg(name: str) -> str:
        raise KeyError(name)

    o = mcp_nb.read("cfg://main", fallback='{"cached": true}')
    assert (o.content, o.fallback, o.outcome, o.cause) == ('{"cached": true}', True, "protocol_error", "crash")
    # The card says who put the content there: the host, not the server.
    assert "substituted by the host: the read failed and the server sent no content" in repr(o)
    assert "substituted by the host" in o._repr_html_()
    row = mcp_nb.history().to_frame().iloc[0]
    assert (row.outcome, row.content) == ("protocol_error", None)


def test_health_lists_the_tools_that_keep_failing():
    @mcp_nb.tool()
    def shaky(x: int) -> int:
        if x % 2:
            raise RuntimeError("odd")
        return x

    @mcp_nb.tool()
    def solid(x: int) -> int:
        return x

    for x in range(10):
        mcp_nb.call("shaky", {"x": x})
        mcp_nb.call("solid", {"x": x})
    health = mcp_nb.history().health(last=4)
    assert health.index.tolist() == [("kernel", "tool", "shaky"), ("kernel", "tool", "solid")]
    assert health.loc[("kernel", "tool", "shaky"), "calls"] == 4
    assert health.loc[("kernel", "tool", "shaky"), "failure_rate"] == 0.5
    assert health.loc[("kernel", "tool", "solid"), "failures"] == 0
    with pytest.raises(ValueError):
        mcp_nb.history().health(last=0)


def test_health_counts_a_retried_call_once_by_its_final_attempt():
    flaky_tool(2, how="busy")
    mcp_nb.call("flaky", {"x": 1}, retry=Retry(codes=(-32050,), backoff=0.001))  # busy, busy, then ok
    flaky_tool(9, how="busy")
    mcp_nb.call("flaky", {"x": 2}, retry=Retry(retries=1, codes=(-32050,), backoff=0.001))  # out of attempts

    health = mcp_nb.history().health()
    row = health.loc[("kernel", "tool", "flaky")]
    # Two calls, five attempts: the first call succeeded after retries and is no failure.
    assert (row["calls"], row["attempts"], row["failures"], row["failure_rate"]) == (2, 5, 1, 0.5)
    assert (row["latest_outcome"], row["latest_cause"]) == ("protocol_error", "mcp_error")
    assert health.columns.tolist() == ["calls", "attempts", "failures", "failure_rate", "latest_outcome", "latest_cause"]
    # `last` counts calls, not attempts: the latest call alone took two attempts and failed.
    latest = mcp_nb.history().health(last=1).loc[("kernel", "tool", "flaky")]
    assert (latest["calls"], latest["attempts"], latest["failures"]) == (1, 2, 1)


def test_a_thread_holding_the_gil_slows_the_loop_but_never_settles_a_call_as_held():
    # With a thread of the user's busy in pure Python and the GIL handed over every 0.15 s, mcp_nb's
    # loop answers late. The waiting thread once took a loop silent for 0.1 s past the deadline for a
    # held one, and recorded the call's timeout itself: its retries never came, and the message
    # blamed the loop. A loop that answers within a second is only slow.
    import sys
    import threading

    stop = threading.Event()

    def busy():
        while not stop.is_set():
            sum(range(10_000))

    answered = []

    @mcp_nb.tool(idempotent=True)
    def flaky() -> str:
        answered.append(1)
        if len(answered) == 1:
            time.sleep(1.0)  # the first attempt misses its deadline
        return "fine"

    switch = sys.getswitchinterval()
    hog = threading.Thread(target=busy, daemon=True)
    try:
        sys.setswitchinterval(0.15)
        hog.start()
        outcomes = []
        for _ in range(3):
            answered.clear()
            outcomes.append(mcp_nb.call("flaky", timeout=0.3, retry=Retry(retries=4, backoff=0.01)))
    finally:
        stop.set()
        sys.setswitchinterval(switch)
        hog.join(10)
    for outcome in outcomes:
        assert "did not answer" not in (outcome.message or ""), outcome.message
        assert outcome.attempt >= 2, (outcome.outcome, outcome.attempt, outcome.message)
