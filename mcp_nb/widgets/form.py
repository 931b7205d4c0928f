"""An input schema to a form: one small builder per kind of input, one dispatch.

The shape is ipywidgets' `interaction.py` (abbreviation -> widget), for JSON Schema, in
layers that each do one job:

- `mcp_nb.calling.input_schema` reads the schema and needs no widget: `readable` keeps what
  the form can read of whatever a server publishes, `Resolver.resolve` follows `$ref`s,
  `split_nullable` peels off null, `kind_of` names the kind of input. `mcp_nb.calling.typed`
  turns typed text into the JSON value to send, and a value back into text.
- `form_fields` holds the fields of one value (text, number, choice, checkbox, multi-select,
  JSON), `form_toggles` the toggles beside them (null, "not sent", `""`, `[]`),
  `form_context` what the fields of one form share (the schema, the widgets' looks).
- Here: `MAPPERS` maps each kind straight to its builder, `field_for` is the one place that
  dispatches, `ArrayField` and `ObjectField` hold fields of their own (built through
  `field_for`), and `Form` is the face. Every builder takes `(schema, ctx, path, required,
  depth)` and returns a `Field`: a widget, `value()` to read what is on screen as the JSON
  value to send, and `load(value)` to put a value back (a call from the history).

A schema with no builder becomes a JSON field for that one value, so every schema gets a
form; so does anything nested deeper than `MAX_DEPTH` levels (a recursive model, a list of
lists), which also bounds every walk down a schema or a value the form makes.

Three rules hold for every field (docs/panel.md has the full table):

- What is on screen is what is sent. A pre-filled default is on screen, so it is
  sent; an explicit null is sent as null.
- An empty optional field is left out of the arguments (`OMIT`), so the server's
  default applies. An empty required field is sent as its empty value where the
  type has one (`""`, `[]`); otherwise the form reports it and nothing is sent.
- Any arguments the schema allows can be loaded and read back exactly. Where a widget's
  empty state cannot say the value (`Field.hole`: an optional checkbox left out, an
  optional text or list sent empty), the field is built again with a toggle that says it
  ("not sent", `""`, `[]`); a list of choices out of the listed order gets rows instead
  of a multi-select. What still cannot be shown: a key the schema has no property for,
  and a float that JSON Schema counts as equal to an integer (`2.0` for an integer, or
  for an enum's `2`): the form sends integers as integers.

Why not PyPI's `ipywidgets-jsonschema` (1.2.1, February 2026; one 1,355-line module; needs
jsonschema, IPython, packaging, traitlets): it makes forms for a person's own pydantic model,
and a tool's arguments, from any server, need more. Tried on the schemas the SDK writes:
- Round trips: every field is always sent, so an optional `int | None = None` reads back as
  0: "left out, the server's default applies" cannot be said, nor told from an explicit
  null; a number field sends 2.0 for 2.
- Validation: a peer's keyword of an odd shape (`"minimum": null`) fails its `check_schema`
  and no form is built; it validates what it reads with jsonschema and clamps limits on
  screen, where mcp_nb reports them as the person types and leaves the rest to the server.
- oneOf/anyOf/const/enum: unions are a dropdown of the subschemas, but MCP's titled choices
  (`oneOf` of `const`s with titles) stop the build (FormError: no type), as do an `enum`
  without a `type` (KeyError) and a one-value enum or a `const` (no widget, sent always).
- Nullable, nested, arrays: `type: [X, "null"]`, `{}` (any value), `prefixItems` and a
  boolean without a title stop the build; `$ref` is followed into `$defs` only (by its
  last segment); a recursive model is cut off with an empty element.
- Size and upkeep: about the size of this form, one maintainer group, a release a year.
So it does not fit; what it does well (a union as a choice of subforms) is noted for later.

Nothing here knows about the engine or the panel: schema in, widgets and values out.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import ipywidgets as w

from mcp_nb.calling.input_schema import (
    MAX_DEPTH,
    NO_HOLE,
    OMIT,
    Invalid,
    Path,
    choices,
    dotted,
    in_order,
    kind_of,
    readable,
    same_value,
    split_nullable,
    titled,
)
from mcp_nb.calling.typed import check_length, show
from mcp_nb.mistakes import BadValue
from mcp_nb.views.theme import LINE, MUTED
from mcp_nb.widgets.form_context import Callback, Context, Looks, close_tree, css_name
from mcp_nb.widgets.form_fields import (
    BooleanField,
    ChoiceField,
    Field,
    JsonField,
    MultiSelectField,
    NumberField,
    TextField,
    label_html,
)
from mcp_nb.widgets.form_toggles import NULL, NullableField, Toggle, ToggledField, hole_toggle

_Omit = type(OMIT)  # the sentinel's class, by the name it had here

# What `field_for` builds for when no value is known yet (OMIT is a value to show: "not sent").
_NOTHING = type("Nothing", (), {"__repr__": lambda self: "NOTHING"})()

# The form's face: its own names, and those of the modules it is made of that its users name.
__all__ = [
    "ArrayField",
    "BooleanField",
    "Callback",
    "ChoiceField",
    "Context",
    "DeepField",
    "Field",
    "Form",
    "Invalid",
    "JsonField",
    "MAPPERS",
    "MultiSelectField",
    "NO_HOLE",
    "NULL",
    "NullableField",
    "NumberField",
    "OMIT",
    "ObjectField",
    "TextField",
    "Toggle",
    "ToggledField",
    "build_form",
    "choices",
    "close_tree",
    "css_name",
    "dotted",
    "field_for",
    "in_order",
    "kind_of",
    "label_html",
    "readable",
    "same_value",
    "split_nullable",
    "titled",
]


def _icon_button(icon: str, tooltip: str, css: str, looks: Looks) -> w.Button:
    button = w.Button(icon=icon, tooltip=tooltip, layout=looks.button_layout(), style=looks.button_style())
    button.add_class(css)
    return button


# -- the fields that hold fields (built through `field_for`) -------------------------------------


class ArrayField(Field):
    """A list: one row per item (the item's own field) with remove, and an add button."""

    kind = "array"

    def __init__(self, schema, ctx, path, required, depth=0) -> None:
        super().__init__(schema, ctx, path, required, depth)
        self.items_schema = schema["items"]
        self.items: list[Field] = []
        self.rows = w.VBox(layout=w.Layout(width="100%"))
        self.add = w.Button(description="add item", icon="plus", layout=ctx.looks.button_layout(), style=ctx.looks.button_style())
        self.add.add_class("mcp-nb-add").add_class(css_name(path) + "-add")
        self.add.on_click(self.callback("adding an item", lambda _: self._append()))
        self.widget = w.VBox([self.rows, self.add], layout=w.Layout(width="100%"))
        self.widget.add_class(css_name(path)).add_class("mcp-nb-array")
        default = self._start()
        if isinstance(default, list):
            try:
                self.load(default)
            except ValueError:
                self.load(OMIT)

    def _append(self, value: Any = OMIT) -> Field:
        """Add an item: empty (or its default) when the user adds it, else built for `value`.

        An item built for a value leaves its own default off: the items of a schema that
        refers back to its list would otherwise load the list's default again, item after item.
        """
        path = self.path + (len(self.items),)
        with self.ctx.chain(frozenset()):  # an item is asked for: a chain of objects starts again
            if value is OMIT:
                item = field_for(self.items_schema, self.ctx, path, True, self.depth + 1)
            else:
                with self.ctx.filling():
                    item = field_for(self.items_schema, self.ctx, path, True, self.depth + 1, showing=value)
                    try:
                        item.load(value)
                    except BaseException:
                        item.close()
                        raise
        item.on_change(self.changed)
        remove = _icon_button("trash", "remove this item", "mcp-nb-remove", self.ctx.looks)
        row = w.HBox([item.widget, remove], layout=w.Layout(width="100%", align_items="flex-start"))
        item.widget.layout.flex = "1 1 auto"
        remove.on_click(self.callback("removing an item", lambda _: self._remove(item, row)))
        self.items.append(item)
        self.rows.children = (*self.rows.children, row)
        self.changed()
        return item

    def _remove(self, item: Field, row: w.HBox) -> None:
        index = self.items.index(item)
        # The rows after it keep their widgets; only the paths in their messages shift.
        self.items.pop(index)
        self.rows.children = tuple(r for r in self.rows.children if r is not row)
        close_tree(row)
        self.changed()

    def read(self) -> Any:
        if not self.items:
            return OMIT
        values, problems = [], []
        for i, item in enumerate(self.items):
            try:
                values.append(item.value())
            except Invalid as err:
                problems.extend(err.problems)  # item paths already run from the arguments down
            except ValueError as err:
                problems.append((self.path + (i,), str(err)))
        if problems:
            raise Invalid(problems)
        check_length(self.schema, len(values))
        return values

    def empty_required(self) -> Any:
        check_length(self.schema, 0)
        return []

    def hole(self) -> Any:
        return NO_HOLE if self.required else []  # an optional list with no items is not sent

    def load(self, value: Any) -> None:
        if value is not OMIT and not isinstance(value, list):
            raise BadValue(f"expected a list, got {show(value)}")
        for row in self.rows.children:
            close_tree(row)
        self.items = []
        self.rows.children = ()
        for item_value in [] if value is OMIT else value:
            self._append(item_value)
        self.changed()

    def set_enabled(self, enabled: bool) -> None:
        self.widget.layout.display = None if enabled else "none"


_STATE_NOT_SENT, _STATE_NULL, _STATE_SET = "not sent", "null", "set"


class ObjectField(Field):
    """A nested object: its properties in a grid of labels and fields.

    An optional or nullable object says which it is with a small switch (not sent /
    null / set); its grid is built the first time it is set, which keeps forms quick
    and lets a recursive model (a tree of nodes) stop where the user stops.
    """

    kind = "object"

    def __init__(
        self, schema, ctx, path, required, depth=0, nullable: bool = False, root: bool = False, lazy: bool = False
    ) -> None:
        super().__init__(schema, ctx, path, required, depth)
        self.root = root
        self.refs = ctx.expanding  # the `$ref`s this object and the ones built around it unasked expand
        self.fields: dict[str, Field] = {}
        self.labels: dict[str, w.HTML] = {}
        self.grid: w.GridBox | None = None
        states = ([] if required else [_STATE_NOT_SENT]) + ([_STATE_NULL] if nullable else []) + [_STATE_SET]
        self.state: w.ToggleButtons | None = None
        if len(states) > 1:
            default = self._start()
            # `lazy`: an object inside itself waits for its switch, whatever its default says.
            start = _STATE_SET if isinstance(default, Mapping) and not lazy else states[0]
            self.state = w.ToggleButtons(options=states, value=start, style={"button_width": "auto"})
            self.state.add_class("mcp-nb-state").add_class(css_name(path) + "-state")
            self.body = w.VBox(layout=w.Layout(width="100%"))
            self.widget = w.VBox([self.state, self.body], layout=w.Layout(width="100%"))
            self.state.observe(self.callback("switching", self._state_changed), "value")
            if start == _STATE_SET:
                self._build()
        else:
            self.body = None
            self._build()
            self.widget = self.grid
        self.widget.add_class(css_name(path)).add_class("mcp-nb-object")

    def _build(self) -> None:
        if self.grid is not None:
            return
        required = set(self.schema.get("required", []))
        cells: list[w.Widget] = []
        fields: dict[str, Field] = {}
        try:
            for name, prop in self.schema["properties"].items():
                with self.ctx.chain(self.refs):
                    field = fields[name] = field_for(prop, self.ctx, self.path + (name,), name in required, self.depth + 1)
                label = w.HTML(
                    label_html(name, prop, name in required, self.ctx.root),
                    layout=self.ctx.looks.label_layout(),
                    style=self.ctx.looks.label_style(),
                )
                label.add_class("mcp-nb-label")
                self.labels[name] = label
                cells += [label, field.widget]
        except BaseException:
            # Built in part: none of it is shown, and the object stays unbuilt.
            for field in fields.values():
                field.close()
            for label in self.labels.values():
                label.close()
            self.labels = {}
            raise
        self.fields = fields
        for name, field in fields.items():
            field.on_change(lambda name=name: self._live_check(name))
            field.on_change(self.changed)
        self.grid = w.GridBox(
            cells,
            layout=w.Layout(
                width="100%",
                grid_template_columns="minmax(120px, 30%) minmax(0, 1fr)",
                grid_gap="6px 12px",
                align_items="flex-start",
                padding="0" if self.root else "2px 0 2px 10px",
                border_left="" if self.root else f"2px solid {LINE}",
            ),
        )
        defaults = self._start()
        if isinstance(defaults, Mapping):
            # The object's own default is a concrete value (a model instance, dumped): it
            # wins over its properties' defaults, nulls included.
            with self.ctx.filling():
                for name, value in defaults.items():
                    if name in self.fields:
                        try:
                            self.fields[name].load(value)
                        except ValueError:
                            pass
        if self.body is not None:
            self.body.children = (self.grid,)

    def _state_changed(self, change) -> None:
        if change["new"] == _STATE_SET:
            try:
                self._build()
            except BaseException:
                self.state.value = change["old"]  # the switch says what the object holds
                raise
        if self.body is not None:
            self.body.layout.display = None if change["new"] == _STATE_SET else "none"
        self.changed()

    def _live_check(self, name: str) -> None:
        """Say at once when a typed value cannot be sent (`1.5` for an integer); `required` waits for Call."""
        field = self.fields[name]
        if isinstance(field, (ObjectField, ArrayField)):
            return  # their own labels (or items) speak for them
        try:
            field.read()
            self.note(name, None)
        except ValueError as err:
            self.note(name, str(err))

    def note(self, name: str, problem: str | None) -> None:
        field, label = self.fields[name], self.labels[name]
        new = label_html(
            name, self.schema["properties"][name], name in set(self.schema.get("required", [])), self.ctx.root, problem
        )
        if label.value != new:
            label.value = new
        target = field.inner.widget if isinstance(field, ToggledField) else field.widget
        if problem:
            target.add_class("mcp-nb-invalid")
        else:
            target.remove_class("mcp-nb-invalid")

    def read(self) -> Any:
        if self.state is not None and self.state.value != _STATE_SET:
            return None if self.state.value == _STATE_NULL else OMIT
        values: dict[str, Any] = {}
        problems: list[tuple[Path, str]] = []
        for name, field in self.fields.items():
            try:
                value = field.value()
                self.note(name, None)
            except Invalid as err:
                problems.extend(err.problems)
                self.note(name, None)
                continue
            except ValueError as err:
                problems.append((field.path, str(err)))
                self.note(name, str(err))
                continue
            if value is not OMIT:
                values[name] = value
        if problems:
            raise Invalid(problems)
        return values

    def load(self, value: Any) -> None:
        if value is OMIT or value is None:
            if self.state is None:
                raise BadValue("this object is required" if value is OMIT else "this object cannot be null")
            wanted = _STATE_NOT_SENT if value is OMIT else _STATE_NULL
            if wanted not in self.state.options:
                raise BadValue(f"this object cannot be {'left out' if value is OMIT else 'null'}")
            self.state.value = wanted
            return
        if not isinstance(value, Mapping):
            raise BadValue(f"expected an object, got {show(value)}")
        unknown = set(value) - set(self.schema["properties"])
        if unknown:
            raise BadValue(f"no field for {', '.join(sorted(unknown))}")
        if self.state is not None:
            self.state.value = _STATE_SET
        self._build()
        for name in list(self.fields):
            shown = value.get(name, OMIT)
            if not self.fields[name].shows(shown):
                self._rebuild(name, shown)
            self.fields[name].load(shown)

    def _rebuild(self, name: str, showing: Any) -> None:
        """Build the field of `name` again, for a value its widget cannot show (`Field.shows`)."""
        old = self.fields[name]
        with self.ctx.chain(self.refs), self.ctx.filling():
            new = field_for(
                self.schema["properties"][name],
                self.ctx,
                self.path + (name,),
                name in set(self.schema.get("required", [])),
                self.depth + 1,
                showing=showing,
            )
        new.on_change(lambda: self._live_check(name))
        new.on_change(self.changed)
        self.fields[name] = new
        self.grid.children = tuple(new.widget if cell is old.widget else cell for cell in self.grid.children)
        old.close()

    def set_enabled(self, enabled: bool) -> None:
        self.widget.layout.display = None if enabled else "none"


# -- the dispatch --------------------------------------------------------------------------------


def boolean_field(schema, ctx, path, required, depth=0) -> Field:
    """A checkbox, or a choice when "not sent" must be possible (optional, no default)."""
    if required or isinstance(schema.get("default"), bool):
        return BooleanField(schema, ctx, path, required, depth)
    return ChoiceField(schema, ctx, path, required, depth)


# Every builder takes (schema, ctx, path, required, depth), so the table maps straight to them.
MAPPERS: dict[str, Callable[[dict[str, Any], Context, Path, bool, int], Field]] = {
    "string": TextField,
    "number": NumberField,
    "boolean": boolean_field,
    "enum": ChoiceField,
    "multiselect": MultiSelectField,
    "array": ArrayField,
    "json": JsonField,
}


class DeepField(JsonField):
    """A list or an object nested deeper than the form builds fields for, typed as JSON."""

    hint = f"JSON value (nested more than {MAX_DEPTH} levels deep)"


def field_for(
    schema: Mapping[str, Any], ctx: Context, path: Path, required: bool, depth: int = 0, showing: Any = _NOTHING
) -> Field:
    """The field for one value: resolve the schema, peel off null, dispatch on its kind.

    `showing`: the value the field is built to show, when it is known (a call from the
    history). A list of choices in another order than listed, or repeated, gets rows instead
    of a multi-select; a value the widget's empty state cannot say (`Field.hole`) gets a
    toggle for it.
    """
    followed: set[str] = set()
    resolved = ctx.resolve(schema if isinstance(schema, Mapping) else {}, followed)
    inner, nullable = split_nullable(resolved, ctx, followed)
    kind = kind_of(inner, ctx)
    inside_itself = not followed.isdisjoint(ctx.expanding)
    if kind in ("object", "array") and depth >= MAX_DEPTH:
        # A recursive model, lists of lists: the rest is one JSON value, so that neither a schema
        # nor a value (loaded from the history) walks the form down to Python's recursion limit.
        return _with_null(DeepField(inner, ctx, path, required, depth), nullable, [])
    if kind == "object" and inside_itself and required and not nullable:
        kind = "json"  # an object that must hold itself: no finite form, a JSON value
    if kind == "object":  # objects say null and "not sent" with their own switch
        with ctx.chain(ctx.expanding | followed):
            return ObjectField(inner, ctx, path, required, depth, nullable=nullable, lazy=inside_itself)
    if kind == "multiselect" and isinstance(showing, list) and not in_order(choices(ctx.resolve(inner["items"])), showing):
        kind = "array"  # one row per item: any order, any repeats
    field = MAPPERS[kind](inner, ctx, path, required, depth)
    toggles = [hole_toggle(field)] if showing is not _NOTHING and same_value(showing, field.hole()) else []
    return _with_null(field, nullable, toggles)


def _with_null(field: Field, nullable: bool, toggles: list[Toggle]) -> Field:
    if nullable:
        return NullableField(field, toggles)
    return ToggledField(field, toggles) if toggles else field


# -- the form ------------------------------------------------------------------------------------


class Form:
    """The form for one input schema: `widget`, `value()` (the arguments), `load(arguments)`."""

    def __init__(
        self,
        schema: Mapping[str, Any] | None,
        callback: Callback | None = None,
        suggest: Callable[[Any, str, str], None] | None = None,
    ) -> None:
        schema = dict(schema or {})
        ctx = self.ctx = Context(schema, callback)
        ctx.suggest = suggest
        resolved = ctx.resolve(schema)
        self.root: ObjectField | None = None
        if resolved.get("properties"):
            self.root = ObjectField(resolved, ctx, (), True, root=True)
            self.widget = self.root.widget
        else:
            self.widget = w.HTML(f'<span style="{MUTED}">no arguments</span>')
        self.widget.add_class("mcp-nb-form")

    @property
    def fields(self) -> dict[str, Field]:
        return self.root.fields if self.root is not None else {}

    def value(self) -> dict[str, Any]:
        """The arguments on screen. Raises `Invalid` with every problem when they cannot be sent."""
        return {} if self.root is None else self.root.read()

    def load(self, arguments: Mapping[str, Any]) -> bool:
        """Put arguments on screen; False when the form cannot show them exactly (then use raw JSON)."""
        if self.root is None:
            return not arguments
        try:
            self.root.load(arguments)
            shown = self.value()
        except ValueError:
            return False
        return _same(shown, arguments)

    def on_change(self, listener: Callable[[], None]) -> None:
        if self.root is not None:
            self.root.on_change(listener)

    def close(self) -> None:
        """Close every widget of the form, with the layout and style models they use."""
        close_tree(self.widget)
        self.ctx.looks.close()


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON: `true` is not `1`, and `1` is not `1.0`."""
    try:
        return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return False


def build_form(schema: Mapping[str, Any] | None, callback: Callback | None = None) -> Form:
    return Form(schema, callback)
