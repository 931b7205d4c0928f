"""Any exception inside a panel callback is shown in the panel, and the panel stays whole.

Each test injects a failure into what one callback calls (a picker choice, a mode
switch, Call, Cancel, add or remove an item, a history row, the filter, the registry
and history listeners, the timers, the settings, the server's close), then checks that
the panel says so (one line, the traceback behind a disclosure) and still agrees with
itself: the picker, header, form, mode, raw box, buttons and outcome describe one state.
"""

from __future__ import annotations

import html
import threading

import pytest
from helpers import wait_until
from pydantic import BaseModel

import mcp_nb
import mcp_nb.widgets.form as form_module
import mcp_nb.widgets.history_tab as history_module
import mcp_nb.widgets.panel as panel_module
from mcp_nb.widgets import Panel, show
from mcp_nb.widgets.panel import RAW


class Injected(RuntimeError):
    pass


def inject(monkeypatch, target, name: str) -> None:
    """Make `target.name` raise `Injected` when called."""

    def fail(*args, **kwargs):
        raise Injected(f"injected into {name}")

    monkeypatch.setattr(target, name, fail)


def shows_failure(panel: Panel, while_: str, limit: float = 10.0) -> None:
    """The panel says what failed, on one line, with the traceback behind a disclosure."""
    assert wait_until(lambda: "Injected" in panel.failure.value, limit), panel.failure.value
    text = html.unescape(panel.failure.value)
    assert text.startswith("<details") and "<summary" in text
    summary = text[text.index("<summary") : text.index("</summary>")]
    assert f"The panel failed while {while_}" in summary and "Injected: injected into" in summary
    assert "Traceback (most recent call last)" in text.split("</summary>", 1)[1]


def coherent(panel: Panel) -> None:
    """Every widget describes the panel's one state."""
    current = panel._current
    running = panel._call is not None
    assert panel.call_button.disabled == (running or current is None or panel.engine.closed)
    assert (panel.cancel_button.layout.display is None) == running
    if not running:
        assert "mcp-nb-spinner" not in panel.status.value
    assert panel.history_tab.calls.value is None
    if current is None:
        return
    entry = panel._entries[current]
    assert panel.picker.value == current
    assert html.escape(current[1]) in panel.header.value
    assert panel.form_box.children == (entry.form.widget,)
    assert panel.mode.value == entry.mode
    assert (panel.raw.layout.display is None) == (entry.mode == RAW)
    assert (panel.form_box.layout.display == "none") == (entry.mode == RAW)
    if panel._shown is not None:
        assert f"#{panel._shown.call_id}" in panel.outcome.value


@pytest.fixture
def gate():
    release = threading.Event()
    yield release
    release.set()


@pytest.fixture
def tools(gate):
    @mcp_nb.tool(read_only=True)
    def get_author(title: str, copies: int = 1) -> str:
        return f"author of {title} x{copies}"

    @mcp_nb.tool()
    def reserve(title: str) -> str:
        return f"reserved {title}"

    @mcp_nb.tool()
    def order(titles: list[str] = [], rush: int | None = None) -> str:
        return f"ordered {titles}"

    @mcp_nb.tool()
    def reindex(seconds: float = 60.0) -> str:
        gate.wait(seconds)
        return "reindexed"


@pytest.fixture
def panel(tools):
    p = show()
    yield p
    p.close()


def on_get_author_with_an_outcome(panel: Panel):
    panel.select("tool", "get_author")
    panel._entries[panel._current].form.fields["title"].widget.value = "Dune"
    outcome = panel.call().result(timeout=10)
    assert wait_until(lambda: panel._call is None and f"#{outcome.call_id}" in panel.outcome.value)
    return outcome


def unchanged_since(panel: Panel, before: dict) -> None:
    assert panel._current == before["current"]
    assert panel.header.value == before["header"]
    assert panel.form_box.children == before["form"]
    assert panel.outcome.value == before["outcome"]
    assert panel.raw.value == before["raw"]


def snapshot(panel: Panel) -> dict:
    return {
        "current": panel._current,
        "header": panel.header.value,
        "form": panel.form_box.children,
        "outcome": panel.outcome.value,
        "raw": panel.raw.value,
    }


