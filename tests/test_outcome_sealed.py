"""The Outcomes mcp_nb's calls build (through `outcome.seal`, for speed) are Outcomes like any other.

mcp_nb fills a mutable twin with the same slots and turns it into an Outcome: the object a
face returns must be frozen, pickle, compare and copy as one made by `Outcome(...)`, and
mask a secret answer the same way.
"""

from __future__ import annotations

import dataclasses
import pickle
from typing import Annotated

import pytest
from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver.resolve import Elicit, Resolve
from pydantic import BaseModel

import mcp_nb
from mcp_nb.elicitation import Answer
from mcp_nb.records.outcome import Outcome, OutcomeDraft


def test_the_twin_has_every_field_of_an_outcome_in_the_same_slots():
    assert OutcomeDraft.__slots__ == Outcome.__slots__
    assert [(f.name, f.default) for f in dataclasses.fields(OutcomeDraft)] == [
        (f.name, f.default) for f in dataclasses.fields(Outcome)
    ]


def test_a_calls_outcome_is_a_frozen_outcome():
    @mcp_nb.tool()
    def echo(text: str) -> str:
        return text

    outcome = mcp_nb.call("echo", {"text": "hi"})
    assert type(outcome) is Outcome
    with pytest.raises(dataclasses.FrozenInstanceError):
        outcome.cause = "raised"  # type: ignore[misc]
    assert (outcome.outcome, outcome.cause, outcome.content) == ("result", "ok", "hi")
    # What the dataclass machinery does with it is what it does with any Outcome.
    fields = [f.name for f in dataclasses.fields(Outcome)]
    copy = dataclasses.replace(outcome)
    assert type(copy) is Outcome and all(getattr(copy, name) == getattr(outcome, name) for name in fields)
    back = pickle.loads(pickle.dumps(outcome))
    assert type(back) is Outcome and back.content == "hi" and back.call_id == outcome.call_id
    assert "result (ok)" in repr(outcome)


class Login(BaseModel):
    password: str  # a secret by its name (the SDK refuses `format: password` in an elicitation schema)


def ask_password() -> Elicit[Login]:
    return Elicit("Your password?", Login)


def test_a_secret_answer_is_masked_in_a_calls_outcome():
    @mcp_nb.tool()
    def login(answer: Annotated[ElicitationResult[Login], Resolve(ask_password)]) -> str:
        return "in" if answer.action == "accept" and answer.data.password == "hunter2" else "out"

    outcome = mcp_nb.call("login", {}, elicit=[Answer.accept(password="hunter2")])
    assert outcome.content == "in", outcome
    (asked,) = outcome.elicitations
    assert asked.action == "accept" and "hunter2" not in repr(asked), asked
