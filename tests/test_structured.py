"""mcp_nb's own check of structured results decides as the SDK's does, or leaves it to the SDK.

`mcp_nb.structured` accepts a result only when the SDK's check (jsonschema, 2020-12, no
format assertions) would find no error; everything else goes to the SDK's check. These
tests hold it to that: against jsonschema itself over many schemas and values, and
through `mcp_nb.call` against a plain `mcp.Client` for results the SDK rejects.
"""

from __future__ import annotations

import enum
import itertools
import math
from decimal import Decimal
from fractions import Fraction
from typing import Annotated, Any, Literal, Optional, TypedDict, Union

import mcp
import pytest
from jsonschema import SchemaError
from jsonschema import exceptions as jsonschema_exceptions
from jsonschema.validators import validator_for
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, ConfigDict, Field
from referencing import Registry

import mcp_nb
from mcp_nb.records.structured import conforms, supported


def sdk_error(schema: dict, value: Any) -> str | None:
    """The SDK's own check (mcp/client/session.py, `_output_schema_validator` and
    `validate_tool_result`): the first error's text, or None when the value is valid."""
    cls = validator_for(schema)
    cls.check_schema(schema)
    error = jsonschema_exceptions.best_match(cls(schema, registry=Registry()).iter_errors(value))
    return None if error is None else str(error)


# -- schemas: what tools' return annotations produce, through the SDK's own FuncMetadata ----------


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Address(BaseModel):
    street: str = Field(min_length=1)
    zip: int | None = None


class Person(BaseModel):
    name: Annotated[str, Field(pattern=r"^[A-Z]")]
    age: Annotated[int, Field(ge=0, le=150)]
    score: Annotated[float, Field(gt=0, lt=1)] = 0.5
    step: Annotated[int, Field(multiple_of=5)] = 0
    addresses: list[Address] = []
    tags: set[str] = set()
    kind: Literal["a", "b"] = "a"
    colour: Colour = Colour.RED


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    a: int


class Node(BaseModel):
    value: int
    children: list[Node] = []


class Point(TypedDict):
    x: int
    y: str


RETURN_TYPES = {
    "int": int,
    "float": float,
    "str": str,
    "bool": bool,
    "none": None,
    "list_str": list[str],
    "dict_int": dict[str, int],
    "dict_any": dict[str, Any],
    "optional": Optional[int],  # noqa: UP045 - the spelling this test tries
    "union": Union[int, str],  # noqa: UP007 - the spelling this test tries
    "tuple": tuple[int, str],
    "set": set[int],
    "literal": Literal["x", 1, None],
    "person": Person,
    "strict": Strict,
    "node": Node,
    "point": Point,
    "bytes_list": list[bytes],
    "bounded": Annotated[list[int], Field(min_length=1, max_length=3)],
}


def sdk_tool(annotation) -> Tool:
    """The SDK's own Tool for a function returning `annotation`: its output schema, and
    `fn_metadata.convert_result`, which builds the structured content the server sends."""
    namespace = {"annotation": annotation}
    exec("def f() -> annotation: ...", namespace)
    return Tool.from_function(namespace["f"])


def output_schema(annotation) -> dict:
    return sdk_tool(annotation).output_schema


