"""`mcp_nb.expect`: a check of a real Outcome that passes quietly or explains itself in the error model's words."""

from __future__ import annotations

import asyncio
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import MCPError
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent

import mcp_nb
from mcp_nb.mistakes import BadType, BadValue

CATALOG = {"Dune": "Frank Herbert"}


def _bookshop() -> dict[str, mcp_nb.Outcome]:
    """One real call for each way a tool can end, by its (outcome, cause)."""

    @mcp_nb.tool("found")
    def found(title: str) -> str:
        return CATALOG[title]

    @mcp_nb.tool("raises")
    def raises(title: str) -> str:
        raise ToolError(f"No book titled {title!r} in the catalog.")

    @mcp_nb.tool("crashes")
    def crashes(title: str) -> str:
        return CATALOG[title]

    @mcp_nb.tool("returns")
    def returns(title: str) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=f"No book titled {title!r}.")], is_error=True)

    @mcp_nb.tool("refuses")
    def refuses(title: str) -> str:
        raise MCPError(code=-32051, message="The shop is closed for stocktaking.")

    calls = {
        ("result", "ok"): mcp_nb.call("found", {"title": "Dune"}),
        ("tool_error", "raised"): mcp_nb.call("raises", {"title": "Nothing"}),
        ("tool_error", "crash"): mcp_nb.call("crashes", {"title": "Nothing"}),
        ("tool_error", "returned"): mcp_nb.call("returns", {"title": "Nothing"}),
        ("tool_error", "invalid_arguments"): mcp_nb.call("found", {"title": 42}),
        ("tool_error", "unknown_tool"): mcp_nb.call("nowhere", {}),
        ("protocol_error", "mcp_error"): mcp_nb.call("refuses", {"title": "Dune"}),
        ("timeout", "deadline"): mcp_nb.call("slow", {}, timeout=0.05),
    }
    return calls


def _slow_tool():
    @mcp_nb.tool("slow")
    async def slow() -> str:
        await asyncio.sleep(5)
        return "late"


@pytest.fixture
def calls():
    _slow_tool()
    made = _bookshop()
    assert {key: (o.outcome, o.cause) for key, o in made.items()} == {key: key for key in made}  # each call ended as named
    return made


def test_a_call_that_ended_as_expected_passes_and_is_returned(calls):
    raised = calls[("tool_error", "raised")]
    assert mcp_nb.expect(raised, "tool_error", "raised", content_contains="'Nothing'") is raised
    assert mcp_nb.expect(raised) is raised  # nothing asked, nothing checked
    assert mcp_nb.expect(raised, cause=("raised", "returned")) is raised
    refused = calls[("protocol_error", "mcp_error")]
    assert mcp_nb.expect(refused, outcome="protocol_error", code=-32051, message_contains="stocktaking") is refused


def test_a_crash_where_a_tool_error_was_due_says_both_in_the_error_models_words(calls):
    crashed = calls[("tool_error", "crash")]
    hint = "a caller's mistake should be a ToolError with a message the model can read"
    with pytest.raises(AssertionError) as failed:
        mcp_nb.expect(crashed, outcome="tool_error", cause="raised", hint=hint)
    text = str(failed.value)
    lines = text.splitlines()
    assert lines[0] == 'the call of tool crashes {"title": "Nothing"} ended tool_error / crash, not tool_error / raised'
    assert f"  - its cause, crash: {mcp_nb.CAUSE_DOC['crash']}" in lines
    assert f"  - expected raised: {mcp_nb.CAUSE_DOC['raised']}" in lines
    assert "  - the model read: 'Error executing tool crashes'" in lines
    assert any(line.startswith("  - the log says: ERROR") and line.endswith("(KeyError: 'Nothing')") for line in lines)
    assert lines[-1] == f"  hint: {hint}"


def test_a_protocol_error_where_a_tool_error_was_due_names_both_outcome_types_and_what_the_host_got(calls):
    refused = calls[("protocol_error", "mcp_error")]
    with pytest.raises(AssertionError) as failed:
        mcp_nb.expect(refused, "tool_error", "raised")
    lines = str(failed.value).splitlines()
    assert lines[0].endswith("ended protocol_error / mcp_error, not tool_error / raised")
    assert any(line.startswith("  - it ended as protocol_error:") and "the model sees nothing" in line for line in lines)
    assert "  - the model read: nothing (there is no result)" in lines
    assert "  - the host got code -32051: 'The shop is closed for stocktaking.'" in lines
    assert f"  - its cause, mcp_error: {mcp_nb.CAUSE_DOC['mcp_error']}" in lines


