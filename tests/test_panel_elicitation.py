"""A server's question during a panel call: a form in the panel, answered with Accept, Decline or Cancel."""

from __future__ import annotations

import time

import pytest
from asking import register_askers
from helpers import wait_until

import mcp_nb
from mcp_nb.widgets import show


@pytest.fixture
def panel():
    register_askers()
    p = show()
    yield p
    p.close()


def start(panel, name: str, timeout: str = "30"):
    panel.select("tool", name)
    panel.timeout.value = timeout
    call = panel.call()
    assert call is not None
    return call


def asked(panel, count: int = 1):
    assert wait_until(lambda: len(panel.asker.questions) == count), panel.asker.questions
    assert panel.question.layout.display is None and len(panel.question.children) == count
    return list(panel.asker.questions.values())


def test_the_question_shows_as_a_form_and_accept_sends_what_is_on_it(panel):
    call = start(panel, "greet")
    (question,) = asked(panel)
    assert "Your name?" in question.message.value
    question.form.fields["name"].widget.value = "Ada"
    question.accept.click()
    outcome = call.result(timeout=10)
    assert outcome.content == "hello Ada"
    (e,) = outcome.elicitations
    assert (e.action, e.content, e.source) == ("accept", {"name": "Ada"}, "form")
    assert wait_until(lambda: panel.question.layout.display == "none" and not panel.question.children)
    assert wait_until(lambda: "The server asked:</b> Your name?" in panel.outcome.value)


@pytest.mark.parametrize("button, action", [("decline", "decline"), ("cancel", "cancel")])
def test_decline_and_cancel(panel, button, action):
    call = start(panel, "greet")
    (question,) = asked(panel)
    getattr(question, button).click()
    outcome = call.result(timeout=10)
    assert outcome.content == f"no name ({action})" and outcome.elicitations[0].action == action


def test_an_accept_the_form_cannot_send_says_why_and_waits(panel):
    call = start(panel, "card")
    questions = {q.message.value.split("</b> ")[1].split("<")[0]: q for q in asked(panel, 2)}
    age = questions["Your age?"]
    age.form.fields["years"].widget.value = "1.5"
    age.accept.click()
    assert "Nothing was sent" in age.problems.value and "is not an integer" in age.problems.value and not call.done()
    age.form.fields["years"].widget.value = "36"
    age.accept.click()
    questions["Your name?"].cancel.click()
    assert call.result(timeout=10).content == "cancel 36"


def test_questions_asked_together_show_together(panel):
    call = start(panel, "card")
    first, second = asked(panel, 2)
    by_message = {q.message.value.split("</b> ")[1].split("<")[0]: q for q in (first, second)}
    by_message["Your name?"].form.fields["name"].widget.value = "Ada"
    by_message["Your name?"].accept.click()
    by_message["Your age?"].decline.click()
    assert call.result(timeout=10).content == "Ada decline"


def test_the_deadline_waits_for_the_person(panel):
    call = start(panel, "greet", timeout="0.5")
    (question,) = asked(panel)
    time.sleep(1.0)  # longer than the call's deadline
    question.decline.click()
    outcome = call.result(timeout=10)
    assert outcome.outcome == "result" and outcome.elicitations[0].waited_ms >= 1000


def test_cancelling_the_call_takes_the_question_away_and_records_why(panel):
    call = start(panel, "greet")
    asked(panel)
    panel.cancel_button.click()
    outcome = call.result(timeout=10)
    assert (outcome.outcome, outcome.cause) == ("timeout", "cancelled")
    assert outcome.elicitations[0].reason == "the call was cancelled while waiting for the answer"
    assert wait_until(lambda: not panel.asker.questions and panel.question.layout.display == "none")


def test_closing_the_panel_cancels_its_question(panel):
    call = start(panel, "greet")
    asked(panel)
    panel.close()
    outcome = call.result(timeout=10)
    assert outcome.content == "no name (cancel)" and outcome.elicitations[0].source == "form"


def test_a_configured_answer_comes_before_the_form(panel):
    mcp_nb.configure(elicit=[{"name": "Grace"}])
    outcome = start(panel, "greet").result(timeout=10)
    assert outcome.content == "hello Grace" and outcome.elicitations[0].source == "default"
    assert not panel.asker.questions
