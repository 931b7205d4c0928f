"""A tool asks the user for input mid-call (elicitation); the notebook answers, and the call records it."""

import asyncio
import time
from typing import Annotated

import peers
import pytest
from asking import Name, ask_name, register_askers
from helpers import STARTS_WITHIN
from IPython.core.error import UsageError
from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resolve import Resolve

import mcp_nb
from mcp_nb import Answer
from mcp_nb.config import settings

register = register_askers


def test_prepared_answers_accept_decline_and_cancel_and_each_is_recorded():
    register()
    accepted = mcp_nb.call("greet", elicit=[Answer.accept(name="Ada")])
    declined = mcp_nb.call("greet", elicit=[Answer.decline()])
    cancelled = mcp_nb.call("greet", elicit=["cancel"])
    assert [o.content for o in (accepted, declined, cancelled)] == ["hello Ada", "no name (decline)", "no name (cancel)"]
    for outcome, action in ((accepted, "accept"), (declined, "decline"), (cancelled, "cancel")):
        (asked,) = outcome.elicitations
        assert (asked.message, asked.action, asked.source, asked.reason) == ("Your name?", action, "elicit", None)
        assert asked.schema["properties"]["name"]["type"] == "string"
    assert accepted.elicitations[0].content == {"name": "Ada"}
    frame = mcp_nb.history().to_frame()
    assert [[e["action"] for e in row] for row in frame["elicitations"]] == [["accept"], ["decline"], ["cancel"]]
    assert frame["elicitations"][0][0]["content"] == {"name": "Ada"}
    text = repr(accepted)
    assert "user asked  Your name?" in text and '-> accept {"name": "Ada"}, from the call\'s elicit=' in text
    assert "The server asked:</b> Your name?" in accepted._repr_html_()


def test_prepared_answers_are_used_in_order_and_every_call_starts_from_the_first():
    register()
    answers = [Answer.accept(name="Ada"), {"years": 36}]
    first = mcp_nb.call("card", elicit=answers)
    again = mcp_nb.call("card", elicit=answers)
    assert first.content == again.content == "Ada 36"
    assert [e.message for e in first.elicitations] == ["Your name?", "Your age?"]
    short = mcp_nb.call("card", elicit=[Answer.accept(name="Ada")])
    assert short.content == "Ada cancel"
    assert short.elicitations[-1].reason == "the 1 prepared answer(s) were all used"


def test_a_function_answers_with_the_message_and_schema_sync_or_async():
    register()
    seen = []

    def by_hand(message, schema):
        seen.append((message, sorted(schema["properties"])))
        return {"name": "Grace"}

    async def by_coroutine(message, schema):
        await asyncio.sleep(0)
        return Answer.decline()

    assert mcp_nb.call("greet", elicit=by_hand).content == "hello Grace"
    assert seen == [("Your name?", ["name"])]
    assert mcp_nb.call("greet", elicit=by_coroutine).content == "no name (decline)"


def test_a_broken_answerer_cancels_the_question_and_says_why():
    register()

    def broken(message, schema):
        raise KeyError("oops")

    outcome = mcp_nb.call("greet", elicit=broken)
    assert outcome.content == "no name (cancel)"
    assert outcome.elicitations[0].reason == "the elicit function raised KeyError: 'oops'"
    outcome = mcp_nb.call("greet", elicit=lambda m, s: 42)
    assert outcome.elicitations[0].reason.startswith("the elicit function's answer is not one:")


def test_an_answer_with_no_json_form_cancels_the_question_saying_which_field_and_the_call_goes_on():
    # Before, the SDK failed while writing the reply: "ExceptionGroup: unhandled errors in a
    # TaskGroup", recorded as the server's invalid_response.
    register()
    outcome = mcp_nb.call("greet", elicit=lambda message, schema: {"name": object()})
    assert (outcome.outcome, outcome.content) == ("result", "no name (cancel)")
    assert outcome.elicitations[0].reason.startswith(
        "the elicit function's answer is not one: an accepted answer's field 'name' is a object, which has no JSON form"
    )
    with pytest.raises(ValueError, match="field 'name' is a bytes, which has no JSON form"):
        mcp_nb.call("greet", elicit=[{"name": b"\xff"}])  # a prepared one: refused before sending
    assert len(mcp_nb.history()) == 1


