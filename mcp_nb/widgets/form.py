"""An input schema to a form: one small builder per schema kind, one dispatch.

The shape is ipywidgets' `interaction.py` (abbreviation -> widget), for JSON Schema:
`field_for` resolves a schema, `kind_of` names its kind, and `MAPPERS` maps each kind
straight to its builder. Every builder takes `(schema, ctx, path, required, depth)` and
returns a `Field`: a widget, `value()` to read what is on screen as the JSON value to
send, and `load(value)` to put a value back (a call from the history).

The schemas are the ones the MCP SDK builds from a function's signature, which is
pydantic's JSON Schema: `X | None` is `anyOf [X, null]`, models are `$ref`s into
`$defs`, tuples are `prefixItems`, `object` is `{}`. A schema with no builder becomes a
JSON field for that one value, so every schema gets a form.

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

Nothing here knows about the engine or the panel: schema in, widgets and values out.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from decimal import Decimal, InvalidOperation
from typing import Any

import ipywidgets as w

from mcp_nb.elicitation import is_secret
from mcp_nb.mistakes import BadJson, BadValue, read_json
from mcp_nb.views.cards import schema_type
from mcp_nb.views.theme import ERROR, LINE, MUTED


class _Omit:
    """The value of an empty optional field: leave the key out of the arguments."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "OMIT"

    def __bool__(self) -> bool:
        return False


OMIT = _Omit()

# What `Field.hole()` returns for a field whose widget can show every value its schema allows.
NO_HOLE = type("NoHole", (), {"__repr__": lambda self: "NO_HOLE"})()
# What `field_for` builds for when no value is known yet (OMIT is a value to show: "not sent").
_NOTHING = type("Nothing", (), {"__repr__": lambda self: "NOTHING"})()

Path = tuple  # keys and item indices from the arguments object down to a value


