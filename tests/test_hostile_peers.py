"""Hostile: an outside server that speaks JSON-RPC badly (tests/servers/hostile_rpc.py, no SDK).

The ground rules: nothing a server sends makes a call face raise; every call is recorded once,
with an outcome that says what happened (a server that answered is not a server that never
did); the connection outlives one bad message; nothing the server writes prints a traceback
in the user's cell, breaks a line of the card or recolours a terminal.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers import checkout_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mcp_nb
from mcp_nb.calling.connections import inbound

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10) | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)

SERVER = str(Path(__file__).parent / "servers" / "hostile_rpc.py")
CALLING = "calling-house (mcp_nb/calling/stdio.py, connections.py)"


def connect(mode: str = "plain", name: str = "h"):
    return mcp_nb.connect(name, [sys.executable, SERVER, mode], timeout=60)


def recorded_once() -> None:
    frame = mcp_nb.history().to_frame()
    assert frame["call_id"].is_unique, frame[["call_id", "name"]]


@pytest.fixture
def hostile():
    connection = connect()
    yield connection
    mcp_nb.disconnect("h")


def still_answers() -> None:
    o = mcp_nb.call("echo", {"a": 1}, server="h", timeout=20)
    assert (o.outcome, o.content) == ("result", '{"a": 1}')


# -- what the server writes that is no message, or no message for us ---------------------------


@pytest.mark.timeout(120)
def test_lines_that_are_no_message_are_said_on_the_call_and_the_answer_after_them_counts(hostile):
    o = mcp_nb.call("garbage", {}, server="h", timeout=20)
    assert (o.outcome, o.content) == ("result", "after garbage")
    assert any("no JSON-RPC message" in log.message for log in o.server_logs)
    still_answers()


@pytest.mark.timeout(120)
def test_an_answer_sent_twice_is_taken_once_and_the_call_recorded_once(hostile):
    o = mcp_nb.call("dup_id", {}, server="h", timeout=20)
    assert o.content == "first"
    still_answers()
    assert len(mcp_nb.history()) == 2
    recorded_once()


@pytest.mark.timeout(120)
def test_answers_to_requests_never_sent_change_nothing(hostile):
    o = mcp_nb.call("unknown_id", {}, server="h", timeout=20)
    assert (o.outcome, o.content) == ("result", "yours")
    still_answers()
    recorded_once()


@pytest.mark.timeout(120)
def test_a_batch_array_is_no_message_of_this_era_and_the_answer_after_it_counts(hostile):
    o = mcp_nb.call("batch", {}, server="h", timeout=20)
    assert (o.outcome, o.content) == ("result", "after a batch")
    still_answers()


@pytest.mark.timeout(120)
def test_an_answer_trickled_a_few_bytes_at_a_time_is_read_whole(hostile):
    o = mcp_nb.call("slow_trickle", {}, server="h", timeout=20)
    assert (o.outcome, o.content) == ("result", "trickled")


@pytest.mark.timeout(120)
def test_an_answer_whose_id_is_the_requests_as_text_is_not_recorded_twice(hostile):
    o = mcp_nb.call("id_string", {}, server="h", timeout=20)
    assert o.outcome == "result"
    time.sleep(0.5)  # the second answer, with the right id, comes after the first
    still_answers()
    recorded_once()


# -- floods ------------------------------------------------------------------------------------


@pytest.mark.timeout(120)
def test_a_flood_of_log_messages_is_kept_and_the_card_shows_a_bounded_part(hostile):
    o = mcp_nb.call("flood", {"count": 20000}, server="h", timeout=60)
    assert (o.outcome, len(o.server_logs)) == ("result", 20000)
    assert len(repr(o)) < 20_000 and len(o._repr_html_()) < 100_000
    still_answers()


@pytest.mark.timeout(120)
def test_a_flood_of_list_changed_notices_is_coalesced_into_few_listings(hostile):
    o = mcp_nb.call("list_changed_flood", {"count": 5000}, server="h", timeout=60)
    assert o.outcome == "result"
    counted = [int(mcp_nb.call("listings", {}, server="h", timeout=60).content) for _ in range(2)]
    assert counted[1] < 100, f"{counted[1]} listings for 5,000 notices"


def listings(method: str) -> int:
    return int(mcp_nb.call("listings", {"method": method}, server="h", timeout=60).content)


def offered(kind: str) -> list[str]:
    frame = mcp_nb.registered(server="h")
    return frame.loc[frame["kind"] == kind, "name"].tolist()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind, method", [("tools", "tools/list"), ("resources", "resources/list"), ("prompts", "prompts/list")])
def test_each_kinds_flood_of_list_changed_notices_costs_few_listings_of_that_kind_alone(hostile, kind, method):
    before = {m: listings(m) for m in ("tools/list", "resources/list", "prompts/list")}
    o = mcp_nb.call("list_changed_flood", {"count": 5000, "kind": kind}, server="h", timeout=60)
    assert o.outcome == "result"
    listings(method)  # the listings the flood started have been asked for by now (one stdin, in order)
    after = {m: listings(m) for m in before}
    assert after[method] - before[method] < 100, f"{after[method] - before[method]} listings of {method} for 5,000 notices"
    others = {m: after[m] - before[m] for m in before if m != method}
    assert others == {m: 0 for m in others}, f"a {kind} notice listed other kinds: {others}"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind, entry", [("tools", "tool"), ("resources", "resource"), ("prompts", "prompt")])
def test_the_change_said_last_after_a_flood_is_read(hostile, kind, entry):
    o = mcp_nb.call("list_changed_flood", {"count": 2000, "kind": kind, "add": True}, server="h", timeout=60)
    assert o.outcome == "result"
    deadline = time.monotonic() + 30
    while "added_late" not in offered(entry) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "added_late" in offered(entry), offered(entry)[:10]


@pytest.mark.timeout(120)
def test_500_roots_requests_in_one_call_are_each_answered_and_the_call_goes_on(hostile):
    o = mcp_nb.call("roots_flood", {}, server="h", timeout=30)
    assert (o.outcome, o.content) == ("result", "after 500 roots requests")
    still_answers()


# -- server requests at odd times, of odd shapes ------------------------------------------------


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "tool, said",
    [
        ("ping_first", "after a ping"),
        ("ask_unknown", "after an unknown request"),
        ("sample_garbage", "after garbage sampling"),
        ("elicit_garbage", "after garbage elicitation"),
    ],
)
def test_server_requests_of_odd_shapes_are_refused_and_the_call_goes_on(hostile, tool, said):
    o = mcp_nb.call(tool, {}, server="h", timeout=20)
    assert (o.outcome, o.content) == ("result", said)
    assert not o.samplings and not o.elicitations  # nothing was asked of a model or a person
    still_answers()


# -- answers that are JSON but no answer the protocol allows --------------------------------------


@pytest.mark.timeout(120)
def test_nan_in_an_answer_is_a_protocol_error_at_once(hostile):
    o = mcp_nb.call("nan", {}, server="h", timeout=20)
    assert (o.outcome, o.cause) == ("protocol_error", "non_json_number")
    still_answers()


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "tool", ["huge_int", "deep", "surrogate", "error_odd", "result_list", "deep_id_last", "result_list_id_text"]
)
def test_an_answer_that_is_no_valid_message_fails_its_call_at_once_not_at_the_deadline(hostile, tool):
    started = time.monotonic()
    o = mcp_nb.call(tool, {}, server="h", timeout=15)
    assert (o.outcome, o.cause) == ("protocol_error", "invalid_response"), (o.outcome, o.cause, o.message)
    assert o.message.startswith("the server's answer is no message the protocol allows: "), o.message
    assert "\n" not in o.message and len(o.message) < 500, o.message
    assert time.monotonic() - started < 10
    still_answers()
    recorded_once()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("read", ["resource", "prompt"])
def test_a_read_answered_with_no_valid_message_fails_at_once_too(hostile, read):
    started = time.monotonic()
    if read == "resource":
        o = mcp_nb.read("mem://invalid", server="h", timeout=15)
    else:
        o = mcp_nb.get_prompt("invalid", server="h", timeout=15)
    assert (o.outcome, o.cause) == ("protocol_error", "invalid_response"), (o.outcome, o.cause, o.message)
    assert time.monotonic() - started < 10
    still_answers()
    recorded_once()


@pytest.mark.timeout(120)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rid=st.one_of(st.integers(-(10**15), 10**15), st.text(max_size=20)), result=JSON, first=st.booleans())
def test_the_id_of_an_answer_is_read_back_however_deep_its_result(rid, result, first):
    # What the stdio transport reads for the request a broken answer answers: the id, whether the
    # line is parsed whole or (too deep to parse) read at its top level only.
    members = [("id", rid), ("result", result)] if first else [("result", result), ("id", rid)]
    line = json.dumps(dict([("jsonrpc", "2.0"), *members])).encode()
    assert inbound.answered_id(line) == rid
    top = inbound._top_level(line)
    assert top is not None and set(top) == {"jsonrpc", "id", "result"} and top["id"] == rid
    deep = (
        line.replace(b'"result": ', b'"result": ' + b"[" * 5000, 1).replace(b', "id"', b"]" * 5000 + b', "id"', 1)
        if not first
        else None
    )
    if deep is not None:
        assert inbound.answered_id(deep) == rid


@given(st.binary(max_size=300))
@settings(max_examples=300, deadline=None)
def test_any_bytes_are_read_for_an_id_without_raising(line):
    found = inbound.answered_id(line)
    assert found is None or isinstance(found, (str, int))


@pytest.mark.timeout(120)
def test_an_answer_with_both_a_result_and_an_error_is_one_record(hostile):
    o = mcp_nb.call("both", {}, server="h", timeout=20)
    assert o.outcome in ("result", "protocol_error")
    recorded_once()
    still_answers()


@pytest.mark.timeout(120)
def test_a_server_that_never_answers_is_a_timeout_with_its_cancellation_sent(hostile):
    o = mcp_nb.call("hang", {}, server="h", timeout=1)
    assert (o.outcome, o.cause, o.server_fate) == ("timeout", "deadline", "cancel_requested")
    still_answers()


@pytest.mark.timeout(120)
def test_a_server_that_dies_mid_answer_is_disconnected_and_reconnects(hostile):
    o = mcp_nb.call("exit_mid", {}, server="h", timeout=20)
    assert (o.outcome, o.cause) == ("protocol_error", "disconnected")
    after = mcp_nb.call("echo", {}, server="h", timeout=5)
    assert (after.outcome, after.cause) == ("protocol_error", "disconnected")
    mcp_nb.reconnect("h", timeout=60)
    still_answers()


# -- notifications of odd shapes ------------------------------------------------------------------


@pytest.mark.timeout(120)
@pytest.mark.parametrize("which", [[0], [1], [2], [4], [5]], ids=["nan", "inf", "negative", "text", "null"])
def test_progress_of_odd_values_leaves_the_call_and_the_connection_alone(hostile, which):
    o = mcp_nb.call("progress_odd", {"which": which, "total": 5}, server="h", timeout=20)
    assert (o.outcome, o.content) == ("result", "after odd progress")
    still_answers()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("total", [5, 10**400], ids=["progress", "total"])
def test_a_progress_past_any_float_does_not_end_the_connection(hostile, total):
    which = [3] if total == 5 else [2]
    o = mcp_nb.call("progress_odd", {"which": which, "total": total}, server="h", timeout=20)
    assert o.outcome == "result", (o.outcome, o.cause, o.message)
    said = [log.message for log in o.server_logs if "past any float" in log.message]
    assert len(said) == 1 and "an integer of 401 digits" in said[0] and "\n" not in said[0], said
    still_answers()


@pytest.mark.timeout(120)
def test_log_messages_of_odd_levels_and_loggers_leave_the_call_alone(hostile):
    o = mcp_nb.call("log_odd", {}, server="h", timeout=20)
    assert (o.outcome, o.content) == ("result", "after odd logs")
    assert "\x1b" not in repr(o) and "\u202e" not in repr(o)
    still_answers()


# -- what reaches the user's cell ----------------------------------------------------------------

SCRIPT = """
import sys, mcp_nb
mcp_nb.connect("h", [sys.executable, {server!r}, "plain"], timeout=60)
o = mcp_nb.call({tool!r}, {arguments!r}, server="h", timeout=20, progress={progress!r})
print("OUTCOME", o.outcome)
"""


def run_script(tool: str, arguments: dict, progress: bool = False) -> subprocess.CompletedProcess:
    code = textwrap.dedent(SCRIPT).format(server=SERVER, tool=tool, arguments=arguments, progress=progress)
    return subprocess.run([sys.executable, "-c", code], env=checkout_env(), capture_output=True, text=True, timeout=120)


@pytest.mark.timeout(150)
@pytest.mark.parametrize("tool, arguments", [("log_odd", {}), ("progress_odd", {"which": [0, 4], "total": "x"})])
def test_notifications_the_sdk_cannot_read_print_no_traceback_where_nothing_was_configured(tool, arguments):
    # A script (or a kernel) that configured no logging: logging's last-resort handler prints
    # what reaches no handler. The SDK's client session logs on a logger of its own ("client"),
    # outside the "mcp" tree where mcp_nb keeps the SDK's records off the cell.
    run = run_script(tool, arguments)
    assert "OUTCOME result" in run.stdout, run.stderr[-2000:]
    assert "Traceback" not in run.stderr and "Failed to validate" not in run.stderr, run.stderr[-2000:]


@pytest.mark.timeout(150)
def test_a_progress_message_cannot_clear_the_terminal_from_the_live_bar():
    run = run_script("progress_odd", {"which": [0], "total": 5}, progress=True)
    assert "OUTCOME result" in run.stdout, run.stderr[-2000:]
    assert "\x1b[2J" not in run.stderr, run.stderr[-500:]