def test_content_code_and_message_are_checked_against_what_each_audience_got(calls):
    raised, refused = calls[("tool_error", "raised")], calls[("protocol_error", "mcp_error")]
    with pytest.raises(AssertionError, match=r"ended tool_error / raised, but what the model read does not contain 'Solaris'"):
        mcp_nb.expect(raised, "tool_error", "raised", content_contains="Solaris")
    with pytest.raises(AssertionError, match=r"the host got code -32051, not -32602"):
        mcp_nb.expect(refused, code=-32602)
    with pytest.raises(AssertionError, match=r"the host's message does not contain 'busy'"):
        mcp_nb.expect(refused, message_contains="busy")
    with pytest.raises(AssertionError, match=r"what the model read does not contain 'x'\n  - the model read: nothing"):
        mcp_nb.expect(refused, content_contains="x")


def test_an_answer_not_written_yet_fails_as_such(calls):
    crashed = calls[("tool_error", "crash")]
    with pytest.raises(AssertionError, match=r"^not answered yet: replace the \.\.\. given as outcome"):
        mcp_nb.expect(crashed, ..., ...)
    with pytest.raises(AssertionError, match=r"^not answered yet: replace the \.\.\. given as cause"):
        mcp_nb.expect(crashed, "tool_error", ...)


@pytest.mark.parametrize(
    "args, kwargs, error, says",
    [
        (("not an outcome",), {}, BadType, "expect() checks an Outcome (what mcp_nb.call returns), not str"),
        (
            (None, "tool error"),
            {},
            BadValue,
            "expect(outcome='tool error'): an outcome type is one of result, tool_error, protocol_error, timeout",
        ),
        ((None, 3), {}, BadType, "expect(outcome=...) takes one of result, tool_error, protocol_error, timeout, not int"),
        ((None, "result", "crash"), {}, BadValue, "expect(): result never has the cause crash; its causes: ok"),
        ((None, None, "raise"), {}, BadValue, "expect(cause='raise'): a cause is one of ok, raised,"),
        ((None, None, 7), {}, BadType, "expect(cause=...) takes a cause or several, not int"),
        ((None, None, ()), {}, BadValue, "expect(cause=()): name at least one cause, or leave cause out"),
        ((None,), {"code": "-32602"}, BadType, "expect(code=...) takes an int, not str"),
        ((None,), {"content_contains": 5}, BadType, "expect(content_contains=...) takes a str, not int"),
    ],
)
def test_a_mistake_in_the_check_itself_is_said_in_one_line(calls, args, kwargs, error, says):
    got = calls[("tool_error", "raised")]
    args = (got, *args[1:]) if args[0] is None else args
    with pytest.raises(error) as raised:
        mcp_nb.expect(*args, **kwargs)
    assert str(raised.value).startswith(says) and "\n" not in str(raised.value)


def test_every_wrong_pair_is_explained_by_the_guides_cause_table(calls):
    """For each real Outcome and each (outcome, cause) pair the guide's table allows, expect passes
    exactly when the pair is the Outcome's, and otherwise names both, each with CAUSE_DOC's meaning."""
    from mcp_nb.records.expect import OUTCOME_DOC, PAIRS

    allowed = sorted((outcome, cause) for outcome, causes in PAIRS.items() for cause in causes)
    assert {cause for _, cause in allowed} == set(mcp_nb.CAUSES) and set(PAIRS) == set(mcp_nb.OUTCOMES)

    @settings(max_examples=150, deadline=None)
    @given(got=st.sampled_from(sorted(calls)), wanted=st.sampled_from(allowed), outcome_given=st.booleans())
    def check(got, wanted, outcome_given):
        outcome = calls[got]
        expected_outcome = wanted[0] if outcome_given else None
        matches = outcome.cause == wanted[1] and (expected_outcome is None or outcome.outcome == wanted[0])
        if matches:
            assert mcp_nb.expect(outcome, expected_outcome, wanted[1]) is outcome
            return
        with pytest.raises(AssertionError) as failed:
            mcp_nb.expect(outcome, expected_outcome, wanted[1])
        text = str(failed.value)
        assert re.match(rf"the call of tool \S+ .*ended {outcome.outcome} / {outcome.cause}, not ", text)
        if outcome.cause != wanted[1]:
            assert f"its cause, {outcome.cause}: {mcp_nb.CAUSE_DOC[outcome.cause]}" in text
            assert f"expected {wanted[1]}: {mcp_nb.CAUSE_DOC[wanted[1]]}" in text
        if expected_outcome is not None and outcome.outcome != expected_outcome:
            assert f"it ended as {outcome.outcome}: {OUTCOME_DOC[outcome.outcome]}" in text
            assert f"expected {expected_outcome}: {OUTCOME_DOC[expected_outcome]}" in text

    check()