# -- the user's own actions -------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["entry_html", "Form"])
def test_choosing_an_entry(panel, monkeypatch, where):
    on_get_author_with_an_outcome(panel)
    before = snapshot(panel)
    inject(monkeypatch, panel_module, where)  # the header, or building the new entry's form
    panel.picker.value = ("tool", "reserve")
    shows_failure(panel, "choosing an entry")
    unchanged_since(panel, before)
    coherent(panel)
    monkeypatch.undo()
    panel.picker.value = ("tool", "reserve")  # it works again, and the failure is cleared
    assert panel._current == ("tool", "reserve") and panel.failure.value == ""
    coherent(panel)


def test_filtering_the_list(panel, monkeypatch):
    before = snapshot(panel)
    inject(monkeypatch, panel_module, "entry_html")
    panel.filter.value = "reserve"  # narrows the list to an entry that is not the current one
    shows_failure(panel, "filtering the list")
    unchanged_since(panel, before)
    coherent(panel)


def test_switching_to_raw_json(panel, monkeypatch):
    inject(monkeypatch, form_module.Form, "value")  # seeding the raw box from the form
    panel.mode.value = RAW
    shows_failure(panel, "switching between form and raw JSON")
    assert panel.mode.value == "form" and panel._entries[panel._current].mode == "form"
    coherent(panel)


def test_editing_the_raw_json(tools, monkeypatch):
    inject(monkeypatch, Panel, "_raw_edited")
    panel = show()
    panel.mode.value = RAW
    panel.raw.value = '{"title": "Dune"}'
    shows_failure(panel, "editing the raw JSON")
    coherent(panel)
    panel.close()


def test_calling(panel, monkeypatch):
    inject(monkeypatch, panel.engine, "submit")
    panel._entries[panel._current].form.fields["title"].widget.value = "Dune"
    panel.call_button.click()
    shows_failure(panel, "calling")
    assert panel._call is None and len(mcp_nb.history()) == 0
    coherent(panel)
    monkeypatch.undo()
    panel.call_button.click()
    assert wait_until(lambda: "author of Dune" in panel.outcome.value)
    assert panel.failure.value == ""


def test_cancelling(panel, monkeypatch, gate):
    panel.select("tool", "reindex")
    panel.call_button.click()
    future = panel._call
    inject(monkeypatch, type(future), "cancel")  # a Call has slots: the class's method is replaced
    panel.cancel_button.click()
    shows_failure(panel, "cancelling")
    assert panel._call is future and "calling" in panel.status.value  # still running, and says so
    coherent(panel)
    monkeypatch.undo()
    panel.cancel_button.click()
    assert wait_until(lambda: panel._call is None and "cancelled" in panel.outcome.value)
    coherent(panel)


def test_adding_an_item(panel, monkeypatch):
    panel.select("tool", "order")
    titles = panel._entries[panel._current].form.fields["titles"]
    inject(monkeypatch, form_module, "field_for")
    titles.add.click()
    shows_failure(panel, "adding an item (titles)")
    assert titles.items == [] and titles.rows.children == ()
    coherent(panel)


def test_removing_an_item(panel, monkeypatch):
    panel.select("tool", "order")
    titles = panel._entries[panel._current].form.fields["titles"]
    titles.add.click()
    titles.add.click()
    inject(monkeypatch, form_module, "close_tree")
    titles.rows.children[0].children[1].click()
    shows_failure(panel, "removing an item (titles)")
    assert len(titles.items) == len(titles.rows.children) == 1
    coherent(panel)


def test_switching_null(panel, monkeypatch):
    panel.select("tool", "order")
    rush = panel._entries[panel._current].form.fields["rush"]
    inject(monkeypatch, type(rush.inner), "set_enabled")
    rush.null.value = True
    shows_failure(panel, "switching null (rush)")
    assert rush.null.value is False and panel._entries[panel._current].form.value() == {}
    coherent(panel)


def test_typing_into_a_field(panel, monkeypatch):
    field = panel._entries[panel._current].form.fields["copies"]
    inject(monkeypatch, type(field), "read")  # the live check of what was typed
    field.widget.value = "3"
    shows_failure(panel, "typing (copies)")
    coherent(panel)


class Hotel(BaseModel):
    name: str


def test_switching_an_object_on(monkeypatch):
    @mcp_nb.tool()
    def book(hotel: Hotel | None = None) -> str:
        return "booked"

    panel = show()
    hotel = panel._entries[panel._current].form.fields["hotel"]
    inject(monkeypatch, form_module, "field_for")
    hotel.state.value = "set"
    shows_failure(panel, "switching (hotel)")
    assert hotel.state.value == "not sent" and hotel.grid is None
    assert panel._entries[panel._current].form.value() == {}
    coherent(panel)
    panel.close()


