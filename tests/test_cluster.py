"""Sweeps on a dask.distributed cluster: a real LocalCluster of two worker processes.

One cluster serves the module (a start costs seconds) and is always closed; the last
test checks that none of its processes outlived it.
"""

import asyncio
import concurrent.futures
import json
import os
import re
import signal
import sys
import threading
import time

import pandas as pd
import peers
import pytest
from helpers import interrupted_when, wait_until
from mcp import MCPError
from mcp.server.mcpserver.exceptions import ToolError

import mcp_nb
from mcp_nb import Retry, libraries
from mcp_nb.batch.cluster import worker

BOOKSHOP = peers.BOOKSHOP
STARTED_ON_WORKERS: set[int] = set()  # the stdio servers the workers started: none may outlive the cluster


def local_cluster(**workers):
    """Worker processes on 127.0.0.1; the scheduler's HTTP server (no dashboard) on a free port
    of 127.0.0.1, not dask's 8787, which another cluster on the machine may hold. dask is imported
    here, not with the module: each pytest-xdist worker collects every test file, and most of them
    never start a cluster."""
    import distributed  # the test extra brings it (mcp-notebook[dask])

    return distributed.LocalCluster(
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        scheduler_kwargs={"dashboard_address": "127.0.0.1:0", "dashboard": False},
        **workers,
    )


@pytest.fixture(scope="module")
def client():
    import distributed

    cluster = local_cluster(n_workers=2, threads_per_worker=1)
    client = distributed.Client(cluster, set_as_default=False)
    pids = set()
    try:
        client.wait_for_workers(2, timeout=60)
        yield client
    finally:
        try:
            pids = set(client.run(os.getpid).values())
        finally:
            client.close()
            cluster.close()
    assert pids and wait_until(lambda: not any(_alive(pid) for pid in pids)), "a dask worker outlived the tests"
    assert wait_until(lambda: not any(_alive(pid) for pid in STARTED_ON_WORKERS)), "a worker's stdio server outlived it"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False


def everything_tool():
    """A tool with one branch per outcome type and cause a handler can produce."""

    @mcp_nb.tool()
    def judge(case: str, n: int = 0) -> str:
        if case == "raise":
            raise ToolError(f"refused {n}")
        if case == "crash":
            raise KeyError(n)
        if case == "busy":
            raise MCPError(code=-32050, message=f"busy {n}")
        if case == "slow":
            time.sleep(3)
        return f"{case} {n}"


EVERY_OUTCOME = [
    {"case": "ok", "n": 1},
    {"case": "raise", "n": 2},
    {"case": "crash", "n": 3},
    {"case": "busy", "n": 4},
    {"case": "slow", "n": 5},
    {"case": "ok", "n": "not a number"},
    {"case": "ok", "n": 7},
]

COMPARED = ["case", "n", "attempt", "outcome", "cause", "content", "code", "message"]


def test_a_cluster_sweep_gives_the_outcomes_of_a_local_sweep(client):
    everything_tool()
    # 2 s: `slow` (3 s) times out, and the others have room on a machine busy with the parallel pass
    # (at 1 s, `busy` once timed out there instead of answering its protocol error)
    local = mcp_nb.sweep("judge", EVERY_OUTCOME, timeout=2, progress=False)
    mcp_nb.reset()
    everything_tool()
    remote = mcp_nb.sweep("judge", EVERY_OUTCOME, timeout=2, progress=False, cluster=client, partition_size=2)

    assert set(local["outcome"]) == {"result", "tool_error", "protocol_error", "timeout"}
    pd.testing.assert_frame_equal(remote[COMPARED], local[COMPARED])
    assert list(remote.columns) == [*local.columns, "worker"]
    assert set(remote["worker"]) <= set(client.nthreads())
    assert remote.attrs == {"tool": "judge", "calls": 7, "completed": 7, "interrupted": False, "partitions": 4}


