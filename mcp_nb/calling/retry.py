"""Retries as the error-model documents advise: exponential backoff, a cap on attempts,
transient failures only, idempotent operations only.

The loop itself is tenacity's (`AsyncRetrying`): stop, wait and retry conditions are
its, well tested, and its `sleep` can be swapped (tests use a fake clock). mcp_nb adds
what is specific to MCP: which outcomes are worth another attempt, the idempotency
check against the tool's annotations before anything is sent, and one history row per
attempt, linked by the call's id.
"""

from __future__ import annotations

import numbers
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from mcp_nb import libraries as lib
from mcp_nb.mistakes import BadType, BadValue
from mcp_nb.numbers import as_float, shown
from mcp_nb.records.outcome import Outcome

if TYPE_CHECKING:  # tenacity itself is loaded at the first retried call (`libraries.py`)
    from tenacity import RetryCallState
    from tenacity.wait import wait_base


@dataclass(frozen=True)
class Retry:
    """A retry policy. `Retry()` is the MCP C++ SDK guide's example: 100 ms, 200 ms, 400 ms, then give up.

    retries:     attempts after the first (so at most retries + 1 attempts)
    backoff:     the first wait, in seconds; each next one is `factor` times longer
    max_backoff: the waits stop growing here
    jitter:      up to this many seconds added at random to each wait (on top of the cap)
    on_timeout:  retry when the client stopped waiting (outcome `timeout`, cause `deadline`)
    codes:       protocol error codes worth another attempt (for example a "busy" -32050)
    tool_errors: retry `tool_error` outcomes as well (off: the model, not a loop, should react)
    force:       retry a tool that does not declare itself idempotent or read-only
    sleep:       the coroutine that waits (tests pass a fake clock)
    """

    retries: int = 3
    backoff: float = 0.1
    factor: float = 2.0
    max_backoff: float = 10.0
    jitter: float = 0.0
    on_timeout: bool = True
    codes: tuple[int, ...] = ()
    tool_errors: bool = False
    force: bool = False
    sleep: Callable[[float], Awaitable[None]] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        # Refused here, when the policy is made: a NaN wait would sleep 0 s, an infinite one
        # would hang the call between attempts, and `int()` would turn -32050.5 into a code.
        if not _whole(self.retries) or self.retries < 0:
            raise BadValue(f"retries must be a whole number >= 0, got {shown(self.retries)}")
        for name in ("backoff", "max_backoff", "jitter"):
            value = getattr(self, name)
            seconds = as_float(value)  # None for 10**400 too: no clock keeps it
            if seconds is None or seconds < 0:
                raise BadValue(f"{name} must be a finite number of seconds >= 0, got {shown(value)}")
        factor = as_float(self.factor)
        if factor is None or factor < 1:
            raise BadValue(f"factor must be a finite number >= 1, got {shown(self.factor)}")
        if isinstance(self.codes, (str, bytes)) or not isinstance(self.codes, Iterable):
            raise BadType(f"codes must be a tuple of error codes, for example (-32050,), got {shown(self.codes)}")
        codes = tuple(self.codes)
        for code in codes:
            if not _whole(code):
                raise BadType(f"codes must be whole numbers, got {shown(code)}")
        object.__setattr__(self, "codes", tuple(int(code) for code in codes))
        for name in ("on_timeout", "tool_errors", "force"):
            if not isinstance(getattr(self, name), bool):
                raise BadType(f"{name} must be True or False, got {shown(getattr(self, name))}")
        if self.sleep is not None and not callable(self.sleep):
            raise BadType(f"sleep must be a coroutine function that waits (or None), got {self.sleep!r}")

    def as_dict(self) -> dict[str, Any]:
        """The policy as a record keeps it: plain values, `retries` and what differs from the
        defaults (`sleep` is a function, never kept: a replay waits for real)."""
        kept: dict[str, Any] = {"retries": self.retries}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name not in ("retries", "sleep") and value != f.default:
                kept[f.name] = list(value) if f.name == "codes" else value
        return kept

    def wants_another(self, outcome: Outcome) -> bool:
        if outcome.outcome == "timeout":
            return self.on_timeout and outcome.cause == "deadline"
        if outcome.outcome == "protocol_error":
            return outcome.code in self.codes
        if outcome.outcome == "tool_error":
            return self.tool_errors
        return False


def _whole(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def policy(retry: Retry | int | bool | None) -> Retry | None:
    """What the `retry=` argument means: a policy, a number of retries, True for the default."""
    if retry is None or retry is False:
        return None
    if retry is True:
        return Retry()
    if isinstance(retry, Retry):
        return retry
    if isinstance(retry, int):
        return Retry(retries=retry)
    raise BadType(f"retry must be a Retry, a number of retries or True, got {type(retry).__name__}")


def check_idempotent(target: str, name: str, annotations: Any, rule: Retry) -> None:
    """Refuse, before anything is sent, to retry a tool that may have side effects."""
    if target != "tool" or rule.force:
        return  # resource reads and prompt gets change nothing: retriable by default
    if annotations is not None and (annotations.read_only_hint or annotations.idempotent_hint):
        return
    declared = "declares no annotations" if annotations is None else "is neither readOnlyHint nor idempotentHint"
    raise BadValue(
        f"will not retry tool {name!r}: it {declared}, so a repeated call could repeat its side effects "
        "(mark it --idempotent or --read-only, or pass Retry(force=True))"
    )


async def with_retries(attempt: Callable[[int, float], Awaitable[Outcome]], rule: Retry) -> Outcome:
    """Run `attempt(number, backoff)` until it is done: each attempt records its own row."""
    tenacity = lib.tenacity
    number, waited, idle = 0, 0.0, 0.0  # the attempt, the wait before it, the time slept so far

    def before(retry_state: RetryCallState) -> None:
        # tenacity counts the time slept so far; each history row wants its own wait.
        nonlocal number, waited, idle
        number, waited, idle = retry_state.attempt_number, retry_state.idle_for - idle, retry_state.idle_for

    async def next_attempt() -> Outcome:
        return await attempt(number, waited)

    # wait_exponential(multiplier=m) waits m * factor**(n-1) after attempt n: with m = 0.1
    # and factor 2, the C++ SDK guide's 100 ms, 200 ms, 400 ms.
    wait: wait_base = tenacity.wait_exponential(multiplier=rule.backoff, exp_base=rule.factor, min=0, max=rule.max_backoff)
    if rule.jitter:
        wait = wait + tenacity.wait_random(0, rule.jitter)
    options: dict[str, Any] = {} if rule.sleep is None else {"sleep": rule.sleep}
    retrying = tenacity.AsyncRetrying(
        stop=tenacity.stop_after_attempt(rule.retries + 1),
        wait=wait,
        retry=tenacity.retry_if_result(rule.wants_another),
        before=before,
        # Out of attempts: the last Outcome is the answer, not an exception.
        retry_error_callback=_last,
        **options,
    )
    return await retrying(next_attempt)


def _last(retry_state: RetryCallState) -> Outcome:
    """Out of attempts: the last attempt's Outcome (an attempt records, it never raises)."""
    assert retry_state.outcome is not None
    last: Outcome = retry_state.outcome.result()
    return last
