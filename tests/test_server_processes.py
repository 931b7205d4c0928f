"""A stdio connection knows when its server is gone, and no process it started outlives it.

The server here starts a helper that holds its pipes (tests/servers/with_helper.py). Before,
a server that exited mid-call was not noticed while the helper held the pipes (the call waited
for its deadline, the next one too, and `servers()` said connected), and after `disconnect`
the helper lived on with parent 1.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from helpers import wait_until

import mcp_nb
from mcp_nb.calling.connections import ConnectError

WITH_HELPER = [sys.executable, str(Path(__file__).parent / "servers" / "with_helper.py")]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is gone, but for its entry
    except OSError:
        return False


@pytest.fixture
def helper_file(tmp_path):
    return tmp_path / "helper.pid"


def connect(helper_file):
    connection = mcp_nb.connect("helped", WITH_HELPER, env={"HELPER_PID_FILE": str(helper_file)}, timeout=30)
    assert wait_until(helper_file.exists)
    helper = int(helper_file.read_text())
    assert alive(helper)
    return connection, helper


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_after_disconnect_nothing_the_server_started_is_left(helper_file):
    connection, helper = connect(helper_file)
    assert mcp_nb.call("ping", server="helped").content == "pong"
    mcp_nb.disconnect("helped")
    assert wait_until(lambda: not alive(helper), 5), "the helper outlived its connection"
    assert not alive(connection.pid)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_server_that_exits_mid_call_is_noticed_whatever_holds_its_pipes(helper_file):
    connection, helper = connect(helper_file)
    t0 = time.perf_counter()
    o = mcp_nb.call("die", server="helped", timeout=20)
    took = time.perf_counter() - t0
    assert (o.outcome, o.cause) == ("protocol_error", "disconnected"), (o.cause, o.message)
    assert took < 5, f"noticed only after {took:.1f} s"  # not at the deadline, 20 s on
    assert mcp_nb.servers().loc["helped", "state"] == "lost"
    nxt = mcp_nb.call("ping", server="helped", timeout=20)
    assert nxt.cause == "disconnected" and nxt.duration_ms < 1000
    assert wait_until(lambda: not alive(helper), 5), "the helper outlived its server"
    mcp_nb.reconnect("helped", timeout=30)
    assert mcp_nb.call("ping", server="helped").content == "pong"


def test_a_server_that_exits_at_start_says_why_in_the_connect_error(shell):
    # mcp-server-time with a bad time zone, mcp-server-git outside a repository: the reason is
    # on their stderr, and the SDK says only "Connection closed".
    says = "import sys; print('Traceback...', file=sys.stderr); print('ValueError: unknown time zone Mars/Base', file=sys.stderr); sys.exit(2)"
    with pytest.raises(ConnectError) as failed:
        mcp_nb.connect("time", [sys.executable, "-c", says], timeout=20)
    said = str(failed.value)
    assert said.endswith("its stderr ended with: Traceback... | ValueError: unknown time zone Mars/Base") and "\n" not in said
    cell = shell.run_cell(f'%mcp_connect time --timeout 20 -- {sys.executable} -c "{says}"')
    assert "unknown time zone Mars/Base" in str(cell.error_in_exec)
    assert list(mcp_nb.engine().connections) == ["kernel"]
