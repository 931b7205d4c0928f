"""What a card renders is bounded, however much a call logged: its first and last entries, and
how many it leaves out (a call with 10,000 log lines made a card of 4.6 MB)."""

from __future__ import annotations

import logging

import mcp_nb
from mcp_nb.views.cards import outcome_html


def test_a_call_that_logs_ten_thousand_lines_has_a_card_of_bounded_size():
    log = logging.getLogger("chatty")

    @mcp_nb.tool()
    def chatty() -> str:
        for i in range(10_000):
            log.warning("line %d of the story", i)
        log.warning("x" * 100_000)  # and one line of 100,000 characters
        return "done"

    o = mcp_nb.call("chatty")
    assert o.content == "done" and len(o.server_logs) == 10_001  # the record keeps every one
    card = outcome_html(o)
    assert len(card) < 100_000, f"{len(card):,} characters"
    assert "line 0 of the story" in card and "line 19 of the story" in card and "line 20 of the story" not in card
    assert "line 9999 of the story" in card and "9,961 more log entries" in card
    assert "(98,000 more characters)" in card
    text = repr(o)
    assert len(text) < 50_000 and "... 9961 more (o.server_logs has every one)" in text