def test_the_records_are_merged_into_the_one_history(client):
    @mcp_nb.tool(read_only=True)
    def double(i: int) -> int:
        return 2 * i

    @mcp_nb.tool(read_only=True)
    def twice_double(i: int) -> int:
        # A tool calling a tool through mcp_nb, on the worker: the worker hosts both.
        return int(mcp_nb.call("double", {"i": i}).content) + int(mcp_nb.call("double", {"i": i}).content)

    before = mcp_nb.call("double", {"i": 1})
    frame = mcp_nb.sweep("twice_double", {"i": list(range(10))}, cluster=client, partition_size=3, progress=False)
    after = mcp_nb.call("double", {"i": 1})

    # The frame in the grid's order, each call's content computed on a worker.
    assert frame["i"].tolist() == list(range(10))
    assert frame["content"].tolist() == [str(4 * i) for i in range(10)]
    history = mcp_nb.history().to_frame()
    assert len(history) == 2 + 10 + 20  # the kernel's two calls, the sweep's, and the calls they made
    assert history["call_id"].is_unique  # no retries here: one row per call, and ids never collide
    assert set(frame["call_id"]) <= set(history["call_id"]) and before.call_id < min(frame["call_id"]) < after.call_id
    swept = history[history["name"] == "twice_double"]
    assert swept["worker"].notna().all() and set(swept["worker"]) <= set(client.nthreads())
    nested = history[(history["name"] == "double") & history["worker"].notna()]
    assert len(nested) == 20 and (nested["outcome"] == "result").all()
    kernel = history[history["worker"].isna()]
    assert kernel["call_id"].tolist() == [before.call_id, after.call_id]
    assert isinstance(history["worker"].dtype, pd.CategoricalDtype)


def test_the_workers_records_are_written_to_the_kernels_history_file_once(client, tmp_path):
    @mcp_nb.tool(read_only=True)
    def double(i: int) -> int:
        return 2 * i

    path = tmp_path / "calls.mcpnb"
    mcp_nb.configure(history_file=str(path))  # the kernel's file: the workers, though they share the environment, write none
    frame = mcp_nb.sweep("double", {"i": list(range(12))}, cluster=client, partition_size=4, progress=False)
    assert mcp_nb.history().sync()
    written = mcp_nb.History.open(path).to_frame()
    assert sorted(written["call_id"]) == sorted(frame["call_id"])  # each once, as the kernel merged it
    assert set(written["worker"].astype(str)) <= set(client.nthreads()) and written["session"].nunique() == 1
    assert {p.name.split(".")[0] for p in path.glob("*.arrow")} == {written["session"].iloc[0]}


def test_seeded_faults_and_retries_give_the_same_outcomes_as_locally(client):
    spec = "tool_error=0.25,crash=0.15,protocol_error=0.3,seed=11"
    retry = Retry(retries=2, codes=(-32050,), backoff=0.001)

    def run(**cluster):
        mcp_nb.reset()

        @mcp_nb.tool(idempotent=True, inject=spec)
        def echo(i: int) -> int:
            return i

        mcp_nb.call("echo", {"i": 3})  # a draw made in the kernel first: the sweep counts on from it
        frame = mcp_nb.sweep("echo", {"i": list(range(30))}, retry=retry, progress=False, **cluster)
        history = mcp_nb.history().to_frame()
        later = [mcp_nb.call("echo", {"i": i}) for i in (3, 4, 5)]  # draws after the sweep's
        attempts = history.sort_values(["call_id", "attempt"])
        return (
            frame[["i", "attempt", "outcome", "cause", "code", "message"]],
            attempts.groupby(history["arguments"].map(lambda a: a["i"]).rename("i"))["cause"].apply(list),
            [(o.outcome, o.cause) for o in later],
        )

    local = run()
    remote = run(cluster=client, partition_size=4)
    pd.testing.assert_frame_equal(remote[0], local[0])
    assert local[0]["attempt"].max() > 1  # retries happened, on the workers too
    pd.testing.assert_series_equal(remote[1], local[1])
    assert remote[2] == local[2]


