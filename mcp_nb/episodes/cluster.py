"""An evaluation on a dask cluster: its episodes run on the workers, as a sweep's calls do there.

Nothing of the cluster sweep is written twice. Each variant's episodes are the positions of a
`batch.cluster.sweep.ClusterSweep` whose job carries `EpisodeWork` (`Job.work`): every worker hosts
the kernel's tools (the same toolbox, built once per worker), runs its partition's episodes in
`Lanes` on its own engine, and sends back the records of their calls (merged into the kernel's one
history, each under an id of the kernel's, by the same `Ledger`) and the episodes themselves, whose
steps are then given the kernel's records. What can be refused is refused in the kernel first: the
models are serialized before anything runs (a key typed at a prompt stays in the kernel: the
workers read their own environment), the toolbox is checked on every worker. A partition whose
worker died leaves its episodes recorded as cancelled, saying so, and the calls they made that
came back in the history.
"""

from __future__ import annotations

import collections
import dataclasses
import pickle
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mcp_nb import libraries as lib
from mcp_nb.batch.cluster import require_distributed, toolbox, worker
from mcp_nb.batch.cluster.ledger import Ledger
from mcp_nb.batch.cluster.sweep import ClusterSweep, client_for
from mcp_nb.batch.core import check_concurrency
from mcp_nb.episodes.episode import Episode, next_id
from mcp_nb.episodes.evaluate import AS_REGISTERED, Plan, Variant
from mcp_nb.episodes.loop import CURRENT_EPISODE, Episodes, EpisodeRun, Shared, conversation, offered_tools
from mcp_nb.mistakes import BadValue, first_line


@dataclass(frozen=True)
class Worked:
    """What a worker runs for one partition (`Job.work.on`)."""

    lanes: Episodes
    owns: Callable[[Any], bool]
    results: Callable[[], list]


@dataclass(frozen=True)
class EpisodeWork:
    """The episodes' side of a cluster sweep's job: the plan, serialized once in the kernel."""

    plan: bytes  # cloudpickle of (Plan, the variant's server): models travel by value

    def on(self, engine: Any, sets: Sequence[dict[str, Any]], concurrency: int, ended: Any) -> Worked:
        found, server = pickle.loads(self.plan)
        connection = engine.connection_for(server)
        shared = Shared()
        specs: dict[int, list] = {}
        runs = []
        for given in sets:
            task = found.tasks[given["task"]]
            name, model = found.models[given["model"]]
            if given["task"] not in specs:
                specs[given["task"]] = offered_tools(connection, task.tools)
            episode = Episode(
                id=given["episode"], task=task.text, model=name, model_kind=model.kind, model_label=model.label,
                server=connection.name, tools=tuple(s["function"]["name"] for s in specs[given["task"]]),
                policy=found.policy.as_dict(), max_turns=found.max_turns,
                budget=None if found.budget is None else found.budget.as_dict(), evaluation=found.evaluation,
                variant=given["variant"], task_id=task.id, repeat=given["repeat"], messages=conversation(task.text, found.system),
            )  # fmt: skip
            runs.append(EpisodeRun(
                engine, episode, model, shared, connection, specs[given["task"]], found.policy, found.budget, found.timeout,
                found.model_timeout, task.check, judged=True, recorded=False,
            ))  # fmt: skip
        ids = {given["episode"] for given in sets}
        lanes = Episodes(engine, runs, shared, [model for _, model in found.models], concurrency, ended=ended)

        def owns(outcome: Any) -> bool:
            return CURRENT_EPISODE.get() in ids

        return Worked(lanes, owns, lanes.episodes)


class EpisodeLedger(Ledger):
    """The cluster ledger of an evaluation: a position is an episode, and a lost one is said as such."""

    def __init__(self, history: Any, count: int) -> None:
        super().__init__(history, [])
        self.count = count
        self.lost: dict[int, str] = {}  # position -> why its episode never came back

    def lose(self, k: int, positions: list[int], address: str | None, what: str, cause: str = "worker_lost") -> None:
        where = f"the dask worker {address}" if address else "a dask worker"
        for position in positions:
            if position not in self.finished:
                self.lost.setdefault(position, f"{where} {what}" if cause == "worker_lost" else f"{where}: {what}")


