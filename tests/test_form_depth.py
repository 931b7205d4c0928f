"""Every walk the form makes down a schema or a value is bounded: no RecursionError, one clear line.

The class: a form walks a server's schema (resolving, building fields) and a value (loading a
call from the history) level by level. Objects stopped at `MAX_DEPTH` levels and became a
JSON field; lists did not, so a list of itself (`items: {$ref: <the list>}`) loaded with a value
900 levels deep built 900 levels of fields and raised RecursionError out of `Form.load`. The
siblings checked here: objects of themselves, `$ref` chains, `allOf` and `anyOf` nested past
the bound, `properties` and `items` nested thousands deep, a default too deep for JSON, and a
value nested deeper than mcp_nb reads JSON (`mistakes.JSON_DEPTH`), which the form refuses to
show, and says why: what it shows, it can read back and send.
"""

from __future__ import annotations

import pytest

from mcp_nb.calling.input_schema import MAX_DEPTH
from mcp_nb.mistakes import JSON_DEPTH
from mcp_nb.widgets.form import Form, Invalid, JsonField

pytestmark = pytest.mark.timeout(120)

LIST_OF_ITSELF = {
    "type": "object",
    "properties": {"tree": {"$ref": "#/$defs/Tree"}},
    "$defs": {"Tree": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}},
}
NODE = {
    "type": "object",
    "properties": {"node": {"$ref": "#/$defs/Node"}},
    "$defs": {"Node": {"type": "object", "properties": {"next": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}}}},
}


def deep_list(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


def deep_object(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth):
        value = {"next": value}
    return value


def wrapped(depth: int, leaf: dict, key: str) -> dict:
    """`leaf` inside `depth` levels of `key` (`properties`, `items`, `allOf`, `anyOf`)."""
    schema = leaf
    for _ in range(depth):
        if key == "properties":
            schema = {"type": "object", "properties": {"a": schema}}
        elif key == "items":
            schema = {"type": "array", "items": schema}
        else:
            schema = {key: [schema, {"type": "null"}] if key == "anyOf" else [schema]}
    return schema


def reads_back(schema: dict, arguments: dict) -> Form:
    form = Form(schema)
    assert form.load(arguments) is True
    assert form.value() == arguments
    return form


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 100, JSON_DEPTH])
def test_a_list_of_itself_loads_a_value_as_deep_as_json_is_read_and_reads_it_back(depth):
    form = reads_back(LIST_OF_ITSELF, {"tree": deep_list(depth)})
    try:
        field = form.fields["tree"]
        for _ in range(MAX_DEPTH - 1):  # fields down to the bound, then the rest as one JSON value
            (field,) = field.items
        assert isinstance(field, JsonField)
        assert f"nested more than {MAX_DEPTH} levels deep" in field.widget.placeholder
    finally:
        form.close()


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, JSON_DEPTH])
def test_an_object_of_itself_loads_a_value_as_deep_as_json_is_read_and_reads_it_back(depth):
    reads_back(NODE, {"node": deep_object(depth)}).close()


@pytest.mark.parametrize("key", ["properties", "items", "allOf", "anyOf"])
def test_a_schema_nested_thousands_deep_gives_a_form(key):
    schema = {"type": "object", "properties": {"x": wrapped(3000, {"type": "integer"}, key)}}
    form = Form(schema)
    try:
        assert form.value() in ({}, {"x": {}})  # nothing typed: nothing sent (an object switched on by default: {})
        assert isinstance(form.load({"x": None}), bool)
    finally:
        form.close()


def test_a_ref_chain_longer_than_the_bound_is_a_json_field():
    defs = {f"D{i}": {"$ref": f"#/$defs/D{i + 1}"} for i in range(3000)}
    defs["D3000"] = {"type": "integer"}
    form = Form({"type": "object", "properties": {"x": {"$ref": "#/$defs/D0"}}, "$defs": defs})
    try:
        assert isinstance(form.fields["x"], JsonField)
        assert form.load({"x": 5}) is True and form.value() == {"x": 5}
    finally:
        form.close()


@pytest.mark.parametrize("depth", [JSON_DEPTH + MAX_DEPTH, 900, 100_000])  # the fields take MAX_DEPTH - 1 levels
def test_a_value_deeper_than_json_is_read_is_refused_in_one_line(depth):
    too_deep = deep_list(depth)
    form = reads_back(LIST_OF_ITSELF, {"tree": deep_list(MAX_DEPTH + 1)})
    try:
        item = form.fields["tree"]
        for _ in range(MAX_DEPTH - 1):
            (item,) = item.items
        with pytest.raises(ValueError) as err:
            item.load(too_deep)
        assert str(err.value) == f"cannot be shown as JSON: nested too deeply (more than {JSON_DEPTH} levels)"
        assert form.load({"tree": too_deep}) is False  # the panel then shows the call as raw JSON
    finally:
        form.close()


def test_a_default_too_deep_for_json_leaves_the_list_empty():
    schema = {"type": "object", "properties": {"tree": {**LIST_OF_ITSELF["$defs"]["Tree"], "default": deep_list(100_000)}}}
    form = Form({**schema, "$defs": LIST_OF_ITSELF["$defs"]})
    try:
        assert form.value() == {}  # not shown, so not sent: the server's default applies
    finally:
        form.close()


def test_json_typed_too_deep_into_the_deep_field_is_one_problem():
    form = reads_back(LIST_OF_ITSELF, {"tree": deep_list(MAX_DEPTH + 1)})
    try:
        field = form.fields["tree"]
        for _ in range(MAX_DEPTH - 1):
            (field,) = field.items
        field.widget.value = "[" * 100_000 + "]" * 100_000
        with pytest.raises(Invalid) as err:
            form.value()
        ((path, message),) = err.value.problems
        assert path == ("tree", *[0] * (MAX_DEPTH - 1))
        assert message == f"not JSON the form can read: nested too deeply (more than {JSON_DEPTH} levels)"
    finally:
        form.close()
