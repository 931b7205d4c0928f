"""An evaluation on a dask LocalCluster of two worker processes: the episodes run on the workers,
their calls land in the kernel's one history once each, under the kernel's ids, and the frame is
the one an evaluation in the kernel gives."""

from __future__ import annotations

import os

import pytest
from helpers import wait_until
from mcp.server.mcpserver.exceptions import ToolError

import mcp_nb
from mcp_nb import Key, StandIn, evaluate
from mcp_nb.episodes.episode import log_of
from mcp_nb.mistakes import Mistake

pytestmark = [pytest.mark.timeout(300), pytest.mark.serial]

BOOKS = {"Dune": "Frank Herbert", "Emma": "Jane Austen"}


@pytest.fixture(scope="module")
def client():
    import distributed  # the test extra brings it (mcp-notebook[dask]); imported here, not at collection

    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        scheduler_kwargs={"dashboard_address": "127.0.0.1:0", "dashboard": False},
    )
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
    assert pids and wait_until(
        lambda: (
            not any(
                os.path.exists(f"/proc/{pid}") and "Z" not in open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[:1]
                for pid in pids
            )
        )
    )


def helpful(title: str) -> str:
    """Who wrote a book, by its title."""
    if title not in BOOKS:
        raise ToolError(f"No book titled {title!r}. Known titles: {', '.join(map(repr, BOOKS))}")
    return BOOKS[title]


def crashing(title: str) -> str:
    """Who wrote a book, by its title."""
    return BOOKS[title]


TASKS = [
    {"task": "Who wrote 'Dun'?", "check": "Herbert", "id": "dun"},
    {"task": "Who wrote 'Emm'?", "check": "Austen", "id": "emm"},
]


def test_an_evaluation_on_a_cluster_is_the_evaluation_in_the_kernel(client):
    mcp_nb.tool(name="get_author")(helpful)
    variants = {"ToolError": {"get_author": helpful}, "crash": {"get_author": crashing}}
    here = evaluate(TASKS, StandIn(), repeats=3, variants=variants, progress=False)
    mcp_nb.reset()
    mcp_nb.tool(name="get_author")(helpful)
    there = evaluate(TASKS, StandIn(), repeats=3, variants=variants, progress=False, cluster=client, partition_size=2)
    measured = [
        "task_id",
        "model",
        "variant",
        "episodes",
        "passed",
        "success_rate",
        "with_failures",
        "recovered",
        "recovery_rate",
        "calls",
    ]
    assert there[measured].equals(here[measured]), (here[measured], there[measured])
    frame = mcp_nb.history().to_frame()
    assert len(frame) == 18 and frame["call_id"].is_unique and set(frame["worker"].dropna()) <= set(client.nthreads())
    rows = log_of(mcp_nb.history()).rows()
    assert len(rows) == 12 and len({row["episode"] for row in rows}) == 12
    ids = {step["call_id"] for row in rows for step in row["steps"]}
    assert ids == set(frame["call_id"])  # each episode's steps name the kernel's records of its calls
    assert (
        set(frame["episode"]) == {row["episode"] for row in rows} and frame["turn"].notna().all()
    )  # made on a worker, numbered here
    assert mcp_nb.engine().registry.get("tool", "get_author").function is helpful


def test_a_tool_registered_again_with_changes_is_swept_on_the_cluster(client):
    # A re-run cell that changed a tool leaves the changes on its registration: the workers, which
    # register it once, have none, and that is no reason to refuse the sweep.
    mcp_nb.tool(name="get_author")(crashing)
    mcp_nb.tool(name="get_author")(helpful)
    assert mcp_nb.engine().registry.get("tool", "get_author").changes
    frame = mcp_nb.sweep("get_author", {"title": ["Dune", "Dun"]}, cluster=client, progress=False)
    assert frame["cause"].tolist() == ["ok", "raised"]


def test_a_model_that_cannot_travel_is_refused_before_anything_runs(client, monkeypatch):
    mcp_nb.tool(name="get_author")(helpful)
    monkeypatch.setattr("getpass.getpass", lambda prompt: "sk-typed-0000000000")
    from mcp_nb import OpenAICompatible

    typed = OpenAICompatible("m", "http://127.0.0.1:9/v1", key=Key.prompt())
    with pytest.raises(
        Mistake, match="cannot be shipped to the dask workers: TypeError: a key typed at a prompt stays in this process"
    ):
        evaluate(TASKS, typed, cluster=client, progress=False)
    with pytest.raises(Mistake, match="total_budget"):
        evaluate(TASKS, StandIn(), cluster=client, total_budget={"tokens": 10}, progress=False)
    assert len(mcp_nb.history()) == 0 and len(log_of(mcp_nb.history())) == 0