class ClusterEpisodes(ClusterSweep):
    """One variant's episodes as a cluster sweep whose positions are episodes."""

    def __init__(self, engine: Any, found: Plan, variant: Variant, episodes: list[Episode], given: list[dict], partition_size: int | None) -> None:
        if partition_size is not None and (not isinstance(partition_size, int) or isinstance(partition_size, bool) or partition_size < 1):
            raise BadValue(f"partition_size must be a whole number >= 1, got {partition_size!r}")
        self.concurrency = check_concurrency(found.concurrency)
        self.engine, self.name, self.sets, self.server = engine, "episodes", given, variant.server
        self.episodes = episodes  # in the kernel, by position: each one's task, model and id
        self.partition_size = partition_size
        self.blob, self.digest = toolbox.pack(engine, variant.server)
        self.work = EpisodeWork(_shipped(found, variant.server))
        self.faults, self.seeded = None, False
        self.id = f"mcp_nb-evaluation-{uuid.uuid4().hex}"
        self.ledger = EpisodeLedger(engine.history, len(given))
        self.partitions = []
        self._client = None
        self._futures = {}
        self._pending = set()
        self._woken = threading.Event()
        self._settled = set()
        self._answered = set()
        self._inbox = collections.deque()
        self.results = {}
        self.variant = variant.name

    def said(self) -> tuple[str, str, str]:
        named = "" if self.variant == AS_REGISTERED else f" {self.variant}"
        return f"evaluate{named}", "evaluation" + (f" of {self.variant!r}" if named else ""), "episodes finished"

    def start(self) -> None:
        job = worker.Job(sweep=self.id, name=self.name, timeout=0.0, retry=None, concurrency=self.concurrency, server=self.server, seen=None, work=self.work)
        for k, positions in enumerate(self.partitions):
            future = self._client.submit(
                worker.run_partition, self.blob, self.digest, job, k, positions, [self.sets[p] for p in positions],
                key=f"{self.id}-{k}", pure=False,
            )  # fmt: skip
            self._futures[future] = k
            self._pending.add(future)
            future.add_done_callback(lambda _: self._woken.set())

    def frame(self, interrupted: bool) -> tuple[list[Episode], bool]:
        """The episodes that came back (their steps given the kernel's records), and the ones lost."""
        position = {episode.id: i for i, episode in enumerate(self.episodes)}
        came: dict[int, Episode] = {}
        for k, returned in self.results.items():
            for episode in returned:
                for step in episode.steps:
                    if step.outcome is not None:
                        here = self.ledger.kernel_id(k, step.outcome.call_id)
                        if here is not None:
                            step.outcome = dataclasses.replace(step.outcome, call_id=here)
                came[position[episode.id]] = episode
        for i, why in self.ledger.lost.items():
            if i not in came:
                lost = self.episodes[i]
                lost.stop, lost.detail = "cancelled", why
                came[i] = lost
        return [came[i] for i in sorted(came)], interrupted


def _shipped(found: Plan, server: str | None) -> bytes:
    """The plan for the workers, serialized here: a model that cannot travel is named, in one line."""
    cloudpickle = lib.cloudpickle
    for name, model in found.models:
        try:
            cloudpickle.dumps(model)
        except Exception as err:  # noqa: BLE001 - whatever pickling raised, said in one line
            raise toolbox.NotShippable(f"the model {name!r} cannot be shipped to the dask workers: {first_line(err, named=True)}") from None
    return cloudpickle.dumps((found, server))


def planned(found: Plan, variant: Variant) -> tuple[list[Episode], list[dict[str, Any]]]:
    """A variant's episodes as the kernel knows them before they run (their ids given here), and
    what each worker is told of each: which task, which model, which repeat."""
    episodes, given = [], []
    for t, task in enumerate(found.tasks):
        for m, (name, model) in enumerate(found.models):
            for repeat in range(1, found.repeats + 1):
                episode = Episode(
                    id=next_id(), task=task.text, model=name, model_kind=model.kind, model_label=model.label,
                    server=variant.server or "kernel", policy=found.policy.as_dict(), max_turns=found.max_turns,
                    evaluation=found.evaluation, variant=variant.name, task_id=task.id, repeat=repeat,
                )  # fmt: skip
                episodes.append(episode)
                given.append({"episode": episode.id, "task": t, "model": m, "repeat": repeat, "variant": variant.name})
    return episodes, given


def run_on_cluster(engine: Any, found: Plan, cluster: Any, progress: bool, partition_size: int | None) -> tuple[list[Episode], bool]:
    """Each variant's episodes on the cluster's workers, in turn; returns them and whether it was stopped."""
    if found.total is not None:
        raise BadValue("total_budget= is for evaluations in the kernel: on a cluster each episode has its budget= alone")
    distributed = require_distributed()
    client, owned = client_for(distributed, cluster)
    episodes: list[Episode] = []
    stopped = False
    try:
        for variant in found.variants:
            restore = variant.apply(engine)
            try:
                episodes_here, given = planned(found, variant)
                batch = ClusterEpisodes(engine, found, variant, episodes_here, given, partition_size)
                came, stopped = batch.run(client, progress, None)
            finally:
                if not engine.closed:
                    restore()
            for episode in came:
                engine.history.record_episode(episode)
            episodes += came
            if stopped or engine.closed:
                stopped = True
                break
    finally:
        if owned:
            client.close()
    return episodes, stopped

