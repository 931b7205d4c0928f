"""Every number of seconds a call, a connect or a retry policy takes is checked as JSON's numbers
are (`mcp_nb.numbers`): an integer beyond a float's range (10**400, or more digits than Python
writes out) is refused in one line, as an infinity is, never an OverflowError from a clock."""

from __future__ import annotations

import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mcp_nb

HUGE = (10**400, -(10**400), 10**5000)  # beyond a float; the last beyond what repr() writes out
QUICK = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def refused_in_one_line(make) -> str:
    with pytest.raises(ValueError) as raised:
        make()
    message = str(raised.value)
    assert "\n" not in message and len(message) < 300, message
    return message


@pytest.mark.parametrize("value", HUGE, ids=["1e400", "-1e400", "5000 digits"])
@pytest.mark.parametrize("field", ["backoff", "max_backoff", "jitter", "factor"])
def test_a_retry_policy_refuses_a_wait_no_clock_keeps(field, value):
    message = refused_in_one_line(lambda: mcp_nb.Retry(**{field: value}))
    assert message.startswith(f"{field} must be a finite number"), message


def test_a_retry_policy_refuses_a_count_it_cannot_write_in_one_line():
    message = refused_in_one_line(lambda: mcp_nb.Retry(retries=-(10**5000)))
    assert message.startswith("retries must be a whole number >= 0, got an integer of 5001 digits"), message


@pytest.mark.parametrize("value", HUGE, ids=["1e400", "-1e400", "5000 digits"])
def test_a_call_and_a_connect_refuse_a_timeout_no_clock_keeps(value):
    @mcp_nb.tool()
    def echo(x: int = 0) -> int:
        return x

    assert "must be a positive number of seconds" in refused_in_one_line(lambda: mcp_nb.call("echo", {"x": 1}, timeout=value))
    refused_in_one_line(lambda: mcp_nb.call("echo", timeout=1, reset_on_progress=True, max_timeout=value))
    refused_in_one_line(lambda: mcp_nb.connect("never", [sys.executable, "-c", "pass"], timeout=value))
    refused_in_one_line(lambda: mcp_nb.OAuth(timeout=value))
    before = mcp_nb.configure()["timeout"]
    refused_in_one_line(lambda: mcp_nb.configure(timeout=value))
    assert mcp_nb.configure()["timeout"] == before
    assert len(mcp_nb.history()) == 0 and list(mcp_nb.servers().index) == ["kernel"]  # nothing sent, nothing kept


@QUICK
@given(
    st.one_of(st.integers(), st.floats(allow_nan=True, allow_infinity=True), st.integers(min_value=10**300, max_value=10**400))
)
def test_any_number_makes_a_retry_policy_or_a_one_line_error(value):
    try:
        rule = mcp_nb.Retry(max_backoff=value, jitter=abs(value) if isinstance(value, int) else 0.0)
    except ValueError as err:
        assert "\n" not in str(err) and len(str(err)) < 300
    else:
        assert 0 <= float(rule.max_backoff) < float("inf")
