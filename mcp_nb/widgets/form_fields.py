"""The fields of a form that hold one value each: a text, a number, a choice, a checkbox, a
multi-select, a JSON value; and the label beside each.

A field is a widget, `read()` / `value()` to read what is on screen as the JSON value to send,
and `load(value)` to put a value back (a call from the history). What the text means is
`mcp_nb.calling.typed`'s; what the schema allows, `mcp_nb.calling.input_schema`'s. The fields
that hold other fields (a list, an object) are in `mcp_nb.widgets.form`, with the dispatch.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Mapping
from typing import Any

import ipywidgets as w

from mcp_nb.calling.input_schema import (
    NO_HOLE,
    OMIT,
    Path,
    choice_labels,
    choices,
    dotted,
    in_order,
    readable,
    same_value,
    titled,
)
from mcp_nb.calling.typed import dumps, number_limits, number_text, read_json_value, read_number, show
from mcp_nb.elicitation import is_secret
from mcp_nb.mistakes import BadValue
from mcp_nb.numbers import is_number
from mcp_nb.views.cards import schema_type
from mcp_nb.views.theme import ERROR, MUTED
from mcp_nb.widgets.form_context import Context, close_tree, css_name

_LONG_TEXT = 70  # characters per row before a text field grows another row
_MAX_ROWS = 12


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


def _placeholder(schema: Mapping[str, Any], fallback: str) -> str:
    """What an empty field says: its default (which the server applies when it is left out)."""
    default = schema.get("default")
    if default is not None and default != "" and default != [] and default != {}:
        return "default: " + show(default)
    return fallback


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
                placeholder=_placeholder(schema, hint),
                options=(),
                ensure_option=False,
                layout=looks.input_layout(),
                style=looks.text_style(),
            )
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
            raise BadValue(f"expected a string, got {show(value)}")


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
        if is_number(default):
            try:
                self.widget.value = number_text(default)
            except ValueError:
                pass  # more digits than Python writes out: the field starts empty
        self.widget.observe(self.callback("typing", self.changed), "value")

    def read(self) -> Any:
        text = self.widget.value.strip()
        return read_number(text, self.schema, self.integer) if text else OMIT

    def load(self, value: Any) -> None:
        if value is OMIT:
            self.widget.value = ""
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or (self.integer and isinstance(value, float)):
            raise BadValue(f"expected {'an integer' if self.integer else 'a number'}, got {show(value)}")
        else:
            self.widget.value = number_text(value)


_NOT_SENT = "— not sent —"


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
        raise BadValue(f"{show(value)} is not one of the choices")


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
            raise BadValue(f"expected true or false, got {show(value)}")


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
            raise BadValue(f"expected a list, got {show(value)}")
        indices = []
        for item in value:
            match = [i for i, v in enumerate(self.values) if v == item and type(v) is type(item)]
            if not match:
                raise BadValue(f"{show(item)} is not one of the choices")
            indices.append(match[0])
        if indices != sorted(set(indices)):
            raise BadValue("the list repeats or reorders the choices")
        self.widget.value = tuple(indices)


class JsonField(Field):
    """Any value the form has no widget for, typed as JSON (`"text"`, `3`, `{"a": 1}`, `null`)."""

    kind = "json"
    hint = "JSON value"  # what the empty box says

    def __init__(self, schema, ctx, path, required, depth=0) -> None:
        super().__init__(schema, ctx, path, required, depth)
        self.widget = w.Textarea(
            placeholder=_placeholder(schema, self.hint), rows=1, layout=ctx.looks.input_layout(), style=ctx.looks.text_style()
        )
        self.widget.add_class(css_name(path)).add_class("mcp-nb-json")
        default = self._start()
        if default is not OMIT and default is not None:
            try:
                self.widget.value = dumps(default)
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
        return read_json_value(text) if text.strip() else OMIT

    def load(self, value: Any) -> None:
        self.widget.value = "" if value is OMIT else dumps(value)


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
        parts.append(f'<div style="{MUTED};font-size:0.85em;white-space:normal">{html.escape(schema["description"])}</div>')
    if problem:
        parts.append(f'<div class="mcp-nb-problem" style="{ERROR.text};font-size:0.85em">{html.escape(problem)}</div>')
    return "".join(parts) + "</div>"
