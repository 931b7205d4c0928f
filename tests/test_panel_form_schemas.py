"""The form on every shape of numeric limits, and on schemas whose keywords have odd shapes.

Numbers: every combination of `minimum`, `maximum`, `exclusiveMinimum`,
`exclusiveMaximum` and `multipleOf` (alone and together, integer and number), as a
property, as an array's items and behind a null toggle. What the form accepts is
checked against the `jsonschema` validator over a grid of values, and against the
in-kernel server itself where floats are involved.

Odd shapes: a server may publish any JSON Schema. Every keyword the builders read, given
a value of the wrong shape, must still give a form that builds, reads and loads (the
keyword is ignored; the server still checks what is sent).
"""

from __future__ import annotations

import html
import itertools
import math
from typing import Annotated

import jsonschema
import pytest
from pydantic import Field, PositiveInt

import mcp_nb
from mcp_nb.widgets import show
from mcp_nb.widgets.form import Form, Invalid, NullableField

LIMITS = ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf")
VALUES = {"minimum": 2, "exclusiveMinimum": 1, "maximum": 20, "exclusiveMaximum": 21}
STEP = {"integer": 2, "number": 0.5}
SAYS = {"minimum": "≥ 2", "exclusiveMinimum": "> 1", "maximum": "≤ 20", "exclusiveMaximum": "< 21"}
COMBINATIONS = [c for n in range(len(LIMITS) + 1) for c in itertools.combinations(LIMITS, n)]  # 32


def number_schema(kind: str, limits: tuple[str, ...]) -> dict:
    schema = {"type": kind}
    for key in limits:
        schema[key] = STEP[kind] if key == "multipleOf" else VALUES[key]
    return schema


def says(kind: str, key: str) -> str:
    return f"multiple of {STEP[kind]:g}" if key == "multipleOf" else SAYS[key]


def refusal(kind: str, key: str) -> str:
    return ("must be a " if key == "multipleOf" else "must be ") + says(kind, key)


def grid(kind: str) -> list[int | float]:
    if kind == "integer":
        return list(range(-2, 25))
    return [x / 4 for x in range(-8, 100)]


def typed(value: int | float) -> str:
    return str(value)


PLACES = ("property", "array item", "nullable")


def form_for(number: dict, place: str) -> tuple[Form, object]:
    """A form whose field `x` holds the number schema `place`d; returns (form, the number's input)."""
    if place == "property":
        form = Form({"type": "object", "properties": {"x": number}, "required": ["x"]})
        return form, form.fields["x"]
    if place == "array item":
        form = Form({"type": "object", "properties": {"x": {"type": "array", "items": number}}, "required": ["x"]})
        array = form.fields["x"]
        array.add.click()  # "add item" must add a row whatever the item's limits
        assert len(array.items) == 1
        return form, array.items[0]
    form = Form({"type": "object", "properties": {"x": {"anyOf": [number, {"type": "null"}]}}, "required": ["x"]})
    field = form.fields["x"]
    assert isinstance(field, NullableField)
    return form, field.inner


def read(form: Form, place: str):
    value = form.value()["x"]
    return value[0] if place == "array item" else value


@pytest.mark.parametrize("kind", ["integer", "number"])
@pytest.mark.parametrize("limits", COMBINATIONS, ids=lambda c: "+".join(c) or "none")
def test_every_combination_of_numeric_limits_builds_says_and_checks_them(limits, kind):
    for place in PLACES:
        check_limits(number_schema(kind, limits), limits, kind, place)


def check_limits(number: dict, limits: tuple[str, ...], kind: str, place: str) -> None:
    form, field = form_for(number, place)
    assert field.kind == "number"

    # The placeholder and the label say every limit, and no other.
    placeholder = field.widget.placeholder
    label = html.unescape(form.root.labels["x"].value)
    for key in LIMITS:
        text = says(kind, key)
        assert (text in placeholder) == (key in limits), (key, placeholder)
        if place != "array item":  # an array's label describes the array
            assert (text in label) == (key in limits), (key, label)

    # What the form accepts is what JSON Schema accepts; a refusal names a limit broken.
    reference = jsonschema.Draft202012Validator(number)
    for value in grid(kind):
        field.widget.value = typed(value)
        errors = list(reference.iter_errors(value))
        if not errors:
            sent = read(form, place)
            assert sent == value and type(sent) is type(value), (value, sent)
        else:
            with pytest.raises(Invalid) as err:
                form.value()
            ((_, message),) = err.value.problems
            broken = {e.validator for e in errors}
            assert message in {refusal(kind, key) for key in broken}, (value, message, broken)

    # Loading a call back: a valid value shows exactly; one outside the limits cannot be
    # sent as it stands, so the form says it cannot show it (the panel then uses raw JSON).
    for value in grid(kind):
        arguments = {"x": [value] if place == "array item" else value}
        assert form.load(arguments) == reference.is_valid(value), value
    form.close()