def test_with_no_answer_the_question_is_cancelled_with_a_reason_never_waited_on():
    register()
    outcome = mcp_nb.call("greet", timeout=5)
    assert outcome.outcome == "result" and outcome.content == "no name (cancel)"
    (asked,) = outcome.elicitations
    assert asked.source == "none" and "nobody could answer" in asked.reason


def test_the_configured_default_answers_unless_the_call_gives_its_own():
    register()
    mcp_nb.configure(elicit="decline")
    assert mcp_nb.call("greet").elicitations[0].source == "default"
    assert mcp_nb.call("greet").content == "no name (decline)"
    assert mcp_nb.call("greet", elicit=[{"name": "Ada"}]).content == "hello Ada"
    with pytest.raises(ValueError, match="elicit"):
        mcp_nb.configure(elicit=object())
    assert settings.elicit == "decline"


@pytest.mark.parametrize(
    "bad, message",
    [
        ("maybe", "one of accept, decline, cancel"),
        ([Answer.accept(name="Ada"), 3], "an answer is"),
        ({1, 2}, "must be a function"),
        (42, "an answer is"),
    ],
)
def test_a_bad_elicit_raises_before_anything_is_sent(bad, message):
    register()
    with pytest.raises((ValueError, TypeError), match=message):
        mcp_nb.call("greet", elicit=bad)
    assert len(mcp_nb.history()) == 0


def test_answer_checks_itself():
    with pytest.raises(ValueError, match="only an accepted answer carries content"):
        Answer("decline", {"x": 1})
    with pytest.raises(ValueError, match="action is one of"):
        Answer("maybe")
    assert Answer.accept({"a": 1}, b=2).content == {"a": 1, "b": 2}


def test_the_deadline_stands_still_while_an_answer_is_awaited():
    register()

    def slow(message, schema):
        time.sleep(STARTS_WITHIN + 0.5)  # a person thinking: longer than the call's whole deadline
        return {"name": "Ada"}

    outcome = mcp_nb.call("greet", timeout=STARTS_WITHIN, elicit=slow)
    assert (outcome.outcome, outcome.content) == ("result", "hello Ada")
    assert outcome.elicitations[0].waited_ms >= (STARTS_WITHIN + 0.5) * 1000


def test_the_deadline_still_holds_for_the_server_after_the_answer():
    @mcp_nb.tool()
    async def greet_slowly(who: Annotated[ElicitationResult[Name], Resolve(ask_name)]) -> str:
        await asyncio.sleep(30)
        return "too late"

    outcome = mcp_nb.call("greet_slowly", timeout=STARTS_WITHIN, elicit=[{"name": "Ada"}])  # asked within it
    assert (outcome.outcome, outcome.cause) == ("timeout", "deadline")
    assert outcome.elicitations[0].action == "accept"


def test_ctx_elicit_needs_a_back_channel_the_kernels_connection_does_not_have():
    # Measured with mcp 2.3: the kernel's in-process session speaks 2026-07-28, where a
    # server-initiated request has no channel; the SDK says so, and the call records it.
    @mcp_nb.tool()
    async def ask_directly(ctx: Context) -> str:
        return (await ctx.elicit("Your name?", Name)).action

    outcome = mcp_nb.call("ask_directly", elicit=["decline"])
    assert (outcome.outcome, outcome.cause) == ("protocol_error", "mcp_error")
    assert "no back-channel" in outcome.message and outcome.elicitations == ()


