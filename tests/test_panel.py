"""The panel, driven through its widgets: pick, fill, click, and read what it shows.

Outcomes arrive on mcp_nb's loop thread, so assertions on what the panel shows wait
for it (`shows`). Calls that block use a gate the test always releases.
"""

from __future__ import annotations

import re
import threading
import time

import pytest
from helpers import wait_until
from mcp import MCPError
from mcp.server.mcpserver.exceptions import ToolError

import mcp_nb
from mcp_nb.config import settings
from mcp_nb.widgets import Panel, show

LONG = 60.0


def shows(panel: Panel, *texts: str, limit: float = 10.0) -> str:
    """Wait until the outcome view holds every text; return it."""
    assert wait_until(lambda: all(t in panel.outcome.value for t in texts), limit), panel.outcome.value
    return panel.outcome.value


def settled(panel: Panel) -> None:
    assert wait_until(lambda: panel._call is None and panel.cancel_button.layout.display == "none")


@pytest.fixture
def gate():
    release = threading.Event()
    yield release
    release.set()  # never leave a worker thread blocked


@pytest.fixture
def bookshop(gate):
    catalog = {"Dune": "Frank Herbert"}

    @mcp_nb.tool(read_only=True)
    def get_author(title: str, copies: int = 1) -> str:
        """Look up the author of a book in the catalog."""
        return f"{catalog[title]} x{copies}"

    @mcp_nb.tool()
    def reserve(title: str) -> str:
        raise ToolError(f"{title!r} is already reserved.")

    @mcp_nb.tool()
    def catalog_status() -> str:
        raise MCPError(code=-32050, message="The catalog is offline.", data={"retry_after_s": 30})

    @mcp_nb.tool()
    def reindex(seconds: float = LONG) -> str:
        gate.wait(seconds)
        return "reindexed"

    @mcp_nb.resource("books://catalog")
    def catalog_list() -> str:
        return ", ".join(catalog)

    @mcp_nb.resource("books://{title}")
    def book(title: str) -> str:
        return f"the book {title}"

    @mcp_nb.prompt()
    def review(title: str) -> str:
        return f"Review {title}."

    return catalog


@pytest.fixture
def panel(bookshop):
    p = show()
    yield p
    p.close()


def fill(panel: Panel, **values: str) -> None:
    fields = panel._entries[panel._current].form.fields
    for name, value in values.items():
        fields[name].widget.value = value


def click_call(panel: Panel):
    """Click Call; the Call, or None when nothing was sent."""
    before = panel.last_call
    panel.call_button.click()
    return panel.last_call if panel.last_call is not before else None


# -- the picker ------------------------------------------------------------------------------------


def test_show_returns_the_panel_widget_and_mcp_nb_panel_is_the_same(shell):
    p = show()
    assert isinstance(p, Panel) and "mcp-nb-panel" in p._dom_classes
    p.close()
    for _ in range(2):  # still a function after the widgets package is imported
        q = mcp_nb.panel()
        assert isinstance(q, Panel)
        q.close()
    r = shell.run_line_magic("mcp_panel", "")
    assert isinstance(r, Panel)
    r.close()


def test_the_picker_lists_tools_resources_templates_and_prompts(panel):
    labels = [" ".join(label.split()) for label, _ in panel.picker.options]
    assert labels == [
        "tool get_author",
        "tool reserve",
        "tool catalog_status",
        "tool reindex",
        "resource books://catalog",
        "template books://{title}",
        "prompt review",
    ]
    assert panel.picker.value == ("tool", "get_author")
    assert "get_author" in panel.header.value and "readOnlyHint" in panel.header.value
    title = re.sub(r"<[^>]+>", "", panel.title.value)  # the text, not the markup's styles
    assert "7" not in title and "4 tools, 1 resource, 1 template, 1 prompt" in title


def test_the_picker_follows_registrations_re_runs_and_removals(panel):
    fill(panel, title="Dune")

    @mcp_nb.tool()
    def added() -> str:
        return "new"

    assert ("tool", "added") in [v for _, v in panel.picker.options]
    assert panel._current == ("tool", "get_author")  # the choice is kept

    # Re-running the cell with a new parameter: the new form, with what was typed kept.
    @mcp_nb.tool(name="get_author")
    def get_author_v2(title: str, copies: int = 1, edition: str = "first") -> str:
        return title

    fields = panel._entries[panel._current].form.fields
    assert set(fields) == {"title", "copies", "edition"}
    assert fields["title"].widget.value == "Dune"
    assert panel.form_box.children[0] is panel._entries[panel._current].form.widget

    mcp_nb.remove("get_author")
    assert ("tool", "get_author") not in [v for _, v in panel.picker.options]
    assert panel._current == panel.picker.value == ("tool", "reserve")


