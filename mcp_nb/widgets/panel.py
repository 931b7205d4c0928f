"""The panel: pick a tool, resource or prompt, fill its form, call it, read the outcome.

Wiring only; the parts live next door: `form.py` turns a schema into fields,
`history_tab.py` shows the history, `style.py` holds the looks, and
`mcp_nb.display.outcome_html` renders an outcome as everywhere else.

Threads. Widget callbacks (a click, a choice) run on the kernel's thread. A call is
started with `Engine.submit`, which returns the `Call` at once, so the kernel runs other
cells while it is in flight; its future resolves (on mcp_nb's loop thread) to the
recorded Outcome however the call ended, cancelled included, and the panel only sets a
few widget values there and never lets an exception escape. Registry changes arrive on
the thread that registered.
"""

from __future__ import annotations

import asyncio
import html
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import ipywidgets as w

from ..config import check_timeout, settings
from ..display import outcome_html
from ..outcome import Outcome
from ..registry import Registration
from .form import Form, Invalid, close_tree, dotted
from .history_tab import HistoryTab
from .style import (
    ERROR,
    STYLESHEET,
    entry_html,
    kind_label,
    note_html,
    problems_html,
    running_html,
    section,
)

log = logging.getLogger(__name__)

FORM, RAW = "form", "raw JSON"
KIND_ORDER = {"tool": 0, "resource": 1, "prompt": 2}
CACHED_FORMS = 24  # forms kept while switching entries (each keeps what was typed into it)
FATE_POLL_S = 0.2


class _Entry:
    """What the panel keeps per tool, resource or prompt while the user switches between them."""

    __slots__ = ("registration", "form", "mode", "raw_text", "raw_seed")

    def __init__(self, registration: Registration, form: Form) -> None:
        self.registration = registration
        self.form = form
        self.mode = FORM
        self.raw_text = ""
        self.raw_seed = ""  # what the panel last wrote into the raw box itself


def entry_key(entry: Registration) -> tuple[str, str]:
    return (entry.kind, entry.key)


NBSP = "\u00a0"  # an <option> collapses ordinary spaces; these keep the columns aligned


def picker_label(entry: Registration) -> str:
    return f"{kind_label(entry):<9}".replace(" ", NBSP) + entry.key