def test_a_sweep_answers_every_call_from_the_same_prepared_answers():
    register()
    frame = mcp_nb.sweep("card", [{}, {}, {}], elicit=[{"name": "Ada"}, {"years": 3}], progress=False)
    assert frame["content"].tolist() == ["Ada 3"] * 3
    with pytest.raises(ValueError, match="elicit= is for sweeps in the kernel"):
        mcp_nb.sweep("card", [{}], elicit=["decline"], cluster="tcp://127.0.0.1:1")


def test_the_magic_takes_answers_from_a_variable(shell):
    register()
    shell.user_ns["answers"] = [Answer.accept(name="Ada")]
    outcome = shell.run_line_magic("mcp_call", "greet --elicit answers")
    assert outcome.content == "hello Ada"
    assert shell.run_line_magic("mcp_call", "greet --elicit decline").content == "no name (decline)"
    for line, said in (("greet --elicit nowhere", "no variable of that name"), ("greet --elicit 'a b'", "give decline, cancel")):
        with pytest.raises(UsageError, match=said):
            shell.run_line_magic("mcp_call", line)
    shell.user_ns["bad"] = 42
    with pytest.raises(UsageError, match="an answer is"):
        shell.run_line_magic("mcp_call", "greet --elicit bad")
    assert len(mcp_nb.history()) == 2


def test_server_everything_asks_over_stdio_and_gets_the_notebooks_answer():
    peers.require(peers.EVERYTHING)
    connection = mcp_nb.connect("everything", peers.everything_stdio(), env=peers.node_env())
    # server-everything offers its elicitation tool only to a client that declares elicitation.
    assert connection.get("tool", "trigger-elicitation-request") is not None
    asked = []

    def answer(message, schema):
        asked.append(schema["required"])
        return Answer.accept(name="Ada Lovelace")

    outcome = mcp_nb.call("trigger-elicitation-request", server="everything", elicit=answer)
    assert outcome.outcome == "result" and '"name": "Ada Lovelace"' in outcome.content
    # The fields the answer leaves out go with the defaults the question proposed (SEP-1034), as a form would send them.
    sent = outcome.elicitations[0].content
    assert asked == [["name"]] and sent["name"] == "Ada Lovelace" and sent["integer"] == 42
    declined = mcp_nb.call("trigger-elicitation-request", server="everything", elicit=["decline"])
    assert "declined" in declined.content and declined.elicitations[0].action == "decline"
    unanswered = mcp_nb.call("trigger-elicitation-request", server="everything")
    assert "cancelled" in unanswered.content and unanswered.elicitations[0].source == "none"


def test_reads_and_prompts_take_elicit_too():
    @mcp_nb.prompt()
    def review(title: str) -> str:
        return f"Review {title}."

    assert mcp_nb.get_prompt("review", {"title": "Dune"}, elicit=["decline"]).ok
    with pytest.raises(TypeError, match="an answer is"):
        mcp_nb.read("books://x", elicit=42)
    assert len(mcp_nb.history()) == 1


def test_a_python_sdk_server_over_stdio_answers_resolvers_and_not_ctx_elicit():
    import sys
    from pathlib import Path

    mcp_nb.connect("asker", [sys.executable, str(Path(__file__).parent / "servers" / "asker.py")])
    assert mcp_nb.servers().loc["asker", "protocol"] == "2026-07-28"
    greeted = mcp_nb.call("greet", server="asker", elicit=[{"name": "Ada"}])
    assert greeted.content == "hello Ada" and greeted.elicitations[0].content == {"name": "Ada"}
    direct = mcp_nb.call("ask_directly", server="asker", elicit=[{"name": "Ada"}])
    assert (direct.outcome, direct.cause) == ("protocol_error", "mcp_error") and "no back-channel" in direct.message


def test_config_sets_the_same_default(shell):
    register()
    shell.run_line_magic("config", 'McpMagics.elicit = "decline"')
    assert settings.elicit == "decline"
    assert mcp_nb.call("greet").content == "no name (decline)"
