"""The schema half of the form on its own: it imports no ipywidgets, and what it accepts round-trips.

`mcp_nb.calling.input_schema` reads a server's input schema (what is readable, `$ref`s, null,
the kind of input) and `mcp_nb.calling.typed` turns typed text into the value sent and back;
neither needs a widget. Checked here with hypothesis over generated schemas and values: any
JSON is read without raising, a well-shaped schema is read as written, numbers and JSON values
go to text and back exactly (and numbers are refused exactly when JSON Schema refuses them),
and, through the whole form, any value a generated schema allows loads and reads back as it was.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from itertools import count

import jsonschema
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mcp_nb.calling.input_schema import (
    KINDS,
    MAX_DEPTH,
    Resolver,
    choice_labels,
    choices,
    kind_of,
    readable,
    split_nullable,
)
from mcp_nb.calling.typed import dumps, number_text, read_json_value, read_number
from mcp_nb.mistakes import BadValue
from mcp_nb.widgets.form import Form  # the test of the schema half alone imports it in a fresh interpreter

pytestmark = pytest.mark.timeout(300)

SOME = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FEW = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def same(a, b) -> bool:
    """Equal as JSON: `true` is not `1`, and `1` is not `1.0`."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


# -- imports ------------------------------------------------------------------------------------------


