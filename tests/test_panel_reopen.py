"""Reopening a call from the history: any arguments valid for the tool's schema fit the form.

Issue 22: a call that only left out an optional boolean came back as raw JSON ("These
arguments do not fit the form"). The class behind it: a widget whose empty state already
means something. A checkbox has no "not sent" state, and the empty text box or list that
means "not sent" cannot also send `""` or `[]`; a multi-select sends its values in the order
listed, once each. Each of these now fits: the field gets a toggle that says what its empty
state cannot ("not sent", `""`, `[]`), and a list of choices that a multi-select cannot
show comes back as one row per item.

The property test builds signatures the way a notebook writes them, lets the SDK build
their input schema (pydantic's JSON Schema), draws argument sets valid for it, and checks
that each one fits the form and reads back as exactly those arguments.
"""

from __future__ import annotations

import enum
import inspect
import json
from typing import Annotated, Any, Literal

import ipywidgets as w
import jsonschema
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from mcp.server.mcpserver.tools import Tool
from pydantic import BaseModel, Field, TypeAdapter, create_model

import mcp_nb
from mcp_nb.widgets import show
from mcp_nb.widgets.form import ArrayField, BooleanField, Form, NullableField, TextField


def schema_of(fn) -> dict:
    """The input schema the SDK builds for `fn`, as the server publishes it."""
    return Tool.from_function(fn).parameters


def fits(schema: dict, arguments: dict) -> Form:
    """A form that took `arguments` and reads them back exactly (as JSON: `1` is not `1.0`)."""
    jsonschema.Draft202012Validator(schema).validate(arguments)  # the arguments are valid
    form = Form(schema)
    assert form.load(arguments), arguments
    assert json.dumps(form.value(), sort_keys=True) == json.dumps(arguments, sort_keys=True)
    return form


def toggle(field, css: str) -> w.ToggleButton:
    (button,) = [b for b in field.widget.children if isinstance(b, w.ToggleButton) and css in b._dom_classes]
    return button


# -- the issue: an optional boolean left out -------------------------------------------------------


def test_a_call_that_left_out_an_optional_boolean_fits_the_form_as_not_sent():
    def search(query: str, exact: bool = False) -> str: ...

    form = fits(schema_of(search), {"query": "dune"})
    exact = form.fields["exact"]
    not_sent = toggle(exact, "mcp-nb-not-sent")
    assert not_sent.value and not_sent.description == "not sent"
    assert isinstance(exact.inner, BooleanField)
    box = exact.inner.widget
    assert box.disabled and box.value is False  # what the server used: its default, greyed
    # Releasing the toggle sends what the checkbox shows; pressing it leaves the field out again.
    not_sent.value = False
    assert not box.disabled and form.value() == {"query": "dune", "exact": False}
    box.value = True
    assert form.value() == {"query": "dune", "exact": True}
    not_sent.value = True
    assert form.value() == {"query": "dune"}
    # Loading a call that sent it releases the toggle.
    assert form.load({"query": "dune", "exact": True}) and not not_sent.value
    assert form.value() == {"query": "dune", "exact": True}


def test_a_fresh_form_still_shows_a_plain_checkbox_and_sends_its_default():
    def search(query: str, exact: bool = False) -> str: ...

    form = Form(schema_of(search))
    assert isinstance(form.fields["exact"].widget, w.Checkbox)
    assert form.value() == {"query": "", "exact": False}


@pytest.fixture
def reserve():
    @mcp_nb.tool()
    def reserve(title: str, rush: bool = False, gift_wrap: bool = True) -> str:
        return f"{title} rush={rush} gift_wrap={gift_wrap}"

    return reserve


def test_the_panel_reopens_such_a_call_in_the_form_and_sends_it_again_as_it_was(reserve):
    mcp_nb.call("reserve", {"title": "Dune"})
    panel = show()
    try:
        panel.tabs.selected_index = 1
        panel.history_tab.calls.value = panel.history_tab.calls.options[0][1]
        assert panel.mode.value == "form", panel.problems.value
        assert "do not fit" not in panel.problems.value
        assert panel.request()[2] == {"title": "Dune"}
        panel.call().result(timeout=10)
        assert mcp_nb.history().to_frame()["arguments"].tolist() == [{"title": "Dune"}, {"title": "Dune"}]
    finally:
        panel.close()


# -- the same class, every kind of optional field ----------------------------------------------------


class Colour(enum.Enum):
    red = "red"
    green = "green"


class Address(BaseModel):
    street: str
    city: str = "Paris"
    zip: int | None = None
    verified: bool = False


def every_kind(
    title: str,
    count: int = 1,
    ratio: float = 0.5,
    note: str = "none",
    pace: Literal["slow", "fast"] = "slow",
    colour: Colour = Colour.red,
    address: Address | None = None,
    home: Address = Address(street="1 Rue X"),
    tags: list[str] = ["new"],
    genres: list[Literal["sf", "poetry", "essay"]] = [],
    shelf: str | None = None,
    rush: bool | None = True,
    anything: object = None,
) -> str: ...


