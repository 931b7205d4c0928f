"""The faces on their base: a user's mistake against mcp_nb's own bug, what a shutdown says,
which template a read reaches, what a panel that is gone costs, and one schema of a prompt.

Each test goes through a public face (the magics in an IPython shell, `mcp_nb.*`, the panel)
and failed before its fix.
"""

from __future__ import annotations

import gc
import logging
import sys
import weakref
from typing import Annotated

import comm
import ipywidgets.widgets.widget as widget_module
import peers
import pytest
from helpers import ended, wait_until
from IPython.core.error import UsageError
from pydantic import Field

import mcp_nb
import mcp_nb.api
import mcp_nb.notebook.magics.calling as magics_module
import mcp_nb.registering.registry as registry_module
from mcp_nb.config import settings
from mcp_nb.widgets import show
from mcp_nb.widgets.callbacks import KernelThread

BOOKSHOP = peers.BOOKSHOP


def setup_server(shell):
    shell.user_ns.update(CATALOG={"Dune": "Frank Herbert"})
    assert shell.run_cell("%%mcp_tool --read-only\ndef get_author(title: str) -> str:\n    return CATALOG[title]\n").success


def state(shell):
    engine = mcp_nb.engine()
    return (
        mcp_nb.registered().to_dict("records"),
        len(mcp_nb.history()),
        {k: shell.user_ns.get(k) for k in ("get_author", "other", "book", "t")},
        list(engine.connections),
    )


def usage_error(result) -> str:
    err = result.error_in_exec or result.error_before_exec
    assert isinstance(err, UsageError), f"expected a UsageError, got {err!r}"
    text = str(err)
    assert text and "\n" not in text, f"not one line: {text!r}"
    return text


def bug(result) -> BaseException:
    err = result.error_in_exec or result.error_before_exec
    assert err is not None and not isinstance(err, UsageError), f"a bug said as a usage error: {err!r}"
    return err


def broken(*args, **kwargs):
    raise TypeError("a bug inside mcp_nb")


# -- 1. a user's mistake is one line; mcp_nb's own bug is a traceback -------------------------------


def test_a_bug_inside_a_magic_shows_its_traceback_and_changes_nothing(shell, monkeypatch, capsys):
    setup_server(shell)
    before = state(shell)
    # An internal function on the call's path breaks...
    monkeypatch.setattr(magics_module, "parse_pairs", broken)
    err = bug(shell.run_cell("%mcp_call get_author title=Dune"))
    assert isinstance(err, TypeError) and str(err) == "a bug inside mcp_nb"
    assert "Traceback" in capsys.readouterr().out  # shown whole, to be reported
    # ...or Python itself raises inside mcp_nb's own code (here: a table of the registry broken).
    monkeypatch.setattr(registry_module, "ANNOTATION_FLAGS", None)
    err = bug(shell.run_cell("%%mcp_tool --read-only\ndef other() -> str:\n    return 'x'\n"))
    assert isinstance(err, TypeError) and "not subscriptable" in str(err)
    # ...or the connecting behind %mcp_connect does.
    monkeypatch.setattr(mcp_nb.api, "connect", broken)
    assert isinstance(bug(shell.run_cell(f"%mcp_connect books -- {sys.executable} server.py")), TypeError)
    assert state(shell) == before  # a failed cell still changes nothing


@pytest.mark.parametrize(
    "cell, message",
    [
        ("%mcp_call get_author title=Dune --server nope", "no server named 'nope' is connected"),
        ("%mcp_call get_author title=Dune --timeout 0", "timeout must be a positive number"),
        ("%mcp_call get_author title=Dune --retries 2 --elicit 1x", "--elicit 1x: give decline, cancel"),
        ("%%mcp_tool --inject latency=x\ndef t() -> str:\n    return ''\n", "latency takes a number, got 'x'"),
        ("%%mcp_tool --input-schema nothing_here\ndef t() -> str:\n    return ''\n", "no variable of that name"),
        ("%%mcp_tool\nt = lambda: 1\n", "the cell defines no function"),
        ("%%mcp_tool\ndef t(*args) -> str:\n    return ''\n", "MCP arguments are named"),
        ("%%mcp_resource books://{title}\ndef book(name: str) -> str:\n    return name\n", "Mismatch between URI parameters"),
        ("%mcp_remove nothing", "nothing named 'nothing' is registered"),
        ("%mcp_connect books", "missing the server"),
        ("%mcp_connect books http://[::1", "invalid URL 'http://[::1'"),
        ("%mcp_connect books -- definitely-not-a-command", "no command 'definitely-not-a-command' on PATH"),
        ("%mcp_disconnect kernel", "cannot be disconnected"),
        ("%mcp_replay no-such-cases.json", "no cases file at no-such-cases.json"),
    ],
)
def test_bad_input_is_still_one_line_and_changes_nothing(shell, cell, message):
    setup_server(shell)
    before = state(shell)
    assert message in usage_error(shell.run_cell(cell))
    assert state(shell) == before


