"""A server asks for a password mid-call: the server gets it, and nothing mcp_nb records or shows
holds it (the Outcome, its card as HTML and text, the history's frame and files, a cases file,
the log). One rule says which answer fields are secret: the question's schema marks them
(`writeOnly`, `format: password`), or their names say so (password, token, api_key...)."""

from __future__ import annotations

import json
import logging
from typing import Annotated

import pytest
from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver.resolve import Elicit, Resolve
from pydantic import BaseModel, Field

import mcp_nb
from mcp_nb import Answer
from mcp_nb.elicitation import SECRET, is_secret

PASSWORD = "hunter2-Zq9x"
PIN = "4711-0815"


class Login(BaseModel):
    user: str
    password: str


class Unlock(BaseModel):
    account: str
    # a name that says nothing: the schema marks it (the SDK's elicitation schemas take writeOnly,
    # not format: password, which an outside server may still send)
    pin: str = Field(json_schema_extra={"writeOnly": True})


def ask_login() -> Elicit[Login]:
    return Elicit("Log in to the archive", Login)


def ask_pin() -> Elicit[Unlock]:
    return Elicit("Unlock the safe", Unlock)


def register() -> dict:
    """`archive` asks a user and a password, `safe` an account and a pin; each keeps what it got."""
    got: dict = {}

    @mcp_nb.tool()
    def archive(login: Annotated[ElicitationResult[Login], Resolve(ask_login)]) -> str:
        if login.action != "accept":
            return login.action
        got["password"] = login.data.password
        return f"opened for {login.data.user}"

    @mcp_nb.tool()
    def safe(asked: Annotated[ElicitationResult[Unlock], Resolve(ask_pin)]) -> str:
        if asked.action != "accept":
            return asked.action
        got["pin"] = asked.data.pin
        return f"unlocked {asked.data.account}"

    return got


def everything_shown(outcome=None) -> list[str]:
    """Every place a call's record is shown or written, as text: the call's Outcome (when given)
    and the history's views and files."""
    history = mcp_nb.history()
    frame = history.to_frame()
    shown = [
        repr(history),
        history._repr_html_(),
        frame.to_json(default_handler=str, date_format="iso"),
        repr(frame["elicitations"].tolist()),
        history.to_records_frame().to_csv(),
    ]
    if outcome is not None:
        shown += [
            repr(outcome),
            str(outcome),
            outcome._repr_html_(),
            repr(outcome.elicitations),
            json.dumps([e.as_dict() for e in outcome.elicitations], default=str),
        ]
    return shown


def test_the_server_gets_the_password_and_nothing_recorded_or_shown_holds_it(caplog):
    caplog.set_level(logging.DEBUG)
    got = register()
    outcome = mcp_nb.call("archive", elicit=[Answer.accept(user="ada", password=PASSWORD)])
    assert outcome.content == "opened for ada" and got["password"] == PASSWORD  # the server had the real answer
    (asked,) = outcome.elicitations
    assert asked.content == {"user": "ada", "password": SECRET}  # recorded with the secret replaced
    for shown in everything_shown(outcome):
        assert PASSWORD not in shown
    assert SECRET in repr(outcome) and SECRET in outcome._repr_html_() and '"user": "ada"' in repr(outcome)
    assert mcp_nb.history().to_frame()["elicitations"][0][0]["content"] == {"user": "ada", "password": SECRET}
    assert PASSWORD not in caplog.text
    assert not [r for r in caplog.records if PASSWORD in repr(r.args) or PASSWORD in str(r.msg)]


def test_a_field_the_schema_marks_is_secret_whatever_its_name(caplog):
    caplog.set_level(logging.DEBUG)
    got = register()

    def answer(message, schema):
        assert schema["properties"]["pin"]["writeOnly"] is True
        return {"account": "ada", "pin": PIN}

    outcome = mcp_nb.call("safe", elicit=answer)
    assert outcome.content == "unlocked ada" and got["pin"] == PIN
    assert outcome.elicitations[0].content == {"account": "ada", "pin": SECRET}
    for shown in everything_shown(outcome):
        assert PIN not in shown
    assert PIN not in caplog.text


