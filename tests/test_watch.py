"""mcp_nb.watch: a resource's updates, on both eras, each read and recorded in the history.
Handshake era: server-everything over stdio (resources/subscribe; its toggle-subscriber-updates
tool sends an update at once, then every 5 s). 2026-07-28: a served notebook's resource over
HTTP (subscriptions/listen), and the kernel's own server."""

import sys
from pathlib import Path

import peers
import pytest
from helpers import wait_until
from mcp.server.mcpserver import Context

import mcp_nb

NOTES: list[str] = []


@pytest.fixture
def notes():
    NOTES[:] = ["first"]

    @mcp_nb.resource("memo://notes")
    def notes() -> str:
        return " | ".join(NOTES)

    @mcp_nb.tool()
    async def add_note(text: str, ctx: Context) -> str:
        NOTES.append(text)
        await ctx.notify_resource_updated("memo://notes")
        return "added"


def reads(uri):
    frame = mcp_nb.history().to_frame()
    return frame[(frame["target"] == "resource") & (frame["name"] == uri)]


def test_the_handshake_era_subscribes_and_each_update_is_read():
    peers.require(peers.EVERYTHING)
    connection = mcp_nb.connect("everything", peers.everything_stdio(), env=peers.node_env())
    uri = next(e.uri for e in connection.entries() if e.kind == "resource" and e.uri.endswith("features.md"))
    watched = mcp_nb.watch(uri, server="everything")
    assert (watched.state, watched.era) == ("watching", "2025-11-25")
    mcp_nb.call("toggle-subscriber-updates", server="everything")
    assert wait_until(lambda: watched.updates)
    first = watched.updates[0]
    assert (first.outcome, first.cause, first.name) == ("result", "ok", uri) and "Features" in first.content
    assert len(reads(uri)) >= 1 and "update" in repr(watched)
    watched.stop()
    assert watched.state == "stopped" and watched not in connection.watches
    mcp_nb.call("toggle-subscriber-updates", server="everything")  # updates off again, for the next tests


def test_the_stateless_era_listens_over_http_and_stops(notes):
    handle = mcp_nb.serve()
    mcp_nb.connect("me", handle.url, headers={"Authorization": f"Bearer {handle.token}"})
    watched = mcp_nb.watch("memo://notes", server="me")
    assert (watched.state, watched.era) == ("watching", "2026-07-28")
    assert mcp_nb.call("add_note", {"text": "second"}, server="me").content == "added"
    assert wait_until(lambda: watched.updates)
    assert watched.updates[0].content == "first | second"
    served = reads("memo://notes")
    assert set(served["via"]) == {"kernel", "http"}  # the watch's read, and the same read as the served notebook saw it
    watched.stop()
    mcp_nb.call("add_note", {"text": "third"}, server="me")
    assert not wait_until(lambda: len(watched.updates) > 1, limit=1.0)  # nothing after stop
    assert watched.state == "stopped"
    handle.stop()


def test_the_kernels_own_server_can_be_watched_too(notes):
    watched = mcp_nb.watch("memo://notes")
    mcp_nb.call("add_note", {"text": "again"})
    assert wait_until(lambda: watched.updates)
    assert watched.updates[-1].content == "first | again" and watched.describe()["server"] == "kernel"
    watched.stop()


@pytest.mark.parametrize("uri", ["", None, 3])
def test_a_bad_uri_is_one_line(uri):
    with pytest.raises(ValueError, match="watch takes a resource's URI"):
        mcp_nb.watch(uri)


def test_a_server_that_cannot_be_watched_says_so():
    bare = [sys.executable, str(Path(__file__).parent / "servers" / "broken_listing.py")]
    mcp_nb.connect("bare", bare)
    with pytest.raises(ValueError, match="does not let 'memo://notes' be watched"):
        mcp_nb.watch("memo://notes", server="bare")