@pytest.mark.parametrize("where", ["outcome_html", "load"])
def test_choosing_a_call_from_the_history(panel, monkeypatch, where):
    mcp_nb.call("reserve", {"title": "Emma"})
    on_get_author_with_an_outcome(panel)
    panel.mode.value = RAW
    panel.raw.value = '{"title": "mine"}'
    panel.tabs.selected_index = 1
    before = snapshot(panel)
    if where == "load":
        inject(monkeypatch, form_module.Form, "load")
    else:
        inject(monkeypatch, panel_module, "outcome_html")
    row = [value for label, value in panel.history_tab.calls.options if "reserve" in label][0]
    panel.history_tab.calls.value = row
    shows_failure(panel, "choosing a call from the history")
    unchanged_since(panel, before)
    assert panel.mode.value == RAW and panel.tabs.selected_index == 1
    coherent(panel)


def test_switching_tabs(panel, monkeypatch):
    mcp_nb.call("reserve", {"title": "Emma"})
    inject(monkeypatch, history_module, "counts_html")
    panel.tabs.selected_index = 1
    shows_failure(panel, "switching tabs")
    coherent(panel)


# -- listeners and timers ---------------------------------------------------------------------------


def test_the_registry_listener(panel, monkeypatch):
    before = snapshot(panel)
    options = panel.picker.options
    inject(monkeypatch, panel_module, "title_html")

    @mcp_nb.tool()
    def added() -> str:
        return "x"

    shows_failure(panel, "re-reading the server")
    assert panel.picker.options == options  # nothing half-read
    unchanged_since(panel, before)
    coherent(panel)
    monkeypatch.undo()

    @mcp_nb.tool()
    def added_again() -> str:
        return "y"

    assert {("tool", "added"), ("tool", "added_again")} <= {v for _, v in panel.picker.options}


def test_the_calls_done_callback(panel, monkeypatch):
    inject(monkeypatch, panel_module, "outcome_html")
    panel._entries[panel._current].form.fields["title"].widget.value = "Dune"
    panel.call().result(timeout=10)
    shows_failure(panel, "showing the call's outcome")
    assert wait_until(lambda: panel._call is None)
    coherent(panel)


def test_the_calls_done_callback_for_a_cancelled_call(panel, monkeypatch, gate):
    # A cancelled call's future holds its recorded Outcome too, so it is shown the same way.
    panel.select("tool", "reindex")
    panel.call()
    inject(monkeypatch, panel_module, "outcome_html")
    panel.cancel()
    shows_failure(panel, "showing the call's outcome")
    assert wait_until(lambda: panel._call is None)
    coherent(panel)


def test_the_history_listener(panel, monkeypatch):
    inject(monkeypatch, panel.history_tab, "recorded")
    mcp_nb.call("reserve", {"title": "Emma"})
    shows_failure(panel, "noting a recorded call")
    coherent(panel)
    monkeypatch.undo()
    panel.failure.value = ""
    mcp_nb.call("reserve", {"title": "Emma"})  # the next call is noted again
    assert wait_until(lambda: panel.tabs.titles[1] == "History (2)")


def test_the_history_timer(panel, monkeypatch):
    panel.tabs.selected_index = 1
    inject(monkeypatch, history_module, "counts_html")
    mcp_nb.call("reserve", {"title": "Emma"})
    shows_failure(panel, "refreshing the history")
    coherent(panel)


def test_the_timeout_setting(panel, monkeypatch):
    inject(monkeypatch, panel_module, "seconds_text")
    mcp_nb.configure(timeout=12)
    shows_failure(panel, "following the default timeout")
    assert panel.timeout.value == "30"
    coherent(panel)


def test_what_the_server_did_after_a_timeout(panel, monkeypatch, gate):
    panel.select("tool", "reindex")
    panel.timeout.value = "0.2"
    panel.call().result(timeout=10)
    assert wait_until(lambda: "still running on the server" in panel.outcome.value)
    inject(monkeypatch, panel_module, "outcome_html")
    gate.set()
    shows_failure(panel, "showing what the server did")
    coherent(panel)


def test_the_servers_close(panel, monkeypatch):
    inject(monkeypatch, panel_module, "problems_html")
    mcp_nb.reset()
    shows_failure(panel, "closing with the server")
    panel.call_button.click()
    assert panel.call_button.disabled and panel._call is None and len(mcp_nb.history()) == 0
    coherent(panel)