def test_bad_input_and_unshippable_tools_are_refused_before_anything_runs(client, tmp_path):
    @mcp_nb.tool()
    def side_effect(i: int) -> int:
        return i

    with pytest.raises(ValueError, match="will not retry"):
        mcp_nb.sweep("side_effect", {"i": [1]}, retry=1, cluster=client)
    with pytest.raises(ValueError, match="partition_size"):
        mcp_nb.sweep("side_effect", {"i": [1]}, partition_size=0, cluster=client)
    with pytest.raises(ValueError, match="partition_size is for a sweep on a cluster"):
        mcp_nb.sweep("side_effect", {"i": [1]}, partition_size=2)
    with pytest.raises(TypeError, match="cluster must be"):
        mcp_nb.sweep("side_effect", {"i": [1]}, cluster=42)

    log = open(tmp_path / "log.txt", "w")  # noqa: SIM115 - open while the tool is registered
    try:

        @mcp_nb.tool()
        def append(line: str) -> str:
            log.write(line)
            return line

        with pytest.raises(
            ValueError, match=r"tool 'append' cannot be shipped to the dask workers: the variable `log` \(TextIOWrapper\)"
        ):
            mcp_nb.sweep("side_effect", {"i": [1]}, cluster=client)
    finally:
        log.close()

    lock = threading.Lock()

    @mcp_nb.tool()
    def append(line: str) -> str:
        with lock:
            return line

    with pytest.raises(ValueError, match=r"the variable `lock` \(lock\)"):
        mcp_nb.sweep("append", {"line": ["a"]}, cluster=client)
    assert len(mcp_nb.history()) == 0


