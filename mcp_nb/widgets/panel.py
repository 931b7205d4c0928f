"""The panel: pick a tool, resource or prompt, fill its form, call it, read the outcome.

Wiring only; the parts live next door: `form.py` turns a schema into fields,
`history_tab.py` shows the history, `style.py` holds the looks, and
`mcp_nb.views.cards.outcome_html` renders an outcome as everywhere else.

Threads. The kernel's thread owns every widget update. Widget callbacks (a click, a
choice) run there already. A call is started with `Engine.submit`, which returns the
`Call` at once, so the kernel runs other cells while the call is in flight; its future
resolves, on mcp_nb's loop thread, to the recorded Outcome however the call ended (a
cancellation included), and registry changes arrive on the thread that registered:
every such entry point only hands over to the kernel's thread (`callbacks.KernelThread`).

Failures. Every callback goes through one `callbacks.Guard`: an exception is shown in
the panel, and the widgets are put back in step with the panel's state. To keep that
state whole, a change is computed first (the new form, its header, its outcome view) and
only then put on screen.

Lifetime. What the panel listens to (the server's offers, the history, the connections, the
engine's closing, the default timeout) holds it weakly, so a panel that is gone costs nothing:
`close()` takes every listener back at once, and a panel nothing refers to any more takes them
back as it goes. (ipywidgets 8 and the kernel's comm manager keep every widget until it is
closed, so in a kernel today a panel is gone once closed; mcp_nb adds no hold of its own.)
"""

from __future__ import annotations

import asyncio
import json
import logging
import weakref
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import ipywidgets as w
from mcp.shared.uri_template import UriTemplate

from mcp_nb.calling import default
from mcp_nb.calling.suggestions import suggested
from mcp_nb.config import check_timeout, settings
from mcp_nb.mistakes import BadJson, BadValue, McpNbError, read_json
from mcp_nb.records.listeners import WeakCall
from mcp_nb.records.outcome import Outcome
from mcp_nb.registering.registry import Registration
from mcp_nb.views.cards import outcome_html
from mcp_nb.views.live import countable
from mcp_nb.widgets.callbacks import FailureView, Guard, KernelThread
from mcp_nb.widgets.form import Form, Invalid, close_tree, dotted
from mcp_nb.widgets.panel_parts import FORM, RAW, PanelParts, seconds_text
from mcp_nb.widgets.picker import (
    entry_key,
    picker_label,
    picker_tooltip,
    server_tooltip,
    title_html,
)
from mcp_nb.widgets.style import (
    entry_html,
    note_html,
    problems_html,
    progress_html,
    running_html,
)

log = logging.getLogger(__name__)

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