class Panel(w.VBox):
    """The MCP panel of an engine (`mcp_nb.widgets.show()` makes one for the kernel's engine)."""

    def __init__(self, engine, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.engine = engine
        self.add_class("mcp-nb-panel")
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self._current: tuple[str, str] | None = None
        self._choices: list[tuple[str, tuple[str, str]]] = []
        self._quiet = False  # set while the panel itself rewrites the picker
        self._lock = threading.RLock()
        self._call = None  # the Call in flight
        self.last_call = None  # the latest Call the panel started, kept once done
        self._shown = None  # the outcome on screen (its server-side fate may still change)
        self._retired: Form | None = None  # a replaced entry's form, closed once the new one shows
        self._running = False
        self._closed = False

        # -- the picker
        self.filter = w.Text(placeholder="filter by name", layout=w.Layout(width="auto"))
        self.filter.add_class("mcp-nb-filter")
        self.picker = w.Select(options=[], value=None, rows=18, layout=w.Layout(width="auto"))
        self.picker.add_class("mcp-nb-picker")
        picker_box = w.VBox(
            [w.HTML(section("on the server")), self.filter, self.picker],
            layout=w.Layout(width="250px", flex="0 0 250px", margin="0 14px 0 0"),
        )

        # -- the call
        self.header = w.HTML()
        self.header.add_class("mcp-nb-entry")
        self.mode = w.ToggleButtons(options=[FORM, RAW], value=FORM, style={"button_width": "88px"})
        self.mode.add_class("mcp-nb-mode")
        self.form_box = w.Box(layout=w.Layout(width="100%"))
        self.form_box.add_class("mcp-nb-form-box")
        self.raw = w.Textarea(
            placeholder='{"name": "value"}: sent exactly as written, wrong types included',
            rows=8,
            layout=w.Layout(width="auto", display="none"),
        )
        self.raw.add_class("mcp-nb-raw")
        self.uri = w.HTML()
        self.uri.add_class("mcp-nb-uri")
        self.problems = w.HTML()
        self.problems.add_class("mcp-nb-problems")
        self.timeout = w.Text(value=_seconds(settings.timeout), layout=w.Layout(width="70px"))
        self.timeout.add_class("mcp-nb-timeout")
        self.call_button = w.Button(description="Call", icon="play", button_style="primary", layout=w.Layout(width="auto"))
        self.call_button.add_class("mcp-nb-call")
        self.cancel_button = w.Button(
            description="Cancel", icon="stop", button_style="warning", layout=w.Layout(width="auto", display="none")
        )
        self.cancel_button.add_class("mcp-nb-cancel")
        self.status = w.HTML()
        self.status.add_class("mcp-nb-status")
        controls = w.HBox(
            [
                w.HTML('<span style="white-space:nowrap">timeout (s)</span>'),
                self.timeout,
                self.call_button,
                self.cancel_button,
                self.status,
            ],
            layout=w.Layout(align_items="center", grid_gap="8px", flex_flow="row wrap"),
        )
        controls.add_class("mcp-nb-controls")
        self.outcome = w.HTML()
        self.outcome.add_class("mcp-nb-outcome-view")
        call_box = w.VBox(
            [self.header, self.mode, self.form_box, self.raw, self.uri, self.problems, controls, self.outcome],
            layout=w.Layout(flex="1 1 420px", min_width="0", grid_gap="6px"),
        )
        call_page = w.HBox([picker_box, call_box], layout=w.Layout(width="100%", flex_flow="row wrap", padding="6px 2px"))

        # -- the history
        self.history_tab = HistoryTab(engine.history, self._load_call)
        self.history_tab.on_count = self._count_calls
        self.tabs = w.Tab(
            children=[call_page, self.history_tab.widget], titles=["Call", self._history_title(len(engine.history))]
        )
        self.tabs.add_class("mcp-nb-tabs")
        self.tabs.observe(self._tab_changed, "selected_index")

        self.title = w.HTML()
        self.children = [w.HTML(STYLESHEET), self.title, self.tabs]

        # -- wiring
        self.filter.observe(lambda _: self._show_choices(), "value")
        self.picker.observe(self._picked, "value")
        self.mode.observe(self._mode_changed, "value")
        self.raw.observe(self._raw_edited, "value")
        self.call_button.on_click(lambda _: self.call())
        self.cancel_button.on_click(lambda _: self.cancel())
        settings.observe(self._default_timeout_changed, "timeout")
        engine.registry.subscribe(self.refresh)
        engine.history.subscribe(self._recorded)
        engine.on_close(self._server_closed)
        self.refresh()

    # -- what the server offers --------------------------------------------------------------------

    def refresh(self) -> None:
        """Re-read the registry: called after every registration and removal (a re-run cell)."""
        if self._closed:
            return
        with self._lock:
            entries = sorted(self.engine.registry.entries(), key=lambda e: KIND_ORDER.get(e.kind, 9))
            current = {entry_key(e): e for e in entries}
            replaced = False
            for key in list(self._entries):
                kept = self._entries[key]
                if current.get(key) is not kept.registration:
                    # Removed, or replaced by a re-run cell: the old form describes an old schema.
                    self._entries.pop(key)
                    if key == self._current and key in current:
                        self._carry_over(kept, current[key])
                        replaced = True
                    else:
                        kept.form.close()
            self._choices = [(picker_label(e), entry_key(e)) for e in entries]
            self.title.value = _title_html(self.engine, entries)
            if self._current not in current:
                self._current = None
            self._show_choices(reshow=replaced)

    def _carry_over(self, old: _Entry, registration: Registration) -> None:
        """A re-run cell keeps what was typed, where the new schema still takes it."""
        new = self._new_entry(registration)
        try:
            values = old.form.value()
        except Invalid:
            values = None
        if values is not None and not new.form.load(values):
            new.form.close()
            new = self._new_entry(registration)
        new.mode, new.raw_text, new.raw_seed = old.mode, old.raw_text, old.raw_seed
        self._entries[entry_key(registration)] = new
        self._retired = old.form  # closed once the new form is on screen

    def _new_entry(self, registration: Registration) -> _Entry:
        entry = _Entry(registration, Form(registration.input_schema))
        key = entry_key(registration)
        entry.form.on_change(lambda: self._form_changed(key))
        return entry

    def _show_choices(self, reshow: bool = False) -> None:
        """Fill the picker (filtered); keep the chosen entry, else choose the first one shown."""
        wanted = self.filter.value.strip().lower()
        choices = [c for c in self._choices if wanted in c[0].lower()] if wanted else list(self._choices)
        values = [value for _, value in choices]
        chosen = self._current if self._current in values else (values[0] if values else None)
        with self._quietly():
            self.picker.options = choices
            self.picker.value = chosen
        if chosen is not None and (chosen != self._current or reshow):
            self.select(*chosen)
        elif not self._choices:
            self._show_nothing()

    def _picked(self, change) -> None:
        if self._quiet or change["new"] is None:
            return
        self.select(*change["new"])

    def select(self, kind: str, key: str) -> None:
        """Show the form of one entry: `panel.select("tool", "get_author")`."""
        registration = self.engine.registry.get(kind, key)
        if registration is None:
            raise ValueError(f"no {kind} {key!r} is registered")
        with self._lock:
            self._leave_current()
            entry = self._entry(registration)
            self._current = (kind, key)
            if self.picker.value != (kind, key):
                with self._quietly():
                    if (kind, key) not in [v for _, v in self.picker.options]:
                        self.filter.value = ""
                        self.picker.options = self._choices
                    self.picker.value = (kind, key)
            self.header.value = entry_html(registration)
            self.form_box.children = (entry.form.widget,)
            retired = self._retired
            if retired is not None:
                self._retired = None
                retired.close()
            with self._quietly():
                self.raw.value = entry.raw_text
                self.mode.value = entry.mode
            resource = registration.kind == "resource"
            self.mode.disabled = resource
            self.mode.tooltip = "a resource is read by its URI: it takes no arguments object" if resource else ""
            self._show_mode(entry.mode)
            self.call_button.description = {"tool": "Call", "resource": "Read", "prompt": "Get"}[registration.kind]
            self.call_button.disabled = self._call is not None or self.engine.closed
            self.problems.value = ""
            self._show_uri()
            self._render_outcome()

    def _entry(self, registration: Registration) -> _Entry:
        key = entry_key(registration)
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = self._new_entry(registration)
            while len(self._entries) > CACHED_FORMS:
                oldest, dropped = next(iter(self._entries.items()))
                if oldest == self._current:
                    break
                self._entries.pop(oldest)
                dropped.form.close()
        self._entries.move_to_end(key)
        return entry

    def _leave_current(self) -> None:
        entry = self._entries.get(self._current) if self._current else None
        if entry is not None:
            entry.raw_text = self.raw.value

    def _show_nothing(self) -> None:
        self._current = None
        self.header.value = note_html(
            "Nothing is registered yet. Run a %%mcp_tool, %%mcp_resource or %%mcp_prompt cell "
            "(or use @mcp_nb.tool()): it appears here at once."
        )
        self.form_box.children = ()
        self.uri.value = ""
        self.call_button.disabled = True

    def _form_changed(self, key: tuple[str, str]) -> None:
        if key == self._current:
            self.problems.value = ""  # a list of what was wrong is stale once anything changes
            self._show_uri()

    def _show_uri(self) -> None:
        entry = self._entries.get(self._current) if self._current else None
        if entry is None or entry.registration.kind != "resource":
            self.uri.value = ""
            return
        try:
            uri = self._uri(entry)
            self.uri.value = note_html(f"reads {uri}")
        except Invalid:
            self.uri.value = note_html(f"reads {entry.registration.uri} once its variables are filled in")

    # -- form and raw JSON ---------------------------------------------------------------------------

    def _mode_changed(self, change) -> None:
        if self._quiet or self._current is None:
            return
        entry = self._entries[self._current]
        entry.mode = change["new"]
        if entry.mode == RAW and self.raw.value == entry.raw_seed:
            # Untouched so far: start from what the form holds. Text the user wrote is
            # never replaced, nor reformatted.
            try:
                seed = json.dumps(entry.form.value(), indent=2, ensure_ascii=False)
            except Invalid:
                seed = "{}"
            entry.raw_seed = seed
            with self._quietly():
                self.raw.value = seed
        self.problems.value = ""
        self._show_mode(entry.mode)

    def _show_mode(self, mode: str) -> None:
        self.form_box.layout.display = "none" if mode == RAW else None
        self.raw.layout.display = None if mode == RAW else "none"

    def _raw_edited(self, change) -> None:
        if not self._quiet and self._current in self._entries:
            self._entries[self._current].raw_text = change["new"]
            self.problems.value = ""

    # -- calling -------------------------------------------------------------------------------------

    def request(self) -> tuple[str, str, dict[str, Any] | None, float]:
        """What Call would send now: (target, name or URI, arguments, timeout). Raises Invalid."""
        if self._current is None or self._current not in self._entries:
            raise Invalid([((), "nothing to call: choose a tool, resource or prompt")])
        entry = self._entries[self._current]
        registration = entry.registration
        problems = []
        try:
            timeout = check_timeout(float(self.timeout.value), "the timeout")
        except ValueError:
            problems.append((("timeout",), f"must be a positive number of seconds, not {self.timeout.value!r}"))
            timeout = 0.0
        arguments: dict[str, Any] | None = None
        name = registration.key
        try:
            if registration.kind == "resource":
                name = self._uri(entry)
            elif entry.mode == RAW:
                arguments = parse_raw(self.raw.value)
            else:
                arguments = entry.form.value()
        except Invalid as err:
            problems.extend(err.problems)
        if problems:
            raise Invalid(problems)
        return registration.kind, name, arguments, timeout

    def _uri(self, entry: _Entry) -> str:
        registration = entry.registration
        if registration.input_schema is None:
            return registration.uri
        from mcp.shared.uri_template import UriTemplate

        variables = entry.form.value()
        return UriTemplate.parse(registration.uri).expand({k: v for k, v in variables.items() if v is not None})

    def call(self):
        """Send what is on screen (the Call button). Returns the `Call`, or None if nothing was sent."""
        if self._call is not None:
            return None
        if self.engine.closed:
            self._server_closed()
            return None
        try:
            target, name, arguments, timeout = self.request()
        except Invalid as err:
            self.problems.value = problems_html("Nothing was sent:", [f"{dotted(p)}: {m}" if p else m for p, m in err.problems])
            return None
        try:
            call = self.engine.submit(target, name, arguments, timeout)
        except (ValueError, TypeError) as err:  # the engine's own checks, before anything is sent
            self.problems.value = problems_html("Nothing was sent:", [str(err)])
            return None
        self.problems.value = ""
        self._call = self.last_call = call
        self.call_button.disabled = True
        self.cancel_button.layout.display = None
        self.status.value = running_html(target, name, timeout)
        self._running = True
        self._render_outcome()  # the last outcome stays for reference, dimmed: it is not this call's
        call.future.add_done_callback(self._finished)
        return call

    def cancel(self) -> None:
        """Stop the running call (the Cancel button); it is recorded, and shown, as cancelled."""
        call = self._call
        if call is None:
            return
        # Said before cancelling: the record (and so the outcome view) may arrive at once.
        self.status.value = note_html("cancelled: waiting for the record of the call")
        if not call.cancel():
            self.status.value = ""  # it had just finished; its outcome shows as usual

    def _finished(self, future) -> None:
        # On mcp_nb's loop thread: set widgets, raise nothing. The future holds the recorded
        # Outcome however the call ended, a cancellation included.
        try:
            self._idle()
            error = future.exception()
            if error is not None:
                self.problems.value = problems_html("The call failed inside mcp_nb:", [f"{type(error).__name__}: {error}"])
                self.status.value = ""
                return
            self.show_outcome(future.result())
        except Exception:
            log.exception("showing a call's outcome failed")

    def _idle(self) -> None:
        self._call = None
        self._running = False
        self.call_button.disabled = self._current is None or self.engine.closed
        self.cancel_button.layout.display = "none"

    def _server_closed(self) -> None:
        # The engine's close listener (`mcp_nb.reset()`): this panel's server is gone. Its
        # widgets stay on screen, the history tab included, but it offers no more calls.
        try:
            self._unsubscribe()
            self._idle()
            self.refresh()  # once more, for the title: it now says the server was replaced
            self.status.value = ""
            self.problems.value = problems_html(
                "This panel's server was closed by mcp_nb.reset().",
                ["Show a panel of the new server with mcp_nb.panel() (or %mcp_panel)."],
            )
        except Exception:
            log.exception("the panel's close listener failed")

    def _recorded(self, outcome) -> None:
        # The history's listener, on the thread that recorded the call (mcp_nb's loop).
        try:
            self.history_tab.recorded()
        except Exception:
            log.exception("the panel's history listener failed")

    def show_outcome(self, outcome) -> None:
        """Show an outcome: badge, the three views, the duration, and a timeout's server-side fate."""
        self._shown = outcome
        self._render_outcome()
        self.status.value = ""
        if isinstance(outcome, Outcome) and outcome.outcome == "timeout" and outcome.server_fate == "running":
            self.engine.loop.submit(self._watch_fate(outcome))

    def _render_outcome(self) -> None:
        """The outcome on screen, dimmed while a call runs or when it is another entry's."""
        shown = self._shown
        if shown is None:
            self.outcome.value = ""
            return
        html_ = outcome_html(shown)
        found = self._find(shown.target, shown.name)
        if self._running or found is None or entry_key(found[0]) != self._current:
            html_ = f'<div class="mcp-nb-previous" style="opacity:.45">{html_}</div>'
        if self.outcome.value != html_:
            self.outcome.value = html_

    async def _watch_fate(self, outcome) -> None:
        """The handler of a timed-out call may still finish: show how, once it does."""
        try:
            while self._shown is outcome and not self._closed and outcome.server_fate == "running":
                await asyncio.sleep(FATE_POLL_S)
            if self._shown is outcome and not self._closed:
                self._render_outcome()
                self.history_tab.recorded()  # the history's fate columns changed too
        except Exception:
            log.exception("watching a timed-out call failed")

    # -- the history tab -----------------------------------------------------------------------------

    def _tab_changed(self, change) -> None:
        self.history_tab.show(change["new"] == 1)

    def _count_calls(self, n: int) -> None:
        titles = list(self.tabs.titles)
        title = self._history_title(n)
        if titles[1] != title:
            titles[1] = title
            self.tabs.titles = tuple(titles)

    @staticmethod
    def _history_title(n: int) -> str:
        return f"History ({n})" if n else "History"

    def _load_call(self, call) -> None:
        """A call chosen in the history: its entry, its arguments in the form, its outcome."""
        found = self._find(call.target, call.name)
        self.tabs.selected_index = 0
        if found is None:
            self.problems.value = problems_html(f"{call.target} {call.name} is no longer registered.", [])
            self.show_outcome(call)
            return
        registration, variables = found
        # A template read comes back as its URI's variables; a static read has none.
        arguments = variables if registration.kind == "resource" else dict(call.arguments or {})
        self.select(registration.kind, registration.key)
        entry = self._entries[self._current]
        if arguments is None or entry.form.load(arguments):
            self._set_mode(entry, FORM)
        else:
            # Arguments the form cannot show exactly (wrong types, extra keys): raw JSON can.
            text = json.dumps(arguments, indent=2, ensure_ascii=False)
            entry.form.close()
            entry.form = self._new_entry(registration).form
            self.form_box.children = (entry.form.widget,)
            entry.raw_text = entry.raw_seed = text
            with self._quietly():
                self.raw.value = text
            self._set_mode(entry, RAW)
            self.problems.value = note_html("These arguments do not fit the form, so they are in raw JSON, as they were sent.")
        self._show_uri()
        self.show_outcome(call)
        self.status.value = note_html(f"call #{call.call_id} from the history")

    @contextmanager
    def _quietly(self) -> Iterator[None]:
        """While the panel itself rewrites a widget, its observers must not read it as the user's doing."""
        self._quiet = True
        try:
            yield
        finally:
            self._quiet = False

    def _set_mode(self, entry: _Entry, mode: str) -> None:
        entry.mode = mode
        with self._quietly():
            self.mode.value = mode
        self._show_mode(mode)

    def _find(self, target: str, name: str) -> tuple[Registration, dict[str, str] | None] | None:
        """The entry a past call reached, and for a template read the variables of its URI."""
        registry = self.engine.registry
        if target != "resource":
            entry = registry.get(target, name)
            return None if entry is None else (entry, None)
        static = registry.get("resource", name)
        if static is not None:
            return static, None
        from mcp.shared.uri_template import UriTemplate

        for entry in registry.entries():
            if entry.kind == "resource" and entry.input_schema is not None:
                try:
                    variables = UriTemplate.parse(entry.uri).match(name)
                except Exception:  # noqa: BLE001  a template that cannot match this URI is not its entry
                    continue
                if variables is not None:
                    return entry, {k: str(v) for k, v in variables.items()}
        return None

    # -- settings and lifetime -----------------------------------------------------------------------

    def _default_timeout_changed(self, change) -> None:
        # Follow the configured default, unless the user typed a timeout of their own.
        if self.timeout.value == _seconds(change["old"]):
            self.timeout.value = _seconds(change["new"])

    def _unsubscribe(self) -> None:
        self.engine.registry.unsubscribe(self.refresh)
        self.engine.history.unsubscribe(self._recorded)
        self.engine.on_close(self._server_closed, remove=True)
        with suppress(ValueError):  # already stopped observing
            settings.unobserve(self._default_timeout_changed, "timeout")

    def close(self) -> None:
        """Stop listening to the server, the history and the settings, and close every widget."""
        if self._closed:
            return
        self._closed = True
        self._unsubscribe()
        self.history_tab.close()
        for entry in self._entries.values():
            entry.form.close()
        self._entries.clear()
        if self._retired is not None:
            self._retired.close()
        for child in self.children:
            close_tree(child)
        self.layout.close()
        super().close()


def parse_raw(text: str) -> dict[str, Any]:
    """The raw-JSON box as the arguments object, exactly as written; raises Invalid."""
    if not text.strip():
        raise Invalid([((), "the raw JSON is empty: write {} to send no arguments")])
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise Invalid([((), f"the raw JSON is not valid: {err.msg} at line {err.lineno}, column {err.colno}")]) from None
    if not isinstance(value, dict):
        raise Invalid([((), f"the arguments must be a JSON object ({{...}}), not {type(value).__name__}")])
    return value


def _seconds(value: float) -> str:
    return f"{value:g}"


def _title_html(engine, entries: list[Registration]) -> str:
    counts: dict[str, int] = {}
    for e in entries:
        counts[kind_label(e)] = counts.get(kind_label(e), 0) + 1
    order = ("tool", "resource", "template", "prompt")
    parts = ", ".join(f"{counts[k]} {k}{'s' if counts[k] != 1 else ''}" for k in order if k in counts) or "nothing registered"
    name = html.escape(str(getattr(engine.server, "name", "mcp_nb")))
    replaced = (
        f' · <b class="mcp-nb-replaced" style="color:{ERROR}">replaced by mcp_nb.reset(): show a new panel</b>'
        if engine.closed
        else ""
    )
    return (
        f'<div style="display:flex;align-items:baseline;gap:10px;margin:0 0 4px">'
        f'<b style="font-size:1.1em">MCP panel</b><span style="color:var(--jp-ui-font-color2,#59636e)">'
        f"in-kernel server <code>{name}</code> · {parts}{replaced}</span></div>"
    )


def show(engine=None) -> Panel:
    """The panel for the kernel's server (or `engine`'s); IPython displays the returned widget."""
    if engine is None:
        import mcp_nb

        engine = mcp_nb.engine()
    return Panel(engine)
