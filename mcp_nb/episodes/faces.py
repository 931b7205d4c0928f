"""`agent()` and `evaluate()`: one episode, or many, with the process's engine, as the API gives them.

Every check runs before anything does (the model and its key, the server and the tools offered,
the policy, the budget, the turns, the timeouts); then the episode runs on mcp_nb's loop while the
caller's thread waits on the one batch core (`batch.core.wait`): an interrupt or `mcp_nb.reset()`
stops it, one line says so, and what ran is returned, cancelled episodes included.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mcp_nb.batch.core import wait
from mcp_nb.calling import default
from mcp_nb.episodes import cluster as on_cluster
from mcp_nb.episodes import evaluate as evaluation
from mcp_nb.episodes import saved
from mcp_nb.episodes.episode import Episode, next_id
from mcp_nb.episodes.loop import (
    MODEL_TIMEOUT_S,
    Episodes,
    EpisodeRun,
    Shared,
    check_model_timeout,
    check_turns,
    conversation,
    offered_tools,
)
from mcp_nb.episodes.policy import HostPolicy
from mcp_nb.models.budget import Budget
from mcp_nb.models.function import model_of
from mcp_nb.mistakes import BadType, BadValue

if TYPE_CHECKING:
    import pandas as pd


def prepare(
    engine: Any, task: Any, model: Any, *, server: str | None, tools: Sequence[str] | None, max_turns: int, budget: Any,
    policy: Any, timeout: float | None, model_timeout: float, system: str | None,
) -> tuple[EpisodeRun, Episodes]:  # fmt: skip
    """The episode's run and the batch that runs it, every check passed."""
    if not isinstance(task, str) or not task.strip():
        raise BadValue("the task is the text the model is given, and it says nothing" if isinstance(task, str) else f"the task is text, not {type(task).__name__}")
    if system is not None and not isinstance(system, str):
        raise BadType(f"system= is the system prompt (text), not {type(system).__name__}")
    chosen = model_of(model)
    chosen.check()
    rules = HostPolicy.of(policy)
    limits = Budget.of(budget)
    turns, seconds = check_turns(max_turns), check_model_timeout(model_timeout)
    connection = engine.connection_for(server)
    specs = offered_tools(connection, tools)
    if timeout is not None:
        engine.prepare("tool", "-", {}, timeout)  # the timeout checked as every call's is: bad, it raises now
    episode = Episode(
        id=next_id(), task=task, model=chosen.name, model_kind=chosen.kind, model_label=chosen.label, server=connection.name,
        tools=tuple(s["function"]["name"] for s in specs), policy=rules.as_dict(), max_turns=turns,
        budget=None if limits is None else limits.as_dict(), messages=conversation(task, system),
    )  # fmt: skip
    shared = Shared()
    run = EpisodeRun(engine, episode, chosen, shared, connection, specs, rules, limits, timeout, seconds)
    return run, Episodes(engine, [run], shared, [chosen], 1)


def agent(
    task: str, model: Any, *, server: str | None = None, tools: Sequence[str] | None = None, max_turns: int = 8,
    budget: Any = None, policy: Any = None, timeout: float | None = None, model_timeout: float = MODEL_TIMEOUT_S,
    system: str | None = None,
) -> Episode:  # fmt: skip
    engine = default.engine()
    run, batch = prepare(
        engine, task, model, server=server, tools=tools, max_turns=max_turns, budget=budget, policy=policy, timeout=timeout,
        model_timeout=model_timeout, system=system,
    )  # fmt: skip
    wait(batch, 1, None, "episode", "episodes finished")
    return run.outcome if run.outcome is not None else _never_ran(run)


async def aagent(
    task: str, model: Any, *, server: str | None = None, tools: Sequence[str] | None = None, max_turns: int = 8,
    budget: Any = None, policy: Any = None, timeout: float | None = None, model_timeout: float = MODEL_TIMEOUT_S,
    system: str | None = None,
) -> Episode:  # fmt: skip
    engine = default.engine()
    run, batch = prepare(
        engine, task, model, server=server, tools=tools, max_turns=max_turns, budget=budget, policy=policy, timeout=timeout,
        model_timeout=model_timeout, system=system,
    )  # fmt: skip
    try:
        await engine.loop.run_async(batch.run())
    except asyncio.CancelledError:
        if asyncio.current_task().cancelling():
            raise  # the awaiting task itself was cancelled; the episode recorded itself as cancelled
    return run.outcome if run.outcome is not None else _never_ran(run)


def _never_ran(run: EpisodeRun) -> Episode:
    """An episode stopped before its first step (an interrupt at once): cancelled, with no turn."""
    episode = run.episode
    episode.stop, episode.detail = "cancelled", "stopped before the model was asked"
    run.engine.history.record_episode(episode)
    return episode


def evaluate(
    tasks: Any, models: Any, *, repeats: int = 1, variants: Any = None, check: Any = None, policy: Any = None,
    max_turns: int = 8, budget: Any = None, total_budget: Any = None, concurrency: int = 4, timeout: float | None = None,
    model_timeout: float = MODEL_TIMEOUT_S, system: str | None = None, server: str | None = None, progress: bool = True,
    cluster: Any = None, partition_size: int | None = None,
) -> pd.DataFrame:  # fmt: skip
    engine = default.engine()
    found = evaluation.plan(
        engine, tasks, models, repeats=repeats, variants=variants, check=check, policy=policy, max_turns=max_turns,
        budget=budget, total_budget=total_budget, timeout=timeout, model_timeout=model_timeout, system=system,
        concurrency=concurrency, server=server,
    )  # fmt: skip
    if cluster is None:
        if partition_size is not None:
            raise BadValue("partition_size is for an evaluation on a cluster (cluster=...)")
        table = evaluation.run(engine, found, progress)
    else:
        episodes, stopped = on_cluster.run_on_cluster(engine, found, cluster, progress, partition_size)
        table = evaluation.frame(episodes, found, stopped)
    table.attrs[saved.SAVED] = saved.spec_of(found)  # what save_evaluation writes (or why it cannot)
    return table
