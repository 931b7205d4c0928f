"""A watch reads a resource once per burst of changes, keeps a bounded record, and says when its
server is gone, on both eras.

Before, each change notice started a read of its own: 2,000 notices started 2,000 reads, 501 of
them at once, and every Outcome was kept on the watch. And on the handshake era a watch whose
server had died still said `watching` (only the 2026-07-28 listen stream noticed its end).

A real server: tests/servers/crossings.py over stdio (its `memo://version` counts its reads, and
the most at once).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import peers
import pytest
import warm
from helpers import wait_until

import mcp_nb
from mcp_nb.calling.watching import KEPT, PING_S

CROSSINGS = warm.command(Path(__file__).parent / "servers" / "crossings.py", "stdio")  # started warm (tests/warm.py)
URI = "memo://version"


def reads_recorded() -> int:
    frame = mcp_nb.history().to_frame()
    return int(((frame["target"] == "resource") & (frame["name"] == URI)).sum())


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
def test_a_burst_of_changes_is_read_one_at_a_time_and_the_last_change_is_always_read(era):
    mcp_nb.connect("x", CROSSINGS, mode=era, timeout=60)
    watched = mcp_nb.watch(URI, server="x")
    assert (watched.state, watched.era) == ("watching", era)
    assert mcp_nb.call("bump", {"times": 2000}, server="x", timeout=120).content == "version 2000"
    assert wait_until(lambda: watched.updates and watched.updates[-1].content == "version 2000", 60), repr(watched)
    stats = {}

    def settled() -> bool:  # the server, the history and the watch count the same reads (none in flight)
        stats.update(json.loads(mcp_nb.call("version_reads", server="x").content))
        return stats["reads"] == reads_recorded() == watched.describe()["updates"]

    assert wait_until(settled, 30), (stats, reads_recorded(), repr(watched))
    assert stats["most_at_once"] == 1, f"{stats['most_at_once']} reads of one resource ran at once"
    assert stats["reads"] < 2000 / 4 and len(watched.updates) <= KEPT, (stats, watched.describe())
    watched.stop()


def test_the_updates_kept_on_a_watch_are_bounded_and_the_count_goes_on():
    mcp_nb.connect("x", CROSSINGS, mode="2025-11-25", timeout=60)
    watched = mcp_nb.watch(URI, server="x")
    for n in range(1, KEPT + 21):
        mcp_nb.call("bump", {"times": 1}, server="x", timeout=30, progress=False)
        assert wait_until(lambda: watched.describe()["updates"] >= n, 30), repr(watched)
    assert len(watched.updates) == KEPT and watched.updates[-1].content == f"version {KEPT + 20}"
    assert watched.describe()["updates"] == KEPT + 20 == reads_recorded()  # every read is in the history
    assert f"{KEPT + 20} updates" in repr(watched)
    watched.stop()


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
def test_a_watch_on_a_server_that_died_says_lost_and_why(era, transport):
    if transport == "stdio":
        mcp_nb.connect("x", CROSSINGS, mode=era, timeout=60)
    else:
        server = subprocess.Popen(
            [*CROSSINGS[:-1], "http", str(port := peers.free_port())], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        peers.wait_for_port(port, server)
        mcp_nb.connect("x", f"http://127.0.0.1:{port}/mcp", mode=era, timeout=60)
    watched = mcp_nb.watch(URI, server="x")
    assert mcp_nb.call("exit_soon", {"delay": 0.2}, server="x").content == "bye"
    # Over HTTP at 2025-11-25 nothing is sent while a watch waits: its ping finds the server gone.
    assert wait_until(lambda: watched.state == "lost", 20 + PING_S), repr(watched)
    assert "exited" in watched.reason or "closed" in watched.reason or "lost" in watched.reason, watched.reason
    assert "lost" in repr(watched) and watched.describe()["reason"] == watched.reason


def test_a_watch_whose_connection_is_closed_says_so():
    mcp_nb.connect("x", CROSSINGS, mode="2025-11-25", timeout=60)
    watched = mcp_nb.watch(URI, server="x")
    mcp_nb.disconnect("x")
    assert watched.state == "lost" and "closed" in watched.reason, (watched.state, watched.reason)
