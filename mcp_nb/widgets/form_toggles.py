"""Toggles beside a field, each sending one fixed value in place of what the field holds.

`X | None` has a **null** toggle; a field whose empty state already means something ("not
sent") gets a toggle for the one value that state cannot say, when a value to show needs it.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as w

from mcp_nb.calling.input_schema import OMIT, same_value
from mcp_nb.calling.typed import show
from mcp_nb.widgets.form_context import css_name
from mcp_nb.widgets.form_fields import Field


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
        said = f" ({show(default)})" if default is not OMIT else ""
        return Toggle("not-sent", "not sent", f"leave it out: the server applies its default{said}", OMIT)
    if hole == "":
        return Toggle("empty", '""', "send the empty string (an empty box is not sent)", "")
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