# -- A failed check shows its explanation alone -------------------------------------------------


def test_a_failed_check_is_an_assertion_error_that_ipython_shows_without_frames(calls, shell, capsys):
    crashed = calls[("tool_error", "crash")]
    with pytest.raises(mcp_nb.CheckFailed) as failed:
        mcp_nb.expect(crashed, "tool_error", "raised", hint="raise ToolError")
    assert isinstance(failed.value, AssertionError)
    shown = failed.value._render_traceback_()
    assert [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in shown] == str(failed.value).splitlines()
    # In a shell, as in a notebook's cell: the lines alone, no frame of mcp_nb's own code, no "Traceback".
    shell.user_ns.update(crashed=crashed, mcp_nb=mcp_nb)
    done = shell.run_cell('mcp_nb.expect(crashed, "tool_error", "raised", hint="raise ToolError")')
    printed = capsys.readouterr().out
    assert isinstance(done.error_in_exec, mcp_nb.CheckFailed)
    assert "ended tool_error / crash, not tool_error / raised" in printed and "hint: raise ToolError" in printed
    assert "Traceback" not in printed and "expect.py" not in printed and "File " not in printed, printed
    done = shell.run_cell("mcp_nb.check_prediction(crashed, outcome=None, cause='crash')")
    printed = capsys.readouterr().out
    assert printed.strip().startswith("\x1b[1;31mnot answered yet") and "expect.py" not in printed, printed


def test_a_hint_can_be_picked_by_how_the_call_ended(calls):
    hints = {"tool_error / crash": "for the crash", "protocol_error": "for any protocol error", "*": "for the rest"}
    for key, wanted in [
        (("tool_error", "crash"), "for the crash"),
        (("protocol_error", "mcp_error"), "for any protocol error"),
        (("result", "ok"), "for the rest"),
    ]:
        with pytest.raises(AssertionError) as failed:
            mcp_nb.expect(calls[key], "timeout", "deadline", hint=hints)
        assert str(failed.value).splitlines()[-1] == f"  hint: {wanted}"
    with pytest.raises(AssertionError) as failed:
        mcp_nb.expect(calls[("result", "ok")], "timeout", "deadline", hint={"tool_error": "not this one"})
    assert "hint:" not in str(failed.value)
    with pytest.raises(BadType, match=r"^expect\(hint=\.\.\.\) takes a str or a mapping of str to str, not int$"):
        mcp_nb.expect(calls[("result", "ok")], hint=3)


# -- A learner's prediction ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "predicted, says",
    [
        ({"outcome": None, "cause": None}, "the outcome type is still None"),
        ({"outcome": ..., "cause": "crash"}, "the outcome type is still ...: write your answer, one of result, tool_error"),
        (
            {"outcome": "tool_error", "cause": mcp_nb.CAUSES},
            f"name one: the cause is a tuple of {len(mcp_nb.CAUSES)}; a prediction is exactly one",
        ),
        ({"outcome": "tool_error", "cause": ("crash", "raised")}, "name one: the cause is a tuple of 2"),
        ({"outcome": ["tool_error"], "cause": "crash"}, "name one: the outcome type is a list of 1"),
        ({"outcome": {"tool_error"}, "cause": "crash"}, "name one: the outcome type is a set of 1"),
        ({"outcome": "tool error", "cause": "crash"}, "'tool error' is not the outcome type: name one"),
        ({"outcome": 1, "cause": "crash"}, "the outcome type is a int: name one"),
        (
            {"outcome": "tool_error", "cause": "crash", "code": "-32603"},
            "the code the host gets is the text '-32603': write it as an int",
        ),
        ({"outcome": "tool_error", "cause": "crash", "code": True}, "the code the host gets is a bool"),
        ({"outcome": "tool_error", "cause": "crash", "code": -32603.0}, "the code the host gets is a float"),
        ({"outcome": "tool_error", "cause": "crash", "code": (-32603, None)}, "name one: the code the host gets is a tuple of 2"),
        ({"attempts": 0}, "the number of attempts is 0: a call makes at least one attempt"),
        ({"fate": "finished"}, "'finished' is not the server's fate: name one, one of running, completed"),
        ({"outcome": "tool_error", "cause": None, "code": ...}, "the cause is still None"),
    ],
)
def test_a_prediction_that_is_not_one_answer_of_each_fails_as_not_answered(calls, predicted, says):
    crashed = calls[("tool_error", "crash")]
    with pytest.raises(mcp_nb.CheckFailed) as failed:
        mcp_nb.check_prediction(crashed, **predicted)
    text = str(failed.value)
    assert text.startswith("not answered yet:") and says in text, text


