"""Every call is recorded exactly once, when its answer comes at its deadline.

A call's deadline is kept by mcp_nb's loop, and by the thread that waits for the call when that
loop is held (an async handler that does not await): two actors may record the same call, the
loop its late answer and the waiting thread its timeout. One lock decides, per attempt, which of
them records it; these tests race them, many times, with the answer arriving at the deadline.
"""

from __future__ import annotations

import random
import subprocess
import threading
import time
from pathlib import Path

import peers
import pytest
import warm

import mcp_nb
from mcp_nb.calling.call import GRACE_S

CROSSINGS = warm.command(Path(__file__).parent / "servers" / "crossings.py")  # started warm (tests/warm.py)
T = 0.15  # each call's timeout, and how long its answer takes
LOOP_HELD = pytest.mark.filterwarnings("ignore::mcp_nb.registering.loop_watch.LoopBlockedWarning")  # holding it is the point


def recorded_once(made: list) -> None:
    """Each call made is in the history, once."""
    frame = mcp_nb.history().to_frame()
    counts = frame["call_id"].value_counts()
    twice = counts[counts > 1]
    assert twice.empty, f"recorded more than once: {dict(twice)}"
    ids = {outcome.call_id for outcome in made}
    assert ids <= set(frame["call_id"]), f"calls missing from the history: {sorted(ids - set(frame['call_id']))}"


def holds_the_loop():
    @mcp_nb.tool()
    async def hold(seconds: float) -> str:
        time.sleep(seconds)  # holds mcp_nb's loop without awaiting: its deadline cannot fire meanwhile
        return f"held {seconds}"


@LOOP_HELD
def test_an_async_handler_that_answers_as_its_deadline_passes_is_recorded_once():
    holds_the_loop()
    made = []
    # The answer comes around the moment the waiting thread looks (the deadline and its grace):
    # now just before, now just after, in steps smaller than the time either side takes.
    for step in range(80):
        seconds = T + GRACE_S + (step % 40 - 20) * 0.0015
        made.append(mcp_nb.call("hold", {"seconds": seconds}, timeout=T, progress=False))
    assert {o.outcome for o in made} <= {"result", "timeout"}
    recorded_once(made)


@pytest.fixture(scope="module")
def crossings_url():
    port = peers.free_port()
    server = subprocess.Popen([*CROSSINGS, "http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        peers.wait_for_port(port, server)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        peers.stop(server)


@LOOP_HELD
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_outside_answers_that_come_at_the_deadline_are_recorded_once(transport, request):
    target = [*CROSSINGS, "stdio"] if transport == "stdio" else request.getfixturevalue("crossings_url")
    mcp_nb.connect("x", target, timeout=60)
    holds_the_loop()
    made: list = []
    stop = threading.Event()

    def caller(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(20):
            # The server answers after T, the deadline is T: which comes first is the race.
            made.append(mcp_nb.call("nap", {"seconds": T + rng.uniform(-0.01, 0.01)}, server="x", timeout=T, progress=False))

    def holder() -> None:
        rng = random.Random(0)
        while not stop.is_set():  # now and then the loop is held across some deadlines
            made.append(mcp_nb.call("hold", {"seconds": rng.uniform(0.1, 0.25)}, timeout=T, progress=False))
            time.sleep(rng.uniform(0.0, 0.2))

    callers = [threading.Thread(target=caller, args=(seed,)) for seed in range(4)]
    holding = threading.Thread(target=holder)
    holding.start()
    for thread in callers:
        thread.start()
    for thread in callers:
        thread.join(300)
    stop.set()
    holding.join(60)
    outcomes = {o.outcome for o in made}
    assert outcomes <= {"result", "timeout"} and "timeout" in outcomes, outcomes
    recorded_once(made)


@pytest.mark.parametrize("face", ["call", "acall"])
def test_a_call_recorded_while_a_slow_history_listener_holds_the_loop_is_recorded_once(face):
    """The loop records the answer, in time, then a listener of the history (the user's code, run
    where the call was recorded) holds the loop past the deadline: the waiting thread finds the
    loop silent. The call is the answer it got, recorded once, not that answer and a timeout."""

    @mcp_nb.tool()
    def quick(x: int) -> int:
        return x * 2

    heard: list = []
    release = threading.Event()

    def slow_listener(outcome) -> None:
        if outcome is not None and outcome.name == "quick":
            heard.append(outcome)
            if len(heard) == 1:
                release.wait(3)  # longer than the deadline, and than the waiting thread's patience

    mcp_nb.history().subscribe(slow_listener)
    try:
        if face == "call":
            outcome = mcp_nb.call("quick", {"x": 21}, timeout=1.0, progress=False)
        else:
            import asyncio

            outcome = asyncio.run(mcp_nb.acall("quick", {"x": 21}, timeout=1.0))
    finally:
        release.set()
        mcp_nb.history().unsubscribe(slow_listener)
    assert (outcome.outcome, outcome.content) == ("result", "42"), (outcome.outcome, outcome.message)
    recorded_once([outcome])
    assert [o.call_id for o in heard] == [outcome.call_id]
