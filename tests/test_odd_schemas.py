"""Schemas a server may publish and text a person may type: a form, a card, or one clear line.

Regressions of three bugs: a list whose items are the list itself loaded its own default
without end (widgets/form.py ArrayField); JSON typed too deep, or with an integer longer
than Python reads, raised out of the form (widgets/form.py JsonField); a declared property
schema that is `true`, or a keyword of another shape, broke the registration card
(views/cards.py). The same schemas reach the form and the cards from an outside server too.
"""

from __future__ import annotations

import json
import shlex
import sys
import textwrap
import time

import pytest

import mcp_nb
from mcp_nb.registering.registry import Registration
from mcp_nb.views.cards import connection_html, connection_text, registration_html, registration_text
from mcp_nb.widgets.form import Form, Invalid, JsonField, ObjectField


def nest(depth: int, open_: str = "[", close: str = "]") -> str:
    return open_ * depth + close * depth


def deep_list(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value, []]
    return value


def one_line(err: BaseException) -> str:
    text = str(err)
    assert text.strip() and "\n" not in text and "\r" not in text, f"not one line: {text!r}"
    return text


# -- widgets/form.py: a list whose items are the list ------------------------------------------------

SELF_LIST = {"type": "object", "properties": {"x": {"type": "array", "items": {"$ref": "#/properties/x"}}}}


@pytest.mark.parametrize("default", [[[]], [[[[]]]], [[], []], deep_list(30)], ids=["one", "nested", "two", "deep"])
def test_a_list_of_itself_with_a_default_builds_shows_the_default_and_adds_items(default):
    schema = json.loads(json.dumps(SELF_LIST))
    schema["properties"]["x"]["default"] = default
    form = Form(schema)
    try:
        assert form.value() == {"x": default}  # the default is on screen, once
        x = form.fields["x"]
        x.add.click()  # a new item is the list again: its default, read once more
        assert form.value() == {"x": [*default, default]}
        x.items[-1].add.click()
        assert form.value() == {"x": [*default, [*default, default]]}
        deep = deep_list(40)
        assert form.load({"x": deep}) is True and form.value() == {"x": deep}
    finally:
        form.close()


N = {"type": "object", "properties": {k: {"$ref": "#/$defs/N"} for k in "abc"}}


@pytest.mark.parametrize(
    "node",
    [{**N, "required": list("abc")}, {**N, "default": {}}, {**N, "default": {"a": {}}}],
    ids=["required", "default-empty", "default-nested"],
)
def test_an_object_of_itself_builds_only_what_is_asked(node):
    # Before: every level built all three children again, 3**12 fields (minutes) before depth stopped it.
    schema = {"type": "object", "properties": {"root": {"$ref": "#/$defs/N"}}, "required": ["root"], "$defs": {"N": node}}
    started = time.perf_counter()
    form = Form(schema)
    try:
        assert time.perf_counter() - started < 5
        root = form.fields["root"]
        assert isinstance(root, ObjectField) and set(root.fields) == set("abc")
        if "required" in node:  # no finite value holds itself: a JSON value, not another form
            assert all(isinstance(f, JsonField) for f in root.fields.values())
            with pytest.raises(Invalid) as err:
                form.value()
            assert {p for p, _ in err.value.problems} == {("root", k) for k in "abc"}
        else:  # an optional one waits for its switch, whatever its own default says; the root's default is shown
            assert form.value() == {"root": node["default"]}
            assert all(f.grid is None for k, f in root.fields.items() if k not in node["default"])
            root.fields["b"].state.value = "set"  # switched on: its own default, one level
            assert form.value() == {"root": {**node["default"], "b": node["default"]}}
        value = {"a": {"a": {"a": {}}}} if "required" not in node else {"a": {"b": 1}, "b": [], "c": None}
        assert form.load({"root": value}) is True and form.value() == {"root": value}
    finally:
        form.close()


# -- widgets/form.py: text typed into a JSON field, or a number field ---------------------------------


