"""Tools that ask the user for input mid-call (elicitation), shared by the tests of the call
faces (test_elicitation.py) and of the panel (test_panel_elicitation.py)."""

from typing import Annotated

from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver.resolve import Elicit, Resolve
from pydantic import BaseModel

import mcp_nb


class Name(BaseModel):
    name: str


class Age(BaseModel):
    years: int


def ask_name() -> Elicit[Name]:
    return Elicit("Your name?", Name)


def ask_age() -> Elicit[Age]:
    return Elicit("Your age?", Age)


def register_askers():
    """`greet` asks a name; `card` asks a name, then an age."""

    # The 2026-07-28 way to ask: a resolver returns Elicit(...); the SDK sends the question back
    # inside the call's result (input-required) and calls again with the answer.
    @mcp_nb.tool()
    def greet(who: Annotated[ElicitationResult[Name], Resolve(ask_name)]) -> str:
        return f"hello {who.data.name}" if who.action == "accept" else f"no name ({who.action})"

    @mcp_nb.tool()
    def card(
        who: Annotated[ElicitationResult[Name], Resolve(ask_name)], age: Annotated[ElicitationResult[Age], Resolve(ask_age)]
    ) -> str:
        parts = [
            who.data.name if who.action == "accept" else who.action,
            str(age.data.years) if age.action == "accept" else age.action,
        ]
        return " ".join(parts)
