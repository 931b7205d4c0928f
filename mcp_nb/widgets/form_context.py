"""What the fields of one form share: the schema they resolve against, the widgets' looks, the callback wrapper.

Also how a form's widgets are named for CSS (`css_name`) and closed (`close_tree`), which the
panel's other tabs use too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import ipywidgets as w

from mcp_nb.calling.input_schema import Path, Resolver


def css_name(path: Path) -> str:
    """A stable CSS class per field (`mcp-nb-field-address-city`), for tests and styling."""
    return "mcp-nb-field-" + ("-".join(re.sub(r"[^A-Za-z0-9_]", "_", str(p)) for p in path) or "root")


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


# A recursive schema (`$ref`s back to a model it is in) builds only what the user asks for:
#
# - A field built to show a value (an item of a list being loaded, a call from the history)
#   starts empty and is loaded with that value, so a default that refers back to its own
#   schema (`items: {$ref: <the array>}, default: [[]]`) is read once, not again per item.
# - Objects built without being asked for (a required one, or an optional one its default
#   switches on) stop at the first `$ref` they already expand: an optional one waits for
#   its switch, a required one (which no finite value fills) is a JSON field. Items, and
#   objects switched on, start a new chain: the user builds a tree one step at a time.


class Context(Resolver):
    """What the fields of one form share: the root schema (for `$ref`s into `$defs`, or the
    older `definitions`) and the widget looks."""

    def __init__(self, root: Mapping[str, Any], callback: Callback | None = None) -> None:
        super().__init__(root)
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