def test_multiple_of_is_checked_on_the_decimal_number_as_typed_as_the_server_does():
    """0.3 is a multiple of 0.1 to a person and to pydantic, though not in binary floats."""

    @mcp_nb.tool()
    def pour(litres: Annotated[float, Field(multiple_of=0.1)], cups: Annotated[int, Field(multiple_of=3)] = 3) -> str:
        return f"{litres} {cups}"

    form = Form(mcp_nb.engine().registry.get("tool", "pour").input_schema)
    assert "multiple of 0.1" in form.fields["litres"].widget.placeholder
    for litres in ("0.3", "0.7", "1.1", "2.675", "0.35", "3", "-0.2", "1e-1"):
        form.fields["litres"].widget.value = litres
        try:
            arguments = form.value()
        except Invalid as err:
            assert err.problems == [(("litres",), "must be a multiple of 0.1")]
            accepted = False
        else:
            accepted = True
        outcome = mcp_nb.call("pour", {"litres": float(litres)})
        assert accepted == (outcome.outcome == "result"), (litres, outcome.cause)  # the form agrees with the server
        if accepted:
            assert arguments["litres"] == float(litres)
    form.fields["litres"].widget.value = "0.3"
    form.fields["cups"].widget.value = "4"
    with pytest.raises(Invalid) as err:
        form.value()
    assert err.value.problems == [(("cups",), "must be a multiple of 3")]


@pytest.mark.parametrize(
    "number, inside, outside",
    [
        ({"type": "number", "minimum": 1, "exclusiveMinimum": True}, ["1.5"], {"1": "must be > 1"}),
        ({"type": "number", "maximum": 5, "exclusiveMaximum": True}, ["4.5"], {"5": "must be < 5"}),
        ({"type": "integer", "minimum": 1, "exclusiveMinimum": False}, ["1"], {"0": "must be ≥ 1"}),
    ],
)
def test_draft_4_boolean_exclusive_limits_mean_what_draft_4_says(number, inside, outside):
    reference = jsonschema.Draft4Validator(number)
    form = Form({"type": "object", "properties": {"x": number}, "required": ["x"]})
    field = form.fields["x"]
    assert "true" not in field.widget.placeholder and "false" not in field.widget.placeholder
    for text in inside:
        field.widget.value = text
        assert reference.is_valid(form.value()["x"])
    for text, message in outside.items():
        field.widget.value = text
        assert not reference.is_valid(float(text))
        with pytest.raises(Invalid) as err:
            form.value()
        assert err.value.problems == [(("x",), message)]


# -- through the panel: the three ways it showed in JupyterLab -------------------------------------


@pytest.fixture
def limited_tools():
    @mcp_nb.tool()
    def plain(title: str) -> str:
        return title

    @mcp_nb.tool()
    def restock(
        count: PositiveInt,
        shelf: Annotated[int, Field(ge=1)] = 1,
        weight: Annotated[float, Field(gt=0)] = 1.0,
        sizes: list[PositiveInt] = [],
    ) -> str:
        return f"{count} {shelf} {weight} {sizes}"

    panel = show()
    yield panel
    panel.close()


def test_choosing_a_tool_with_one_sided_limits_shows_its_form(limited_tools):
    panel = limited_tools
    panel.select("tool", "plain")
    panel.picker.value = ("tool", "restock")
    entry = panel._entries[panel._current]
    assert panel._current == ("tool", "restock") and "restock" in panel.header.value
    assert panel.form_box.children == (entry.form.widget,)
    assert set(entry.form.fields) == {"count", "shelf", "weight", "sizes"}
    assert "integer, > 0" in entry.form.fields["count"].widget.placeholder
    assert "≥ 1" in entry.form.root.labels["shelf"].value