def test_the_filter_narrows_the_picker(panel):
    panel.filter.value = "books"
    assert [v for _, v in panel.picker.options] == [("resource", "books://catalog"), ("resource", "books://{title}")]
    assert panel._current == ("resource", "books://catalog")
    panel.filter.value = ""
    assert len(panel.picker.options) == 7


def test_an_empty_server_says_how_to_add_something():
    p = show()
    assert p.picker.options == () and p.call_button.disabled
    assert "%%mcp_tool" in p.header.value

    @mcp_nb.tool()
    def ping() -> str:
        return "pong"

    assert p._current == ("tool", "ping") and not p.call_button.disabled
    p.close()


# -- the four outcome types -------------------------------------------------------------------------


def test_result_shows_the_badge_the_three_views_and_the_duration(panel):
    fill(panel, title="Dune")
    click_call(panel).result(timeout=10)
    html = shows(panel, "mcp-nb-badge mcp-nb-result", "Frank Herbert x1")
    assert "What the model sees" in html and "What the host sees" in html and "What the log says" in html
    assert "nothing to handle: the request succeeded" in html
    assert " ms</span>" in html  # the duration
    settled(panel)
    assert not panel.call_button.disabled and panel.status.value == ""


def test_tool_error_shows_what_the_model_reads(panel):
    panel.select("tool", "reserve")
    fill(panel, title="Dune")
    click_call(panel).result(timeout=10)
    html = shows(panel, "mcp-nb-badge mcp-nb-tool_error", "raised")
    assert "Error executing tool reserve: &#x27;Dune&#x27; is already reserved." in html
    assert "is_error: True" in html


def test_a_crash_shows_the_traceback_in_the_log_view(panel):
    fill(panel, title="Emma")  # not in the catalog: KeyError in the handler
    click_call(panel).result(timeout=10)
    html = shows(panel, "mcp-nb-badge mcp-nb-tool_error", "crash")
    assert "raised an unexpected exception" in html and "KeyError: &#x27;Emma&#x27;" in html
    assert "Traceback (most recent call last)" in html


def test_protocol_error_shows_what_the_host_sees(panel):
    panel.select("tool", "catalog_status")
    click_call(panel).result(timeout=10)
    html = shows(panel, "mcp-nb-badge mcp-nb-protocol_error", "mcp_error")
    assert "nothing: there is no result" in html
    assert "-32050 The catalog is offline." in html and "retry_after_s" in html


def test_timeout_shows_the_deadline_then_what_the_server_did(panel, gate):
    panel.select("tool", "reindex")
    panel.timeout.value = "0.2"
    outcome = click_call(panel).result(timeout=10)
    assert (outcome.outcome, outcome.cause) == ("timeout", "deadline")
    html = shows(panel, "mcp-nb-badge mcp-nb-timeout", "still running on the server: the outcome is unknown")
    assert "-32001 Timed out after 0.2s waiting for &#x27;tools/call&#x27;" in html
    gate.set()  # the abandoned handler finishes: the panel shows it without being asked
    shows(panel, "completed after the client gave up: result (ok)")


# -- never blocking; cancel -------------------------------------------------------------------------


@pytest.mark.serial  # it times the click: another test's load on the machine must not lengthen it
def test_a_call_in_flight_leaves_the_kernel_free_and_can_be_cancelled(panel, gate):
    panel.select("tool", "reindex")
    started = time.perf_counter()
    future = click_call(panel)
    assert time.perf_counter() - started < 1.0  # the click returned while the handler is blocked
    assert not future.done()
    assert panel.call_button.disabled and panel.cancel_button.layout.display is None
    assert "calling" in panel.status.value and "reindex" in panel.status.value
    assert panel.call() is None  # one call at a time
    assert mcp_nb.call("get_author", {"title": "Dune"}).ok  # other code runs meanwhile
    panel.cancel_button.click()
    html = shows(panel, "mcp-nb-badge mcp-nb-timeout", "cancelled", "-32800")
    assert "Cancelled by the caller" in html
    settled(panel)
    assert not panel.call_button.disabled and panel.status.value == ""
    frame = mcp_nb.history().to_frame()
    assert frame["cause"].astype(str).tolist() == ["ok", "cancelled"]