VALUES = [
    None,
    True,
    False,
    0,
    1,
    -1,
    5,
    7,
    150,
    151,
    1.0,
    0.5,
    1.5,
    -0.0,
    math.nan,
    math.inf,
    -math.inf,
    2**70,
    "",
    "a",
    "Ann",
    "ann",
    "x",
    "red",
    "green",
    "5",
    [],
    [1],
    [1, 1],
    [1, 2, 3, 4],
    [1, "a"],
    ["a", "a"],
    ["a", "b"],
    [None],
    [1.0, 1],
    [True, 1],
    [[1], [1]],
    {},
    {"a": 1},
    {"a": "1"},
    {"a": 1, "b": 2},
    {"x": 1, "y": "a"},
    {"x": 1},
    {"street": ""},
    {"street": "Elm"},
    {"value": 1, "children": [{"value": 2}]},
    {"value": 1, "children": [{"value": "2"}]},
    {"name": "Ann", "age": 3},
    {"name": "ann", "age": 3},
    {"name": "Ann", "age": 151},
    {"name": "Ann", "age": 3, "step": 7},
    {"name": "Ann", "age": 3, "score": 1},
    {"name": "Ann", "age": 3, "tags": ["a", "a"]},
    {"name": "Ann", "age": 3, "addresses": [{"street": "Elm"}], "colour": "blue", "kind": "b"},
    {"name": "Ann", "age": 3, "addresses": [{"zip": 1}]},
    {"name": "Ann", "age": 3.0},
    {"name": "Ann", "age": True},
    {"name": "Ann", "age": -1},
    {"name": "Ann", "age": 3, "score": 0},
    {"name": "Ann", "age": 3, "step": 10.0},
    {"a": 1, "b": "2"},
    "ab",
    "abc",
    [1, 2],
    [2, 4.0],
    2,
    4,
    3.0,
    2.5,
    0.25,
    0.3,
    0.7,
    1e308,
    (1, 2),
    1 + 2j,
]


class Text(str):
    """A str subclass: not a JSON value; the SDK's check may still take it for a string."""


# Every keyword decided here, alone, on values each side of it (and values of types that
# are not JSON, which only the SDK may judge).
KEYWORDS = [
    {"type": "integer"},
    {"type": ["string", "null"]},
    {"type": "number"},
    {"type": "boolean"},
    {"type": "object"},
    {"minimum": 0},
    {"maximum": 3},
    {"exclusiveMinimum": 0},
    {"exclusiveMaximum": 3},
    {"minimum": 0.5, "maximum": 2.5},
    {"multipleOf": 2},
    {"multipleOf": 0.5},
    {"multipleOf": 0.1},
    {"format": "date-time"},
    {"format": "uri", "title": "t"},
    {"minLength": 1},
    {"maxLength": 2},
    {"pattern": "^a"},
    {"minItems": 1},
    {"maxItems": 2},
    {"uniqueItems": True},
    {"uniqueItems": False},
    {"items": {"type": "integer"}},
    {"items": False, "prefixItems": [{"type": "integer"}]},
    {"prefixItems": [{"type": "integer"}, {"type": "string"}]},
    {"properties": {"a": {"type": "integer"}}},
    {"required": ["a"]},
    {"additionalProperties": False, "properties": {"a": {}}},
    {"additionalProperties": {"type": "integer"}},
    {"minProperties": 1},
    {"maxProperties": 1},
    {"enum": [1, "a", None, [1], {"a": 1}]},
    {"const": 1},
    {"const": True},
    {"const": [1, "a"]},
    {"const": {"a": [1]}},
    {"anyOf": [{"type": "integer"}, {"maxLength": 1}]},
    {"allOf": [{"minimum": 0}, {"maximum": 3}]},
    {"$ref": "#/$defs/A", "$defs": {"A": {"type": "integer", "maximum": 3}}},
    {"properties": {"a": True, "b": False}},
]
ODD_VALUES = [Decimal(5), Decimal("-1"), Fraction(1, 3), (1, 1), ("a",), Text("abc"), Text("a"), {1: "a"}, 1 + 2j]


def results(value) -> list:
    """A value as a tool's structured result would carry it, bare and wrapped in `result`."""
    return [value, {"result": value}]


def test_every_return_annotation_schema_is_decided_here():
    # If one of these fell outside the part decided locally, its calls would import
    # jsonschema again: test_coldstart.py would catch it, this says which schema.
    for label, annotation in RETURN_TYPES.items():
        assert supported(output_schema(annotation)), label