def test_the_schema_half_imports_no_widget_in_a_fresh_interpreter():
    code = textwrap.dedent(
        """
        import sys
        from mcp_nb.calling.input_schema import Resolver, kind_of, split_nullable
        from mcp_nb.calling.typed import read_number
        schema = {"type": "object", "properties": {"n": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]}}}
        inner, nullable = split_nullable(Resolver(schema).resolve(schema["properties"]["n"]), Resolver(schema))
        assert (kind_of(inner, Resolver(schema)), nullable, read_number("3", inner, True)) == ("number", True, 3)
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("ipywidgets", "traitlets", "comm", "IPython")))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# -- any JSON is read, and a well-shaped schema is read as written -----------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=4)
)
any_json = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=12
)
KEYWORDS = (
    "type properties required items prefixItems anyOf oneOf allOf enum const $ref minimum maximum exclusiveMinimum"
    " exclusiveMaximum multipleOf minLength maxItems title"
).split()
odd_schemas = st.recursive(
    scalars | st.dictionaries(st.sampled_from(KEYWORDS), scalars | st.lists(scalars, max_size=2), max_size=4),
    lambda inner: st.dictionaries(st.sampled_from(KEYWORDS), inner | st.lists(inner, max_size=3), max_size=4),
    max_leaves=15,
)


@SOME
@given(odd_schemas | any_json, odd_schemas | any_json, st.sampled_from(["#", "#/$defs/a", "#/properties/x", "#/a~1b", "x"]))
def test_any_json_as_a_schema_is_read_without_raising_and_reading_again_changes_nothing(schema, root, ref):
    read = readable(schema)
    assert isinstance(read, dict) and readable(read) == read
    schemas = Resolver(root if isinstance(root, dict) else {})
    for candidate in (schema, {"$ref": ref}, {"allOf": [schema]}):
        resolved = schemas.resolve(candidate)
        inner, nullable = split_nullable(resolved, schemas)
        assert kind_of(inner, schemas) in KINDS and isinstance(nullable, bool)


def test_a_reference_to_itself_stops_at_the_bound():
    schemas = Resolver({"$defs": {"a": {"$ref": "#/$defs/a"}}})
    followed: set[str] = set()
    resolved = schemas.resolve({"$ref": "#/$defs/a"}, followed)
    assert kind_of(resolved, schemas) == "json" and followed == {"#/$defs/a"}  # a JSON value: no finite form
    deep = {"type": "string"}
    for _ in range(3 * MAX_DEPTH):
        deep = {"type": "array", "items": deep}
    read, levels = readable(deep), 0
    while "items" in read:
        read, levels = read["items"], levels + 1
    assert levels == MAX_DEPTH


# -- schemas a server may write, with values they allow -------------------------------------------------

_names = count()
words = st.text("abcé ", min_size=1, max_size=6)
enum_scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from([0.5, 2.0, -1.25]) | words


@st.composite
def integer_schemas(draw):
    low, span, step = draw(st.integers(-50, 50)), draw(st.integers(10, 100)), draw(st.sampled_from([None, 1, 2, 5]))
    schema: dict = {"type": "integer"}
    below, above = (
        draw(st.sampled_from(["minimum", "exclusiveMinimum", None])),
        draw(st.sampled_from(["maximum", "exclusiveMaximum", None])),
    )
    if below:
        schema[below] = low
    if above:
        schema[above] = low + span
    if step:
        schema["multipleOf"] = step
    first = low + (below == "exclusiveMinimum") if below else -(10**30)
    last = low + span - (above == "exclusiveMaximum") if above else 10**30
    values = st.integers(first, last)
    if step:
        values = values.map(lambda n: n - n % step).filter(lambda n: n >= first)
    return schema, values


@st.composite
def number_schemas(draw):
    schema: dict = {"type": "number"}
    low = draw(st.sampled_from([None, -1.5, 0, 2.25]))
    exclusive = draw(st.booleans())
    if low is not None:
        schema["exclusiveMinimum" if exclusive else "minimum"] = low
    step = draw(st.sampled_from([None, 0.5, 0.25]))
    if step:
        schema["multipleOf"] = step
        first = int(((low or 0) / step) + 1)
        return schema, st.integers(first, first + 1000).map(lambda n: n * step)
    values = st.floats(min_value=low, exclude_min=exclusive and low is not None, allow_nan=False, allow_infinity=False)
    return schema, values | st.integers(10**6, 10**20)


def leaves(draw):
    kind = draw(
        st.sampled_from(["string", "integer", "number", "boolean", "enum", "const", "titled", "enumNames", "any", "types"])
    )
    if kind == "string":
        schema: dict = {"type": "string"}
        low, high = draw(st.sampled_from([(None, None), (1, None), (None, 5), (0, 80), (2, 3)]))
        if low is not None:
            schema["minLength"] = low
        if high is not None:
            schema["maxLength"] = high
        if draw(st.booleans()):
            schema["format"] = draw(st.sampled_from(["date", "email", "uri"]))
        return schema, st.text(min_size=low or 0, max_size=high if high is not None else 12)
    if kind == "integer":
        return draw(integer_schemas())
    if kind == "number":
        return draw(number_schemas())
    if kind == "boolean":
        return {"type": "boolean"}, st.booleans()
    if kind in ("enum", "titled", "enumNames"):
        values = draw(st.lists(enum_scalars, min_size=1, max_size=4, unique_by=json.dumps))
        if kind == "enum":
            return {"enum": values}, st.sampled_from(values)
        titles = [f"Choice {i}" for i in range(len(values))]
        if kind == "enumNames":
            return {"enum": values, "enumNames": titles}, st.sampled_from(values)
        key = draw(st.sampled_from(["oneOf", "anyOf"]))
        return {key: [{"const": v, "title": t} for v, t in zip(values, titles)]}, st.sampled_from(values)
    if kind == "const":
        value = draw(enum_scalars)
        return {"const": value}, st.just(value)
    if kind == "types":
        return {"type": ["string", "integer"]}, st.text(max_size=5) | st.integers()
    return {}, any_json


@st.composite
def schemas_and_values(draw, defs: dict, depth: int = 2):
    """(schema, strategy of values it allows): a leaf, or a list, nullable, tuple, object or
    reference of smaller ones."""
    kind = draw(
        st.sampled_from(
            ["leaf", "leaf", "leaf"] + (["list", "choices", "null", "tuple", "object", "ref", "allOf"] if depth else [])
        )
    )
    if kind == "leaf":
        schema, values = leaves(draw)
    elif kind == "choices":  # a multi-select: any of the choices, in any order, repeated or not
        items, item_values = leaves_of_choices(draw)
        schema, values = {"type": "array", "items": items}, st.lists(item_values, max_size=4)
    else:
        inner, inner_values = draw(schemas_and_values(defs, depth - 1))
        if kind == "list":
            low, high = draw(st.sampled_from([(0, None), (1, 3), (0, 2)]))
            schema = {
                "type": "array",
                "items": inner,
                **({"minItems": low} if low else {}),
                **({"maxItems": high} if high else {}),
            }
            values = st.lists(inner_values, min_size=low, max_size=high if high is not None else 3)
        elif kind == "null":
            if isinstance(inner.get("type"), str) and draw(st.booleans()):
                schema = {**inner, "type": [inner["type"], "null"]}
            else:
                schema = {"anyOf": [inner, {"type": "null"}]}
            values = inner_values | st.none()
        elif kind == "tuple":
            second, second_values = draw(schemas_and_values(defs, depth - 1))
            schema = {"type": "array", "prefixItems": [inner, second], "minItems": 2, "maxItems": 2}
            values = st.tuples(inner_values, second_values).map(list)
        elif kind == "object":
            schema, values = draw(objects(defs, depth - 1))
        elif kind == "ref":
            name = f"D{next(_names)}"
            defs[name] = inner
            schema, values = {"$ref": f"#/$defs/{name}"}, inner_values
        else:
            schema, values = {"allOf": [inner]}, inner_values
    if draw(st.integers(0, 4)) == 0:
        schema = {**schema, "description": "what it is"}
    return schema, values


def leaves_of_choices(draw):
    values = draw(st.lists(words | st.integers(-5, 5), min_size=1, max_size=4, unique_by=json.dumps))
    if draw(st.booleans()):
        return {"enum": values}, st.sampled_from(values)
    return {"anyOf": [{"const": v, "title": f"#{v}"} for v in values]}, st.sampled_from(values)


@st.composite
def objects(draw, defs: dict, depth: int = 2):
    names = draw(st.lists(st.sampled_from(["a", "b", "c", "name", "x y"]), min_size=1, max_size=3, unique=True))
    properties, values = {}, {}
    for name in names:
        properties[name], values[name] = draw(schemas_and_values(defs, depth))
    required = [n for n in names if draw(st.booleans())]
    for name in names:
        if draw(st.integers(0, 4)) == 0:  # a default on screen, which loading replaces
            properties[name] = {**properties[name], "default": draw(values[name])}

    @st.composite
    def instances(draw):
        return {n: draw(values[n]) for n in names if n in required or draw(st.booleans())}

    schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema, instances()


@st.composite
def tools(draw):
    """An input schema (an object, its models in `$defs`) and arguments it allows."""
    defs: dict = {}
    schema, values = draw(objects(defs))
    if defs:
        schema["$defs"] = defs
    arguments = draw(values)
    jsonschema.Draft202012Validator(schema).validate(arguments)  # the generator makes what it says
    return schema, arguments


@SOME
@given(tools())
def test_a_well_shaped_schema_is_read_as_written(case):
    schema, _ = case
    assert readable(schema) == schema
    for prop in schema["properties"].values():
        assert readable(prop) == prop


# -- typed text and values ------------------------------------------------------------------------------


@SOME
@given(st.data())
def test_a_number_a_schema_allows_goes_to_text_and_back_exactly(data):
    schema, values = data.draw(st.one_of(integer_schemas(), number_schemas()))
    value = data.draw(values)
    jsonschema.Draft202012Validator(schema).validate(value)
    back = read_number(number_text(value), readable(schema), schema["type"] == "integer")
    assert same(back, value)


@SOME
@given(integer_schemas(), st.integers(-(10**3), 10**3) | st.floats(-1e3, 1e3, allow_nan=False))
@example(({"type": "integer", "exclusiveMinimum": 0}, None), 0)
def test_a_number_is_refused_exactly_when_json_schema_refuses_it(case, value):
    schema, _ = case
    integer = isinstance(value, int)
    allowed = jsonschema.Draft202012Validator({**schema, "type": "integer" if integer else "number"}).is_valid(value)
    try:
        read = read_number(number_text(value), readable(schema), integer)
    except BadValue:
        assert not allowed
    else:
        assert allowed and same(read, value)


@SOME
@given(any_json)
def test_a_json_value_goes_to_text_and_back_exactly(value):
    assert same(read_json_value(dumps(value)), value)


@SOME
@given(st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "[1, NaN]", '{"a": [Infinity]}']))
def test_a_number_json_cannot_carry_is_refused_in_one_line(text):
    with pytest.raises(BadValue) as err:
        read_json_value(text)
    assert "\n" not in str(err.value) and "not JSON numbers" in str(err.value)


@SOME
@given(st.lists(enum_scalars, min_size=1, max_size=5, unique_by=json.dumps), st.sampled_from(["oneOf", "anyOf"]), any_json)
def test_titled_choices_are_their_consts_in_order_named_by_their_titles(values, key, default):
    titles = [f"T{i}" for i in range(len(values))]
    schema = {key: [{"const": v, "title": t} for v, t in zip(values, titles)], "default": default}
    schemas = Resolver({})
    assert kind_of(schema, schemas) == "enum"
    assert choices(schema) == values and choice_labels(schema, values) == titles
    assert kind_of({"type": "array", "items": schema}, schemas) == "multiselect"


@SOME
@given(tools(), st.sampled_from(["anyOf", "oneOf"]), st.text(max_size=5))
def test_x_or_null_is_x_with_the_outer_annotations_and_a_null_default_dropped(case, key, description):
    schema, _ = case
    schemas = Resolver(schema)
    for prop in schema["properties"].values():
        x = schemas.resolve(prop)
        if x.get("type") == "null" or kind_of(x, schemas) in ("enum", "json") and ("anyOf" in x or "oneOf" in x):
            continue  # a union of its own: `X | Y | None`, not `X | None`
        inner, nullable = split_nullable({key: [prop, {"type": "null"}], "description": description, "default": None}, schemas)
        expected = {**x, "description": x.get("description", description)}
        if expected.get("default", 0) is None:  # X's own default of null, or the outer one: "not given"
            del expected["default"]
        assert nullable and inner == expected


# -- through the whole form ----------------------------------------------------------------------------


@FEW
@given(tools())
@example(({"type": "object", "properties": {"a": {"type": ["string", "null"]}}}, {"a": ""}))
@example(
    (
        {"type": "object", "properties": {"a": {"anyOf": [{"const": 1, "title": "one"}, {"const": True, "title": "yes"}]}}},
        {"a": True},
    )
)
@example(({"type": "object", "properties": {"a": {"type": "array", "items": {"enum": ["x", "y"]}}}}, {"a": ["y", "x", "y"]}))
def test_any_value_a_generated_schema_allows_loads_and_reads_back_exactly(case):
    schema, arguments = case
    form = Form(schema)
    try:
        assert form.load(arguments) is True, arguments
        assert same(form.value(), arguments)
    finally:
        form.close()
