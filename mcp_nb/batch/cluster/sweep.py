"""A sweep on a dask.distributed cluster, seen from the kernel.

Everything that can be refused is refused before anything runs: each argument set is
prepared as a `Call` here (bad arguments, a bad timeout, a retry of a tool that is not
idempotent raise, as in a local sweep), the toolbox is serialized (a registration that
cannot be pickled is named), and every worker loads it (a module the tools import that is
missing there, another mcp_nb version). Then the grid goes out in partitions, dask's
tasks, and the kernel waits on this thread, merging records as they come back:

- into the one history, each with the `call_id` of the Call prepared here (the attempts
  of a call share it; a call a tool made on a worker gets a fresh id of this kernel) and
  the `worker` that made it, in the order they arrive, as calls in the kernel are;
- into the returned frame in the grid's order, each call's last attempt.

The progress bar counts calls as they end on the workers. An interrupt stops the sweep
on every worker (calls in flight record themselves as cancelled and come back), drops the
partitions not started, and returns the partial frame. A partition whose worker died is
answered here: its calls the kernel never heard of are recorded as `worker_lost`.
"""

from __future__ import annotations

import collections
import dataclasses
import math
import pickle
import threading
import time
import uuid
from typing import Any

import pandas as pd

from mcp_nb._version import __version__
from mcp_nb.batch.cluster import require_distributed, toolbox, worker
from mcp_nb.batch.sweeps import (
    RESULT_COLUMNS,
    Sweep,
    _advance,
    _progress_bar,
    argument_sets,
)
from mcp_nb.calling.call import _ids

STOP_WAIT_S = 10.0  # how long an interrupted sweep waits for the workers' cancelled calls
PARTITIONS_PER_THREAD = 4  # the default split: enough partitions to balance, few enough to be cheap


class Stopped(Exception):
    """The async face's waiter was cancelled: stop the sweep as an interrupt would."""


def run_cluster_sweep(
    engine, name, grid, *, cluster, concurrency=8, timeout=None, retry=None, progress=True, server=None,
    partition_size=None, stop: threading.Event | None = None,
) -> pd.DataFrame:  # fmt: skip
    distributed = require_distributed()
    sweep = ClusterSweep(engine, name, argument_sets(grid), concurrency, timeout, retry, server, partition_size)
    client, owned = _client(distributed, cluster)
    try:
        return sweep.run(distributed, client, progress, stop)
    finally:
        if owned:
            client.close()


def _client(distributed, cluster) -> tuple[Any, bool]:
    """A `Client` for `cluster`: the user's own, or one made (and closed) for this sweep."""
    if isinstance(cluster, distributed.Client):
        return cluster, False
    address = getattr(cluster, "scheduler_address", cluster)  # a LocalCluster, any dask cluster object
    if not isinstance(address, str) or not address:
        raise TypeError(f"cluster must be a dask Client, a cluster object or a scheduler address, not {type(cluster).__name__}")
    # Not the default client: that one belongs to the user's own dask code.
    return distributed.Client(address, set_as_default=False), True