def test_a_tool_whose_module_is_missing_on_the_workers_is_refused(client, tmp_path, monkeypatch):
    (tmp_path / "kernel_only_tools.py").write_text("def triple(i: int) -> int:\n    return 3 * i\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import kernel_only_tools

    try:
        mcp_nb.tool()(kernel_only_tools.triple)
        with pytest.raises(
            RuntimeError, match="the dask workers cannot load the tools: .*kernel_only_tools.*install mcp_nb, and every module"
        ):
            mcp_nb.sweep("triple", {"i": [1, 2]}, cluster=client)
        assert len(mcp_nb.history()) == 0
    finally:
        sys.modules.pop("kernel_only_tools", None)


def test_without_distributed_cluster_says_which_extra_to_install(monkeypatch):
    @mcp_nb.tool()
    def one(i: int) -> int:
        return i

    monkeypatch.delattr(libraries, "distributed")  # not read yet in this process,
    monkeypatch.setitem(sys.modules, "distributed", None)  # and as if it were not installed
    with pytest.raises(ImportError) as raised:
        mcp_nb.sweep("one", {"i": [1]}, cluster="tcp://127.0.0.1:8786")
    assert str(raised.value) == "cluster= needs dask.distributed: pip install 'mcp-notebook[dask]'"
    assert len(mcp_nb.history()) == 0


def test_the_progress_bar_counts_the_calls_as_they_end(client, capsys):
    @mcp_nb.tool()
    def quick(i: int) -> int:
        return i

    mcp_nb.sweep("quick", {"i": list(range(12))}, cluster=client, partition_size=12)
    err = capsys.readouterr().err
    assert "sweep quick" in err and "12/12" in err


@pytest.mark.parametrize("size", [1, 40_000], ids=["small records", "records too large to travel ahead"])
def test_interrupting_a_cluster_sweep_returns_the_partial_frame(client, capsys, tmp_path, size):
    marks = str(tmp_path)

    @mcp_nb.tool()
    async def step(i: int) -> str:
        if i % 4 >= 2:
            await asyncio.sleep(60)  # still running when the stop button is pressed
        open(f"{marks}/{i}", "w").close()
        return str(i) * size  # large ones come back only with their partition's result

    # Partitions of four calls, one running on each worker: in each, two calls end and two
    # hang. The other two partitions never start. A mark is written just before its call
    # returns, so the stop button waits a second after the fourth: on a slow machine a call
    # interrupted between its mark and its return would be recorded as cancelled.
    fourth: list[float] = []

    def four_ended() -> bool:
        if not fourth and len(os.listdir(marks)) == 4:
            fourth.append(time.monotonic())
        return bool(fourth) and time.monotonic() - fourth[0] >= 1.0

    with interrupted_when(four_ended, limit=30):
        frame = mcp_nb.sweep("step", {"i": list(range(16))}, cluster=client, partition_size=4, concurrency=4, progress=False)

    assert frame.attrs["interrupted"] is True
    # The two partitions that ran, whole and in the grid's order: what ended, and what was cancelled.
    started = sorted({i // 4 for i in frame["i"]})
    assert len(started) == 2 and frame["i"].tolist() == [i for k in started for i in range(4 * k, 4 * k + 4)]
    assert frame["cause"].tolist() == ["ok", "ok", "cancelled", "cancelled"] * 2
    assert frame.loc[frame["cause"] == "ok", "content"].tolist() == [str(i) * size for i in frame["i"] if i % 4 < 2]
    assert (frame.loc[frame["cause"] == "cancelled", "code"] == -32800).all()
    assert frame.attrs["completed"] == 4 and "sweep of 'step' interrupted: 4 of 16 calls finished" in capsys.readouterr().out
    history = mcp_nb.history().to_frame()
    assert len(history) == 8 and sorted(history["call_id"]) == sorted(frame["call_id"])


def test_a_call_on_a_worker_that_cannot_record_its_cancellation_in_time_still_has_its_row(client, capsys, tmp_path):
    # The interleaving that lost a row, forced on a worker as on the kernel (the batch core's own
    # test): the call in flight cannot record its cancellation before its partition answers the
    # stop, because its handler holds the worker engine's loop until the kernel has built the
    # frame. The partition records it as cancelled itself; the call's own late record is dropped.
    marks = str(tmp_path)

    @mcp_nb.tool()
    async def hold(i: int) -> int:
        if i == 1:
            open(f"{marks}/holding", "w").close()
            until = time.monotonic() + 60
            while not os.path.exists(f"{marks}/release") and time.monotonic() < until:
                time.sleep(0.05)  # holds the worker engine's loop on purpose, until the frame is built
            await asyncio.sleep(30)
        return i

    def stop_wait(seconds: float) -> None:
        # How long a stopped partition waits for its calls to record themselves (wherever it is read).
        from mcp_nb.batch import core
        from mcp_nb.batch.cluster import worker as here

        for module in (core, here):
            if hasattr(module, "STOP_WAIT_S"):
                module.STOP_WAIT_S = seconds

    client.run(stop_wait, 0.3)
    try:
        with interrupted_when(lambda: os.path.exists(f"{marks}/holding"), limit=30):
            frame = mcp_nb.sweep("hold", {"i": [0, 1, 2]}, cluster=client, partition_size=3, concurrency=1, progress=False)
    finally:
        open(f"{marks}/release", "w").close()
        client.run(stop_wait, 10.0)
    assert frame["i"].tolist() == [0, 1]  # call 2 was never started: no row, no record
    assert frame["cause"].tolist() == ["ok", "cancelled"] and frame["code"].tolist()[1] == -32800
    assert "sweep of 'hold' interrupted: 1 of 3 calls finished" in capsys.readouterr().out
    history = mcp_nb.history().to_frame()
    assert sorted(history["call_id"]) == sorted(frame["call_id"]) and history["call_id"].is_unique


def test_a_worker_that_dies_mid_partition_leaves_recorded_calls(client):
    @mcp_nb.tool()
    def fragile(i: int) -> int:
        if i == 5:
            time.sleep(0.5)  # the record of call 4 reaches the kernel first
            os.kill(os.getpid(), signal.SIGKILL)  # the worker process dies with this call in flight
        return i

    frame = mcp_nb.sweep("fragile", {"i": list(range(8))}, cluster=client, partition_size=4, concurrency=1, progress=False)

    assert frame["i"].tolist() == list(range(8))  # no row is lost
    assert frame["cause"].tolist() == ["ok"] * 5 + ["worker_lost"] * 3
    lost = frame[frame["cause"] == "worker_lost"]
    assert (lost["outcome"] == "protocol_error").all()
    assert lost["message"].str.contains("died while it ran the partition before it sent this call's record").all()
    assert lost["worker"].nunique() == 1 and lost["worker"].iloc[0] == frame.loc[4, "worker"]
    history = mcp_nb.history().to_frame()
    assert len(history) == 8 and history["call_id"].is_unique
    assert (history.loc[history["cause"] == "worker_lost", "worker"].astype(str) == lost["worker"].iloc[0]).all()
    client.wait_for_workers(2, timeout=60)  # the nanny started a new worker


def test_an_interrupt_returns_though_a_worker_does_not_answer_and_its_calls_are_recorded(client, capsys, tmp_path):
    marks = str(tmp_path)

    @mcp_nb.tool()
    async def linger(i: int) -> int:
        open(f"{marks}/{os.getpid()}-{i}", "w").close()
        await asyncio.sleep(60)  # in flight on both workers when the stop button is pressed
        return i

    async def hold_the_loop(seconds: float) -> None:
        time.sleep(seconds)  # on the worker's event loop: nothing else runs there meanwhile

    pids = {pid: address for address, pid in client.run(os.getpid).items()}
    blocked: dict[str, float] = {}
    stuck_for = 25.0

    def one_worker_stuck() -> bool:
        # One call in flight on each worker; then one worker's event loop is held (as CPython 3.11's
        # frames deadlock held it, or any task blocking its loop would) and the stop button pressed.
        running = {name.split("-")[0] for name in os.listdir(marks)}
        if len(running) < 2:
            return False
        if not blocked:
            address = pids[int(sorted(running)[0])]
            client.run(hold_the_loop, stuck_for, workers=[address], wait=False)
            blocked[address] = time.monotonic() + stuck_for
            time.sleep(0.5)  # the worker has the message
        return True

    with interrupted_when(one_worker_stuck, limit=60):
        frame = mcp_nb.sweep("linger", {"i": list(range(6))}, cluster=client, partition_size=1, concurrency=1, progress=False)
    returned = time.monotonic()
    ((stuck, free_at),) = blocked.items()

    assert returned < free_at  # the interrupt did not wait for the stuck worker
    assert frame.attrs["interrupted"] is True and len(frame) == 2  # the two calls in flight, each recorded
    by_worker = frame.set_index("worker")
    assert by_worker.loc[stuck, "cause"] == "worker_lost"
    assert "did not answer the sweep's stop within 10 s" in by_worker.loc[stuck, "message"]
    (other,) = set(frame["worker"]) - {stuck}
    assert by_worker.loc[other, "cause"] == "cancelled"
    assert "sweep of 'linger' interrupted: 0 of 6 calls finished" in capsys.readouterr().out
    assert sorted(mcp_nb.history().to_frame()["call_id"]) == sorted(frame["call_id"])
    # The stuck worker comes back, and the next tests have their cluster.
    assert client.run(os.getpid, workers=[stuck], callback_timeout=120)


def test_the_workers_profiler_is_stopped_where_python_can_deadlock_on_it(client):
    # CPython before 3.11.9 (3.11 only) can deadlock in sys._current_frames, which dask's
    # profiler calls every 10 ms on each worker: the sweep stops it there (worker.FRAMES_DEADLOCK).
    assert worker.FRAMES_DEADLOCK is ((3, 11) <= sys.version_info[:3] < (3, 11, 9))

    @mcp_nb.tool()
    def quick(i: int) -> int:
        return i

    frame = mcp_nb.sweep("quick", {"i": list(range(8))}, cluster=client, partition_size=1, concurrency=4, progress=False)
    profiling = client.run(lambda dask_worker: dask_worker.periodic_callbacks["profile"].is_running())
    ran = set(frame["worker"])
    assert ran and all(profiling[address] is not worker.FRAMES_DEADLOCK for address in ran)


def test_the_async_face_runs_on_the_cluster_and_stops_when_cancelled(client):
    @mcp_nb.tool()
    async def pause(i: int) -> int:
        if i >= 2:
            await asyncio.sleep(60)
        return i

    async def main():
        frame = await mcp_nb.asweep("pause", {"i": [0, 1]}, cluster=client)
        assert frame["content"].tolist() == ["0", "1"] and frame["worker"].notna().all()
        task = asyncio.ensure_future(mcp_nb.asweep("pause", {"i": [0, 1, 2, 3]}, cluster=client, partition_size=4))
        assert await asyncio.to_thread(wait_until, lambda: len(mcp_nb.history()) == 4, 30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    # The cancelled sweep's calls in flight came back from the worker as cancelled.
    history = mcp_nb.history().to_frame()
    assert history["cause"].astype(str).tolist().count("cancelled") == 2 and len(history) == 6


@pytest.fixture(scope="module")
def bookshop_url():
    with peers.bookshop_http() as url:
        yield url


TITLES = {"title": ["Dune", "Neuromancer", "tool-error", "mcp-error", "Solaris"]}


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_a_sweep_of_an_outside_server_on_the_cluster(client, bookshop_url, transport):
    target = bookshop_url if transport == "http" else [*BOOKSHOP, "stdio"]
    mcp_nb.connect("books", target, headers={"X-Sweep": "cluster"} if transport == "http" else None)
    local = mcp_nb.sweep("get_author", TITLES, server="books", progress=False)
    remote = mcp_nb.sweep("get_author", TITLES, server="books", cluster=client, partition_size=2, progress=False)

    compared = ["title", "outcome", "cause", "content", "code", "message"]
    pd.testing.assert_frame_equal(remote[compared], local[compared])
    assert local["cause"].tolist() == ["ok", "ok", "raised", "mcp_error", "crash"]
    history = mcp_nb.history().to_frame()
    assert (history["server"] == "books").all() and history["worker"].notna().sum() == 5
    if transport == "stdio":
        # Each worker that ran a partition started its own copy of the server.
        copies = client.run(_bookshop_children)
        used = set(remote["worker"])
        assert {address for address, pids in copies.items() if pids} == used
        STARTED_ON_WORKERS.update(pid for pids in copies.values() for pid in pids)


def _bookshop_children() -> list[int]:
    """Run on a worker: the pids of the bookshop servers this process started."""
    import os

    found = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/stat") as stat:
                ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                words = cmdline.read().split(b"\0")
        except (OSError, ValueError):
            continue
        if ppid == os.getpid() and any(word.endswith(b"bookshop.py") for word in words):
            found.append(int(pid))
    return found


def test_workers_that_cannot_reach_the_server_record_why(client):
    with peers.bookshop_http() as url:
        mcp_nb.connect("books", url)
    # the server is gone before the workers try: a URL the kernel reached and the workers do not

    frame = mcp_nb.sweep("get_author", TITLES, server="books", cluster=client, partition_size=5, progress=False)
    assert frame["title"].tolist() == TITLES["title"]  # every call has its row
    assert (frame["cause"] == "client_error").all() and frame["worker"].notna().all()
    assert (
        frame["message"]
        .str.contains(rf"the partition failed there: ConnectError: could not connect to 'books' \({re.escape(url)}\)")
        .all()
    )
    assert len(mcp_nb.history()) == 5


SHELVE_SCHEMA = {
    "type": "object",
    "properties": {"title": {"type": "string", "minLength": 1}, "copies": {"type": "integer", "minimum": 1}},
    "required": ["title"],
    "if": {"properties": {"copies": {"minimum": 10}}},
    "then": {"required": ["title", "copies"]},
    "additionalProperties": False,
}


def every_kind_of_registration():
    """One registration of every kind, each with every part a client lists."""

    @mcp_nb.tool(
        title="Shelve",
        description="Put copies on the shelf.",
        read_only=True,
        idempotent=True,
        inject="latency=0.001,seed=5",
        input_schema=SHELVE_SCHEMA,
    )
    def shelve(title: str, copies: int = 1) -> dict[str, int]:
        return {title: copies}

    @mcp_nb.resource("books://shelf", title="The shelf", description="What is on it.", mime_type="application/json")
    def shelf() -> str:
        return "[]"

    @mcp_nb.resource("books://{title}/copies", title="Copies", description="How many of one.")
    def copies(title: str) -> str:
        return "1"

    @mcp_nb.prompt(title="Review", description="Ask for a review.")
    def review(title: str, tone: str = "kind") -> str:
        return f"Review {title}, {tone}ly."

    @mcp_nb.tool(read_only=True)
    async def listing() -> str:
        """What this process's server lists to a client, and the faults injected into its tools."""
        server = mcp_nb.server()
        listed = {
            "tools": [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in await server.list_tools()],
            "resources": [r.model_dump(mode="json", by_alias=True, exclude_none=True) for r in await server.list_resources()],
            "templates": [
                t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in await server.list_resource_templates()
            ],
            "prompts": [p.model_dump(mode="json", by_alias=True, exclude_none=True) for p in await server.list_prompts()],
            "faults": {name: f.describe() for name, f in mcp_nb.engine().registry.faults.items()},
        }
        return json.dumps(listed, sort_keys=True)


def test_a_worker_lists_every_registration_as_the_kernel_does(client):
    every_kind_of_registration()
    kernel = json.loads(mcp_nb.call("listing").content)
    frame = mcp_nb.sweep("listing", [{}], cluster=client, progress=False)
    assert frame["worker"].notna().all()
    worker = json.loads(frame.loc[0, "content"])

    assert worker == kernel
    tools = {t["name"]: t for t in worker["tools"]}
    assert tools["shelve"]["inputSchema"] == SHELVE_SCHEMA  # declared, not the signature's
    assert tools["shelve"]["inputSchema"] == mcp_nb.engine().registry.get("tool", "shelve").input_schema
    assert tools["shelve"]["outputSchema"] == mcp_nb.engine().registry.get("tool", "shelve").output_schema
    assert worker["faults"] == {"shelve": "latency=0.001,seed=5"}
    assert {r["uri"] for r in worker["resources"]} == {"books://shelf"}
    assert {t["uriTemplate"] for t in worker["templates"]} == {"books://{title}/copies"}
    assert [p["name"] for p in worker["prompts"]] == ["review"]


def test_a_registration_the_workers_would_list_otherwise_is_refused_before_anything_runs(client):
    @mcp_nb.tool()
    def count(i: int) -> int:
        return i

    # The function changed after it was registered: the kernel's server lists the schema of
    # then, a worker registering it now would list another.
    count.__annotations__["return"] = str
    with pytest.raises(ValueError, match=r"tool 'count' does not register the same on the dask workers: its output_schema"):
        mcp_nb.sweep("count", {"i": [1]}, cluster=client, progress=False)
    assert len(mcp_nb.history()) == 0


def test_a_tool_reporting_progress_gives_the_columns_of_a_local_sweep(client):
    from mcp.server.mcpserver import Context

    @mcp_nb.tool(read_only=True)
    async def ticks(steps: int, ctx: Context) -> str:
        for i in range(steps):
            await ctx.report_progress(i + 1, steps)
        return "ticked"

    local = mcp_nb.sweep("ticks", {"steps": [0, 2, 3]}, progress=False)
    remote = mcp_nb.sweep("ticks", {"steps": [0, 2, 3]}, cluster=client, partition_size=2, progress=False)
    assert list(remote.columns) == [*local.columns, "worker"]
    assert remote["progress"].tolist() == local["progress"].tolist() == [0, 2, 3]


def test_reset_during_a_cluster_sweep_stops_it_and_returns_the_partial_frame(client, capsys):
    @mcp_nb.tool()
    async def step(i: int) -> int:
        await asyncio.sleep(0.01 if i < 3 else 60)
        return i

    old = mcp_nb.engine()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        sweeping = pool.submit(
            mcp_nb.sweep, "step", {"i": list(range(6))}, cluster=client, partition_size=6, concurrency=6, progress=False
        )
        assert wait_until(lambda: len(old.history) == 3, 30)
        mcp_nb.reset()
        frame = sweeping.result(timeout=30)  # before: the sweep waited for the workers' 60 s calls
    assert frame["i"].tolist() == list(range(6))
    assert frame["cause"].tolist() == ["ok"] * 3 + ["cancelled"] * 3
    assert frame.attrs["interrupted"] and frame.attrs["completed"] == 3
    assert "sweep of 'step' stopped by mcp_nb.reset(): 3 of 6 calls finished" in capsys.readouterr().out
    assert len(old.history) == 6 and len(mcp_nb.history()) == 0


def test_partitions_sharing_a_worker_process_keep_their_own_records():
    """A worker with two threads runs two partitions at once on its one engine."""

    @mcp_nb.tool(read_only=True)
    def inner(i: int) -> int:
        time.sleep(0.01)
        return i

    @mcp_nb.tool(read_only=True)
    def outer(i: int) -> int:
        return int(mcp_nb.call("inner", {"i": i}).content) + 1

    import distributed

    with (
        local_cluster(n_workers=1, threads_per_worker=2) as cluster,
        distributed.Client(cluster, set_as_default=False) as two_threads,
    ):
        frame = mcp_nb.sweep("outer", {"i": list(range(40))}, cluster=two_threads, partition_size=5, progress=False)
    assert frame["content"].tolist() == [str(i + 1) for i in range(40)]
    history = mcp_nb.history().to_frame()
    assert len(history) == 80 and history["call_id"].is_unique
    assert sorted(history.loc[history["name"] == "inner", "arguments"].map(lambda a: a["i"])) == list(range(40))