def test_after_a_reset_the_old_panel_says_so_and_sends_nothing(panel, gate):
    old = panel.engine
    panel.select("tool", "reindex")
    future = click_call(panel)
    mcp_nb.reset()  # the call in flight is cancelled as the old loop stops: nobody waits forever
    assert wait_until(future.done)
    html = shows(panel, "mcp-nb-badge mcp-nb-timeout", "cancelled")
    settled(panel)
    assert panel.call_button.disabled
    assert "closed by mcp_nb.reset()" in panel.problems.value and "mcp_nb.panel()" in panel.problems.value
    assert panel.call() is None
    assert "replaced by mcp_nb.reset()" in panel.title.value
    panel.select("tool", "get_author")  # choosing another entry does not turn Call back on
    assert panel.call_button.disabled and panel.call() is None
    assert old.history.to_frame()["cause"].astype(str).tolist() == ["cancelled"]  # the call in flight; nothing since
    assert len(mcp_nb.history()) == 0
    assert "Cancelled by the caller" in html


def test_an_outcome_is_dimmed_while_a_call_runs_and_under_another_entry(panel, gate):
    fill(panel, title="Dune")
    click_call(panel).result(timeout=10)
    shows(panel, "mcp-nb-result")
    assert "mcp-nb-previous" not in panel.outcome.value
    panel.select("tool", "reserve")
    assert "mcp-nb-previous" in panel.outcome.value  # another entry's outcome
    panel.select("tool", "get_author")
    assert "mcp-nb-previous" not in panel.outcome.value
    panel.select("tool", "reindex")
    click_call(panel)
    assert "mcp-nb-previous" in panel.outcome.value
    gate.set()
    shows(panel, "reindexed")
    assert "mcp-nb-previous" not in panel.outcome.value


# -- what is sent -----------------------------------------------------------------------------------


def test_the_arguments_sent_are_the_ones_on_screen(panel):
    fill(panel, title="Dune", copies="3")
    click_call(panel).result(timeout=10)
    fill(panel, copies="")
    click_call(panel).result(timeout=10)
    assert mcp_nb.history().to_frame()["arguments"].tolist() == [{"title": "Dune", "copies": 3}, {"title": "Dune"}]


def test_an_invalid_form_sends_nothing_and_says_why(panel):
    fill(panel, title="Dune", copies="1.5")
    assert click_call(panel) is None
    assert "Nothing was sent" in panel.problems.value and "copies: &#x27;1.5&#x27; is not an integer" in panel.problems.value
    assert len(mcp_nb.history()) == 0
    fill(panel, copies="2")
    assert panel.problems.value == ""  # stale once the form changes
    click_call(panel).result(timeout=10)


def test_raw_json_is_sent_verbatim_so_the_schema_can_reject_it(panel):
    fill(panel, title="Dune")
    panel.mode.value = "raw JSON"
    assert panel.raw.layout.display is None and panel.form_box.layout.display == "none"
    assert panel.raw.value == '{\n  "title": "Dune",\n  "copies": 1\n}'  # started from the form
    panel.raw.value = '{"title": 42, "extra": [1]}'
    click_call(panel).result(timeout=10)
    shows(panel, "mcp-nb-badge mcp-nb-tool_error", "invalid_arguments")
    assert mcp_nb.history().to_frame()["arguments"].tolist() == [{"title": 42, "extra": [1]}]


@pytest.mark.parametrize(
    "text, message",
    [
        (
            '{"title": "Dune",}',
            "the raw JSON is not valid: Expecting property name enclosed in double quotes at line 1, column 18",
        ),
        ('["Dune"]', "the arguments must be a JSON object ({...}), not list"),
        ("   ", "the raw JSON is empty: write {} to send no arguments"),
    ],
)
def test_invalid_raw_json_is_reported_nothing_is_sent_and_the_text_stays(panel, text, message):
    panel.mode.value = "raw JSON"
    panel.raw.value = text
    assert click_call(panel) is None
    assert message.replace("'", "&#x27;") in panel.problems.value.replace("&quot;", '"')
    assert panel.raw.value == text
    assert len(mcp_nb.history()) == 0