SCHEMA = schema_of(every_kind)
FULL = {
    "title": "Dune",
    "count": 3,
    "ratio": 2.5,
    "note": "x",
    "pace": "fast",
    "colour": "green",
    "address": {"street": "s", "city": "Rome", "zip": 1, "verified": True},
    "home": {"street": "h", "city": "Oslo", "zip": None, "verified": False},
    "tags": ["a", "b"],
    "genres": ["sf", "essay"],
    "shelf": "B2",
    "rush": False,
    "anything": {"k": [1, None]},
}


@pytest.mark.parametrize("left_out", [k for k in FULL if k != "title"])
def test_leaving_out_any_one_optional_field_fits(left_out):
    fits(SCHEMA, {k: v for k, v in FULL.items() if k != left_out})


def test_leaving_out_every_optional_field_fits_and_so_does_sending_every_one():
    fits(SCHEMA, {"title": "Dune"})
    fits(SCHEMA, FULL)


def test_left_out_inside_a_nested_object_fits():
    fits(SCHEMA, {"title": "Dune", "address": {"street": "s"}, "home": {"street": "h", "zip": None}})


@pytest.mark.parametrize(
    ("name", "empty", "css", "says"),
    [
        ("note", "", "mcp-nb-empty", '""'),
        ("shelf", "", "mcp-nb-empty", '""'),
        ("tags", [], "mcp-nb-empty", "[]"),
        ("genres", [], "mcp-nb-empty", "[]"),
    ],
)
def test_an_optional_field_sent_empty_fits_with_a_toggle_that_says_so(name, empty, css, says):
    form = fits(SCHEMA, {"title": "Dune", name: empty})
    field = form.fields[name]
    button = toggle(field, css)
    assert button.value and button.description == says
    button.value = False  # released: the empty field is left out, as a fresh form does
    assert name not in form.value()
    button.value = True
    assert form.value()[name] == empty


def test_the_empty_toggle_and_the_null_toggle_exclude_each_other():
    form = fits(SCHEMA, {"title": "Dune", "shelf": ""})
    shelf = form.fields["shelf"]
    assert isinstance(shelf, NullableField) and isinstance(shelf.inner, TextField)
    empty = toggle(shelf, "mcp-nb-empty")
    shelf.null.value = True
    assert not empty.value and form.value()["shelf"] is None
    empty.value = True
    assert not shelf.null.value and form.value()["shelf"] == ""
    assert shelf.inner.widget.disabled
    empty.value = False
    assert not shelf.inner.widget.disabled and "shelf" not in form.value()


def test_a_list_of_choices_in_any_order_or_repeated_fits_as_rows():
    for genres in (["essay", "sf"], ["sf", "sf"], ["poetry", "sf", "poetry"]):
        form = fits(SCHEMA, {"title": "Dune", "genres": genres})
        assert isinstance(form.fields["genres"], ArrayField)
    form = fits(SCHEMA, {"title": "Dune", "genres": ["sf", "essay"]})  # in order: still the multi-select
    assert isinstance(form.fields["genres"].widget, w.SelectMultiple)


def test_what_is_not_valid_still_does_not_fit():
    for unfit in (
        {"title": 3},
        {"title": "Dune", "count": "3"},
        {"title": "Dune", "genres": ["poem"]},
        {"title": "Dune", "tags": [1]},
        {"title": "Dune", "unknown": 1},
        {"title": "Dune", "rush": "yes"},
    ):
        assert not Form(SCHEMA).load(unfit), unfit


def test_loading_again_replaces_what_a_toggle_held():
    form = fits(SCHEMA, {"title": "Dune", "tags": [], "note": ""})
    assert form.load(FULL) and form.value() == FULL
    assert form.load({"title": "Dune"}) and form.value() == {"title": "Dune"}


def test_a_reopened_form_closes_every_model_it_opened():
    from ipywidgets.widgets.widget import _instances

    before = len(_instances)
    form = fits(SCHEMA, {"title": "Dune", "tags": [], "note": "", "genres": ["sf", "sf"], "address": {"street": "s"}})
    form.close()
    assert len(_instances) == before


# -- the property: signatures as a notebook writes them, arguments valid for them ------------------

QUICK = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


class Mood(enum.Enum):
    calm = "calm"
    loud = "loud"


class Level(enum.IntEnum):
    low = 1
    high = 2


LEAVES = [
    str,
    int,
    float,
    bool,
    Any,
    Literal["a", "b"],
    Literal[1, 2, 3],
    Literal["only"],
    Mood,
    Level,
    Annotated[int, Field(ge=0, le=10)],
    Annotated[float, Field(gt=0)],
    Annotated[str, Field(max_length=5)],
    Literal[True],
    dict[str, int],
    tuple[int, str],
    int | str,
    set[Literal["a", "b", "c"]],
    Annotated[list[int], Field(min_length=1, max_length=2)],
]