class Panel(PanelParts, w.VBox):
    """The MCP panel of an engine (`mcp_nb.widgets.show()` makes one for the kernel's engine).

    `kernel_thread`: where its widget updates run; by default the kernel's main thread
    (outside a kernel, whichever thread brings them, one at a time).
    """

    def __init__(
        self, engine, *, kernel_thread: KernelThread | None = None, server: str | None = None, history: Any = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.engine = engine
        # The History tab's history: the engine's, or one given (a history file reopened, every
        # session's calls); the engine's calls still refresh it, and a call chosen there is made again here.
        self.history = engine.history if history is None else history
        self.server = engine.connection_for(server).name  # the connection whose offers the panel shows
        self.add_class("mcp-nb-panel")
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self._current: tuple[str, str] | None = None
        self._choices: list[tuple[str, tuple[str, str]]] = []
        self._names: dict[tuple[str, str], str] = {}  # each choice's full text, which the filter reads
        self._quiet = False  # set while the panel itself rewrites the picker
        self._thread = kernel_thread or KernelThread.of_kernel()
        self._lock = self._thread.lock
        self._call = None  # the Call in flight
        self.last_call = None  # the latest Call the panel started, kept once done
        self._shown = None  # the outcome on screen (its server-side fate may still change)
        self._retired: Form | None = None  # a replaced entry's form, closed once the new one shows
        self._running = False
        self._running_status = ""
        self._closed = False
        self.failure = w.HTML()
        self.failure.add_class("mcp-nb-failure")
        self._guard = Guard(self._thread, FailureView(self.failure), self._recover, lambda: self._closed)
        call_page = w.HBox(
            [self._build_picker(), self._build_call_box()],
            layout=w.Layout(width="100%", flex_flow="row wrap", padding="6px 2px"),
        )
        self._build_tabs(call_page)
        self._wire()
        self.refresh()

    def _wire(self) -> None:
        """Every callback and listener, through the guard (the two call listeners, `_finished` and
        `_recorded`, hand over to it themselves)."""
        engine = self.engine
        on = self._guard
        self.servers.observe(on("choosing a server", self._server_chosen), "value")
        self.filter.observe(on("filtering the list", lambda _: self._show_choices()), "value")
        self.picker.observe(on("choosing an entry", self._picked), "value")
        self.mode.observe(on("switching between form and raw JSON", self._mode_changed), "value")
        self.raw.observe(on("editing the raw JSON", self._raw_edited), "value")
        # Call, Complete and the tabs' buttons send what the fields show, their last changes included
        # (`Settle`): typed while a cell ran, those can reach the kernel after the click.
        self.call_button.on_click(on.settled("calling", self.call))
        on.settle.watch(self.timeout, self.reset_on_progress, self.authorize.address)
        self.authorize.complete.on_click(on.settled("completing an authorization", self.authorize.finish))
        self.cancel_button.on_click(on("cancelling", lambda _: self.cancel(), edit=False))
        # The listeners: bound methods, which the engine, the history, the registry and the
        # connections hold weakly; traitlets keeps whatever it is given, so the settings get a
        # WeakCall of one, taken back when this panel goes (`_forget`).
        self._weak = WeakCall(self._timeout_heard)
        settings.observe(self._weak, "timeout")
        self._catalog().subscribe(self._offers_heard)
        engine.on_connections(self._connections_heard)
        engine.history.subscribe(self._recorded)
        engine.on_close(self._closed_heard)
        self._forgetting = weakref.finalize(self, _forget, self._weak)
        self._forgetting.atexit = False  # nothing to take back from an interpreter that is ending

    # -- what the panel listens to: each hands over to the kernel's thread, guarded -------------

    def _offers_heard(self) -> None:
        self._guard.enter("re-reading the server", self.refresh)

    def _timeout_heard(self, change) -> None:
        self._guard.enter("following the default timeout", self._default_timeout_changed, change)

    def _closed_heard(self) -> None:
        self._guard.enter("closing with the server", self._server_closed)

    def _connections_heard(self) -> None:
        self._guard.enter("following the connections", self._connections_changed)

    # -- what the server offers --------------------------------------------------------------------

    def _catalog(self):
        """The connection whose offers are shown (the kernel's own if it was disconnected)."""
        return self.engine.connections.get(self.server) or self.engine.connection

    def _server_chosen(self, change) -> None:
        if self._quiet or change["new"] is None or change["new"] == self.server:
            return
        self.show_server(change["new"])

    def show_server(self, name: str) -> None:
        """Show what the connection `name` offers: `panel.show_server("everything")`."""
        connection = self.engine.connection_for(name)
        with self._lock:
            self._catalog().unsubscribe(self._offers_heard)
            self.server = connection.name
            self.servers.tooltip = server_tooltip(self.engine, self.server)
            connection.subscribe(self._offers_heard)
            # Forms belong to one server's schemas: the other server's are closed.
            for entry in self._entries.values():
                entry.form.close()
            self._entries.clear()
            self._current = None
            with self._quietly():
                if self.servers.value != self.server:
                    self.servers.value = self.server
                self.filter.value = ""
            self.refresh()

    def _connections_changed(self) -> None:
        names = list(self.engine.connections)
        gone = self.server not in names
        with self._quietly():
            self.servers.options = names
            self.servers.value = self.server if not gone else names[0]
        if gone:
            self.show_server(names[0])

    def refresh(self) -> None:
        """Re-read what the server offers: called after every registration and removal (a re-run
        cell), and when an outside server says its lists changed."""
        if self._closed:
            return
        with self._lock:
            connection = self._catalog()
            self.authorize.show_for(connection)
            entries = sorted(connection.entries(), key=lambda e: KIND_ORDER.get(e.kind, 9))
            current = {entry_key(e): e for e in entries}
            title = title_html(self.engine, entries, connection)
            chosen = self._entries.get(self._current) if self._current else None
            carried = None
            if chosen is not None and self._current in current and current[self._current] is not chosen.registration:
                carried = self._carry_over(chosen, current[self._current])  # may fail: nothing changed yet
            for key in list(self._entries):
                kept = self._entries[key]
                if current.get(key) is not kept.registration:
                    # Removed, or replaced by a re-run cell: the old form describes an old schema.
                    self._entries.pop(key)
                    if kept is chosen and carried is not None:
                        self._entries[key] = carried
                        self._retired = kept.form  # closed once the new form is on screen
                    else:
                        kept.form.close()
            self._choices = [(picker_label(e), entry_key(e)) for e in entries]
            self._names = {entry_key(e): picker_tooltip(e).lower() for e in entries}
            self.title.value = title
            if self._current not in current:
                self._current = None
            self._show_choices(reshow=carried is not None)
        self.changes_tab.changed()

    def _carry_over(self, old: _Entry, registration: Registration) -> _Entry:
        """A re-run cell keeps what was typed, where the new schema still takes it."""
        new = self._new_entry(registration)
        try:
            try:
                values = old.form.value()
            except Invalid:
                values = None
            if values is not None and not new.form.load(values):
                new.form.close()
                new = self._new_entry(registration)
        except BaseException:
            new.form.close()
            raise
        new.mode, new.raw_text, new.raw_seed = old.mode, old.raw_text, old.raw_seed
        return new

    def _form_for(self, registration: Registration) -> Form:
        """The form of an entry; a prompt's or a template's text fields offer what the server suggests."""
        if registration.kind not in ("prompt", "resource") or not registration.input_schema:
            return Form(registration.input_schema, self._guard)
        connection = self._catalog()
        made: dict[str, Form] = {}

        def ask(field: Any, name: str, typed: str) -> None:
            form = made.get("form")
            others = (
                {}
                if form is None
                else {
                    other: f.widget.value
                    for other, f in form.fields.items()
                    if other != name and isinstance(getattr(f.widget, "value", None), str) and f.widget.value
                }
            )
            asked = self.engine.loop.submit(suggested(connection, registration, name, typed, others))

            def heard(future) -> None:
                if not future.cancelled() and future.exception() is None:
                    self._guard.enter("offering the server's suggestions", field.offer, future.result())

            asked.add_done_callback(heard)

        def suggest(field: Any, name: str, typed: str) -> None:
            ask(field, name, typed)
            # What the other fields may be can depend on this one (a team member of the department chosen).
            for other, each in made["form"].fields.items() if "form" in made else ():
                if other != name and getattr(each, "_suggesting", False):
                    ask(each, other, each.widget.value)

        form = made["form"] = Form(registration.input_schema, self._guard, suggest=suggest)
        for name, field in form.fields.items():  # what the server suggests before anything is typed
            if getattr(field, "_suggesting", False):
                ask(field, name, field.widget.value)
        return form

    def _new_entry(self, registration: Registration, form: Form | None = None) -> _Entry:
        entry = _Entry(registration, form or self._form_for(registration))
        key = entry_key(registration)
        entry.form.on_change(lambda: self._form_changed(key))
        return entry

    def _show_choices(self, reshow: bool = False) -> None:
        """Fill the picker (filtered); keep the chosen entry, else choose the first one shown."""
        wanted = self.filter.value.strip().lower()
        choices = [c for c in self._choices if wanted in self._names.get(c[1], "")] if wanted else list(self._choices)
        values = [value for _, value in choices]
        chosen = self._current if self._current in values else (values[0] if values else None)
        registration = self._catalog().get(*chosen) if chosen is not None else None
        if registration is not None and (chosen != self._current or reshow):
            self._switch(self._prepare(registration), options=choices)
            return
        with self._quietly():
            self.picker.options = choices
            self.picker.value = chosen
        if not self._choices:
            self._show_nothing()

    def _picked(self, change) -> None:
        if self._quiet or change["new"] is None:
            return
        self.select(*change["new"])

    def select(self, kind: str, key: str) -> None:
        """Show the form of one entry: `panel.select("tool", "get_author")`."""
        registration = self._catalog().get(kind, key)
        if registration is None:
            raise BadValue(f"no {kind} {key!r} is registered" + (f" on {self.server}" if self.server != "kernel" else ""))
        with self._lock:
            self._switch(self._prepare(registration))

    def _prepare(self, registration: Registration) -> _Entry:
        """The entry to show, its form built when new; nothing on screen changes yet."""
        entry = self._entries.get(entry_key(registration))
        return entry if entry is not None else self._new_entry(registration)

    def _switch(self, entry: _Entry, options: list | None = None, shown: Any = None) -> None:
        """Show `entry` (and `shown`, an outcome, when given). What can fail is computed first;
        then the widgets change together, so a failure never leaves the panel half-switched."""
        registration = entry.registration
        key = entry_key(registration)
        header = entry_html(registration)
        uri = self._uri_html(entry)
        outcome = self._outcome_html(shown if shown is not None else self._shown, key)
        button = {"tool": "Call", "resource": "Read", "prompt": "Get"}[registration.kind]
        # -- from here on, only widgets change
        self._leave_current()
        replaced = self._remember(key, entry)
        self._current = key
        with self._quietly():
            if options is not None:
                self.picker.options = options
            elif key not in [v for _, v in self.picker.options]:
                self.filter.value = ""
                self.picker.options = self._choices
            if self.picker.value != key:
                self.picker.value = key
        self.picker.tooltip = picker_tooltip(registration)
        self.header.value = header
        self.form_box.children = (entry.form.widget,)
        for retired in (self._retired, replaced):
            if retired is not None:
                retired.close()
        self._retired = None
        with self._quietly():
            self.raw.value = entry.raw_text
            self.mode.value = entry.mode
        resource = registration.kind == "resource"
        self.mode.disabled = resource
        self.mode.tooltip = "a resource is read by its URI: it takes no arguments object" if resource else ""
        self._show_mode(entry.mode)
        self.call_button.description = button
        self.call_button.disabled = self._call is not None or self.engine.closed
        self.problems.value = ""
        self.uri.value = uri
        if shown is not None:
            self._shown = shown
        self._set_outcome(outcome)

    def _remember(self, key: tuple[str, str], entry: _Entry) -> Form | None:
        """Keep `entry` among the last forms visited; returns the form it replaces, if any."""
        old = self._entries.get(key)
        self._entries[key] = entry
        self._entries.move_to_end(key)
        while len(self._entries) > CACHED_FORMS:
            oldest, dropped = next(iter(self._entries.items()))
            if oldest in (self._current, key):
                break
            self._entries.pop(oldest)
            dropped.form.close()
        return old.form if old is not None and old is not entry else None

    def _leave_current(self) -> None:
        entry = self._entries.get(self._current) if self._current else None
        if entry is not None:
            entry.raw_text = self.raw.value

    def _show_nothing(self) -> None:
        self._current = None
        self.picker.tooltip = ""
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
        self.uri.value = self._uri_html(entry) if entry is not None else ""

    def _uri_html(self, entry: _Entry) -> str:
        if entry.registration.kind != "resource":
            return ""
        try:
            return note_html(f"reads {self._uri(entry)}")
        except Invalid:
            return note_html(f"reads {entry.registration.uri} once its variables are filled in")

    # -- form and raw JSON ---------------------------------------------------------------------------

    def _mode_changed(self, change) -> None:
        if self._quiet or self._current is None:
            return
        entry = self._entries[self._current]
        seed = None
        if change["new"] == RAW and self.raw.value == entry.raw_seed:
            # Untouched so far: start from what the form holds. Text the user wrote is
            # never replaced, nor reformatted.
            try:
                seed = json.dumps(entry.form.value(), indent=2, ensure_ascii=False)
            except Invalid:
                seed = "{}"
        entry.mode = change["new"]
        if seed is not None:
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

        variables = entry.form.value()
        return UriTemplate.parse(registration.uri).expand({k: v for k, v in variables.items() if v is not None})

    def call(self):
        """Send what is on screen now. Returns the `Call`, or None if nothing was sent."""
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
        running = running_html(target, name, timeout)
        resets = target == "tool" and self.reset_on_progress.value
        try:
            call = self.engine.submit(
                target,
                name,
                arguments,
                timeout,
                server=self.server,
                progress_listener=self._progressed,
                ask=self.asker,
                reset_on_progress=resets,
            )
        except McpNbError as err:  # the engine's checks, before anything is sent (anything else is a bug: the guard shows it)
            self.problems.value = problems_html("Nothing was sent:", [str(err)])
            return None
        self.problems.value = ""
        self._call = self.last_call = call
        self.call_button.disabled = True
        self.cancel_button.layout.display = None
        self.status.value = self._running_status = running
        self._running = True
        self._render_outcome()  # the last outcome stays for reference, dimmed: it is not this call's
        call.future.add_done_callback(self._finished)
        return call

    def _place_question(self, widgets: list) -> None:
        self.question.children = tuple(widgets)
        self.question.layout.display = None if widgets else "none"

    def cancel(self) -> None:
        """Stop the running call (the Cancel button); it is recorded, and shown, as cancelled."""
        call = self._call
        if call is None:
            return
        # Said before cancelling: the record (and so the outcome view) may arrive at once.
        self.status.value = note_html("cancelled: waiting for the record of the call")
        if not call.cancel():
            self.status.value = ""  # it had just finished; its outcome shows as usual

    def _progressed(self, call, event) -> None:
        # The call's progress listener, on mcp_nb's loop thread: hand over to the kernel's thread.
        self._guard.enter("showing the call's progress", self._show_progress, call, event)

    def _show_progress(self, call, event) -> None:
        if call is not self._call:
            return  # a late event of a call that is no longer on screen
        bar = self.progress
        bar.layout.display = None
        # Without a total the bar fills as the count grows (a server may report only a count);
        # a count it cannot draw (NaN, infinity, negative) leaves the bar where it was.
        progress, total = countable(event.progress), countable(event.total) or None
        if progress is not None:
            bar.max = total if total is not None else max(progress, 1.0)
            bar.value = min(progress, bar.max)
        self.progress_text.value = progress_html(event.progress, event.total, event.message, call.resets)

    def _finished(self, future) -> None:
        # The call's done-callback, on mcp_nb's loop thread: hand over to the kernel's thread.
        # The future holds the recorded Outcome however the call ended, a cancellation included.
        self._guard.enter("showing the call's outcome", self._show_finished, future)

    def _show_finished(self, future) -> None:
        self._idle()
        error = future.exception()
        if error is not None:
            self.problems.value = problems_html("The call failed inside mcp_nb:", [f"{type(error).__name__}: {error}"])
            self.status.value = ""
            return
        self.show_outcome(future.result())

    def _idle(self) -> None:
        self._call = None
        self._running = False
        self.call_button.disabled = self._current is None or self.engine.closed
        self.cancel_button.layout.display = "none"
        self.progress.layout.display = "none"
        self.progress_text.value = ""

    def _server_closed(self) -> None:
        # The engine's close listener (`mcp_nb.reset()`): this panel's server is gone. Its
        # widgets stay on screen, the history tab included, but it offers no more calls.
        self._unsubscribe()
        self._idle()
        self.refresh()  # once more, for the title: it now says the server was replaced
        self.status.value = ""
        self.problems.value = problems_html(
            "This panel's server was closed by mcp_nb.reset().",
            ["Show a panel of the new server with mcp_nb.panel() (or %mcp_panel)."],
        )

    def _recorded(self, outcome) -> None:
        # The history's listener, on the thread that recorded the call (mcp_nb's loop).
        self._guard.enter("noting a recorded call", self.history_tab.recorded)

    def show_outcome(self, outcome) -> None:
        """Show an outcome: badge, the three views, the duration, and a timeout's server-side fate."""
        view = self._outcome_html(outcome, self._current)
        self._shown = outcome
        self._set_outcome(view)
        self.status.value = ""
        if isinstance(outcome, Outcome) and outcome.outcome == "timeout" and outcome.server_fate == "running":
            self.engine.loop.submit(self._watch_fate(outcome))

    def _render_outcome(self) -> None:
        """The outcome on screen, dimmed while a call runs or when it is another entry's."""
        self._set_outcome(self._outcome_html(self._shown, self._current))

    def _outcome_html(self, shown, current: tuple[str, str] | None) -> str:
        if shown is None:
            return ""
        html_ = outcome_html(shown)
        found = self._find(shown.target, shown.name)
        if self._running or found is None or entry_key(found[0]) != current:
            html_ = f'<div class="mcp-nb-previous" style="opacity:.45">{html_}</div>'
        return html_

    def _set_outcome(self, html_: str) -> None:
        if self.outcome.value != html_:
            self.outcome.value = html_

    async def _watch_fate(self, outcome) -> None:
        """The handler of a timed-out call may still finish: show how, once it does."""
        while self._shown is outcome and not self._closed and outcome.server_fate == "running":
            await asyncio.sleep(FATE_POLL_S)
        self._guard.enter("showing what the server did", self._fate_known, outcome)

    def _fate_known(self, outcome) -> None:
        if self._shown is outcome:
            self._render_outcome()
            self.history_tab.recorded()  # the history's fate columns changed too

    # -- the history tab -----------------------------------------------------------------------------

    def _tab_changed(self, change) -> None:
        self.history_tab.show(change["new"] == 1)
        self.changes_tab.show(change["new"] == 2)
        self.agent_tab.show(change["new"] == 3)

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
        """A call chosen in the history: its server, its entry, its arguments in the form, its outcome."""
        server = getattr(call, "server", None) or "kernel"
        if server != self.server and server in self.engine.connections:
            self.show_server(server)
        found = self._find(call.target, call.name) if server == self.server else None
        if found is None:
            view = self._outcome_html(call, self._current)
            self.tabs.selected_index = 0
            self.problems.value = problems_html(f"{call.target} {call.name} is no longer registered.", [])
            self._shown = call
            self._set_outcome(view)
            self.status.value = ""
            return
        registration, variables = found
        # A template read comes back as its URI's variables; a static read has none.
        arguments = variables if registration.kind == "resource" else dict(call.arguments or {})
        # A fresh form, so the entry's own changes only once this one is ready.
        form = self._form_for(registration)
        try:
            fits = arguments is None or form.load(arguments)
            if not fits:
                form.close()
                form = self._form_for(registration)
            entry = self._new_entry(registration, form)
            if not fits:
                # Arguments the form cannot show exactly (wrong types, extra keys): raw JSON can.
                entry.mode = RAW
                entry.raw_text = entry.raw_seed = json.dumps(arguments, indent=2, ensure_ascii=False)
            note = note_html(f"call #{call.call_id} from the history")
            self._switch(entry, shown=call)
        except BaseException:
            if entry_key(registration) not in self._entries or self._entries[entry_key(registration)].form is not form:
                form.close()
            raise
        self.tabs.selected_index = 0
        if not fits:
            self.problems.value = note_html("These arguments do not fit the form, so they are in raw JSON, as they were sent.")
        self.status.value = note

    @contextmanager
    def _quietly(self) -> Iterator[None]:
        """While the panel itself rewrites a widget, its observers must not read it as the user's doing."""
        self._quiet = True
        try:
            yield
        finally:
            self._quiet = False

    def _recover(self) -> None:
        """After a failed callback: what the user moved goes back to what the panel holds."""
        entry = self._entries.get(self._current) if self._current else None
        with self._quietly():
            if self._current in [v for _, v in self.picker.options]:
                self.picker.value = self._current
            if entry is not None:
                self.mode.value = entry.mode
                if self.form_box.children != (entry.form.widget,):
                    self.form_box.children = (entry.form.widget,)
        if entry is not None:
            self._show_mode(entry.mode)
        self.history_tab.clear_choice()
        running = self._call is not None
        self.call_button.disabled = running or self._current is None or self.engine.closed
        self.cancel_button.layout.display = None if running else "none"
        if running:
            self.status.value = self._running_status
        elif self.status.value == self._running_status:
            self.status.value = ""  # its outcome arrived, though showing it failed

    def _find(self, target: str, name: str) -> tuple[Registration, dict[str, str] | None] | None:
        """The entry a past call reached, and for a template read the variables of its URI, as the
        connection finds it (for the kernel's own, as its registry does)."""
        found = self._catalog().reached(target, name)
        if found is None:
            return None
        entry, variables = found
        return entry, None if variables is None else {k: str(v) for k, v in variables.items()}

    # -- settings and lifetime -----------------------------------------------------------------------

    def _default_timeout_changed(self, change) -> None:
        # Follow the configured default, unless the user typed a timeout of their own.
        if self.timeout.value == seconds_text(change["old"]):
            self.timeout.value = seconds_text(change["new"])

    def _unsubscribe(self) -> None:
        self._catalog().unsubscribe(self._offers_heard)
        self.engine.history.unsubscribe(self._recorded)
        self.engine.on_connections(self._connections_heard, remove=True)
        self.engine.on_close(self._closed_heard, remove=True)
        self._forgetting()  # the settings: as when the panel goes

    def close(self) -> None:
        """Stop listening to the server, the history and the settings, and close every widget."""
        if self._closed:
            return
        self._closed = True
        self.asker.abandon()  # a call waiting for an answer from this panel gets a cancel
        self._unsubscribe()
        self.history_tab.close()
        self.changes_tab.close()
        self.agent_tab.close()
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
        value = read_json(text)
    except BadJson as err:
        raise Invalid([((), f"the raw JSON is not valid: {err}")]) from None
    if not isinstance(value, dict):
        raise Invalid([((), f"the arguments must be a JSON object ({{...}}), not {type(value).__name__}")])
    return value


def _forget(weak: WeakCall) -> None:
    """Take a panel's WeakCall back from the settings, which keep what they are given: when it
    is closed, or when it goes (run by its finalizer, so it must not refer to the panel)."""
    with suppress(ValueError):  # already stopped observing
        settings.unobserve(weak, "timeout")


def show(engine=None, server: str | None = None, history: Any = None) -> Panel:
    """The panel for the kernel's server (or `engine`'s, or a connected `server`'s); IPython displays the returned widget.
    `history`: the History its History tab shows (a reopened history file), the engine's by default."""
    if engine is None:
        engine = default.engine()
    return Panel(engine, server=server, history=history)