@pytest.mark.parametrize(
    "text, says",
    [
        (nest(100_000), "nested too deeply"),
        (nest(100_000, '{"a":', "}"), "nested too deeply"),
        ("1" * 4400, "4300 digits"),
        ('{"k": [' + "9" * 5000 + "]}", "4300 digits"),
        ("NaN", "not JSON numbers"),
        ("[1, -Infinity]", "not JSON numbers"),
        ('{"a": 1e999}', "not JSON numbers"),
        ("[1,", "not valid JSON: Expecting value (line 1, column 4)"),
    ],
    ids=["deep-list", "deep-object", "big-int", "big-int-inside", "nan", "infinity", "overflow", "broken"],
)
def test_any_text_typed_into_a_json_field_is_refused_in_one_line(text, says):
    form = Form({"type": "object", "properties": {"x": {}, "y": {"type": "string"}}})
    try:
        form.fields["x"].widget.value = text  # the live check reads it at once, as a person types
        assert says in form.root.labels["x"].value
        with pytest.raises(Invalid) as err:
            form.value()
        assert err.value.problems[0][0] == ("x",) and says in one_line(err.value)
        form.fields["x"].widget.value = '[1, {"a": null}]'
        assert form.value() == {"x": [1, {"a": None}]}
    finally:
        form.close()


@pytest.mark.parametrize("kind", ["integer", "number"])
@pytest.mark.parametrize("text", ["1" * 4400, "-" + "7" * 5000])
def test_a_number_of_more_digits_than_python_reads_is_refused_in_one_line(kind, text):
    form = Form({"type": "object", "properties": {"n": {"type": kind}}})
    try:
        form.fields["n"].widget.value = text
        with pytest.raises(Invalid) as err:
            form.value()
        assert "more digits than an integer can have" in one_line(err.value) and len(str(err.value)) < 200
    finally:
        form.close()


def test_a_schema_with_numbers_beyond_the_float_range_or_json_gives_a_form():
    big = 10**400  # an int beyond the float range (a server may publish one); 10**5000: more than JSON writes
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": -big, "maximum": big, "multipleOf": big, "default": 10**5000},
            "e": {"enum": [10**5000, 1]},
            "j": {"default": [10**5000]},
            "f": {"type": "number", "default": float("nan")},
        },
    }
    form = Form(schema)
    try:
        assert form.value() == {}  # defaults JSON cannot write are not pre-filled
        form.fields["n"].widget.value = str(big + 1)
        with pytest.raises(Invalid, match="must be ≤ 1000"):
            one_line(form.value())
        form.fields["n"].widget.value = str(big)
        assert form.value() == {"n": big}
        assert form.load({"j": [10**5000]}) is False  # said as False (the panel shows raw JSON), not raised
    finally:
        form.close()


# -- views/cards.py: the registration card of a declared input schema ----------------------------------

ODD_PROPERTIES = [
    (True, "any"),
    (False, "nothing"),
    ({"$ref": 5}, "any"),
    ({"$ref": None, "type": "integer"}, "integer"),
    ({"anyOf": 5}, "any"),
    ({"anyOf": [], "type": "string"}, "string"),
    ({"oneOf": [True, {"type": "null"}]}, "any | null"),
    ({"enum": 5}, "any"),
    ({"type": ["string", 1]}, "string"),
    ({"type": 5}, "any"),
    ({"type": {"k": 1}}, "any"),
    ({"type": [3]}, "any"),
    ({"type": "array", "items": True}, "array"),
    ({"type": "array", "items": {"type": ["integer", None]}}, "array[integer]"),
    ({"description": 5, "default": [1]}, "any = [1]"),
    (5, "any"),
    (None, "any"),
]


@pytest.mark.parametrize("prop, kind", ODD_PROPERTIES, ids=[json.dumps(p) for p, _ in ODD_PROPERTIES])
def test_a_tool_declared_with_any_property_schema_shows_its_card(shell, prop, kind):
    schema = {"type": "object", "properties": {"a": prop, "b": {"type": "integer"}}, "required": ["b", 3, ["a"]]}
    result = shell.run_cell(
        f"%%mcp_tool --input-schema {shlex.quote(json.dumps(schema))}\ndef good(a=None, b: int = 0) -> int:\n    return b\n"
    )
    assert result.success, result.error_in_exec or result.error_before_exec
    text = repr(result.result)
    assert f"    a: {kind}\n" in text + "\n" and "    b: integer (required)" in text
    assert "mcp-nb-registration" in result.result._repr_html_()