def test_raw_text_the_user_wrote_is_kept_across_modes_and_entries(panel):
    panel.mode.value = "raw JSON"
    panel.raw.value = '{"title":"Dune"  }'
    panel.select("tool", "reserve")
    assert panel.mode.value == "form" and panel.raw.layout.display == "none"  # each entry has its own mode
    panel.select("tool", "get_author")
    assert panel.mode.value == "raw JSON" and panel.raw.value == '{"title":"Dune"  }'
    panel.mode.value = "form"
    panel.mode.value = "raw JSON"
    assert panel.raw.value == '{"title":"Dune"  }'  # never reformatted, never re-seeded


def test_resources_read_their_uri_and_templates_build_it(panel):
    panel.select("resource", "books://catalog")
    assert panel.mode.disabled and panel.call_button.description == "Read"
    assert "books://catalog" in panel.uri.value
    click_call(panel).result(timeout=10)
    shows(panel, "mcp-nb-result", "Dune")
    panel.select("resource", "books://{title}")
    fill(panel, title="Dune Messiah")
    assert "reads books://Dune%20Messiah" in panel.uri.value
    outcome = click_call(panel).result(timeout=10)
    assert (outcome.name, outcome.content) == ("books://Dune%20Messiah", "the book Dune Messiah")


def test_prompts_get_their_arguments(panel):
    panel.select("prompt", "review")
    assert panel.call_button.description == "Get"
    fill(panel, title="Dune")
    outcome = click_call(panel).result(timeout=10)
    assert outcome.target == "prompt" and "Review Dune." in outcome.content


# -- the timeout field --------------------------------------------------------------------------------


def test_the_timeout_comes_from_the_configuration_and_is_checked(panel):
    assert panel.timeout.value == "30"
    mcp_nb.configure(timeout=12)
    assert panel.timeout.value == "12"  # untouched: it follows the setting
    panel.timeout.value = "5"
    mcp_nb.configure(timeout=20)
    assert panel.timeout.value == "5"  # typed by the user: kept
    fill(panel, title="Dune")
    assert click_call(panel).result(timeout=10).timeout_s == 5
    for bad in ("0", "-1", "soon", "inf"):
        panel.timeout.value = bad
        assert click_call(panel) is None
        assert "timeout: must be a positive number of seconds" in panel.problems.value
    assert len(mcp_nb.history()) == 1


# -- the history tab ---------------------------------------------------------------------------------


def test_the_history_tab_counts_per_name_and_lists_the_latest_calls(panel):
    fill(panel, title="Dune")
    click_call(panel).result(timeout=10)
    fill(panel, title="Emma")
    click_call(panel).result(timeout=10)
    mcp_nb.call("reserve", {"title": "Dune"})  # calls from any cell count too
    panel.tabs.selected_index = 1
    counts = panel.history_tab.counts.value
    assert "get_author" in counts and "reserve" in counts
    rows = [" ".join(label.split()) for label, _ in panel.history_tab.calls.options]
    assert re.match(r"#\d+ \d\d:\d\d:\d\d [\d,]+\.\d ms tool_error \(raised\) tool reserve", rows[0]), rows[0]
    assert "result (ok) tool get_author" in rows[2]
    assert "3 calls" in panel.history_tab.summary.value
    assert wait_until(lambda: panel.tabs.titles[1] == "History (3)")


def test_choosing_a_call_loads_its_arguments_and_its_outcome(panel):
    fill(panel, title="Dune", copies="4")
    click_call(panel).result(timeout=10)
    fill(panel, title="Emma", copies="")
    panel.select("tool", "reserve")
    panel.tabs.selected_index = 1
    ((_, row),) = panel.history_tab.calls.options
    panel.history_tab.calls.value = row
    assert panel.tabs.selected_index == 0 and panel._current == ("tool", "get_author")
    fields = panel._entries[panel._current].form.fields
    assert (fields["title"].widget.value, fields["copies"].widget.value) == ("Dune", "4")
    assert "Frank Herbert x4" in panel.outcome.value and "from the history" in panel.status.value
    assert panel.history_tab.calls.value is None  # so the same call can be chosen again


def test_a_call_the_form_cannot_show_comes_back_as_raw_json(panel):
    mcp_nb.call("get_author", {"title": 42, "copies": "3"})
    panel.tabs.selected_index = 1
    panel.history_tab.calls.value = panel.history_tab.calls.options[0][1]
    assert panel.mode.value == "raw JSON"
    assert panel.raw.value == '{\n  "title": 42,\n  "copies": "3"\n}'
    click_call(panel).result(timeout=10)
    assert mcp_nb.history().to_frame()["arguments"].tolist()[-1] == {"title": 42, "copies": "3"}