def test_a_bug_behind_the_call_button_is_the_panels_failure_not_a_problem_with_the_form(monkeypatch):
    @mcp_nb.tool()
    def ping() -> str:
        return "pong"

    panel = show()
    try:
        monkeypatch.setattr(panel.engine, "submit", broken)
        panel.call_button.click()
        assert "a bug in the panel" in panel.failure.value and "TypeError: a bug inside mcp_nb" in panel.failure.value
        assert panel.problems.value == "" and panel.last_call is None
        # The engine's own checks still say what is wrong with the request, in the form.
        monkeypatch.setattr(panel.engine, "submit", lambda *a, **k: mcp_nb.engine().connection_for("gone"))
        panel.call_button.click()
        assert "Nothing was sent" in panel.problems.value and "no server named &#x27;gone&#x27;" in panel.problems.value
        assert panel.failure.value == ""
    finally:
        panel.close()


# -- 2. what goes wrong while a connection closes is said, not swallowed ------------------------------


def test_a_connection_that_does_not_close_in_time_says_so_and_its_process_still_ends(caplog):
    caplog.set_level(logging.DEBUG, logger="mcp_nb")
    root = logging.getLogger()
    configured = (root.level, list(root.handlers))
    connection = mcp_nb.connect("books", [*BOOKSHOP, "stdio-stubborn"])  # stays up after its stdin closes
    pid = connection.pid
    # Bounded by its timeout (it used to wait until the server left by itself, and say nothing).
    mcp_nb.engine().loop.submit(connection.close(timeout=0.2)).result(timeout=10)
    said = [r for r in caplog.records if r.name.startswith("mcp_nb.") and r.levelno == logging.DEBUG]
    assert any("'books'" in r.getMessage() and "not left within 0.2 s" in r.getMessage() for r in said), said
    assert wait_until(lambda: ended(pid), 20)  # the SDK still ends the process, in the background
    assert (root.level, list(root.handlers)) == configured  # the root logger is the user's


# -- 3. the template a read reaches: the server's, the registry's and the panel's answer agree -------


def test_the_registry_and_the_panel_find_the_entry_a_read_reached_as_the_server_did():
    # On the SDK's server directly, first: the reads of notes://... reach it, not mcp_nb's.
    @mcp_nb.server().resource("notes://{name}")
    def sdk_note(name: str) -> str:
        return f"sdk {name}"

    @mcp_nb.resource("notes://{topic}")
    def note(topic: str) -> str:
        return f"note {topic}"

    @mcp_nb.resource("docs://readme")
    def readme() -> str:
        return "readme"

    @mcp_nb.resource("docs://{+path}")
    def doc(path: str) -> str:
        return f"doc {path}"

    # docs://../etc matches docs://{+path} first, whose values the SDK refuses (`..`): the read
    # ends there, and this later template, which would take it, is never tried.
    @mcp_nb.resource("docs://../{name}")
    def above(name: str) -> str:
        return f"above {name}"

    registry = mcp_nb.engine().registry
    # uri: (what the read answered, whether mcp_nb's probe watched its handler, the entry the
    # panel loads and the values in its form, or None: none of mcp_nb's entries was reached)
    expected = {
        "docs://readme": ("readme", True, ("docs://readme", {})),
        "docs://a/b": ("doc a/b", True, ("docs://{+path}", {"path": "a/b"})),
        "docs://../etc": ("not_found", False, ("docs://{+path}", {"path": "../etc"})),
        "notes://x": ("sdk x", False, None),
        "nowhere://x": ("not_found", False, None),
    }
    panel = show()
    try:
        for uri, (answer, observed, loaded) in expected.items():
            o = mcp_nb.read(uri)
            assert (o.content if o.ok else o.cause) == answer, uri
            assert registry.observes("resource", uri) is observed, uri
            panel.tabs.selected_index = 1
            panel.history_tab.refresh()
            panel.history_tab.calls.value = panel.history_tab.calls.options[0][1]  # the newest call
            if loaded is None:
                assert "no longer registered" in panel.problems.value, uri
                continue
            key, values = loaded
            assert panel._current == ("resource", key), uri
            fields = panel._entries[panel._current].form.fields
            assert {name: field.widget.value for name, field in fields.items()} == values, uri
        assert panel.failure.value == ""
    finally:
        panel.close()
    # An outside server may list a template the SDK's parser refuses: it cannot say it matches,
    # so the search passes over it and goes on.
    listed = [("bad://{a}{b}", "bad"), ("good://{v}", "good"), ("good://{w}", "later")]
    assert registry_module.first_template("good://1", listed) == ("good", {"v": "1"})