def test_add_item_works_for_items_with_one_sided_limits(limited_tools):
    panel = limited_tools
    panel.select("tool", "restock")
    form = panel._entries[panel._current].form
    sizes = form.fields["sizes"]
    sizes.add.click()
    sizes.items[0].widget.value = "0"
    form.fields["count"].widget.value = "2"
    with pytest.raises(Invalid) as err:
        form.value()
    assert err.value.problems == [(("sizes", 0), "must be > 0")]
    sizes.items[0].widget.value = "3"
    assert form.value() == {"count": 2, "shelf": 1, "weight": 1.0, "sizes": [3]}


def test_a_call_of_such_a_tool_loads_back_from_the_history_whole(limited_tools):
    panel = limited_tools
    mcp_nb.call("restock", {"count": 4, "sizes": [2, 5]})
    panel.select("tool", "plain")
    panel.mode.value = "raw JSON"
    panel.raw.value = '{"title": "stale"}'
    panel.tabs.selected_index = 1
    panel.history_tab.calls.value = panel.history_tab.calls.options[0][1]
    assert panel._current == ("tool", "restock") and panel.picker.value == ("tool", "restock")
    assert panel.mode.value == "form" and panel.raw.layout.display == "none"
    form = panel._entries[panel._current].form
    assert form.value() == {"count": 4, "sizes": [2, 5]}  # as sent: the optional ones left out
    assert "restock" in panel.outcome.value and "mcp-nb-result" in panel.outcome.value
    assert "mcp-nb-previous" not in panel.outcome.value


# -- keywords of odd shapes -----------------------------------------------------------------------

BASES = {
    "string": {"type": "string"},
    "integer": {"type": "integer"},
    "number": {"type": "number"},
    "boolean": {"type": "boolean"},
    "enum": {"enum": ["a", "b"]},
    "const": {"const": 3},
    "array": {"type": "array", "items": {"type": "integer"}},
    "multiselect": {"type": "array", "items": {"enum": ["a", "b"]}},
    "object": {"type": "object", "properties": {"a": {"type": "string"}}},
    "nullable": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
    "any": {},
}
# Every keyword a builder or a label reads.
KEYWORDS = [
    "type",
    "enum",
    "const",
    "default",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "format",
    "pattern",
    "minItems",
    "maxItems",
    "items",
    "prefixItems",
    "properties",
    "required",
    "anyOf",
    "oneOf",
    "allOf",
    "$ref",
    "description",
    "title",
    "examples",
]
# One value of each shape: null, string, booleans, list, object, negative, float, list of null, NaN.
ODD = [None, "3", True, False, [], {}, -1, 1.5, [None], math.nan]


def exercise(form: Form) -> None:
    """Read, load and add items as a person would: nothing may raise but `Invalid`."""
    for arguments in ({"x": 1}, {"x": [1]}, {}):
        assert isinstance(form.load(arguments), bool)
    field = form.fields.get("x")
    if field is not None and hasattr(field, "add"):
        field.add.click()
    try:
        form.value()
    except Invalid:
        pass


@pytest.mark.parametrize("base", list(BASES))
def test_a_keyword_of_an_odd_shape_never_breaks_the_form(base):
    broken = []
    for keyword, odd, required in itertools.product(KEYWORDS, ODD, (True, False)):
        schema = {"type": "object", "properties": {"x": {**BASES[base], keyword: odd}}, "required": ["x"] if required else []}
        try:
            form = Form(schema)
            exercise(form)
            form.close()
        except Exception as err:  # noqa: BLE001  collected, so one run names every case
            broken.append(f"{keyword}={odd!r} (required={required}): {type(err).__name__}: {err}")
    assert not broken, "\n".join(broken)


def test_boolean_schemas_are_schemas():
    # `true` accepts anything and `false` nothing: JSON Schema allows both wherever a schema goes.
    form = Form({"type": "object", "properties": {"x": True, "y": False, "z": {"type": "array", "items": True}}})
    assert {n: f.kind for n, f in form.fields.items()} == {"x": "json", "y": "json", "z": "array"}
    form.fields["x"].widget.value = '{"a": 1}'
    assert form.value() == {"x": {"a": 1}}
    exercise(form)
