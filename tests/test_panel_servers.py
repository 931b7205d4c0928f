"""The panel on a connected server: choose it, see what it offers, call it, load its calls back."""

from __future__ import annotations

from pathlib import Path

import warm
from helpers import wait_until

import mcp_nb
from mcp_nb.widgets import Panel

BOOKSHOP = warm.command(
    Path(__file__).parent.parent / "notebooks" / "servers" / "bookshop.py", "stdio"
)  # started warm (tests/warm.py)


def shows(panel: Panel, *texts: str) -> str:
    assert wait_until(lambda: all(t in panel.outcome.value for t in texts)), panel.outcome.value
    return panel.outcome.value


def test_the_panel_follows_connections_and_calls_the_chosen_server():
    @mcp_nb.tool()
    def local() -> str:
        return "here"

    panel = mcp_nb.panel()
    try:
        assert panel.servers.options == ("kernel",) and [v for _, v in panel.picker.options] == [("tool", "local")]
        mcp_nb.connect("books", BOOKSHOP)
        assert panel.servers.options == ("kernel", "books")  # a new connection shows up at once
        panel.servers.value = "books"
        listed = {v for _, v in panel.picker.options}
        assert ("tool", "get_author") in listed and ("resource", "books://{title}") in listed and ("prompt", "review") in listed
        assert "stdio server <code>books</code> (bookshop 1.0.0)" in panel.title.value
        panel.select("tool", "get_author")
        panel._entries[panel._current].form.fields["title"].widget.value = "Dune"
        call = panel.call()
        outcome = call.future.result(timeout=30)
        assert (outcome.server, outcome.content) == ("books", "Frank Herbert")
        shows(panel, "mcp-nb-badge mcp-nb-result", "Frank Herbert", "on books")
        # a template read builds its URI from the form, and goes to the server too
        panel.select("resource", "books://{title}")
        panel._entries[panel._current].form.fields["title"].widget.value = "Dune"
        assert panel.call().future.result(timeout=30).content == "Dune by Frank Herbert"
        # back on the kernel's server, a past call of the other server brings its server back
        panel.servers.value = "kernel"
        assert [v for _, v in panel.picker.options] == [("tool", "local")]
        panel._load_call(outcome)
        assert panel.server == "books" and panel.servers.value == "books" and panel._current == ("tool", "get_author")
        assert panel._entries[panel._current].form.fields["title"].widget.value == "Dune"
        # a disconnected server leaves the list, and the panel goes back to the kernel's
        mcp_nb.disconnect("books")
        assert panel.servers.options == ("kernel",) and panel.server == "kernel"
        assert [v for _, v in panel.picker.options] == [("tool", "local")]
        assert "in-kernel server" in panel.title.value
        assert panel.failure.value == ""
    finally:
        panel.close()


def test_the_panel_can_open_on_a_server_and_refuses_an_unknown_one(shell):
    mcp_nb.connect("books", BOOKSHOP)
    result = shell.run_cell("%mcp_panel --server books")
    assert result.success and result.result.server == "books"
    result.result.close()
    result = shell.run_cell("%mcp_panel --server nope")
    assert type(result.error_in_exec).__name__ == "UsageError"
    assert "no server named 'nope'" in str(result.error_in_exec)