# -- 4. a panel that is gone costs nothing ----------------------------------------------------------------


class _Weakly(weakref.WeakValueDictionary):
    def pop(self, key, *default):  # a widget closing as it goes finds its entry gone already
        return super().pop(key, None)


@pytest.fixture
def widgets_held_weakly(monkeypatch):
    """ipywidgets 8.1 keeps every widget, and the comm manager every comm, until it is closed;
    held weakly instead (ipywidgets#1345), a widget nothing refers to goes like any object, and
    a panel then goes unless mcp_nb itself holds on to it. The widgets of earlier tests stay
    held by the dictionaries put back afterwards."""
    monkeypatch.setattr(widget_module, "_instances", _Weakly(widget_module._instances))
    manager = comm.get_comm_manager()
    monkeypatch.setattr(manager, "comms", _Weakly(manager.comms))


def listening(engine) -> tuple[int, ...]:
    notifiers = settings._trait_notifiers.get("timeout", {}).get("change", [])
    return (
        len(engine.history._listeners),
        len(engine.registry._listeners),
        len(engine.connection._listeners),
        len(engine._connection_listeners),
        len(engine._close_listeners),
        len(notifiers),
    )


def test_panels_that_are_closed_or_dropped_cost_nothing(widgets_held_weakly, monkeypatch):
    @mcp_nb.tool()
    def ping() -> str:
        return "pong"

    engine = mcp_nb.engine()
    before = listening(engine)
    closed = [show() for _ in range(5)]
    dropped = [show() for _ in range(5)]
    assert listening(engine)[0] == before[0] + 10  # each listens while it is there
    for panel in closed:
        panel.close()
    gone = [weakref.ref(panel) for panel in dropped]
    del closed, dropped, panel
    gc.collect()
    assert [ref() for ref in gone] == [None] * 5  # nothing of mcp_nb's keeps a dropped panel
    handed = []
    monkeypatch.setattr(KernelThread, "hand_over", lambda self, fn, *args: handed.append(fn))
    assert mcp_nb.call("ping").ok  # a recorded call...

    @mcp_nb.tool()
    def pong() -> str:  # ...a registration...
        return "ping"

    mcp_nb.configure(timeout=settings.timeout + 1)  # ...a setting: no panel is told
    assert handed == []
    assert listening(engine) == before


def test_a_broken_listener_is_logged_and_the_others_are_still_told(caplog):
    heard = []
    history = mcp_nb.history()

    def fails(outcome):
        raise RuntimeError("a broken view")

    history.subscribe(fails)
    history.subscribe(heard.append)

    @mcp_nb.tool()
    def ping() -> str:
        return "pong"

    assert mcp_nb.call("ping").ok
    assert len(heard) == 1
    assert any(r.name.startswith("mcp_nb") and "history listener failed" in r.getMessage() for r in caplog.records)
    history.unsubscribe(fails)
    history.unsubscribe(heard.append)
    assert len(history._listeners) == 0


# -- 5. a prompt's arguments have one schema, however the prompt was registered ------------------------------


def test_a_prompts_arguments_have_one_schema_however_and_wherever_it_was_registered():
    def review(title: Annotated[str, Field(description="the book")], tone: str = "kind") -> str:
        return f"Review {title}, {tone}."

    mcp_nb.prompt()(review)
    mcp_nb.server().prompt(name="sdk_review")(review)  # on the SDK's server, not through mcp_nb
    kernel = mcp_nb.engine().connection
    schema = {
        "type": "object",
        "properties": {"title": {"type": "string", "description": "the book"}, "tone": {"type": "string"}},
        "required": ["title"],
    }
    assert kernel.input_schema("prompt", "review") == schema
    assert kernel.input_schema("prompt", "sdk_review") == schema
    books = mcp_nb.connect("books", [*BOOKSHOP, "stdio"])  # an outside server's listing: the same spelling
    assert books.input_schema("prompt", "review") == {
        "type": "object",
        "properties": {"title": {"type": "string"}},
        "required": ["title"],
    }
