"""Hostile: a secret that happens to stand in a traceback, and what the call's log keeps of it.

A connection's secrets are kept out of every log record (registering/log_secrets.py): where one
stands in a record's traceback, the traceback is replaced by its scrubbed text. The call's own log
is filed from the same record, and the error model reads the exceptions on it (a prompt's
`invalid_arguments` is told from a crash by them): scrubbing a secret must not cost the call
its cause. Seen as a test-order dependence (issue 40's follow-ups): a connection's environment
held a value that stands in every traceback's paths, and later calls lost their causes.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import warm

import mcp_nb

SHELF = warm.command(Path(__file__).parent / "servers" / "shelf.py")  # started warm (tests/warm.py)


def _bookshop() -> None:
    @mcp_nb.prompt()
    def review(title: str) -> str:
        """Write a review."""
        if title == "crash":
            raise RuntimeError("the reviewer fell over")
        return f"Review {title}"


def _tracebacks(outcome) -> list[str]:
    return [log.traceback or "" for log in outcome.server_logs]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("arguments, cause", [({}, "invalid_arguments"), ({"title": "crash"}, "crash")])
def test_a_secret_in_a_traceback_is_scrubbed_and_the_call_keeps_its_cause(arguments, cause):
    # A word of every traceback of the SDK's server ("mcpserver", in its files' paths) is a
    # connection's secret here, as a working directory or a home folder can be.
    mcp_nb.connect("shelf", SHELF, env={"SHELF_PASSWORD": "mcpserver"}, timeout=60)
    _bookshop()
    o = mcp_nb.get_prompt("review", arguments)
    assert (o.outcome, o.cause) == ("protocol_error", cause)
    assert [log.level for log in o.server_logs] == ["ERROR"]
    assert o.server_logs[0].exceptions, "the log entry lost the exceptions the error model reads"
    assert all("mcpserver" not in text for text in _tracebacks(o)) and any(_tracebacks(o))


@pytest.mark.timeout(120)
def test_a_scrubbed_record_still_reaches_the_users_handler_without_the_secret(caplog):
    mcp_nb.connect("shelf", SHELF, env={"SHELF_TOKEN": "mcpserver"}, timeout=60)
    _bookshop()
    with caplog.at_level(logging.ERROR, logger="mcp"):
        o = mcp_nb.get_prompt("review", {"title": "crash"})
    assert o.cause == "crash"
    shown = caplog.text
    assert "RuntimeError" in shown and "mcpserver" not in shown