_models = iter(range(10**9))


@st.composite
def annotations(draw, depth: int = 2):
    """A parameter's type: a leaf, or a list, an `X | None` or a model of smaller ones."""
    if depth == 0:
        return draw(st.sampled_from(LEAVES))
    kind = draw(st.sampled_from(["leaf", "leaf", "list", "optional", "model"]))
    if kind == "leaf":
        return draw(st.sampled_from(LEAVES))
    inner = draw(annotations(depth - 1))
    if kind == "list":
        return list[inner]
    if kind == "optional":
        return inner | None
    fields = draw(st.lists(parameters(depth - 1), min_size=1, max_size=3, unique_by=lambda p: p[0]))
    return create_model(f"Model{next(_models)}", **{name: (hint, default) for name, hint, default in fields})


def json_values(schema: dict, root: dict):
    """Values valid for `schema`, one of the shapes pydantic writes, as JSON."""
    if "$ref" in schema:
        target = root["$defs"][schema["$ref"].split("/")[-1]]
        return json_values({**target, **{k: v for k, v in schema.items() if k != "$ref"}}, root)
    if "anyOf" in schema:
        return st.one_of([json_values(s, root) for s in schema["anyOf"]])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "const" in schema:
        return st.just(schema["const"])
    kind = schema.get("type")
    if kind == "null":
        return st.none()
    if kind == "boolean":
        return st.booleans()
    if kind == "integer":
        return st.integers(schema.get("minimum", -(10**20)), schema.get("maximum", 10**20))
    if kind == "number":
        low = schema.get("exclusiveMinimum")
        floats = st.floats(min_value=low, exclude_min=low is not None, allow_nan=False, allow_infinity=False)
        return floats | st.integers(1, 10**6)
    if kind == "string":
        return st.text(max_size=schema.get("maxLength", 12))
    if kind == "array" and "prefixItems" in schema:
        return st.tuples(*[json_values(s, root) for s in schema["prefixItems"]]).map(list)
    if kind == "array":
        unique = {"unique_by": json.dumps} if schema.get("uniqueItems") else {}
        items = json_values(schema["items"], root)
        return st.lists(items, min_size=schema.get("minItems", 0), max_size=schema.get("maxItems", 3), **unique)
    if kind == "object" and "properties" in schema:
        return objects(schema, root)
    if kind == "object":
        extra = schema.get("additionalProperties")
        return st.dictionaries(st.text(max_size=4), json_values(extra, root) if isinstance(extra, dict) else any_json, max_size=2)
    return any_json


scalars = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.floats(allow_nan=False, allow_infinity=False)
any_json = st.recursive(
    scalars | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2),
    max_leaves=5,
)


@st.composite
def objects(draw, schema: dict, root: dict) -> dict:
    """An object of `schema`: every required property, and any of the optional ones."""
    required = set(schema.get("required", []))
    out = {}
    for name, prop in schema["properties"].items():
        if name in required or draw(st.booleans()):
            out[name] = draw(json_values(prop, root))
    return out


@st.composite
def parameters(draw, depth: int = 2):
    """(name, type, default): required (`...`), or with a default valid for the type."""
    name = draw(st.sampled_from(["a", "b", "c", "flag", "note", "n"]))
    hint = draw(annotations(depth))
    adapter = TypeAdapter(hint)
    schema = adapter.json_schema()
    choice = draw(st.sampled_from(["required", "default", "none"]))
    if choice == "required":
        return name, hint, ...
    if choice == "none":
        return name, hint | None, None
    return name, hint, adapter.validate_python(draw(json_values(schema, schema)))


def signature_for(params) -> Any:
    def tool(**kwargs) -> str: ...

    empty = inspect.Parameter.empty
    tool.__signature__ = inspect.Signature(
        [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=hint, default=empty if default is ... else default)
            for name, hint, default in params
        ]
    )
    tool.__annotations__ = {name: hint for name, hint, _ in params} | {"return": str}
    return tool


@st.composite
def tools_and_arguments(draw):
    params = draw(st.lists(parameters(), min_size=1, max_size=4, unique_by=lambda p: p[0]))
    schema = schema_of(signature_for(params))
    return schema, draw(objects(schema, schema))


@QUICK
@given(tools_and_arguments())
@example(({"type": "object", "properties": {"flag": {"type": "boolean", "default": False}}}, {}))
@example(({"type": "object", "properties": {"s": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": "x"}}}, {"s": ""}))
@example(
    (
        {"type": "object", "properties": {"l": {"type": "array", "items": {"type": "array", "items": {"enum": ["a", "b"]}}}}},
        {"l": [["b", "a"], []]},
    )
)
def test_any_arguments_valid_for_a_signature_fit_the_form_and_read_back_exactly(case):
    schema, arguments = case
    form = fits(schema, arguments)
    form.close()