class ClusterSweep:
    def __init__(self, engine, name, sets, concurrency, timeout, retry, server, partition_size) -> None:
        if partition_size is not None and (
            not isinstance(partition_size, int) or isinstance(partition_size, bool) or partition_size < 1
        ):
            raise ValueError(f"partition_size must be a whole number >= 1, got {partition_size!r}")
        self.local = Sweep(engine, name, sets, concurrency, timeout, retry, server)  # every check, as locally
        self.engine, self.name, self.sets, self.server = engine, name, sets, server
        self.calls = self.local.calls
        self.partition_size = partition_size
        self.blob, self.digest = toolbox.pack(engine, server)
        self.faults = engine.registry.faults.get(name) if engine.connection_for(server) is engine.connection else None
        self.seeded = self.faults is not None and self.faults.seed is not None
        self.id = f"mcp_nb-sweep-{uuid.uuid4().hex}"
        self.final: dict[int, Any] = {}  # grid position -> its latest recorded Outcome
        self.finished: set[int] = set()  # grid positions whose call ended on a worker
        self.partitions: list[list[int]] = []
        self._merged: dict[int, set[int]] = collections.defaultdict(set)  # partition -> record indexes merged
        self._nested: dict[tuple[int, int], int] = {}  # (partition, worker's call id) -> this kernel's id
        self._settled: set[int] = set()
        self._runners: dict[int, str] = {}  # partition -> the worker that claimed it
        self._draws: dict[str, dict[str, int]] = {}  # worker -> seeded fault draws there, per argument set
        self._inbox: collections.deque = collections.deque()

    # -- running --------------------------------------------------------------------------------

    def run(self, distributed, client, progress: bool, stop: threading.Event | None) -> pd.DataFrame:
        threads = self._check_workers(client)
        n = len(self.sets)
        size = self.partition_size or max(1, math.ceil(n / (PARTITIONS_PER_THREAD * threads)))
        self.partitions = [list(range(i, min(i + size, n))) for i in range(0, n, size)]
        job = worker.Job(
            sweep=self.id, name=self.name, timeout=self.calls[0].timeout if self.calls else 0.0,
            retry=self.calls[0].rule if self.calls else None, concurrency=self.local.concurrency, server=self.server,
            seen=self._seen_before() if self.seeded else None,
        )  # fmt: skip
        _listen(client, self.id, self._inbox)
        futures: dict[Any, int] = {}
        woken = threading.Event()
        bar = _progress_bar(n, self.name) if progress else None
        stopped_by = None
        try:
            for k, positions in enumerate(self.partitions):
                future = client.submit(
                    worker.run_partition, self.blob, self.digest, job, k, positions,
                    [self.calls[p].arguments for p in positions], key=f"{self.id}-{k}", pure=False,
                )  # fmt: skip
                futures[future] = k
                future.add_done_callback(lambda _: woken.set())
            pending = set(futures)
            while pending:
                if stop is not None and stop.is_set():
                    raise Stopped
                woken.wait(0.1)  # a partition ended, or time to move the bar with the calls that did
                woken.clear()
                done = {future for future in pending if future.done()}
                self._drain()
                for future in done:
                    self._settle(futures[future], future)
                pending -= done
                _advance(bar, len(self.finished))
            self._drain()
        except (KeyboardInterrupt, Stopped):
            stopped_by = "interrupted"
            self._stop(client, futures)
        finally:
            self._count_draws()
            _unlisten(client, self.id)
            _release_claims(client, [f"{self.id}-{k}" for k in range(len(self.partitions))])
            if futures:
                client.cancel(list(futures))
            _advance(bar, len(self.finished))
            if bar is not None:
                bar.close()
        if stopped_by:
            print(f"sweep of {self.name!r} {stopped_by}: {len(self.finished)} of {n} calls finished")
        return self.frame(stopped_by is not None)

    def _check_workers(self, client) -> int:
        threads = client.nthreads()
        if not threads:
            raise RuntimeError(f"the dask cluster at {client.scheduler.address} has no workers")
        try:
            versions = client.run(worker.check, self.blob)
        except Exception as err:  # noqa: BLE001 - what a worker could not load, in one line
            raise RuntimeError(
                f"the dask workers cannot load the tools: {toolbox._one_line(err)} (install mcp_nb, and every module "
                "the tools import, on the workers)"
            ) from None
        other = {address: version for address, version in versions.items() if version != __version__}
        if other:
            address, version = next(iter(other.items()))
            raise RuntimeError(f"the dask worker {address} runs mcp_nb {version}, this kernel {__version__}: install the same on both")
        return sum(threads.values())

    def _seen_before(self) -> dict[str, int]:
        with self.faults._lock:
            return dict(self.faults._seen)

    def _count_draws(self) -> None:
        """Count the workers' draws of the seeded faults as the kernel's own: a call made here
        afterwards draws what it would have drawn had the sweep run here."""
        if not self.seeded:
            return
        with self.faults._lock:
            for draws in self._draws.values():
                for key, n in draws.items():
                    self.faults._seen[key] = self.faults._seen.get(key, 0) + n

    def _stop(self, client, futures: dict[Any, int]) -> None:
        """Stop the partitions running on the workers, and merge what they return: their calls
        in flight come back cancelled. The partitions not started are dropped."""
        try:
            running = {k for ks in client.run(worker.stop, self.id).values() for k in ks}
        except Exception:  # noqa: BLE001 - a worker gone: its partitions are answered as lost
            running = set()
        client.cancel([future for future, k in futures.items() if k not in running and not future.done()])
        deadline = time.monotonic() + STOP_WAIT_S
        waiting = {future: k for future, k in futures.items() if k not in self._settled and (k in running or future.done())}
        while waiting and time.monotonic() < deadline:
            for future in [f for f in waiting if f.done()]:
                self._settle(waiting.pop(future), future)
            time.sleep(0.02)
        self._drain()

    # -- merging --------------------------------------------------------------------------------

    def _drain(self) -> None:
        inbox = self._inbox
        while inbox:
            message = inbox.popleft()
            k = message["k"]
            if message.get("start"):
                self._runners[k] = message["w"]
                continue
            if message.get("r") is not None:
                self._merge(k, message["w"], pickle.loads(message["r"]))
            self.finished.update(message["f"])

    def _settle(self, k: int, future) -> None:
        self._answer(k, future)
        self._settled.add(k)  # only once answered: an interrupt during the answer leaves it to `_stop`

    def _answer(self, k: int, future) -> None:
        if future.status == "finished":
            part = future.result()
            if part.rerun:
                self._drain()  # whatever the first run told before it died
                self._lose(k, self._runners.get(k), "died while it ran the partition")
                return
            self._merge(k, part.worker, part.records)
            self.finished.update(part.finished)
            if part.seen:
                draws = self._draws.setdefault(part.worker, {})
                for key, n in part.seen.items():
                    draws[key] = max(draws.get(key, 0), n)
            return
        if future.status == "cancelled":
            return
        error = future.exception()
        self._drain()
        last = getattr(error, "last_worker", None)
        if last is not None:  # KilledWorker: the scheduler gave up on it after workers died running it
            self._lose(k, getattr(last, "address", str(last)), "died while it ran the partition")
        else:
            self._lose(k, self._runners.get(k), f"the partition failed there: {toolbox._one_line(error)}", cause="client_error")

    def _merge(self, k: int, address: str, records: list) -> None:
        merged = self._merged[k]
        history = self.engine.history
        for index, position, outcome in records:
            if index in merged:
                continue
            merged.add(index)
            if position is None:  # a call a tool made on the worker: a fresh id of this kernel's
                call_id = self._nested.setdefault((k, outcome.call_id), next(_ids))
            else:
                call_id = self.calls[position].id
            outcome = dataclasses.replace(outcome, call_id=call_id, worker=address)
            history.record(outcome)
            if position is not None:
                latest = self.final.get(position)
                if latest is None or outcome.attempt >= latest.attempt:
                    self.final[position] = outcome

    def _lose(self, k: int, address: str | None, what: str, cause: str = "worker_lost") -> None:
        """Record the calls of partition k that never came back."""
        where = f"the dask worker {address}" if address else "a dask worker"
        for position in self.partitions[k]:
            if position in self.finished:
                continue
            call = self.calls[position]
            latest = self.final.get(position)
            attempt = latest.attempt + 1 if latest is not None else 1
            message = (
                f"{where} {what} before it sent this call's record: whether the call ran there is unknown"
                if cause == "worker_lost"
                else f"{where}: {what}"
            )
            outcome = dataclasses.replace(
                call._outcome("protocol_error", cause, 0.0, message=message, data={"worker": address, "partition": k}, observed=False),
                attempt=attempt, worker=address,
            )  # fmt: skip
            self.engine.history.record(outcome)
            self.final[position] = outcome

    # -- the result -----------------------------------------------------------------------------

    def frame(self, interrupted: bool) -> pd.DataFrame:
        """One row per call that was made, in the grid's order, with the worker that made it."""
        columns_after = [*RESULT_COLUMNS, "worker"]
        rows = []
        for position, arguments in enumerate(self.sets):
            outcome = self.final.get(position)
            if outcome is None:
                continue
            row = dict(arguments)
            for column in columns_after:
                row[column] = getattr(outcome, column)
            rows.append(row)
        keys = list(dict.fromkeys(k for arguments in self.sets for k in arguments))
        frame = pd.DataFrame(rows, columns=[k for k in keys if k not in columns_after] + columns_after)
        frame["code"] = frame["code"].astype("Int64")
        frame.attrs.update(
            tool=self.name, calls=len(self.sets), completed=len(self.finished), interrupted=interrupted,
            partitions=len(self.partitions),
        )  # fmt: skip
        return frame