class Invalid(BadValue):
    """What keeps the form from being sent: (path, message) pairs, every problem at once."""

    def __init__(self, problems: list[tuple[Path, str]]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{dotted(p)}: {m}" for p, m in problems))


def dotted(path: Path) -> str:
    """`address.city`, `tags[2]`: a path as a person reads it."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "arguments"


def css_name(path: Path) -> str:
    """A stable CSS class per field (`mcp-nb-field-address-city`), for tests and styling."""
    return "mcp-nb-field-" + ("-".join(re.sub(r"[^A-Za-z0-9_]", "_", str(p)) for p in path) or "root")


_LONG_TEXT = 70  # characters per row before a text field grows another row
_MAX_ROWS = 12
_DEPTH = 12  # nested objects deeper than this (a recursive model) become JSON fields

# A recursive schema (`$ref`s back to a model it is in) builds only what the user asks for:
#
# - A field built to show a value (an item of a list being loaded, a call from the history)
#   starts empty and is loaded with that value, so a default that refers back to its own
#   schema (`items: {$ref: <the array>}, default: [[]]`) is read once, not again per item.
# - Objects built without being asked for (a required one, or an optional one its default
#   switches on) stop at the first `$ref` they already expand: an optional one waits for
#   its switch, a required one (which no finite value fills) is a JSON field. Items, and
#   objects switched on, start a new chain: the user builds a tree one step at a time.


# -- resolving: $ref, allOf, nullable ------------------------------------------------------------


class Looks:
    """Layout and style models shared by the widgets of one form.

    Every ipywidget owns a layout and a style model, each a comm of its own: two thirds
    of a form's messages to the front end. The widgets of a form never change these per
    widget, so they share one of each kind, which makes a form about twice as quick to
    build (benchmarks/bench_panel.py) and to close.
    """

    def __init__(self) -> None:
        self._models: dict[str, w.Widget] = {}

    def _shared(self, key: str, make: Callable[[], w.Widget]) -> w.Widget:
        model = self._models.get(key)
        if model is None:
            model = self._models[key] = make()
            model._mcp_nb_shared = True  # close_tree leaves it to close()
        return model

    def input_layout(self) -> w.Layout:
        return self._shared("input", lambda: w.Layout(width="auto", flex="1 1 auto"))

    def fit_layout(self) -> w.Layout:
        return self._shared("fit", lambda: w.Layout(width="auto"))

    def label_layout(self) -> w.Layout:
        return self._shared("label-layout", w.Layout)

    def button_layout(self) -> w.Layout:
        return self._shared("button-layout", lambda: w.Layout(width="auto", flex="0 0 auto", align_self="flex-start"))

    def button_style(self) -> w.Widget:
        return self._shared("button", _style_class(w.Button))

    def text_style(self) -> w.Widget:
        return self._shared("text", _style_class(w.Text))

    def label_style(self) -> w.Widget:
        return self._shared("label", _style_class(w.HTML))

    def checkbox_style(self) -> w.Widget:
        return self._shared("checkbox", _style_class(w.Checkbox))

    def choice_style(self) -> w.Widget:
        return self._shared("choice", _style_class(w.Dropdown))

    def toggle_style(self) -> w.Widget:
        return self._shared("toggle", _style_class(w.ToggleButton))

    def close(self) -> None:
        for model in self._models.values():
            model.close()
        self._models.clear()


def _style_class(widget_class: type) -> type:
    """The style model a widget class takes (ipywidgets exports few of them by name)."""
    return widget_class.class_traits()["style"].klass


def close_tree(widget: w.Widget) -> None:
    """Close a widget, its children, and the layout and style models each one owns.

    ipywidgets' `close()` closes the widget alone: its layout and style stay open in
    the kernel (and the front end) until the kernel stops.
    """
    for child in getattr(widget, "children", ()) or ():
        close_tree(child)
    for part in (getattr(widget, "layout", None), getattr(widget, "style", None)):
        if isinstance(part, w.Widget) and not getattr(part, "_mcp_nb_shared", False):
            part.close()
    widget.close()


# What wraps each widget callback of a form: (what it does, the function) to the callback.
# A form on its own uses the function as it is; the panel passes its guard.
Callback = Callable[[str, Callable[..., Any]], Callable[..., Any]]


def _as_is(what: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    return fn


class Context:
    """What the fields of one form share: the root schema (for `$ref`s into `$defs`, or the
    older `definitions`) and the widget looks."""

    def __init__(self, root: Mapping[str, Any], callback: Callback | None = None) -> None:
        self.root = root
        self.looks = Looks()
        self.callback = callback or _as_is
        self.expanding: frozenset[str] = frozenset()  # the `$ref`s the objects being built unasked expand
        # Asks the server what a top-level text argument may be (`completion/complete`):
        # `suggest(field, name, typed)`, answered later by `field.offer(values)`; None: nothing asked.
        self.suggest: Callable[[Any, str, str], None] | None = None
        self._filling = 0  # > 0 while fields are built to be loaded with a value

    @contextmanager
    def chain(self, refs: frozenset[str]) -> Iterator[None]:
        """Build with `refs` as the `$ref`s the objects around are expanding."""
        outer, self.expanding = self.expanding, refs
        try:
            yield
        finally:
            self.expanding = outer

    @contextmanager
    def filling(self) -> Iterator[None]:
        """Build fields that are then loaded with a value: they leave their defaults off."""
        self._filling += 1
        try:
            yield
        finally:
            self._filling -= 1

    @property
    def is_filling(self) -> bool:
        return self._filling > 0

    def resolve(self, schema: Any, followed: set[str] | None = None) -> dict[str, Any]:
        """Follow `$ref`s and single-member `allOf`s; keywords next to them win (a default, a description).

        The result is `readable`: every keyword the builders read has the shape they expect.
        `followed` collects the references followed.
        """
        schema = readable(schema)
        for _ in range(_DEPTH):
            if "$ref" in schema:
                ref = schema.pop("$ref")
                if followed is not None:
                    followed.add(ref)
                target = self._pointer(ref)
                schema = readable({**target, **schema})
            elif len(schema.get("allOf", ())) == 1:
                (only,) = schema.pop("allOf")
                schema = readable({**only, **schema})
            else:
                break
        return schema

    def _pointer(self, ref: str) -> dict[str, Any]:
        if not ref.startswith("#/"):
            return {}  # a remote reference: nothing to resolve it against, so a JSON field
        node: Any = self.root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, Mapping) or part not in node:
                return {}
            node = node[part]
        return dict(node) if isinstance(node, Mapping) else {}


# -- reading a schema whatever its shape -----------------------------------------------------------
#
# A server may publish any JSON Schema, and a keyword of an unexpected shape (`"minimum":
# null`, `"enum": "a"`, `"required": true`) must not break the form: a keyword the form
# cannot read is left out of what it reads (the server still checks what is sent). Each
# keyword the builders read is listed here with the shape they expect.


def _real(value: Any) -> bool:
    # An int is finite however long (math.isfinite of one beyond the float range overflows).
    return not isinstance(value, bool) and (isinstance(value, int) or (isinstance(value, float) and math.isfinite(value)))


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


_SHAPES: dict[str, Callable[[Any], bool]] = {
    "minimum": _real,
    "maximum": _real,
    "exclusiveMinimum": _real,
    "exclusiveMaximum": _real,
    "multipleOf": lambda v: _real(v) and v > 0,
    "minLength": _count,
    "maxLength": _count,
    "minItems": _count,
    "maxItems": _count,
    "enum": lambda v: isinstance(v, list),
    "prefixItems": lambda v: isinstance(v, list),
    "properties": lambda v: isinstance(v, Mapping),
    "$ref": lambda v: isinstance(v, str),
    "format": lambda v: isinstance(v, str),
    "pattern": lambda v: isinstance(v, str),
    "description": lambda v: isinstance(v, str),
    "title": lambda v: isinstance(v, str),
}


def readable(schema: Any, depth: int = 0) -> dict[str, Any]:
    """A copy of `schema` holding only keywords of the shape the form reads.

    `true` and `false` are schemas too (anything, nothing). The subschemas a label
    describes (`items`, `anyOf`...) are made readable as well; `properties` are made
    readable one at a time, when their fields are built.
    """
    if schema is False:
        return {"not": {}}
    if not isinstance(schema, Mapping):
        return {}  # `true`, or something that is no schema at all: anything goes
    out = dict(schema)
    # Draft 4 wrote an exclusive limit as a flag on `minimum`/`maximum`.
    for limit, exclusive in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        if isinstance(out.get(exclusive), bool):
            if out.pop(exclusive) and limit in out:
                out[exclusive] = out.pop(limit)
    for key, fits in _SHAPES.items():
        if key in out and not fits(out[key]):
            del out[key]
    kind = out.get("type")
    if "type" in out and not isinstance(kind, str):
        kinds = [k for k in kind if isinstance(k, str)] if isinstance(kind, list) else []
        if kinds:
            out["type"] = kinds
        else:
            del out["type"]
    if "required" in out:
        required = out["required"]
        out["required"] = [n for n in required if isinstance(n, str)] if isinstance(required, list) else []
    if "items" in out:
        items = out["items"]
        if isinstance(items, (Mapping, bool)) and depth < _DEPTH:
            out["items"] = readable(items, depth + 1)
        else:
            del out["items"]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in out:
            members = out[key] if isinstance(out[key], list) and depth < _DEPTH else []
            members = [readable(m, depth + 1) for m in members if isinstance(m, (Mapping, bool))]
            if members:
                out[key] = members
            else:
                del out[key]
    return out


_ANNOTATIONS = ("default", "description", "title", "examples")


def split_nullable(schema: dict[str, Any], ctx: Context, followed: set[str] | None = None) -> tuple[dict[str, Any], bool]:
    """`anyOf [X, null]` and `type: [X, "null"]` to (X, True); anything else to (schema, False).

    The annotations of the outer schema (default, description) are kept on X. A default
    of null is dropped: in a signature `= None` means "not given", so the field starts
    empty and the null toggle stays off. `followed` collects the references followed to X.
    """
    variants = schema.get("anyOf") or schema.get("oneOf")
    inner: dict[str, Any] | None = None
    if isinstance(variants, list):
        rest = [v for v in variants if ctx.resolve(v).get("type") != "null"]
        if len(rest) < len(variants):
            if len(rest) == 1:
                inner = ctx.resolve(rest[0], followed)
            else:  # X | Y | None: the value is a JSON field, null still a toggle
                inner = {"anyOf": rest}
    elif isinstance(schema.get("type"), list) and "null" in schema["type"]:
        types = [t for t in schema["type"] if t != "null"]
        inner = {k: v for k, v in schema.items() if k != "type"}
        if types:
            inner["type"] = types[0] if len(types) == 1 else types
    elif "enum" in schema and None in schema["enum"]:
        inner = {**schema, "enum": [v for v in schema["enum"] if v is not None]}
    if inner is None:
        return schema, False
    for key in _ANNOTATIONS:
        if key in schema and key not in inner:
            inner[key] = schema[key]
    if inner.get("default", 0) is None:
        inner.pop("default")
    return inner, True


def titled(schema: Mapping[str, Any]) -> list[tuple[Any, str]] | None:
    """The (value, title) choices of a titled enum, or None: `oneOf` / `anyOf` of `const`s, each
    with its `title` (MCP's titled single and multi select), or `enum` with `enumNames` (the
    legacy form)."""
    variants = schema.get("oneOf") or schema.get("anyOf")
    if isinstance(variants, list) and variants and all(isinstance(v, Mapping) and "const" in v for v in variants):
        return [(v["const"], str(v.get("title") or _show(v["const"]))) for v in variants]
    names = schema.get("enumNames")
    values = schema.get("enum")
    if isinstance(values, list) and isinstance(names, list) and len(names) == len(values):
        return [(value, str(name)) for value, name in zip(values, names)]
    return None


def kind_of(schema: Mapping[str, Any], ctx: Context) -> str:
    """The builder a (resolved, non-null) schema gets; "json" for anything not mapped."""
    if "enum" in schema or "const" in schema or titled(schema):
        return "enum"
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = kind[0] if len(kind) == 1 else None
    if kind is None and "properties" in schema:
        kind = "object"
    if kind == "string":
        return "string"
    if kind in ("integer", "number"):
        return "number"
    if kind == "boolean":
        return "boolean"
    if kind == "array":
        items = schema.get("items")
        if "prefixItems" in schema or not isinstance(items, Mapping):
            return "json"  # tuples and item lists: one JSON value is clearer than a grid
        items = ctx.resolve(items)
        if titled(items):
            return "multiselect"
        return "multiselect" if "enum" in items and None not in items["enum"] else "array"
    if kind == "object" and isinstance(schema.get("properties"), Mapping) and schema["properties"]:
        return "object"
    return "json"  # {} (any), unions, dict[str, X], null alone, unknown keywords


# -- the fields ----------------------------------------------------------------------------------


class Field:
    """One value of the arguments: its widget, how to read it, how to put a value back."""

    kind = "json"

    def __init__(self, schema: dict[str, Any], ctx: Context, path: Path, required: bool, depth: int = 0) -> None:
        self.schema = schema
        self.ctx = ctx
        self.path = path
        self.required = required
        self.depth = depth
        self.widget: w.Widget
        self._listeners: list[Callable[[], None]] = []

    # what the panel and the parent object use

    def value(self) -> Any:
        """The JSON value on screen, or OMIT for an empty optional field. Raises ValueError."""
        raw = self.read()
        if raw is OMIT and self.required:
            return self.empty_required()
        return raw

    def read(self) -> Any:
        """What the widgets hold (OMIT when empty); raises ValueError when it is not a value."""
        raise NotImplementedError

    def empty_required(self) -> Any:
        raise BadValue("required")

    def load(self, value: Any) -> None:
        """Show `value` (OMIT clears the field). Raises ValueError when it does not fit this field."""
        raise NotImplementedError

    def hole(self) -> Any:
        """The one value the schema allows that this widget's empty state cannot say, or NO_HOLE.

        An optional text box or list is empty when it is not sent, so it cannot also send `""`
        or `[]`; an optional checkbox is always ticked or not, so it cannot say "not sent".
        `field_for` gives such a field a toggle for that value when a value to show needs it.
        """
        return NO_HOLE

    def shows(self, value: Any) -> bool:
        """Whether `load(value)` can show `value` exactly, when the schema allows it. A field
        that cannot is built again for that value (`field_for(..., showing=value)`)."""
        return not same_value(value, self.hole())

    def set_enabled(self, enabled: bool) -> None:
        if hasattr(self.widget, "disabled"):
            self.widget.disabled = not enabled

    def on_change(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)

    def callback(self, doing: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn` as a widget callback, through the form's wrapper (the panel's guard)."""
        return self.ctx.callback(f"{doing} ({dotted(self.path)})", fn)

    def changed(self, _change: Any = None) -> None:
        for listener in self._listeners:
            listener()

    def close(self) -> None:
        close_tree(self.widget)

    def _default(self) -> Any:
        return self.schema.get("default", OMIT)

    def _start(self) -> Any:
        """What a new field shows: its default, unless it is built to be loaded with a value."""
        return OMIT if self.ctx.is_filling else self._default()


def same_value(a: Any, b: Any) -> bool:
    """`a` is `b` as a value to send: OMIT is OMIT, `""` is not `[]`, `0` is not `false`."""
    if a is OMIT or b is OMIT or a is NO_HOLE or b is NO_HOLE:
        return a is b
    return type(a) is type(b) and a == b


def _placeholder(schema: Mapping[str, Any], fallback: str) -> str:
    """What an empty field says: its default (which the server applies when it is left out)."""
    default = schema.get("default")
    if default is not None and default != "" and default != [] and default != {}:
        return "default: " + _show(default)
    return fallback


def choice_labels(schema: Mapping[str, Any], values: list[Any]) -> list[str]:
    """What each choice is shown as: its title where the schema gives one, else its value."""
    named = titled(schema)
    return [title for _, title in named] if named else [_show(v) for v in values]


def _show(value: Any) -> str:
    """A value as JSON text, for a label or a message; what JSON cannot say is named instead."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return _unshown(value)


def _unshown(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):  # more digits than Python writes out
        return format(Decimal(value), ".6e")
    return "a nested value" if isinstance(value, (list, dict)) else type(value).__name__


def _dumps(value: Any) -> str:
    """`value` as JSON text to edit, or BadValue when JSON cannot say it."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except RecursionError:
        raise BadValue("cannot be shown as JSON: nested too deeply") from None
    except (TypeError, ValueError) as err:
        raise BadValue(f"cannot be shown as JSON: {_one_line(err)}") from None


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text or type(err).__name__


def _rows_for(text: str) -> int:
    lines = text.split("\n")
    return max(1, min(_MAX_ROWS, sum(1 + len(line) // _LONG_TEXT for line in lines)))


class TextField(Field):
    """A string; a text area that grows with its content, unless the schema keeps it short."""

    kind = "string"

    def __init__(self, schema, ctx, path, required, depth=0) -> None:
        super().__init__(schema, ctx, path, required, depth)
        looks = ctx.looks
        # A password, a token: typed into a box that shows dots (the same rule that keeps it out of the records).
        secret = bool(path) and is_secret(path[-1], {"properties": {path[-1]: schema}})
        short = secret or schema.get("maxLength", 1_000_000) <= _LONG_TEXT or "format" in schema or "pattern" in schema
        hint = schema.get("format") or "text"
        self._suggesting = ctx.suggest is not None and len(path) == 1 and not secret
        if self._suggesting:
            # A box that offers what the server suggests as the user types, and takes any text.
            self.widget = w.Combobox(
                placeholder=_placeholder(schema, hint), options=(), ensure_option=False, layout=looks.input_layout(),
                style=looks.text_style(),
            )  # fmt: skip
            self.widget.observe(self.callback("asking for suggestions", self._ask), "value")
        elif short:
            box = w.Password if secret else w.Text
            self.widget = box(placeholder=_placeholder(schema, hint), layout=looks.input_layout(), style=looks.text_style())
        else:
            # A text area from the start, so a long value never swaps the widget (and the
            # focus) from under the user; it is one row tall until the text needs more.
            self.widget = w.Textarea(
                placeholder=_placeholder(schema, hint), rows=1, layout=looks.input_layout(), style=looks.text_style()
            )
            self.widget.observe(self.callback("typing", self._grow), "value")
        self.widget.add_class(css_name(path)).add_class("mcp-nb-string")
        default = self._start()
        if isinstance(default, str):
            self.widget.value = default
        self.widget.observe(self.callback("typing", self.changed), "value")

    def _ask(self, change) -> None:
        self.ctx.suggest(self, self.path[0], change["new"])

    def offer(self, values: list[str]) -> None:
        """Show what the server suggests for this field (on the kernel's thread)."""
        if self._suggesting:
            self.widget.options = tuple(dict.fromkeys(values))

    def _grow(self, change) -> None:
        rows = _rows_for(change["new"])
        if rows != self.widget.rows:
            self.widget.rows = rows

    def read(self) -> Any:
        return self.widget.value if self.widget.value != "" else OMIT

    def empty_required(self) -> Any:
        return ""  # an empty box is the empty string: a value the tool may be asked about

    def hole(self) -> Any:
        return NO_HOLE if self.required else ""  # an optional empty box is not sent

    def load(self, value: Any) -> None:
        if value is OMIT:
            self.widget.value = ""
        elif isinstance(value, str):
            self.widget.value = value
        else:
            raise BadValue(f"expected a string, got {_show(value)}")


_INTEGER = re.compile(r"[+-]?\d+")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


_LIMITS: tuple[tuple[str, str, Callable[[Any, Any], bool]], ...] = (
    ("minimum", "≥", lambda n, limit: n >= limit),
    ("exclusiveMinimum", ">", lambda n, limit: n > limit),
    ("maximum", "≤", lambda n, limit: n <= limit),
    ("exclusiveMaximum", "<", lambda n, limit: n < limit),
)


def number_limits(schema: Mapping[str, Any]) -> list[str]:
    """A number's limits as a person reads them: `≥ 1`, `< 5`, `multiple of 0.5`."""
    limits = [f"{says} {_show(schema[key])}" for key, says, _ in _LIMITS if key in schema]
    if "multipleOf" in schema:
        limits.append(f"multiple of {_show(schema['multipleOf'])}")
    return limits


def _multiple(text: str, step: float) -> bool:
    """Whether the number typed is a multiple of `step`, in decimal: 0.3 is a multiple of 0.1
    to a person and to pydantic (which allows for float error), though not in binary."""
    try:
        return Decimal(text) % Decimal(repr(step)) == 0
    except (InvalidOperation, ValueError):  # beyond Decimal's precision: let the server judge
        return True


class NumberField(Field):
    """An integer or a number, typed as text so an optional one can be empty.

    The text is parsed as JSON would be: `3` sends 3, `3.0` sends 3.0. An integer field
    rejects decimals and exponents rather than rounding them; a value outside its limits
    (minimum, maximum, exclusive or not, multipleOf) is reported, not clamped, so what is
    sent is what is on screen. (The raw-JSON mode sends anything, for watching the server
    reject it.)
    """

    kind = "number"

    def __init__(self, schema, ctx, path, required, depth=0) -> None:
        super().__init__(schema, ctx, path, required, depth)
        self.integer = schema.get("type") == "integer" or (isinstance(schema.get("type"), list) and "integer" in schema["type"])
        hint = ", ".join(["integer" if self.integer else "number", *number_limits(schema)])
        self.widget = w.Text(
            placeholder=_placeholder(schema, hint), layout=ctx.looks.input_layout(), style=ctx.looks.text_style()
        )
        self.widget.add_class(css_name(path)).add_class("mcp-nb-number")
        default = self._start()
        if _real(default):
            try:
                self.widget.value = _number_text(default)
            except ValueError:
                pass  # more digits than Python writes out: the field starts empty
        self.widget.observe(self.callback("typing", self.changed), "value")

    def read(self) -> Any:
        text = self.widget.value.strip()
        if not text:
            return OMIT
        if self.integer:
            if not _INTEGER.fullmatch(text):
                raise BadValue(f"{_typed(text)} is not an integer" + (" (no decimals)" if _NUMBER.fullmatch(text) else ""))
            number: int | float = _integer(text)
        else:
            if not _NUMBER.fullmatch(text):
                raise BadValue(f"{_typed(text)} is not a number")
            number = _integer(text) if _INTEGER.fullmatch(text) else float(text)
            if number in (float("inf"), float("-inf")):
                raise BadValue(f"{_typed(text)} is too large for JSON")
        for key, says, holds in _LIMITS:
            if key in self.schema and not holds(number, self.schema[key]):
                raise BadValue(f"must be {says} {_show(self.schema[key])}")
        step = self.schema.get("multipleOf")
        if step is not None and not _multiple(text, step):
            raise BadValue(f"must be a multiple of {_show(step)}")
        return number

    def load(self, value: Any) -> None:
        if value is OMIT:
            self.widget.value = ""
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or (self.integer and isinstance(value, float)):
            raise BadValue(f"expected {'an integer' if self.integer else 'a number'}, got {_show(value)}")
        else:
            self.widget.value = _number_text(value)


def _number_text(value: float) -> str:
    """A number as it is typed, or BadValue when JSON has no text for it (NaN, an integer of 5000 digits)."""
    if not _real(value):
        raise BadValue(f"{_show(value)} is not a JSON number")
    return _dumps(value)


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:  # more digits than Python reads (sys.get_int_max_str_digits())
        raise BadValue(f"{_typed(text)} has more digits than an integer can have here ({len(text.lstrip('+-'))})") from None


def _typed(text: str, limit: int = 40) -> str:
    """What was typed, quoted, cut short when it is long."""
    return repr(text) if len(text) <= limit else repr(text[: limit - 1]) + "…"


_NOT_SENT = "— not sent —"


def choices(schema: Mapping[str, Any]) -> list[Any]:
    """The fixed values a schema allows: its titled choices, its enum, its const, or true and false."""
    named = titled(schema)
    if named:
        return [value for value, _ in named]
    if "enum" in schema:
        return list(schema["enum"])
    if "const" in schema:
        return [schema["const"]]
    return [True, False] if schema.get("type") == "boolean" else []


class ChoiceField(Field):
    """A dropdown over fixed values: an enum, a const, or an optional boolean.

    An optional field gets a "not sent" choice first; a required one without a default
    starts with nothing chosen, so the form asks rather than picking for the user.
    """

    kind = "enum"

    def __init__(self, schema, ctx, path, required, depth=0) -> None:
        super().__init__(schema, ctx, path, required, depth)
        self.values = values = choices(schema)
        self.offset = 0 if required else 1
        labels = ([] if required else [_NOT_SENT]) + choice_labels(schema, values)
        self.widget = w.Dropdown(
            options=[(label, i) for i, label in enumerate(labels)],
            index=None,
            layout=ctx.looks.fit_layout(),
            style=ctx.looks.choice_style(),
        )
        self.widget.add_class(css_name(path)).add_class("mcp-nb-enum")
        try:
            self.load(self._start())
        except ValueError:
            self.load(OMIT)  # a default that is not one of the values: leave the choice open
        self.widget.observe(self.callback("choosing", self.changed), "index")

    def read(self) -> Any:
        index = self.widget.index
        if index is None or index < self.offset:
            return OMIT
        return self.values[index - self.offset]

    def empty_required(self) -> Any:
        raise BadValue("choose a value")

    def load(self, value: Any) -> None:
        if value is OMIT:
            self.widget.index = None if self.required else 0
            return
        for i, option in enumerate(self.values):
            if option == value and type(option) is type(value):
                self.widget.index = i + self.offset
                return
        raise BadValue(f"{_show(value)} is not one of the choices")


class BooleanField(Field):
    """A checkbox when the field always has a value (required, or a default to show)."""

    kind = "boolean"

    def __init__(self, schema, ctx, path, required, depth=0) -> None:
        super().__init__(schema, ctx, path, required, depth)
        self.widget = w.Checkbox(
            value=self._start() is True, indent=False, layout=ctx.looks.fit_layout(), style=ctx.looks.checkbox_style()
        )
        self.widget.add_class(css_name(path)).add_class("mcp-nb-boolean")
        self.widget.observe(self.callback("ticking", self.changed), "value")

    def read(self) -> Any:
        return self.widget.value

    def hole(self) -> Any:
        return NO_HOLE if self.required else OMIT  # ticked or not, a checkbox is always sent

    def load(self, value: Any) -> None:
        if value is OMIT:
            # A checkbox has no empty state: an optional boolean that was not sent shows its
            # default, which is what the server used (its "not sent" toggle says it is left out).
            self.widget.value = self._default() is True
            if self.required or "default" not in self.schema:
                raise BadValue("a checkbox cannot show 'not sent'")
        elif isinstance(value, bool):
            self.widget.value = value
        else:
            raise BadValue(f"expected true or false, got {_show(value)}")


class MultiSelectField(Field):
    """An array of enum values: pick any of them; sent in the order they are listed."""

    kind = "multiselect"

    def __init__(self, schema, ctx, path, required, depth=0) -> None:
        super().__init__(schema, ctx, path, required, depth)
        items = ctx.resolve(schema["items"])
        self.values = values = choices(items)
        self.widget = w.SelectMultiple(
            options=[(label, i) for i, label in enumerate(choice_labels(items, values))],
            rows=min(len(values), 6),
            layout=ctx.looks.fit_layout(),
            style=ctx.looks.choice_style(),
        )
        self.widget.add_class(css_name(path)).add_class("mcp-nb-multiselect")
        default = self._start()
        if isinstance(default, list):
            try:
                self.load(default)
            except ValueError:
                pass
        self.widget.observe(self.callback("choosing", self.changed), "value")

    def read(self) -> Any:
        chosen = sorted(self.widget.value)
        return [self.values[i] for i in chosen] if chosen else OMIT

    def empty_required(self) -> Any:
        return []

    def hole(self) -> Any:
        return NO_HOLE if self.required else []

    def shows(self, value: Any) -> bool:
        return super().shows(value) and in_order(self.values, value)

    def load(self, value: Any) -> None:
        if value is OMIT:
            self.widget.value = ()
            return
        if not isinstance(value, list):
            raise BadValue(f"expected a list, got {_show(value)}")
        indices = []
        for item in value:
            match = [i for i, v in enumerate(self.values) if v == item and type(v) is type(item)]
            if not match:
                raise BadValue(f"{_show(item)} is not one of the choices")
            indices.append(match[0])
        if indices != sorted(set(indices)):
            raise BadValue("the list repeats or reorders the choices")
        self.widget.value = tuple(indices)


def in_order(values: list[Any], value: Any) -> bool:
    """Whether a multi-select of `values` shows the list `value`: each choice once, in the order
    listed. False only for a list of those choices in another order or repeated (rows show it)."""
    if not isinstance(value, list):
        return True
    indices = []
    for item in value:
        match = [i for i, v in enumerate(values) if same_value(v, item)]
        if not match:
            return True  # not a choice: not a list the schema allows, so nothing shows it
        indices.append(match[0])
    return indices == sorted(set(indices))


class JsonField(Field):
    """Any value the form has no widget for, typed as JSON (`"text"`, `3`, `{"a": 1}`, `null`)."""

    kind = "json"

    def __init__(self, schema, ctx, path, required, depth=0) -> None:
        super().__init__(schema, ctx, path, required, depth)
        self.widget = w.Textarea(
            placeholder=_placeholder(schema, "JSON value"), rows=1, layout=ctx.looks.input_layout(), style=ctx.looks.text_style()
        )
        self.widget.add_class(css_name(path)).add_class("mcp-nb-json")
        default = self._start()
        if default is not OMIT and default is not None:
            try:
                self.widget.value = _dumps(default)
            except ValueError:
                pass  # a default JSON cannot say (an integer of 5000 digits): the field starts empty
            self.widget.rows = _rows_for(self.widget.value)
        self.widget.observe(self.callback("typing", self._grow), "value")
        self.widget.observe(self.callback("typing", self.changed), "value")

    def _grow(self, change) -> None:
        rows = _rows_for(change["new"])
        if rows != self.widget.rows:
            self.widget.rows = rows

    def read(self) -> Any:
        text = self.widget.value
        if not text.strip():
            return OMIT
        try:
            value = read_json(text)
        except BadJson as err:
            if err.lineno is None:  # JSON, but not for Python: nested too deeply, an integer too long
                raise BadValue(f"not JSON the form can read: {err.msg}") from None
            raise BadValue(f"not valid JSON: {err.msg} (line {err.lineno}, column {err.colno})") from None
        if not _finite(value):
            raise BadValue("not valid JSON: NaN, Infinity and numbers beyond the float range (1e999) are not JSON numbers")
        return value

    def load(self, value: Any) -> None:
        self.widget.value = "" if value is OMIT else _dumps(value)


def _finite(value: Any) -> bool:
    """Whether every number in a JSON value is one JSON can send (no NaN, no infinity)."""
    stack = [value]
    while stack:  # a loop, not recursion: the value may be nested nearly as deep as Python's limit
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return False
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return True


class Toggle:
    """A toggle beside a field that sends one fixed value in place of what the field holds."""

    def __init__(self, name: str, description: str, tooltip: str, sends: Any) -> None:
        self.name = name  # its CSS classes: `mcp-nb-<name>`, `mcp-nb-field-<path>-<name>`
        self.description = description
        self.tooltip = tooltip
        self.sends = sends


NULL = Toggle("null", "null", "send null", None)


def hole_toggle(field: Field) -> Toggle:
    """The toggle for the value `field`'s empty state cannot say (`field.hole()`)."""
    hole = field.hole()
    if hole is OMIT:
        default = field.schema.get("default", OMIT)
        said = f" ({_show(default)})" if default is not OMIT else ""
        return Toggle("not-sent", "not sent", f"leave it out: the server applies its default{said}", OMIT)
    if hole == "":
        return Toggle("empty", '""', 'send the empty string (an empty box is not sent)', "")
    return Toggle("empty", "[]", "send the empty list (a list with no items is not sent)", [])


_NONE_ON = object()


class ToggledField(Field):
    """A field and toggles beside it, each sending one fixed value instead of what it holds.

    `X | None` has a **null** toggle (`NullableField`). A field whose empty state already
    means something gets a toggle for the one value that state cannot say, when a value to
    show needs it (`field_for(..., showing=...)`, a call from the history): **not sent** for
    an optional checkbox, `""` for an optional text, `[]` for an optional list. One toggle
    at most is on; while one is, the field beside it is off.
    """

    def __init__(self, inner: Field, toggles: tuple[Toggle, ...] | list[Toggle] = ()) -> None:
        super().__init__(inner.schema, inner.ctx, inner.path, inner.required, inner.depth)
        self.inner = inner
        self.kind = inner.kind
        self.toggles: list[tuple[w.ToggleButton, Toggle]] = []
        looks = inner.ctx.looks
        for toggle in toggles:
            button = w.ToggleButton(
                value=False,
                description=toggle.description,
                tooltip=toggle.tooltip,
                layout=looks.button_layout(),
                style=looks.toggle_style(),
            )
            button.add_class(f"mcp-nb-{toggle.name}").add_class(f"{css_name(inner.path)}-{toggle.name}")
            what = "switching " + ("empty" if toggle.name == "empty" else toggle.description)
            button.observe(self.callback(what, lambda change, button=button: self._toggled(button, change)), "value")
            self.toggles.append((button, toggle))
        self._reverting = False
        self.widget = w.HBox(
            [inner.widget, *(button for button, _ in self.toggles)], layout=w.Layout(width="100%", align_items="flex-start")
        )
        inner.widget.layout.flex = "1 1 auto"
        inner.on_change(self.changed)

    def _on(self) -> Any:
        """What the toggle that is on sends, or _NONE_ON."""
        for button, toggle in self.toggles:
            if button.value:
                return toggle.sends
        return _NONE_ON

    def _toggled(self, button: w.ToggleButton, change) -> None:
        if self._reverting:
            return
        before = [(other, change["old"] if other is button else other.value) for other, _ in self.toggles]
        self._reverting = True  # the other toggles go off quietly
        try:
            if change["new"]:
                for other, _ in self.toggles:
                    if other is not button and other.value:
                        other.value = False
            self.inner.set_enabled(self._on() is _NONE_ON)
        except BaseException:
            for other, value in before:  # the toggles say what is sent
                other.value = value
            raise
        finally:
            self._reverting = False
        self.changed()

    def read(self) -> Any:
        sends = self._on()
        return self.inner.read() if sends is _NONE_ON else sends

    def value(self) -> Any:
        sends = self._on()
        return self.inner.value() if sends is _NONE_ON else sends

    def shows(self, value: Any) -> bool:
        return any(same_value(value, toggle.sends) for _, toggle in self.toggles) or self.inner.shows(value)

    def load(self, value: Any) -> None:
        for button, toggle in self.toggles:
            if same_value(value, toggle.sends):
                if toggle.sends is not None:
                    self.inner.load(OMIT)  # the field beside it shows its empty state (a checkbox, its default)
                button.value = True
                return
        for button, _ in self.toggles:
            button.value = False
        self.inner.load(value)

    def set_enabled(self, enabled: bool) -> None:
        for button, _ in self.toggles:
            button.disabled = not enabled
        self.inner.set_enabled(enabled and self._on() is _NONE_ON)


class NullableField(ToggledField):
    """`X | None`: the field for X, and a **null** toggle that sends an explicit null instead."""

    def __init__(self, inner: Field, toggles: tuple[Toggle, ...] | list[Toggle] = ()) -> None:
        super().__init__(inner, [*toggles, NULL])
        self.null = self.toggles[-1][0]


def _icon_button(icon: str, tooltip: str, css: str, looks: Looks) -> w.Button:
    button = w.Button(icon=icon, tooltip=tooltip, layout=looks.button_layout(), style=looks.button_style())
    button.add_class(css)
    return button


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
        self._check_length(len(values))
        return values

    def _check_length(self, n: int) -> None:
        if "minItems" in self.schema and n < self.schema["minItems"]:
            raise BadValue(f"needs at least {self.schema['minItems']} item(s)")
        if "maxItems" in self.schema and n > self.schema["maxItems"]:
            raise BadValue(f"takes at most {self.schema['maxItems']} item(s)")

    def empty_required(self) -> Any:
        self._check_length(0)
        return []

    def hole(self) -> Any:
        return NO_HOLE if self.required else []  # an optional list with no items is not sent

    def load(self, value: Any) -> None:
        if value is not OMIT and not isinstance(value, list):
            raise BadValue(f"expected a list, got {_show(value)}")
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
            raise BadValue(f"expected an object, got {_show(value)}")
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


def label_html(name: str, schema: Mapping[str, Any], required: bool, root: Mapping[str, Any], problem: str | None = None) -> str:
    """Name, type and description of one property, and what is wrong with its value."""
    # The dropdown lists an enum's values; the label only says it is one.
    schema = readable(schema)
    kind = re.sub(r"enum\([^)]*\)", "enum", schema_type(schema, dict(root)))
    if titled(schema):  # a titled choice: the dropdown shows the titles; the label says it is one
        kind = "enum"
    elif isinstance(schema.get("items"), Mapping) and titled(schema["items"]):
        kind = "array[enum]"
    # The limits of `X | None` are X's.
    variants = schema.get("anyOf") or schema.get("oneOf") or []
    values = [v for v in variants if v.get("type") != "null"]
    limited = values[0] if len(values) == 1 < len(variants) else schema
    bounds = number_limits(limited)
    for key, what in (
        ("minLength", "min length"),
        ("maxLength", "max length"),
        ("minItems", "min items"),
        ("maxItems", "max items"),
    ):
        if key in limited:
            bounds.append(f"{what} {limited[key]}")
    star = f' <span title="required" style="{ERROR.text}">*</span>' if required else ""
    parts = [
        f'<div style="line-height:1.3"><code style="font-weight:600;background:none;padding:0;overflow-wrap:anywhere">{html.escape(str(name))}</code>{star}'
        f' <span style="{MUTED};font-size:0.85em">{html.escape(kind)}'
        + (f" · {html.escape(', '.join(bounds))}" if bounds else "")
        + "</span>"
    ]
    if schema.get("description"):
        parts.append(
            f'<div style="{MUTED};font-size:0.85em;white-space:normal">{html.escape(schema["description"])}</div>'
        )
    if problem:
        parts.append(f'<div class="mcp-nb-problem" style="{ERROR.text};font-size:0.85em">{html.escape(problem)}</div>')
    return "".join(parts) + "</div>"


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
    if kind == "object" and (depth >= _DEPTH or (inside_itself and required and not nullable)):
        kind = "json"  # too deep, or an object that must hold itself: no finite form, a JSON value
    if kind == "object":  # objects say null and "not sent" with their own switch
        with ctx.chain(ctx.expanding | followed):
            return ObjectField(inner, ctx, path, required, depth, nullable=nullable, lazy=inside_itself)
    if kind == "multiselect" and isinstance(showing, list) and not in_order(choices(ctx.resolve(inner["items"])), showing):
        kind = "array"  # one row per item: any order, any repeats
    field = MAPPERS[kind](inner, ctx, path, required, depth)
    toggles = [hole_toggle(field)] if showing is not _NOTHING and same_value(showing, field.hole()) else []
    if nullable:
        return NullableField(field, toggles)
    return ToggledField(field, toggles) if toggles else field


# -- the form ------------------------------------------------------------------------------------


class Form:
    """The form for one input schema: `widget`, `value()` (the arguments), `load(arguments)`."""

    def __init__(
        self, schema: Mapping[str, Any] | None, callback: Callback | None = None, suggest: Callable[[Any, str, str], None] | None = None
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
