"""What an outside server writes reaches a connection's messages as one safe, bounded line
(`mistakes.one_line`), wherever the connection quotes it: a listing's error, the last line its
process wrote before it exited, a question no call can answer."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from helpers import wait_until

import mcp_nb

PEER = [sys.executable, str(Path(__file__).parent / "servers" / "peer_text.py")]
BOUND = 400  # mistakes.LINE_LIMIT, and the words mcp_nb puts around it


def safe(text: str) -> bool:
    return "\n" not in text and "\x1b" not in text and "\u202e" not in text


def test_a_listing_error_of_a_megabyte_is_said_in_one_bounded_line():
    connection = mcp_nb.connect("peer", PEER)
    why = connection.unavailable["prompts"]
    assert why.startswith("the server answered prompts/list with error -32603: xxx") and len(why) < BOUND, len(why)
    assert len(connection.describe()["unavailable"]) < BOUND
    warned = [line.message for line in connection.logs if line.level == "WARNING" and "prompts" in line.message]
    assert warned and all(len(message) < BOUND for message in warned)


def test_a_question_no_call_can_answer_is_refused_with_its_first_line_only():
    connection = mcp_nb.connect("peer", PEER)
    assert wait_until(lambda: any("refused the question" in line.message for line in connection.logs))
    (note,) = [line.message for line in connection.logs if "refused the question" in line.message]
    assert note.startswith("refused the question Pick a colour …: it came during no call"), note
    assert safe(note) and "Traceback" not in note and len(note) < BOUND


def test_the_last_line_a_server_wrote_is_bounded_in_the_reason_its_connection_was_lost():
    # The server closes its stderr, which mcp_nb reads as its end: the connection is lost, and
    # the reason quotes the last line it wrote there (a megabyte, without an end of line).
    connection = mcp_nb.connect("peer", PEER)
    assert mcp_nb.call("mute", server="peer").content == "muted"
    assert wait_until(lambda: connection.state == "lost")
    assert connection.reason.startswith("its process exited (its last line: going quiet: xxx"), connection.reason[:200]
    assert len(connection.reason) < BOUND and len(mcp_nb.servers().loc["peer", "reason"]) < BOUND
    after = mcp_nb.call("mute", server="peer")  # a call on the lost connection says why, in one bounded line
    assert after.cause == "disconnected" and len(after.message) < 2 * BOUND and safe(after.message)


def test_a_snapshot_of_a_server_whose_listing_fails_says_so_in_one_bounded_line():
    mcp_nb.connect("peer", PEER)
    with pytest.raises(ValueError) as raised:  # a SurfaceError: the mistake is the server's, said in one line
        mcp_nb.snapshot(server="peer")
    message = str(raised.value)
    assert message.startswith("no snapshot of 'peer': it answered prompts/list with error -32603: xxx") and len(message) < BOUND


def test_a_secret_the_server_writes_last_is_not_in_the_reason_its_connection_was_lost():
    # The reason is on the connection's card, which a saved notebook keeps: what the connection
    # holds as a secret (its environment's API key) is taken out of it, as from a failed connect.
    connection = mcp_nb.connect("peer", PEER, env={"PEER_API_KEY": "sk-peer-0123456789"})
    assert mcp_nb.call("confess", server="peer").content == "muted"
    assert wait_until(lambda: connection.state == "lost")
    assert connection.reason == "its process exited (its last line: my key is ***)", connection.reason
    assert "sk-peer" not in repr(connection) + connection._repr_html_() + mcp_nb.servers().to_string()