def test_a_template_read_comes_back_as_its_variables(panel):
    mcp_nb.read("books://Dune%20Messiah")
    panel.tabs.selected_index = 1
    panel.history_tab.calls.value = panel.history_tab.calls.options[0][1]
    assert panel._current == ("resource", "books://{title}")
    assert panel._entries[panel._current].form.fields["title"].widget.value == "Dune Messiah"


def test_a_call_to_something_removed_still_shows_its_outcome(panel):
    mcp_nb.call("catalog_status")
    mcp_nb.remove("catalog_status")
    panel.tabs.selected_index = 1
    panel.history_tab.calls.value = panel.history_tab.calls.options[0][1]
    assert "no longer registered" in panel.problems.value
    assert "mcp-nb-protocol_error" in panel.outcome.value


# -- lifetime -----------------------------------------------------------------------------------------


def test_close_stops_listening_and_closes_every_model(bookshop):
    from ipywidgets.widgets.widget import _instances

    before = len(_instances)
    engine = mcp_nb.engine()

    def listening():
        return (
            len(engine.connection._listeners),
            len(engine.history._listeners),
            len(engine._close_listeners),
            len(engine._connection_listeners),
            len(settings._trait_notifiers.get("timeout", {}).get("change", [])),
        )

    listeners = listening()
    p = show()
    p.select("tool", "reserve")
    p.tabs.selected_index = 1
    assert listening() == tuple(n + 1 for n in listeners)
    p.close()
    assert len(_instances) == before
    assert listening() == listeners
    assert p._offers_heard not in engine.connection._listeners
    assert p._recorded not in engine.history._listeners

    @mcp_nb.tool()
    def later() -> str:
        return "x"  # registering after close touches no closed widget

    mcp_nb.configure(timeout=settings.timeout + 1)


def test_pinned_calls_are_saved_as_cases_that_replay(panel, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    mcp_nb.call("get_author", {"title": "Dune"})
    mcp_nb.call("reserve", {"title": "Dune"})
    mcp_nb.call("catalog_status")
    tab = panel.history_tab
    panel.tabs.selected_index = 1
    assert tab.save_button.disabled
    tab.pinning.value = True

    def choose(name):
        (row,) = [row for label, row in tab.calls.options if f" tool {name}" in " ".join(label.split())]
        tab.calls.value = row

    choose("get_author")
    choose("catalog_status")
    choose("reserve")
    choose("reserve")  # chosen again: unpinned
    assert panel.tabs.selected_index == 1  # pinning loads nothing into the form
    assert [label.startswith("\U0001f4cc") for label, _ in tab.calls.options] == [True, False, True]
    assert tab.save_button.description == "Save 2 pinned as cases" and not tab.save_button.disabled
    tab.cases_path.value = "pinned.json"
    tab.save_button.click()
    assert "saved 2 cases to <code>pinned.json</code>" in tab.cases_status.value
    frame = mcp_nb.replay("pinned.json")
    assert list(frame["case"]) == ["get_author-1", "catalog_status-1"] and frame["passed"].all()
    tab.cases_path.value = str(tmp_path / "no" / "such" / "dir.json")
    tab.save_button.click()
    assert "cannot write" in tab.cases_status.value
    tab.pinning.value = False
    choose("reserve")  # with Pin off, choosing loads the call again
    assert panel.tabs.selected_index == 0 and panel._current == ("tool", "reserve")


def test_a_history_row_whose_values_outgrow_their_columns_keeps_them_apart():
    """A call's id past the id column's width and the longest outcome (cause) still read as words."""
    import dataclasses

    from mcp_nb.widgets.history_tab import call_label

    @mcp_nb.tool()
    def add(a: int) -> int:
        return a

    wrong = mcp_nb.call("add", {"a": "x"})
    history = mcp_nb.History()
    history.record(dataclasses.replace(wrong, call_id=123456, outcome="protocol_error", cause="invalid_arguments"))
    (row,) = history.to_frame().itertuples(index=False)
    words = call_label(row).split()
    assert words[0] == "#123456" and re.fullmatch(r"\d\d:\d\d:\d\d", words[1]), words
    assert "(invalid_arguments)" in words and words[words.index("(invalid_arguments)") + 1] == "tool", words