def test_only_the_exact_prediction_passes_and_each_wrong_one_is_explained_with_the_hint_it_fits(calls):
    crashed = calls[("tool_error", "crash")]
    hints = {"outcome=protocol_error": "only MCPError escapes", "cause": "nobody planned this one", "*": "in general"}
    assert mcp_nb.check_prediction(crashed, outcome="tool_error", cause="crash") is crashed
    with pytest.raises(mcp_nb.CheckFailed) as failed:
        mcp_nb.check_prediction(crashed, outcome="protocol_error", cause="crash", hints=hints)
    lines = str(failed.value).splitlines()
    assert (
        lines[0]
        == 'the call of tool crashes {"title": "Nothing"} ended tool_error / crash, not protocol_error / crash as you predicted'
    )
    assert (
        f"  - the outcome type: you predicted protocol_error, it was tool_error: {mcp_nb.records.expect.OUTCOME_DOC['tool_error']}"
        in lines
    )
    assert "  - the cause: right, crash" in lines
    assert lines[-1] == "  hint: only MCPError escapes"
    with pytest.raises(mcp_nb.CheckFailed) as failed:
        mcp_nb.check_prediction(crashed, outcome="tool_error", cause="raised", hints=hints)
    assert str(failed.value).splitlines()[-1] == "  hint: nobody planned this one"
    with pytest.raises(mcp_nb.CheckFailed) as failed:
        mcp_nb.check_prediction(crashed, outcome="tool_error", cause="crash", code=-32603, hints=hints)
    text = str(failed.value)
    assert "not tool_error / crash, code -32603 as you predicted" in text and text.splitlines()[-1] == "  hint: in general"
    assert (
        "the code the host gets: you predicted -32603, it was none (the request succeeded: the host got nothing to handle)"
        in text
    )


def test_every_single_prediction_passes_exactly_when_it_is_how_the_call_ended(calls):
    from mcp_nb.records.expect import PAIRS

    allowed = sorted((outcome, cause) for outcome, causes in PAIRS.items() for cause in causes)

    @settings(max_examples=100, deadline=None)
    @given(got=st.sampled_from(sorted(calls)), wanted=st.sampled_from(allowed))
    def check(got, wanted):
        outcome = calls[got]
        if (outcome.outcome, outcome.cause) == wanted:
            assert mcp_nb.check_prediction(outcome, outcome=wanted[0], cause=wanted[1]) is outcome
        else:
            with pytest.raises(mcp_nb.CheckFailed, match="as you predicted"):
                mcp_nb.check_prediction(outcome, outcome=wanted[0], cause=wanted[1])

    check()


def test_the_fate_and_the_attempts_of_a_call_can_be_predicted(calls):
    slow = calls[("timeout", "deadline")]
    assert slow.server_fate == "cancelled" and slow.attempt == 1
    assert mcp_nb.check_prediction(slow, outcome="timeout", cause="deadline", fate="cancelled", attempts=1) is slow
    with pytest.raises(mcp_nb.CheckFailed) as failed:
        mcp_nb.check_prediction(slow, fate="completed", attempts=3)
    text = str(failed.value)
    assert "the server's fate: you predicted completed, it was cancelled: the handler was cancelled on the server" in text
    assert "the number of attempts: you predicted 3, it was 1" in text


@pytest.mark.parametrize(
    "args, kwargs, error, says",
    [
        (
            ("not an outcome",),
            {"outcome": "result"},
            BadType,
            "check_prediction() checks an Outcome (what mcp_nb.call returns), not str",
        ),
        ((None,), {}, BadValue, "check_prediction() needs at least one prediction: outcome, cause, code, fate, attempts"),
        (
            (None,),
            {"outcomes": "result"},
            BadValue,
            "check_prediction(outcomes=...): what can be predicted is outcome, cause, code",
        ),
        ((None,), {"outcome": "result", "hints": ["a hint"]}, BadType, "check_prediction(hints=...) takes a str or a mapping"),
    ],
)
def test_a_mistake_in_the_prediction_check_itself_is_said_in_one_line(calls, args, kwargs, error, says):
    got = calls[("tool_error", "raised")]
    args = (got, *args[1:]) if args[0] is None else args
    with pytest.raises(error) as raised:
        mcp_nb.check_prediction(*args, **kwargs)
    assert str(raised.value).startswith(says) and "\n" not in str(raised.value)
