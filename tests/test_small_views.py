"""Small things a newcomer prints: each reads at a glance."""

from __future__ import annotations

import logging

import mcp_nb


def test_the_causes_print_as_a_table_and_stay_a_dict():
    text = str(mcp_nb.CAUSE_DOC)
    lines = text.splitlines()
    assert len(lines) == len(mcp_nb.CAUSE_DOC) == len(mcp_nb.CAUSES)
    assert lines[0].split()[0] == "ok" and "the handler returned normally" in lines[0]
    assert repr(mcp_nb.CAUSE_DOC) == text and "<table>" in mcp_nb.CAUSE_DOC._repr_html_()
    assert dict(mcp_nb.CAUSE_DOC)["crash"].startswith("the handler")  # still a plain mapping


def test_a_calls_server_logs_are_a_line_each():
    @mcp_nb.tool()
    def noisy() -> str:
        logging.getLogger("noisy").warning("first line\nsecond line " + "x" * 500)
        raise KeyError("k")

    o = mcp_nb.call("noisy")
    shown = repr(o.server_logs)
    assert len(shown) < 400, shown
    assert "<ServerLog WARNING noisy: first line ...>" in shown and "+traceback>" in shown
    assert o.server_logs[0].message.endswith("x" * 500)  # the record keeps it all