def test_the_magic_and_a_configured_default_record_no_secret_either(shell):
    got = register()
    shell.user_ns["answers"] = [Answer.accept(user="ada", password=PASSWORD)]
    outcome = shell.run_line_magic("mcp_call", "archive --elicit answers")
    assert outcome.content == "opened for ada" and got["password"] == PASSWORD
    shown = shell.display_formatter.format(outcome)[0]
    assert PASSWORD not in shown["text/plain"] and PASSWORD not in shown["text/html"] and SECRET in shown["text/html"]
    mcp_nb.configure(elicit=[Answer.accept(user="bob", password=PASSWORD)])
    again = mcp_nb.call("archive")
    assert again.content == "opened for bob" and again.elicitations[0].source == "default"
    for shown in everything_shown(again):
        assert PASSWORD not in shown


def test_a_saved_case_names_the_secret_and_its_replay_sends_the_real_one(tmp_path, monkeypatch):
    got = register()
    mcp_nb.call("archive", elicit=[Answer.accept(user="ada", password=PASSWORD)])
    mcp_nb.call("safe", elicit=[Answer.accept(account="ada", pin=PIN)])
    path = tmp_path / "cases.json"
    mcp_nb.history().to_cases(path)
    saved = path.read_text()
    assert PASSWORD not in saved and PIN not in saved and SECRET not in saved
    archive, safe = json.loads(saved)["cases"]
    assert archive["elicit"][0]["content"] == {"user": "ada", "password": {"env": "MCP_NB_PASSWORD"}}
    assert safe["elicit"][0]["content"] == {"account": "ada", "pin": {"env": "MCP_NB_PIN"}}
    got.clear()
    monkeypatch.setenv("MCP_NB_PASSWORD", PASSWORD)
    monkeypatch.setenv("MCP_NB_PIN", PIN)
    report = mcp_nb.replay(path)
    assert report["passed"].all(), report["reason"].tolist()
    assert got == {"password": PASSWORD, "pin": PIN}  # the replay read them from the environment and sent them
    assert len(mcp_nb.history()) == 4
    for shown in everything_shown():
        assert PASSWORD not in shown and PIN not in shown


@pytest.mark.parametrize(
    ("field", "schema", "secret"),
    [
        ("password", None, True),
        ("api_key", None, True),
        ("GitHubToken", None, True),
        ("user", None, False),
        ("pin", {"properties": {"pin": {"type": "string", "writeOnly": True}}}, True),
        ("code", {"properties": {"code": {"type": "string", "format": "password"}}}, True),
        ("code", {"properties": {"code": {"type": "string", "format": "email"}}}, False),
    ],
)
def test_one_rule_decides_which_fields_are_secret(field, schema, secret):
    assert is_secret(field, schema) is secret


def _inputs(widget) -> list:
    """Every text input under `widget`, as (its class name, its CSS classes)."""
    import ipywidgets as w

    found = []
    if isinstance(widget, (w.Text, w.Password, w.Textarea)):
        found.append((type(widget).__name__, widget._dom_classes))
    for child in getattr(widget, "children", ()) or ():
        found.extend(_inputs(child))
    return found


def test_the_panel_asks_for_a_secret_in_a_box_that_shows_dots():
    """The rule that keeps a secret out of the records also picks the widget it is typed into."""
    from mcp_nb.widgets.question import Question

    schema = {
        "type": "object",
        "properties": {
            "password": {"type": "string"},
            "pin": {"type": "string", "writeOnly": True},
            "name": {"type": "string", "maxLength": 40},
        },
    }
    question = Question("Sign in", schema, None, lambda answer: None)
    kinds = sorted(kind for kind, _ in _inputs(question.widget))
    assert kinds == ["Password", "Password", "Text"], _inputs(question.widget)
    question.close()
