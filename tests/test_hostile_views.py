"""Hostile: what servers and tools write, drawn by the cards (views/cards.py, views/live.py).

A card is the user's view of someone else's words: a server's name, version and instructions,
a tool's result, an error message, a log line. Nothing in them may break the card's lines (a
server name of two lines, a fake `Traceback` under a message), recolour or clear a terminal
(ANSI escapes), reorder what is read (bidi overrides), run in the notebook (HTML, a `javascript:`
link), make the notebook unsavable (a lone surrogate), or make the card megabytes long.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import mcp_nb
from mcp_nb.views.cards import connection_html, connection_text, outcome_html, registration_html

SERVER = str(Path(__file__).parent / "servers" / "hostile_rpc.py")
UNSAFE = ("\x1b", "\u202e", "\x00", "\x07", "\ud800")


def safe(text: str) -> None:
    """No character of UNSAFE in `text`, and it encodes as UTF-8 (a notebook saves it)."""
    assert not [c for c in UNSAFE if c in text], [c for c in UNSAFE if c in text]
    text.encode("utf-8")


@pytest.fixture
def odd_info():
    connection = mcp_nb.connect("h", [sys.executable, SERVER, "odd_info"], timeout=60)
    yield connection
    mcp_nb.disconnect("h")


@pytest.fixture
def plain():
    connection = mcp_nb.connect("h", [sys.executable, SERVER, "plain"], timeout=60)
    yield connection
    mcp_nb.disconnect("h")


@pytest.mark.timeout(120)
def test_a_server_name_and_version_of_many_lines_stay_on_the_cards_line(odd_info):
    text = repr(odd_info)
    lines = text.splitlines()
    assert lines[0] == "server h (stdio, connected)"
    assert lines[1].startswith("  evil\\nTraceback (most recent call last):\\n<script>")  # one line, the breaks shown
    assert not any(line.startswith("Traceback") for line in lines)
    safe(text)
    card = odd_info._repr_html_()
    assert "<script>" not in card and "&lt;script&gt;" in card
    safe(card)


@pytest.mark.timeout(120)
def test_a_servers_instructions_in_its_snapshot_and_its_diff_are_shown_safely(odd_info, tmp_path, shell):
    snap = mcp_nb.snapshot("h", path=tmp_path / "new.json")
    assert snap["server"]["instructions"].startswith("line one\nline two")  # the document keeps what was sent
    old = dict(snap, server=dict(snap["server"], instructions="before", name="evil\nbefore"))
    (tmp_path / "old.json").write_text(json.dumps(old))
    result = shell.run_cell(f"%mcp_diff {tmp_path / 'old.json'} {tmp_path / 'new.json'}")
    assert result.success, result.error_in_exec
    report = result.result
    assert len(report.frame) == 2
    safe(repr(report))
    html = report._repr_html_()
    safe(html)
    assert "<script>" not in html


@pytest.mark.timeout(120)
def test_a_results_control_and_bidi_characters_are_shown_as_escapes(plain):
    o = mcp_nb.call("nul", {}, server="h", timeout=20)
    assert o.content == "nul\x00byte and \x1b[31mred\x1b[0m and \u202ebidi"  # the record keeps what was sent
    text = repr(o)
    safe(text)
    assert "nul\\x00byte and \\x1b[31mred" in text and "\\u202ebidi" in text
    safe(o._repr_html_())


@pytest.mark.timeout(120)
def test_an_error_message_with_a_fake_traceback_and_escapes_is_shown_safely(plain):
    o = mcp_nb.call("error_control", {}, server="h", timeout=20)
    text = repr(o)
    safe(text)
    host = [line for line in text.splitlines() if "Traceback" in line]
    assert host and all(line.startswith(" " * 14) for line in host)  # indented under "host sees", not a line of its own
    safe(o._repr_html_())


@pytest.mark.timeout(120)
def test_an_8_mb_error_message_makes_a_card_of_bounded_size(plain):
    o = mcp_nb.call("error_huge", {}, server="h", timeout=60)
    assert (o.outcome, len(o.message)) == ("protocol_error", 8_000_000)  # the record keeps it all
    assert len(repr(o)) < 20_000 and len(o._repr_html_()) < 50_000
    assert "more characters: o.message has them all" in repr(o)


@pytest.mark.timeout(120)
def test_html_in_a_result_and_its_structured_content_is_text_in_the_card(plain):
    o = mcp_nb.call("html_text", {}, server="h", timeout=20)
    card = o._repr_html_()
    assert "<script>" not in card and "<img" not in card and "&lt;script&gt;alert(6)" in card


@pytest.mark.timeout(120)
def test_a_log_line_with_an_odd_logger_name_is_shown_safely(plain):
    o = mcp_nb.call("log_odd", {}, server="h", timeout=20)
    safe(repr(o))
    safe(o._repr_html_())


def test_a_kernel_tool_answering_megabytes_makes_a_card_of_bounded_size():
    @mcp_nb.tool()
    def big() -> str:
        return "x" * 5_000_000

    o = mcp_nb.call("big")
    assert len(o.content) == 5_000_000
    assert len(repr(o)) < 50_000 and len(outcome_html(o)) < 60_000
    assert "4,980,000 more characters: o.content has them all" in repr(o)


def test_a_lone_surrogate_in_a_kernel_tools_result_leaves_a_card_that_can_be_saved():
    @mcp_nb.tool()
    def lone() -> str:
        return "a\ud800b"

    o = mcp_nb.call("lone")
    assert o.outcome == "result"
    safe(repr(o))
    safe(outcome_html(o))


def test_a_connection_row_with_a_javascript_link_is_no_link():
    row = {
        "server": "x",
        "transport": "http",
        "state": "authorizing",
        "authorize": "javascript:alert(1)",
        "target": "http://127.0.0.1:1/mcp",
    }
    card = connection_html(row)
    assert 'href="javascript' not in card and "javascript:alert(1)" in card
    row = dict(row, server="two\nlines\x1b[2J", reason="first\nTraceback\u202e", unavailable="u\nv")
    text = connection_text(row)
    assert len(text.splitlines()) == 5  # the name, the target, the link, what then, what is unavailable
    safe(text)


def test_a_registration_of_odd_titles_and_descriptions_is_one_line_each():
    @mcp_nb.tool(title="t\x1b[2J\nx", description="first\u202e line\nsecond <script>alert(1)</script>")
    def odd(x: int) -> int:
        return x

    registration = mcp_nb.engine().registry.get("tool", "odd")
    text = repr(registration)
    assert text.splitlines()[1:3] == ["  title: t\\x1b[2J\\nx", "  first\\u202e line"]
    safe(text)
    card = registration_html(registration)
    assert "<script>" not in card
    safe(card)


def test_invalid_tool_names_are_refused_in_one_line():
    with pytest.raises(mcp_nb.mistakes.BadValue if hasattr(mcp_nb, "mistakes") else ValueError) as refused:

        @mcp_nb.tool(name="two\nlines\x1b[31m")
        def odd(x: int) -> int:
            return x

    assert "\n" not in str(refused.value) and "\x1b" not in str(refused.value)
    assert len(mcp_nb.engine().registry.entries()) == 0