NO_OBJECT_SCHEMAS = [
    {"type": "object", "properties": 5, "required": 3},
    {"type": "object", "properties": [1, 2], "required": [[1]]},
    {"type": "object", "$defs": [1]},
    True,
    [],
]


@pytest.mark.parametrize("schema", NO_OBJECT_SCHEMAS, ids=["properties-5", "properties-list", "defs-list", "true", "list"])
def test_a_published_schema_whose_properties_are_no_object_shows_no_parameters(schema):
    # The magic refuses these in one line; an outside server's entry can still hold one.
    entry = Registration(kind="tool", name="t", description=" \n ", input_schema=schema, output_schema=schema)
    assert registration_text(entry).splitlines()[1:] == ["  parameters: none"]
    assert "no parameters" in registration_html(entry)


# -- the same schemas from an outside server: its entries' cards, its connection card, its forms -------

ODD_SERVER = textwrap.dedent(
    """
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    PROPERTIES = {properties}
    OUTPUTS = [
        {{"type": "object", "properties": {{"result": True}}}},
        {{"type": "object", "properties": {{"result": {{"type": 5}}}}}},
        {{"type": "object", "properties": 5, "$defs": [1]}},
        {{"type": "object", "properties": {{"x": {{"$ref": "#/$defs/A"}}}}, "$defs": {{"A": True, "B": {{"properties": 3}}}}}},
    ]

    async def list_tools(ctx, params):
        tools = [
            types.Tool(name=f"t{{i}}", description=" \\n ", input_schema={{"type": "object", "properties": {{"a": prop}}}},
                       output_schema=OUTPUTS[i % len(OUTPUTS)])
            for i, prop in enumerate(PROPERTIES)
        ]
        tools.append(types.Tool(name="junk", input_schema={{"type": "object", "properties": 5, "required": 3}}))
        tools.append(types.Tool(name="recursive", input_schema={{
            "type": "object", "properties": {{"x": {{"type": "array", "items": {{"$ref": "#/properties/x"}}, "default": [[]]}}}},
        }}))
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx, params):
        return types.CallToolResult(content=[types.TextContent(type="text", text="ok")])

    server = Server("odd", version="0", on_list_tools=list_tools, on_call_tool=call_tool)

    async def main():
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
    """
)


def test_an_outside_servers_odd_schemas_give_cards_and_forms(tmp_path):
    script = tmp_path / "odd_server.py"
    script.write_text(ODD_SERVER.format(properties=repr([p for p, _ in ODD_PROPERTIES])))
    connection = mcp_nb.connect("odd", [sys.executable, str(script)])
    try:
        assert "offers" in connection_text(connection.describe()) and "mcp-nb-connection" in connection_html(
            connection.describe()
        )
        repr(connection)
        connection._repr_html_()
        entries = {e.name: e for e in connection.entries()}
        assert len(entries) == len(ODD_PROPERTIES) + 2
        assert "parameters: none" in registration_text(entries["junk"])
        junk = Form(entries["junk"].input_schema)
        assert junk.value() == {}
        junk.close()
        for i, (_, kind) in enumerate(ODD_PROPERTIES):
            entry = entries[f"t{i}"]
            assert f"    a: {kind}" in registration_text(entry)
            assert "mcp-nb-registration" in registration_html(entry)
            form = Form(entry.input_schema)
            try:
                try:
                    form.value()
                except Invalid as err:
                    one_line(err)
            finally:
                form.close()
        form = Form(entries["recursive"].input_schema)
        try:
            assert form.value() == {"x": [[]]}
        finally:
            form.close()
    finally:
        mcp_nb.disconnect("odd")
