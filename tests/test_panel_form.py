"""The form mapper: for each kind of schema, the exact arguments the widgets send.

Schemas come from real signatures registered on the in-kernel server (what the SDK
builds, pydantic's JSON Schema), plus hand-written ones for what signatures never
produce. Widgets are driven as a person would: set values, click buttons.
"""

from __future__ import annotations

import enum
import json
from typing import Annotated, Literal

import ipywidgets as w
import pytest
from pydantic import BaseModel, Field

import mcp_nb
from mcp_nb.widgets.form import OMIT, Context, Form, Invalid, kind_of, split_nullable


def schema_of(fn) -> dict:
    """The input schema the server holds for `fn`, registered as a tool."""
    return mcp_nb.engine().registry.add_tool(fn).input_schema


def problems(form: Form) -> dict[str, str]:
    with pytest.raises(Invalid) as err:
        form.value()
    return {".".join(map(str, path)): message for path, message in err.value.problems}


def widget(form: Form, name: str):
    return form.fields[name].widget


# -- strings -------------------------------------------------------------------------------------


def test_strings_required_empty_is_sent_empty_optional_empty_is_omitted():
    def find(title: str, subtitle: str = "", note: str | None = None) -> str: ...

    form = Form(schema_of(find))
    assert form.value() == {"title": ""}  # an empty box is the empty string; optional ones stay out
    widget(form, "title").value = "Dune"
    widget(form, "subtitle").value = "Book one"
    assert form.value() == {"title": "Dune", "subtitle": "Book one"}


def test_a_string_is_a_growing_text_area_unless_the_schema_keeps_it_short():
    form = Form(
        {
            "type": "object",
            "properties": {"body": {"type": "string"}, "code": {"type": "string", "maxLength": 8}},
        }
    )
    body, code = widget(form, "body"), widget(form, "code")
    assert isinstance(body, w.Textarea) and body.rows == 1
    assert isinstance(code, w.Text)
    body.value = "a long paragraph " * 20
    assert body.rows > 1  # multi-line once long
    body.value = "one\ntwo\nthree"
    assert body.rows == 3
    assert form.value() == {"body": "one\ntwo\nthree"}


def test_a_long_default_is_pre_filled_and_shown_on_several_rows():
    text = "x" * 200
    form = Form({"type": "object", "properties": {"body": {"type": "string", "default": text}}})
    assert widget(form, "body").rows > 1
    assert form.value() == {"body": text}


# -- numbers -------------------------------------------------------------------------------------


def test_integers_parse_as_json_and_reject_decimals():
    def stock(count: int, limit: Annotated[int, Field(ge=0, le=10)] = 5) -> int: ...

    form = Form(schema_of(stock))
    widget(form, "count").value = "3"
    assert form.value() == {"count": 3, "limit": 5}  # the default is on screen, so it is sent
    for typed, message in [
        ("1.5", "'1.5' is not an integer (no decimals)"),
        ("2.0", "'2.0' is not an integer (no decimals)"),
        ("1e3", "'1e3' is not an integer (no decimals)"),
        ("three", "'three' is not an integer"),
    ]:
        widget(form, "count").value = typed
        assert problems(form) == {"count": message}
    widget(form, "count").value = "-4"
    widget(form, "limit").value = "11"
    assert problems(form) == {"limit": "must be ≤ 10"}  # reported, never clamped
    widget(form, "limit").value = "-1"
    assert problems(form) == {"limit": "must be ≥ 0"}
    widget(form, "limit").value = ""
    assert form.value() == {"count": -4}  # an emptied optional is left out: the server's default applies


def test_an_empty_required_number_is_reported_and_nothing_is_sent():
    def price(amount: float) -> float: ...

    form = Form(schema_of(price))
    assert problems(form) == {"amount": "required"}
    assert "required" in form.root.labels["amount"].value
    assert "mcp-nb-invalid" in widget(form, "amount")._dom_classes


def test_numbers_keep_what_was_typed_integer_or_decimal():
    def price(amount: Annotated[float, Field(gt=0, lt=100)]) -> float: ...

    form = Form(schema_of(price))
    for typed, sent in [("3", 3), ("2.5", 2.5), ("1e1", 10.0), ("-0.5", None), ("100", None), ("nan", None)]:
        widget(form, "amount").value = typed
        if sent is None:
            assert "amount" in problems(form)
        else:
            value = form.value()["amount"]
            assert value == sent and type(value) is type(sent)
    widget(form, "amount").value = "0"
    assert problems(form) == {"amount": "must be > 0"}