def test_a_result_accepted_here_is_one_the_sdk_accepts():
    checked = accepted = 0
    for annotation, value in itertools.product(RETURN_TYPES.values(), VALUES):
        schema = output_schema(annotation)
        for candidate in results(value):
            checked += 1
            if conforms(schema, candidate):
                accepted += 1
                assert sdk_error(schema, candidate) is None, (schema, candidate)
    assert checked == 2 * len(RETURN_TYPES) * len(VALUES)
    assert accepted > 60  # the comparison proves something only if many are accepted


def test_each_keyword_decides_as_the_sdk_does():
    assert all(supported(schema) for schema in KEYWORDS)
    checked = accepted = 0
    for schema, value in itertools.product(KEYWORDS, VALUES + ODD_VALUES):
        checked += 1
        if conforms(schema, value):
            accepted += 1
            assert sdk_error(schema, value) is None, (schema, value)
    assert checked == len(KEYWORDS) * (len(VALUES) + len(ODD_VALUES))
    assert accepted > 400
    for value in ODD_VALUES:  # not a JSON value: never shown valid here, whatever the schema
        assert not any(conforms(schema, value) for schema in KEYWORDS), value


def test_what_tools_really_return_is_accepted_here():
    # The results a server builds from ordinary return values (validated and dumped by
    # the SDK's own output model) are the fast path: none of them should need jsonschema.
    returns = {
        "int": [0, -3, 2**40],
        "float": [0.5, 3, -1e300],
        "str": ["", "é"],
        "bool": [True, False],
        "none": [None],
        "list_str": [[], ["a", "a"]],
        "dict_int": [{}, {"a": 1}],
        "dict_any": [{"a": [1, {"b": None}]}],
        "optional": [None, 4],
        "union": [4, "four"],
        "tuple": [(1, "a")],
        "set": [{1, 2, 3}],
        "literal": ["x", 1, None],
        "person": [Person(name="Ann", age=3, addresses=[Address(street="Elm")], tags={"a", "b"}, step=10)],
        "strict": [Strict(a=1)],
        "node": [Node(value=1, children=[Node(value=2, children=[Node(value=3)])])],
        "point": [{"x": 1, "y": "a"}],
        "bytes_list": [[b"ab"]],
        "bounded": [[1], [1, 2, 3]],
    }
    assert set(returns) == set(RETURN_TYPES)
    for label, values in returns.items():
        tool = sdk_tool(RETURN_TYPES[label])
        for value in values:
            content = tool.fn_metadata.convert_result(value).structured_content
            assert sdk_error(tool.output_schema, content) is None
            assert conforms(tool.output_schema, content), (label, content)


