"""Retries: backoff, attempt limits, idempotency, one history row per attempt."""

import asyncio
import time

import pytest
from IPython.core.error import UsageError
from mcp import MCPError

import mcp_nb
from mcp_nb import Retry


class FakeClock:
    """tenacity's sleep, recorded instead of slept."""

    def __init__(self):
        self.waits = []

    async def __call__(self, seconds):
        self.waits.append(seconds)


def flaky_tool(fail_times, how="timeout", read_only=True):
    """A tool that fails `fail_times` times (as `how`), then answers."""
    calls = {"n": 0}

    @mcp_nb.tool(read_only=read_only)
    async def flaky(x: int) -> str:
        calls["n"] += 1
        if calls["n"] <= fail_times:
            if how == "timeout":
                await asyncio.sleep(30)
            if how == "busy":
                raise MCPError(code=-32050, message="busy")
            if how == "tool_error":
                from mcp.server.mcpserver.exceptions import ToolError

                raise ToolError("not yet")
        return f"ok after {calls['n']}"

    return calls


def test_default_backoff_is_100_200_400_ms():
    assert Retry().delays() == [0.1, 0.2, 0.4]
    assert Retry(retries=5, backoff=0.5, factor=3, max_backoff=5).delays() == [0.5, 1.5, 4.5, 5, 5]


def test_timeouts_are_retried_with_exponential_backoff_and_linked_in_the_history():
    flaky_tool(2)
    clock = FakeClock()
    final = mcp_nb.call("flaky", {"x": 1}, timeout=0.1, retry=Retry(retries=3, sleep=clock))
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
    final = mcp_nb.call("flaky", {"x": 1}, timeout=0.05, retry=Retry(retries=2, backoff=0.2))
    elapsed = time.perf_counter() - started
    assert final.attempt == 3 and final.outcome == "result"
    # two deadlines (0.05 s each) and two waits (0.2 s, 0.4 s): at least 0.7 s in all
    assert elapsed >= 0.7


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


def test_tool_errors_are_not_retried_unless_asked():
    flaky_tool(1, how="tool_error")
    clock = FakeClock()
    first = mcp_nb.call("flaky", {"x": 1}, retry=Retry(sleep=clock))
    assert (first.outcome, first.attempt) == ("tool_error", 1)
    again = mcp_nb.call("flaky", {"x": 1}, retry=Retry(tool_errors=True, sleep=clock))
    assert (again.outcome, again.attempt) == ("result", 1)  # the tool already failed its one time


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


def test_idempotent_annotation_allows_retries_and_resources_are_retriable():
    @mcp_nb.tool(idempotent=True)
    def put(key: str) -> str:
        return key

    @mcp_nb.resource("cfg://main")
    def cfg() -> str:
        return "{}"

    assert mcp_nb.call("put", {"key": "a"}, retry=1).outcome == "result"
    assert mcp_nb.read("cfg://main", retry=2).content == "{}"


@pytest.mark.parametrize("bad", [-1, 1.5, "3"])
def test_bad_retry_arguments(bad):
    flaky_tool(0)
    with pytest.raises((ValueError, TypeError)):
        mcp_nb.call("flaky", {"x": 1}, retry=bad if not isinstance(bad, int) else Retry(retries=bad))
    assert len(mcp_nb.history()) == 0


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
    assert "fallback" in repr(o)
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
    assert health.index.tolist() == [("tool", "shaky"), ("tool", "solid")]
    assert health.loc[("tool", "shaky"), "calls"] == 4
    assert health.loc[("tool", "shaky"), "failure_rate"] == 0.5
    assert health.loc[("tool", "solid"), "failures"] == 0
    with pytest.raises(ValueError):
        mcp_nb.history().health(last=0)