def test_a_typed_value_is_checked_at_once_and_the_label_says_why():
    def stock(count: int) -> int: ...

    form = Form(schema_of(stock))
    widget(form, "count").value = "1.5"
    assert "not an integer" in form.root.labels["count"].value
    assert "mcp-nb-invalid" in widget(form, "count")._dom_classes
    widget(form, "count").value = "2"
    assert "not an integer" not in form.root.labels["count"].value
    assert "mcp-nb-invalid" not in widget(form, "count")._dom_classes


# -- booleans and enums ----------------------------------------------------------------------------


def test_booleans_are_checkboxes_and_send_what_they_show():
    def reserve(rush: bool, gift_wrap: bool = True) -> str: ...

    form = Form(schema_of(reserve))
    assert isinstance(widget(form, "rush"), w.Checkbox)
    assert form.value() == {"rush": False, "gift_wrap": True}
    widget(form, "rush").value = True
    widget(form, "gift_wrap").value = False
    assert form.value() == {"rush": True, "gift_wrap": False}


def test_an_optional_boolean_without_default_can_be_left_out():
    form = Form({"type": "object", "properties": {"flag": {"type": "boolean"}}})
    choice = widget(form, "flag")
    assert isinstance(choice, w.Dropdown)
    assert [label for label, _ in choice.options] == ["— not sent —", "true", "false"]
    assert form.value() == {}
    choice.index = 2
    assert form.value() == {"flag": False}


def test_enums_are_dropdowns_of_their_values():
    def shelve(pace: Literal["slow", "fast"], size: Literal[1, 2, 3] = 2, mood: Literal["calm", "loud"] | None = None) -> str: ...

    form = Form(schema_of(shelve))
    pace, size = widget(form, "pace"), widget(form, "size")
    assert isinstance(pace, w.Dropdown) and pace.index is None  # required, no default: the user chooses
    assert problems(form) == {"pace": "choose a value"}
    pace.index = 1
    assert form.value() == {"pace": "fast", "size": 2}
    assert [label for label, _ in size.options] == ["— not sent —", "1", "2", "3"]
    size.index = 3
    assert form.value() == {"pace": "fast", "size": 3}  # an integer enum sends integers
    size.index = 0
    assert form.value() == {"pace": "fast"}


class Colour(enum.Enum):
    red = "red"
    green = "green"


def test_an_enum_model_through_ref_and_defs():
    def paint(colour: Colour) -> str: ...

    schema = schema_of(paint)
    assert "$ref" in json.dumps(schema["properties"]["colour"])
    form = Form(schema)
    widget(form, "colour").index = 1
    assert form.value() == {"colour": "green"}


# -- null -----------------------------------------------------------------------------------------


def test_nullable_fields_send_null_only_when_the_toggle_says_so():
    def find(title: str | None = None, year: int | None = 1965, shelf: str | None = None) -> str: ...

    form = Form(schema_of(find))
    assert form.value() == {"year": 1965}  # `= None` starts empty and is left out
    title = form.fields["title"]
    assert isinstance(title.null, w.ToggleButton)
    title.null.value = True
    assert widget(form, "title").children[0].disabled  # the value box is off while null is on
    form.fields["year"].null.value = True
    widget(form, "shelf").children[0].value = "B2"
    assert form.value() == {"title": None, "year": None, "shelf": "B2"}
    title.null.value = False
    widget(form, "title").children[0].value = "Dune"
    assert form.value() == {"title": "Dune", "year": None, "shelf": "B2"}


def test_type_lists_with_null_are_nullable_not_an_error():
    # ipywidgets-jsonschema raises on this shape; hand-written MCP schemas use it.
    schema = {"type": "object", "properties": {"note": {"type": ["string", "null"]}}, "required": ["note"]}
    form = Form(schema)
    assert form.value() == {"note": ""}
    form.fields["note"].null.value = True
    assert form.value() == {"note": None}


