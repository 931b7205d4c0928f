"""A tool's declared input schema: what clients list, checked against the function first."""

import asyncio

import pytest
from IPython.core.error import UsageError

import mcp_nb

CONDITIONAL = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {"contact": {"type": "string", "enum": ["phone", "email"]}, "phone": {"type": "string"}},
    "if": {"properties": {"contact": {"const": "phone"}}, "required": ["contact"]},
    "then": {"required": ["phone"]},
    "additionalProperties": False,
}


def cell(shell, magic: str, line: str, body: str):
    """Run a cell magic the way a notebook does, returning the ExecutionResult."""
    return shell.run_cell(f"%%{magic} {line}\n{body}")


def listed(name):
    tools = asyncio.run(mcp_nb.server().list_tools())
    return next(t.input_schema for t in tools if t.name == name)


def test_the_declared_schema_is_listed_as_written_and_the_function_still_runs():
    @mcp_nb.tool(input_schema=CONDITIONAL)
    def reach(contact: str | None = None, phone: str | None = None) -> str:
        return f"{contact} {phone}"

    assert listed("reach") == CONDITIONAL
    assert mcp_nb.call("reach", {"contact": "phone", "phone": "123"}).content == "phone 123"


def test_the_magic_takes_a_variable_name_or_a_json_object(shell):
    shell.user_ns["SCHEMA"] = CONDITIONAL
    assert cell(
        shell, "mcp_tool", "--input-schema SCHEMA", "def one(contact: str = '', phone: str = '') -> str:\n    return contact\n"
    ).success
    assert listed("one")["if"] == CONDITIONAL["if"]
    typed = '{"type": "object", "properties": {"x": {"type": "integer", "minimum": 3}}, "required": ["x"]}'
    assert cell(shell, "mcp_tool", f"--input-schema '{typed}'", "def two(x: int) -> int:\n    return x\n").success
    assert listed("two")["properties"]["x"]["minimum"] == 3


@pytest.mark.parametrize(
    "schema, says",
    [
        ({"type": "array"}, '"type": "object"'),
        ({"type": "object", "properties": {"y": {"type": "string"}}, "required": ["x"]}, "declares y"),
        ({"type": "object", "properties": {"x": {"type": "integer"}}}, "must list it in required"),
        ([1, 2], "a dict"),
    ],
)
def test_a_schema_that_does_not_fit_the_function_is_refused_and_nothing_changes(schema, says):
    def tool(x: int) -> int:
        return x

    with pytest.raises((TypeError, ValueError), match=says):
        mcp_nb.tool(input_schema=schema)(tool)
    assert mcp_nb.registered().empty


def test_the_magic_says_what_is_wrong_in_one_line(shell):
    with pytest.raises(UsageError, match="no variable of that name"):
        shell.run_cell_magic("mcp_tool", "--input-schema NOWHERE", "def f(x: int) -> int:\n    return x\n")
    with pytest.raises(UsageError, match="not valid JSON"):
        shell.run_cell_magic("mcp_tool", "--input-schema '{nope'", "def f(x: int) -> int:\n    return x\n")
    assert mcp_nb.registered().empty