def _release_claims(client, names: list[str]) -> None:
    """Forget the partitions' claims on the scheduler, all in one round (a cleared dask Event is deleted)."""
    import asyncio

    async def clear_all() -> None:
        await asyncio.gather(*(client.scheduler.event_clear(name=name) for name in names), return_exceptions=True)

    try:
        client.sync(clear_all)
    except Exception:  # noqa: BLE001 - a scheduler gone has forgotten them anyway
        pass


# -- the events from the workers: one subscription per client, one inbox per sweep ---------------

_inboxes: dict[str, collections.deque] = {}
_subscribers: dict[str, set[str]] = {}  # client id -> the sweeps listening through it
_inbox_lock = threading.Lock()


def _deliver(event) -> None:
    # Runs on the dask client's own thread: hands the message over, nothing more.
    _, message = event
    inbox = _inboxes.get(message.get("s")) if isinstance(message, dict) else None
    if inbox is not None:
        inbox.append(message)


def _listen(client, sweep: str, inbox: collections.deque) -> None:
    with _inbox_lock:
        _inboxes[sweep] = inbox
        sweeps = _subscribers.setdefault(client.id, set())
        first = not sweeps
        sweeps.add(sweep)
    if first:
        client.subscribe_topic(worker.TOPIC, _deliver)


def _unlisten(client, sweep: str) -> None:
    with _inbox_lock:
        _inboxes.pop(sweep, None)
        sweeps = _subscribers.get(client.id, set())
        sweeps.discard(sweep)
        last = not sweeps
        if last:
            _subscribers.pop(client.id, None)
    if last:
        try:
            client.unsubscribe_topic(worker.TOPIC)
        except (ValueError, RuntimeError):
            pass


async def arun_cluster_sweep(engine, name, grid, **options) -> pd.DataFrame:
    """The async face: the sweep waits in a thread; cancelling the awaiting task stops it as an interrupt would."""
    import asyncio

    stop = threading.Event()
    task = asyncio.ensure_future(asyncio.to_thread(run_cluster_sweep, engine, name, grid, progress=False, stop=stop, **options))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        stop.set()
        await asyncio.wait([task])  # the stopped sweep records its calls before the cancellation goes on
        raise
