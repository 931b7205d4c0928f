"""A stdio server's process is the one mcp_nb started, and mcp_nb signals no process group but the
ones it started and still holds.

Before, the server's id was guessed as the lowest new child process found in /proc across an
`await`: two connects at once (a cell and the panel) took the same id, so disconnecting one
killed the other's server; a child the kernel started meanwhile (a sync tool's subprocess) could
be taken for the server, and killed with its group at disconnect; and a server whose exit was
noticed late had its id signalled after another process had been given it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import wait_until

import mcp_nb

CROSSINGS = [sys.executable, str(Path(__file__).parent / "servers" / "crossings.py"), "stdio"]
WHOAMI = [sys.executable, str(Path(__file__).parent / "servers" / "whoami_stdio.py")]  # starts in milliseconds
NS_LAST_PID = "/proc/sys/kernel/ns_last_pid"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc for what the tests check")


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def own_pid(name: str) -> int:
    """The id of the process that answers on connection `name`, as that process says it."""
    return int(mcp_nb.call("whoami", server=name, timeout=30).content)


def sleepers_in_sessions_of_their_own(seconds: float = 60):
    """Processes this test starts (and ends), each leading a process group of its own, as a tool's
    subprocess started with `start_new_session=True` does: what a wrong guess would have killed."""
    started: list[subprocess.Popen] = []

    def start() -> subprocess.Popen:
        sleeper = subprocess.Popen(["sleep", str(seconds)], start_new_session=True)
        started.append(sleeper)
        return sleeper

    return started, start


def end_all(started: list[subprocess.Popen]) -> None:
    for sleeper in started:
        if sleeper.poll() is None:
            sleeper.kill()
        sleeper.wait()


def test_two_connects_at_once_each_know_their_own_server_and_disconnect_ends_only_it():
    for trial in range(8):
        names = (f"a{trial}", f"b{trial}")
        barrier = threading.Barrier(2)
        connections: dict[str, object] = {}

        def connect(name: str) -> None:
            barrier.wait()
            connections[name] = mcp_nb.connect(name, WHOAMI, mode="2025-11-25", timeout=60)

        threads = [threading.Thread(target=connect, args=(name,)) for name in names]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        a, b = (connections[name] for name in names)
        assert a.pid != b.pid, f"trial {trial}: both connections say pid {a.pid}"
        assert (a.pid, b.pid) == (own_pid(names[0]), own_pid(names[1]))
        mcp_nb.disconnect(names[0])
        assert wait_until(lambda: not alive(a.pid), 10), f"trial {trial}: a's server outlived its connection"
        assert alive(b.pid), f"trial {trial}: disconnecting a ended b's server"
        assert mcp_nb.servers().loc[names[1], "state"] == "connected"
        assert own_pid(names[1]) == b.pid
        mcp_nb.disconnect(names[1])
        assert wait_until(lambda: not alive(b.pid), 10)


@pytest.mark.serial  # starts processes as fast as it can
def test_a_tools_subprocesses_started_during_a_connect_are_neither_taken_nor_killed():
    started, start = sleepers_in_sessions_of_their_own(seconds=0.3)  # short: a few hundred at most alive at once
    stop = threading.Event()

    @mcp_nb.tool()
    def spawn_until_stopped() -> int:
        """A sync tool that starts processes (as a tool running a command, or a dask worker, does)
        and waits for those that ended, as such a tool does: left unreaped, thousands of zombies
        piled up, and every look at /proc (this test's, mcp_nb's at a disconnect) read them all."""
        count, running = 0, []
        while not stop.is_set():
            running.append(start())
            count += 1
            if count % 32 == 0:
                running = [sleeper for sleeper in running if sleeper.poll() is None]
        return count

    spawner = threading.Thread(target=lambda: mcp_nb.call("spawn_until_stopped", timeout=300, progress=False))
    spawner.start()
    try:
        assert wait_until(lambda: len(started) > 3, 30)
        for trial in range(40):
            name = f"s{trial}"
            connection = mcp_nb.connect(name, WHOAMI, mode="2025-11-25", timeout=60)
            assert connection.pid == own_pid(name), f"trial {trial}: the connection took another process for its server"
            mcp_nb.disconnect(name)
            assert wait_until(lambda: not alive(connection.pid), 10)
    finally:
        stop.set()
        spawner.join(60)
    try:
        for sleeper in started:
            sleeper.wait(10)
        killed = [s.pid for s in started if s.returncode != 0]
        assert not killed, f"{len(killed)} of the tool's {len(started)} processes were signalled by a disconnect"
    finally:
        end_all(started)


def _pid_taken(pid: int) -> subprocess.Popen | None:
    """A process leading a session of its own, started with id `pid` when the kernel gives it out
    (the next id is asked for through ns_last_pid); None when `pid` is not free."""
    for _ in range(20):
        try:
            with open(NS_LAST_PID, "w") as last:
                last.write(str(pid - 1))
        except OSError:
            return None
        sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)
        if sleeper.pid == pid:
            return sleeper
        sleeper.kill()
        sleeper.wait()
        if alive(pid) or os.path.exists(f"/proc/{pid}"):
            return None  # held (a zombie still waits to be reaped): nobody can be given it
    return None


@pytest.mark.serial
@pytest.mark.filterwarnings("ignore::mcp_nb.registering.loop_watch.LoopBlockedWarning")  # holding the loop is the point
@pytest.mark.skipif(not os.access(NS_LAST_PID, os.W_OK), reason="choosing the next process id needs ns_last_pid (root)")
def test_a_server_that_exited_is_never_signalled_once_its_id_is_given_to_another_process():
    connection = mcp_nb.connect("gone", CROSSINGS, timeout=60)
    pid = connection.pid
    assert pid == own_pid("gone")
    released = threading.Event()

    @mcp_nb.tool()
    async def hold() -> str:
        # Holds mcp_nb's loop without awaiting: the server's exit cannot be acted on meanwhile.
        released.wait(30)
        return "held"

    assert mcp_nb.call("exit_soon", {"delay": 0.3}, server="gone").content == "bye"
    holder = threading.Thread(target=lambda: mcp_nb.call("hold", timeout=60, progress=False))
    holder.start()
    stranger = None
    try:
        assert wait_until(lambda: not alive(pid), 10), "the server did not exit"
        time.sleep(0.2)  # whoever reaps it has had the time to
        stranger = _pid_taken(pid)
    finally:
        released.set()
        holder.join(60)
    try:
        assert wait_until(lambda: mcp_nb.servers().loc["gone", "state"] == "lost", 10)
        mcp_nb.disconnect("gone")
        time.sleep(1.5)  # longer than a group's grace between its TERM and its KILL
        if stranger is not None:
            assert stranger.poll() is None, (
                f"the process given id {pid} after the server exited was signalled: {stranger.returncode}"
            )
    finally:
        if stranger is not None:
            stranger.kill()
            stranger.wait()


def test_a_line_on_stdout_that_is_no_message_is_said_on_the_call_and_the_call_goes_on():
    mcp_nb.connect("w", WHOAMI, mode="2025-11-25", timeout=60)
    outcome = mcp_nb.call("stray", server="w", timeout=30)
    assert (outcome.outcome, outcome.content) == ("result", "answered")
    said = [log.message for log in outcome.server_logs if log.logger == "mcp_nb.connection"]
    assert said == ["the server wrote a line on stdout that is no JSON-RPC message: 'loading the model... done'"], (
        outcome.server_logs
    )
    connection = mcp_nb.servers().loc["w"]
    assert connection["state"] == "connected" and own_pid("w") > 0
