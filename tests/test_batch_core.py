"""The one batch core seen through a replay: it waits, shows its bar, and stops as a sweep does.

A sweep's waiting is tested with sweeps (test_sweeps_and_faults.py, test_call.py) and on a
cluster (test_cluster.py); a replay runs its cases through the same core, in lanes.
"""

import asyncio
import concurrent.futures

from helpers import interrupted_when, wait_until

import mcp_nb

HANG = {"from": None}  # the tool's calls with i >= this hang; None: none do


def recorded_cases(tmp_path):
    """Four cases of a read-only tool, recorded while it answered at once."""

    @mcp_nb.tool(read_only=True)
    async def step(i: int) -> int:
        if HANG["from"] is not None and i >= HANG["from"]:
            await asyncio.sleep(60)  # still running when the replay is stopped
        return i

    HANG["from"] = None
    for i in range(4):
        mcp_nb.call("step", {"i": i})
    path = tmp_path / "cases.json"
    mcp_nb.history().to_cases(path)
    return path


def test_interrupting_a_replay_returns_the_cases_run_and_says_so(tmp_path, capsys):
    path = recorded_cases(tmp_path)
    HANG["from"] = 2
    before = len(mcp_nb.history())
    try:
        with interrupted_when(lambda: len(mcp_nb.history()) == before + 2):
            frame = mcp_nb.replay(path)
    finally:
        HANG["from"] = None
    assert "replay interrupted: 2 of 4 cases run" in capsys.readouterr().out
    assert frame.attrs["interrupted"] is True
    assert frame["passed"].tolist() == [True, True, False, False]
    assert frame["got"].tolist()[2:] == ["timeout (cancelled)"] * 2
    assert len(mcp_nb.history()) == before + 4  # the cancelled ones are recorded too


def test_reset_during_a_replay_returns_the_partial_frame(tmp_path, capsys):
    path = recorded_cases(tmp_path)
    HANG["from"] = 2
    old = mcp_nb.engine()
    before = len(old.history)
    try:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            replaying = pool.submit(mcp_nb.replay, path)
            assert wait_until(lambda: len(old.history) == before + 2)
            mcp_nb.reset()
            frame = replaying.result(timeout=20)
    finally:
        HANG["from"] = None
    assert "replay stopped by mcp_nb.reset(): 2 of 4 cases run" in capsys.readouterr().out
    assert frame.attrs["interrupted"] is True and frame["passed"].tolist() == [True, True, False, False]


def test_a_replays_progress_bar_counts_its_cases(tmp_path, capsys):
    path = recorded_cases(tmp_path)
    capsys.readouterr()
    assert mcp_nb.replay(path, progress=True)["passed"].all()
    err = capsys.readouterr().err
    assert "replay" in err and "4/4" in err


def test_a_sync_batch_inside_an_async_tool_is_refused_not_hung(tmp_path):
    # An async tool runs on mcp_nb's loop: a sync sweep or replay there would wait for that loop.
    @mcp_nb.tool()
    def add(a: int) -> int:
        return a

    path = recorded_cases(tmp_path)

    @mcp_nb.tool()
    async def sweeps_inside() -> str:
        mcp_nb.sweep("add", {"a": [1, 2]}, progress=False)
        return "swept"

    @mcp_nb.tool()
    async def replays_inside() -> str:
        mcp_nb.replay(path)
        return "replayed"

    for name in ("sweeps_inside", "replays_inside"):
        o = mcp_nb.call(name, timeout=10)
        assert (o.outcome, o.cause) == ("tool_error", "crash"), (name, o)
        assert "would block mcp_nb's own event loop" in o.server_logs[-1].traceback
