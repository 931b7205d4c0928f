"""No user code a peer can trigger runs on mcp_nb's loop: a sampling function, a roots function and
a watch's listener that block hold only themselves, never the other calls.

Before, a sync sampling function ran on mcp_nb's event loop (a model's client blocking for 3 s
delayed an unrelated kernel call by 2.2 s: every connection, the served endpoint and the panel
stalled), and the 120 s bound held only for async ones; a roots function and a watch's listeners
ran there too. Each test below holds the user's function on a `threading.Event` and makes an
unrelated call meanwhile: it must end while the function provably still runs.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from helpers import checkout_env, wait_until

import mcp_nb

CROSSINGS = [sys.executable, str(Path(__file__).parent / "servers" / "crossings.py"), "stdio"]


class Held:
    """A user function's body that says it started, then waits until the test lets it go."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.threads: list[str] = []

    def __call__(self, result):
        self.threads.append(threading.current_thread().name)
        self.started.set()
        self.release.wait(60)
        return result


@pytest.fixture
def kernel_tool():
    @mcp_nb.tool()
    def unrelated(x: int) -> int:
        return x + 1

    return "unrelated"


def an_unrelated_call_ends_while(held: Held) -> None:
    """While `held` runs (it started, and is not released), a kernel call and a call to the
    same outside server both end with their result."""
    assert held.started.wait(60), "the user's function never started"
    try:
        kernel = mcp_nb.call("unrelated", {"x": 1}, timeout=20, progress=False)
        outside = mcp_nb.call("whoami", server="x", timeout=20, progress=False)
        assert not held.release.is_set() and held.started.is_set()  # the function still runs
        assert (kernel.outcome, kernel.content) == ("result", "2"), (kernel.outcome, kernel.message)
        assert outside.outcome == "result", (outside.outcome, outside.message)
    finally:
        held.release.set()


def in_background(function, *args, **kwargs):
    done: dict = {}
    thread = threading.Thread(target=lambda: done.setdefault("outcome", function(*args, **kwargs)))
    thread.start()
    return thread, done


def test_a_sync_sampling_function_runs_off_the_loop_while_other_calls_go_on(kernel_tool):
    held = Held()
    mcp_nb.connect("x", CROSSINGS, mode="2025-11-25", sampling=lambda messages, request: held("a held reply"), timeout=60)
    thread, done = in_background(mcp_nb.call, "sample", {"label": "a"}, server="x", timeout=60, progress=False)
    an_unrelated_call_ends_while(held)
    thread.join(60)
    assert done["outcome"].content == "a: a held reply"
    assert held.threads[0] != "mcp_nb-loop"


def test_a_sync_sampling_function_that_never_replies_is_refused_in_time():
    from mcp_types import CreateMessageRequestParams, SamplingMessage, TextContent

    from mcp_nb.calling.sampling import Sampler

    release = threading.Event()
    params = CreateMessageRequestParams(
        messages=[SamplingMessage(role="user", content=TextContent(type="text", text="hi"))], max_tokens=5
    )

    async def asked():
        try:
            return await Sampler(lambda messages, request: release.wait(60)).answer(params, within=0.3)
        finally:
            release.set()

    sampled = asyncio.run(asked())
    assert sampled.refused and sampled.reason == "the sampling function did not reply within 0.3 s"


def test_a_sync_roots_function_runs_off_the_loop_while_other_calls_go_on(kernel_tool, tmp_path):
    held = Held()
    mcp_nb.connect("x", CROSSINGS, mode="2025-11-25", roots=lambda: held([tmp_path]), timeout=60)
    thread, done = in_background(mcp_nb.call, "roots", server="x", timeout=60, progress=False)
    an_unrelated_call_ends_while(held)
    thread.join(60)
    assert done["outcome"].content == tmp_path.resolve().as_uri()


def test_a_watch_listener_runs_off_the_loop_while_other_calls_go_on(kernel_tool):
    held = Held()
    mcp_nb.connect("x", CROSSINGS, mode="2025-11-25", timeout=60)
    watched = mcp_nb.watch("memo://counter", server="x")
    heard: list = []
    watched.on_update(lambda watch: heard.append(held(len(watch.updates))))
    assert mcp_nb.call("touch", {"uri": "memo://counter", "times": 1}, server="x").content == "touched 1"
    an_unrelated_call_ends_while(held)
    assert wait_until(lambda: heard == [1])
    watched.stop()


NEVER = {
    "sampling": ("sampling=never", "sample", "{'label': 'a'}", ""),
    "elicit": ("", "ask", "{'label': 'a'}", "elicit=never, "),
    "roots": ("roots=never", "roots", "{}", ""),
}


@pytest.mark.parametrize("kind", sorted(NEVER))
def test_the_interpreter_ends_while_a_users_function_never_returns(kind):
    """A user's function that never returns holds its own thread only: the interpreter still
    exits (the loop's default executor, whose threads it joins at exit, would hold it for ever),
    and the server's process ends with it."""
    option, tool, arguments, per_call = NEVER[kind]
    script = textwrap.dedent(
        f"""
        import threading
        import mcp_nb

        started = threading.Event()

        def never(*args):
            started.set()
            threading.Event().wait()

        connection = mcp_nb.connect("x", {CROSSINGS!r}, mode="2025-11-25", {option})
        print(connection.pid, flush=True)
        threading.Thread(target=lambda: mcp_nb.call({tool!r}, {arguments}, server="x", {per_call}timeout=300), daemon=True).start()
        assert started.wait(60), "the function never started"
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=checkout_env())
    assert done.returncode == 0, done.stderr[-2000:]
    pid = int(done.stdout.split()[0])
    assert wait_until(
        lambda: not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z", 20
    )