def test_split_nullable_keeps_the_outer_annotations():
    schemas = Context({})
    inner, nullable = split_nullable(
        {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": 5, "description": "d"}, schemas
    )
    assert nullable and inner == {"type": "integer", "default": 5, "description": "d"}
    inner, nullable = split_nullable({"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}, schemas)
    assert nullable and "default" not in inner


# -- arrays ---------------------------------------------------------------------------------------


def test_arrays_add_and_remove_rows():
    def order(titles: list[str], counts: list[int] = []) -> str: ...

    form = Form(schema_of(order))
    titles, counts = form.fields["titles"], form.fields["counts"]
    assert form.value() == {"titles": []}  # required and empty: the empty list; optional: left out
    titles.add.click()
    titles.add.click()
    titles.items[0].widget.value = "Dune"
    titles.items[1].widget.value = "Emma"
    counts.add.click()
    counts.items[0].widget.value = "2"
    assert form.value() == {"titles": ["Dune", "Emma"], "counts": [2]}
    remove = titles.rows.children[0].children[1]
    assert "mcp-nb-remove" in remove._dom_classes
    remove.click()
    assert form.value() == {"titles": ["Emma"], "counts": [2]}


def test_a_bad_item_is_named_by_its_index():
    def order(counts: list[int]) -> str: ...

    form = Form(schema_of(order))
    field = form.fields["counts"]
    for typed in ("1", "x", "3"):
        field.add.click()
        field.items[-1].widget.value = typed
    assert problems(form) == {"counts.1": "'x' is not an integer"}


def test_array_defaults_are_pre_filled_rows_and_length_limits_are_checked():
    schema = {
        "type": "object",
        "properties": {"tags": {"type": "array", "items": {"type": "string"}, "default": ["a", "b"], "maxItems": 2}},
    }
    form = Form(schema)
    assert form.value() == {"tags": ["a", "b"]}
    form.fields["tags"].add.click()
    assert problems(form) == {"tags": "takes at most 2 item(s)"}


def test_arrays_of_enums_are_a_multi_select():
    def browse(genres: list[Literal["sf", "crime", "poetry"]] = ["sf"]) -> str: ...

    form = Form(schema_of(browse))
    select = widget(form, "genres")
    assert isinstance(select, w.SelectMultiple)
    assert form.value() == {"genres": ["sf"]}
    select.value = (2, 0)
    assert form.value() == {"genres": ["sf", "poetry"]}  # in the order they are listed
    select.value = ()
    assert form.value() == {}


# -- objects --------------------------------------------------------------------------------------


class Address(BaseModel):
    street: str
    city: str = "Paris"
    zip: int | None = None


class Customer(BaseModel):
    name: str
    address: Address
    tags: list[str] = []


def test_nested_models_through_ref_and_defs():
    def ship(customer: Customer, express: bool = False) -> str: ...

    schema = schema_of(ship)
    assert set(schema["$defs"]) == {"Address", "Customer"}
    form = Form(schema)
    customer = form.fields["customer"]
    assert customer.state is None  # required: always sent, no switch
    customer.fields["name"].widget.value = "Ada"
    address = customer.fields["address"]
    address.fields["street"].widget.value = "1 Rue X"
    assert form.value() == {"customer": {"name": "Ada", "address": {"street": "1 Rue X", "city": "Paris"}}, "express": False}
    address.fields["zip"].inner.widget.value = "75001"
    assert form.value()["customer"]["address"] == {"street": "1 Rue X", "city": "Paris", "zip": 75001}
    address.fields["zip"].inner.widget.value = "75.5"
    assert problems(form) == {"customer.address.zip": "'75.5' is not an integer (no decimals)"}


def test_an_optional_nullable_model_is_not_sent_null_or_set():
    def ship(customer: Customer | None = None) -> str: ...

    form = Form(schema_of(ship))
    customer = form.fields["customer"]
    assert list(customer.state.options) == ["not sent", "null", "set"]
    assert customer.grid is None  # built when first set
    assert form.value() == {}
    customer.state.value = "null"
    assert form.value() == {"customer": None}
    customer.state.value = "set"
    customer.fields["name"].widget.value = "Ada"
    assert form.value() == {"customer": {"name": "Ada", "address": {"street": "", "city": "Paris"}}}


def test_a_model_default_is_pre_filled_nulls_included():
    def ship(address: Address = Address(street="1 Rue X")) -> str: ...

    form = Form(schema_of(ship))
    assert form.fields["address"].state.value == "set"
    assert form.value() == {"address": {"street": "1 Rue X", "city": "Paris", "zip": None}}


class Node(BaseModel):
    label: str
    child: Node | None = None


def test_a_recursive_model_stops_where_the_user_stops():
    def walk(tree: Node) -> str: ...

    form = Form(schema_of(walk))
    tree = form.fields["tree"]
    child = tree.fields["child"]
    assert child.grid is None
    child.state.value = "set"
    child.fields["label"].widget.value = "leaf"
    assert form.value() == {"tree": {"label": "", "child": {"label": "leaf"}}}


# -- the JSON fallback ----------------------------------------------------------------------------


def test_anything_without_a_widget_is_a_json_field_for_that_value():
    def anything(
        mapping: dict[str, int] = {}, pair: tuple[int, str] = (1, "a"), either: int | str = 3, value: object = None
    ) -> str: ...

    schema = schema_of(anything)
    form = Form(schema)
    assert {n: f.kind for n, f in form.fields.items()} == {"mapping": "json", "pair": "json", "either": "json", "value": "json"}
    assert form.value() == {"mapping": {}, "pair": [1, "a"], "either": 3}  # `= None` is not pre-filled
    widget(form, "either").value = '"three"'
    widget(form, "value").value = '{"any": [1, null]}'
    assert form.value()["either"] == "three" and form.value()["value"] == {"any": [1, None]}
    widget(form, "pair").value = "[1, "
    assert problems(form) == {"pair": "not valid JSON: Expecting value (line 1, column 5)"}


def test_kind_of_each_schema_shape():
    schemas = Context({})
    cases = {
        "string": {"type": "string"},
        "number": {"type": "integer"},
        "boolean": {"type": "boolean"},
        "enum": {"const": 3},
        "multiselect": {"type": "array", "items": {"enum": ["a"]}},
        "array": {"type": "array", "items": {"type": "integer"}},
        "object": {"type": "object", "properties": {"a": {}}},
    }
    for kind, schema in cases.items():
        assert kind_of(schema, schemas) == kind
    for unmapped in (
        {},
        {"type": "object"},
        {"type": ["string", "integer"]},
        {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        {"type": "array", "prefixItems": [{}]},
        {"type": "null"},
        {"not": {}},
    ):
        assert kind_of(unmapped, schemas) == "json"


# -- prompts, URI templates, hints, loading back --------------------------------------------------


def test_prompt_arguments_and_uri_variables_get_forms_too():
    @mcp_nb.prompt()
    def summarize(text: str, style: str = "short") -> str:
        return text

    @mcp_nb.resource("books://{title}/chapters/{number}")
    def chapter(title: str, number: str) -> str:
        return title

    registry = mcp_nb.engine().registry
    prompt = Form(registry.get("prompt", "summarize").input_schema)
    prompt.fields["text"].widget.value = "a long story"
    assert prompt.value() == {"text": "a long story"}
    template = Form(registry.get("resource", "books://{title}/chapters/{number}").input_schema)
    template.fields["title"].widget.value = "Dune"
    assert template.value() == {"title": "Dune", "number": ""}


def test_descriptions_and_types_are_hints_in_the_labels():
    def find(title: Annotated[str, Field(description="The exact title, as printed.")]) -> str: ...

    form = Form(schema_of(find))
    label = form.root.labels["title"].value
    assert "The exact title, as printed." in label and "string" in label and "required" in label
    assert "mcp-nb-field-title" in widget(form, "title")._dom_classes


def test_a_tool_without_parameters_has_an_empty_form():
    def ping() -> str: ...

    form = Form(schema_of(ping))
    assert form.value() == {} and form.fields == {}
    assert form.load({}) and not form.load({"extra": 1})


def test_loading_arguments_back_shows_them_exactly_or_says_it_cannot():
    def ship(
        customer: Customer | None = None, count: int = 1, note: str | None = None, genres: list[Literal["a", "b"]] = []
    ) -> str: ...

    schema = schema_of(ship)
    arguments = {
        "customer": {"name": "Ada", "address": {"street": "x", "city": "Rome", "zip": None}},
        "count": 3,
        "note": None,
        "genres": ["b"],
    }
    form = Form(schema)
    assert form.load(arguments)
    assert form.value() == arguments
    assert form.load({"count": 2})  # the rest comes back empty, as it was sent: left out
    assert form.value() == {"count": 2}
    for unfit in ({"count": "3"}, {"count": 1.5}, {"count": True}, {"unknown": 1}, {"genres": ["c"]}):
        assert not Form(schema).load(unfit), unfit


def test_omit_is_falsy_and_one_of_a_kind():
    from mcp_nb.widgets.form import _Omit

    assert _Omit() is OMIT and not OMIT and repr(OMIT) == "OMIT"


def open_models() -> int:
    from ipywidgets.widgets.widget import _instances

    return len(_instances)


def test_closing_a_form_closes_every_model_it_opened():
    def ship(customer: Customer, counts: list[int] = [1, 2], note: str | None = None, pace: Literal["a", "b"] = "a") -> str: ...

    schema = schema_of(ship)
    before = open_models()
    form = Form(schema)
    form.fields["counts"].add.click()
    form.fields["counts"].rows.children[0].children[1].click()  # a removed row closes at once
    assert open_models() > before
    form.close()
    assert open_models() == before