MALFORMED = [
    {"type": "bogus"},
    {"type": []},
    {"type": ["string", "string"]},
    {"type": 5},
    {"minLength": -1},
    {"minLength": 1.5},
    {"maxItems": "3"},
    {"pattern": "("},
    {"pattern": 5},
    {"required": ["a", "a"]},
    {"required": "a"},
    {"required": [1]},
    {"properties": {"a": {"type": "bogus"}}},
    {"properties": []},
    {"anyOf": []},
    {"allOf": {}},
    {"prefixItems": []},
    {"multipleOf": 0},
    {"multipleOf": -2},
    {"minimum": "0"},
    {"enum": "x"},
    {"uniqueItems": 1},
    {"title": 5},
    {"description": None},
    {"examples": 1},
    {"items": 3},
    {"additionalProperties": "no"},
    {"$defs": []},
    {"properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"type": "nope"}}},
]
OUTSIDE = [
    {"oneOf": [{"type": "integer"}, {"type": "string"}]},
    {"not": {"type": "string"}},
    {"patternProperties": {"^a": {}}},
    {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"},
    {"$id": "urn:x", "type": "object"},
    {"$ref": "other.json#/x"},
    {"$ref": "#/$defs/Missing"},
    {"if": {"type": "string"}, "then": {"minLength": 1}},
    {"unevaluatedProperties": False},
    {"discriminator": {"propertyName": "kind"}, "oneOf": [{"type": "object"}]},
    {"dependentRequired": {"a": ["b"]}},
    {"properties": {"a": {"$defs": {"B": {}}}}},
    {"contains": {"type": "integer"}},
    5,
    None,
    [],
]


def test_a_schema_the_sdk_refuses_is_left_to_the_sdk():
    for schema in MALFORMED:
        with pytest.raises(SchemaError):
            validator_for(schema).check_schema(schema)
        assert not supported(schema), schema


def test_keywords_outside_the_part_decided_here_are_left_to_the_sdk():
    for schema in OUTSIDE:
        assert not supported(schema), schema


class Kind(BaseModel):
    kind: Literal["a"]


class Other(BaseModel):
    kind: Literal["b"]


class Tagged(BaseModel):
    item: Kind | Other = Field(discriminator="kind")


INVALID = {
    # tool name: (return annotation, the structured content it hands back itself). The
    # server's own output check is lax pydantic, so these pass it; the client rejects them. (A NaN,
    # which the server would send as null, is refused by the server itself: test_edges_misc_numbers.py.)
    "int_as_text": (int, {"result": "5"}),
    "int_as_bool": (int, {"result": True}),
    "float_as_text": (float, {"result": "1.5"}),
    "list_of_texts": (list[int], {"result": ["1", "2"]}),
    "set_with_duplicates": (set[int], {"result": [1, 1]}),
    "dict_of_texts": (dict[str, int], {"a": "1"}),
}


def returning(annotation, structured: Any):
    namespace = {"annotation": annotation, "CallToolResult": CallToolResult, "TextContent": TextContent, "structured": structured}
    exec(
        "def tool() -> annotation:\n"
        "    return CallToolResult(content=[TextContent(type='text', text='x')], structured_content=structured)\n",
        namespace,
    )
    return namespace["tool"]


def test_a_result_the_sdk_rejects_is_rejected_as_before():
    for name, (annotation, structured) in INVALID.items():
        mcp_nb.tool(name)(returning(annotation, structured))

    async def plain_sdk_errors() -> dict[str, str]:
        errors = {}
        async with mcp.Client(mcp_nb.server(), cache=None) as client:
            for name in INVALID:
                with pytest.raises(RuntimeError) as raised:
                    await client.call_tool(name, {})
                errors[name] = f"RuntimeError: {raised.value}"
        return errors

    expected = mcp_nb.engine().loop.run(plain_sdk_errors())
    for name in INVALID:
        o = mcp_nb.call(name)
        assert (o.outcome, o.cause) == ("protocol_error", "invalid_output"), name  # its own cause, same message
        assert o.message == expected[name]
        assert o.message.startswith(f"RuntimeError: Invalid structured content returned by tool {name}: ")
    assert len(mcp_nb.history()) == len(INVALID)


def test_a_valid_result_outside_that_part_still_passes_the_sdk_check():
    @mcp_nb.tool()
    def tagged() -> Tagged:
        return Tagged(item=Other(kind="b"))

    assert not supported(output_schema(Tagged))  # oneOf + discriminator: the SDK decides
    o = mcp_nb.call("tagged")
    assert (o.outcome, o.structured_content) == ("result", {"item": {"kind": "b"}})
    mcp_nb.tool("tagged_wrong")(returning(Tagged, {"item": {"kind": "c"}}))
    assert mcp_nb.call("tagged_wrong").outcome == "tool_error"  # the server's own pydantic check refuses it


def test_only_mcp_nbs_own_session_checks_locally():
    from mcp.client.session import ClientSession

    async def users_check():
        async with mcp.Client(mcp_nb.server(), cache=None) as client:
            return client.session.validate_tool_result.__func__

    mcp_nb.call("nothing_registered")  # opens mcp_nb's own session first
    assert mcp_nb.engine().loop.run(users_check()) is ClientSession.validate_tool_result
