"""A sweep on a dask.distributed cluster, seen from the kernel.

Everything that can be refused is refused before anything runs: each argument set is
prepared as a `Call` here (bad arguments, a bad timeout, a retry of a tool that is not
idempotent raise, as in a local sweep), the toolbox is serialized (a registration that
cannot be pickled is named), and every worker loads it (a module the tools import that is
missing there, another mcp_nb version, a registration that would not list the same
there). Then the grid goes out in partitions, dask's tasks, and the kernel waits on this
thread as for a sweep in the kernel (`core.wait`), merging records as they come back
(`ledger.py`): into the one history as they arrive, and into the returned frame in the
grid's order, each call's last attempt, with the `worker` that made it.

The progress bar counts calls as they end on the workers. An interrupt stops the sweep
on every worker (calls in flight record themselves as cancelled and come back; a worker that
does not answer in time has its partition's unheard calls recorded as lost), drops the
partitions not started, and returns the partial frame. A partition whose worker died is
answered here: its calls the kernel never heard of are recorded as `worker_lost`.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import math
import pickle
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any

from mcp_nb._version import __version__
from mcp_nb.batch.cluster import require_distributed, toolbox, worker
from mcp_nb.batch.cluster.ledger import Ledger
from mcp_nb.batch.core import STOP_WAIT_S, check_concurrency, result_frame, wait
from mcp_nb.batch.sweeps import argument_sets, prepare_calls
from mcp_nb.mistakes import BadType, BadValue, first_line

if TYPE_CHECKING:
    import pandas as pd

PARTITIONS_PER_THREAD = 4  # the default split: enough partitions to balance, few enough to be cheap


def run_cluster_sweep(
    engine,
    name,
    grid,
    *,
    cluster,
    concurrency=8,
    timeout=None,
    retry=None,
    progress=True,
    server=None,
    partition_size=None,
    stop: threading.Event | None = None,
) -> pd.DataFrame:
    distributed = require_distributed()
    sweep = ClusterSweep(engine, name, argument_sets(grid), concurrency, timeout, retry, server, partition_size)
    client, owned = client_for(distributed, cluster)
    try:
        return sweep.run(client, progress, stop)
    finally:
        if owned:
            client.close()


def client_for(distributed, cluster) -> tuple[Any, bool]:
    """A `Client` for `cluster`: the user's own, or one made (and closed) for this sweep."""
    if isinstance(cluster, distributed.Client):
        return cluster, False
    address = getattr(cluster, "scheduler_address", cluster)  # a LocalCluster, any dask cluster object
    if not isinstance(address, str) or not address:
        raise BadType(f"cluster must be a dask Client, a cluster object or a scheduler address, not {type(cluster).__name__}")
    # Not the default client: that one belongs to the user's own dask code.
    return distributed.Client(address, set_as_default=False), True


class ClusterSweep:
    """A sweep whose partitions run on dask workers: a batch (`core.Batch`) the kernel waits on."""

    def __init__(self, engine, name, sets, concurrency, timeout, retry, server, partition_size) -> None:
        if partition_size is not None and (
            not isinstance(partition_size, int) or isinstance(partition_size, bool) or partition_size < 1
        ):
            raise BadValue(f"partition_size must be a whole number >= 1, got {partition_size!r}")
        self.concurrency = check_concurrency(concurrency)
        self.calls = prepare_calls(engine, name, sets, timeout, retry, server)  # every check, as locally
        self.engine, self.name, self.sets, self.server = engine, name, sets, server
        self.partition_size = partition_size
        self.blob, self.digest = toolbox.pack(engine, server)
        self.faults = engine.registry.faults.get(name) if engine.connection_for(server) is engine.connection else None
        self.seeded = self.faults is not None and self.faults.seed is not None
        self.id = f"mcp_nb-sweep-{uuid.uuid4().hex}"
        self.ledger = Ledger(engine.history, self.calls)
        self.partitions: list[list[int]] = []
        self._client: Any = None
        self._futures: dict[Any, int] = {}  # partition's dask future -> partition
        self._pending: set[Any] = set()
        self._woken = threading.Event()  # a partition ended
        self._settled: set[int] = set()
        self._answered: set[int] = set()  # partitions whose calls are all accounted for (their result, or lost)
        self._inbox: collections.deque = collections.deque()
        self.results: dict[int, list] = {}  # partition -> what its answer carried besides records (a `Job.work`'s)

    # -- running --------------------------------------------------------------------------------

    def run(self, client, progress: bool, stop: threading.Event | None) -> pd.DataFrame:
        threads = self._check_workers(client)
        n = len(self.sets)
        size = self.partition_size or max(1, math.ceil(n / (PARTITIONS_PER_THREAD * threads)))
        self.partitions = [list(range(i, min(i + size, n))) for i in range(0, n, size)]
        self._client = client
        _listen(client, self.id, self._inbox)
        try:
            label, subject, unit = self.said()
            interrupted = wait(self, n, label if progress else None, subject, unit, stop)
        finally:
            if self.seeded:
                # The workers' draws of the seeded faults count as the kernel's own: a call made here
                # afterwards draws what it would have drawn had the sweep run here.
                for draws in self.ledger.draws.values():
                    self.faults.count(draws)
            _unlisten(client, self.id)
            _release_claims(client, [f"{self.id}-{k}" for k in range(len(self.partitions))])
            if self._futures:
                client.cancel(list(self._futures))
        return self.frame(interrupted)

    def said(self) -> tuple[str, str, str]:
        """How its progress bar is named, and its interrupt said: the label, the subject, the unit."""
        return f"sweep {self.name}", f"sweep of {self.name!r}", "calls finished"

    def _check_workers(self, client) -> int:
        threads = client.nthreads()
        if not threads:
            raise RuntimeError(f"the dask cluster at {client.scheduler.address} has no workers")
        try:
            versions = client.run(worker.check, self.blob)
        except toolbox.NotShippable as err:
            raise toolbox.NotShippable(str(err)) from None  # the worker's own words, without its traceback
        except Exception as err:  # noqa: BLE001 - what a worker could not load, in one line
            raise RuntimeError(
                f"the dask workers cannot load the tools: {first_line(err, named=True)} (install mcp_nb, and every module "
                "the tools import, on the workers)"
            ) from None
        other = {address: version for address, version in versions.items() if version != __version__}
        if other:
            address, version = next(iter(other.items()))
            raise RuntimeError(
                f"the dask worker {address} runs mcp_nb {version}, this kernel {__version__}: install the same on both"
            )
        return sum(threads.values())

    # -- the batch the kernel waits on ----------------------------------------------------------

    @property
    def done(self) -> int:
        return len(self.ledger.finished)

    def start(self) -> None:
        job = worker.Job(
            sweep=self.id,
            name=self.name,
            timeout=self.calls[0].timeout if self.calls else 0.0,
            retry=self.calls[0].rule if self.calls else None,
            concurrency=self.concurrency,
            server=self.server,
            seen=self.faults.drawn() if self.seeded else None,
        )
        for k, positions in enumerate(self.partitions):
            future = self._client.submit(
                worker.run_partition,
                self.blob,
                self.digest,
                job,
                k,
                positions,
                [self.calls[p].arguments for p in positions],
                key=f"{self.id}-{k}",
                pure=False,
            )
            self._futures[future] = k
            self._pending.add(future)
            future.add_done_callback(lambda _: self._woken.set())

    def step(self, seconds: float) -> bool:
        if self.engine.closed:
            # mcp_nb.reset(): the workers do not know, so `stop` stops them as for an interrupt.
            raise concurrent.futures.CancelledError
        # Wakes when a partition ends, or in time to move the bar with the calls that did.
        if self._pending:
            self._woken.wait(seconds)
            self._woken.clear()
        done = {future for future in self._pending if future.done()}
        self._drain()
        for future in done:
            self._settle(self._futures[future], future)
        self._pending -= done
        if self._pending:
            return False
        self._drain()
        return True

    def stop(self, cancel: bool) -> None:
        """Stop the partitions running on the workers, and merge what they return: their calls
        in flight come back cancelled. The partitions not started are dropped. (The calls are
        the workers' whether or not the kernel's engine was closed: they are stopped either way.)"""
        client, futures = self._client, self._futures
        running, silent = _stop_on_workers(client, self.id)
        client.cancel([future for future, k in futures.items() if k not in running and not future.done()])
        deadline = time.monotonic() + STOP_WAIT_S
        waiting = {future: k for future, k in futures.items() if k not in self._settled and (k in running or future.done())}
        while waiting and time.monotonic() < deadline:
            for future in [f for f in waiting if f.done()]:
                self._settle(waiting.pop(future), future)
            time.sleep(0.02)
        self._drain()
        # A partition that began on a worker which did not answer the stop, or did not come back
        # in time, leaves no call unrecorded: the ones the kernel never heard of are lost.
        for k, address in sorted(self.ledger.runners.items()):
            if k not in self._answered and (k in waiting.values() or address in silent):
                self._answered.add(k)
                self.ledger.lose(k, self.partitions[k], address, f"did not answer the sweep's stop within {STOP_WAIT_S:g} s")

    # -- what comes back ------------------------------------------------------------------------

    def _drain(self) -> None:
        ledger, inbox = self.ledger, self._inbox
        while inbox:
            message = inbox.popleft()
            k = message["k"]
            if message.get("start"):
                ledger.runners[k] = message["w"]
                continue
            if message.get("r") is not None:
                ledger.merge(k, message["w"], pickle.loads(message["r"]))
            ledger.finished.update(message["f"])

    def _settle(self, k: int, future) -> None:
        self._answer(k, future)
        self._settled.add(k)  # only once answered: an interrupt during the answer leaves it to `stop`

    def _answer(self, k: int, future) -> None:
        ledger = self.ledger
        if future.status == "cancelled":
            return  # by the kernel, at a stop: what it ran is answered there
        self._answered.add(k)
        if future.status == "finished":
            part = future.result()
            if part.rerun:
                self._drain()  # whatever the first run told before it died
                ledger.lose(k, self.partitions[k], ledger.runners.get(k), "died while it ran the partition")
                return
            ledger.merge(k, part.worker, part.records)
            ledger.finished.update(part.finished)
            if part.results:
                self.results[k] = part.results
            if part.seen:
                ledger.drew(part.worker, part.seen)
            return
        error = future.exception()
        self._drain()
        last = getattr(error, "last_worker", None)
        if last is not None:  # KilledWorker: the scheduler gave up on it after workers died running it
            ledger.lose(k, self.partitions[k], getattr(last, "address", str(last)), "died while it ran the partition")
        else:
            ledger.lose(
                k,
                self.partitions[k],
                ledger.runners.get(k),
                f"the partition failed there: {first_line(error, named=True)}",
                cause="client_error",
            )

    # -- the result -----------------------------------------------------------------------------

    def frame(self, interrupted: bool) -> pd.DataFrame:
        """One row per call that was made, in the grid's order, with the worker that made it."""
        return result_frame(
            self.sets,
            self.ledger.outcomes(),
            extra=("worker",),
            tool=self.name,
            calls=len(self.sets),
            completed=self.done,
            interrupted=interrupted,
            partitions=len(self.partitions),
        )


def _stop_on_workers(client, sweep: str) -> tuple[set[int], set[str]]:
    """Ask every worker to stop `sweep`, each asked on its own and given STOP_WAIT_S to answer
    (a worker whose event loop is stuck must not hold the interrupt). Returns the partitions
    that were running on the workers that answered, and the workers that did not."""
    try:
        addresses = list(client.nthreads())
    except Exception:  # noqa: BLE001 - the scheduler gone: no worker can be asked
        return set(), set()

    def ask(address: str) -> list[int] | None:
        try:
            return client.run(worker.stop, sweep, workers=[address], callback_timeout=STOP_WAIT_S).get(address, [])
        except Exception:  # noqa: BLE001 - a worker gone or stuck: its partitions are answered as lost
            return None

    with concurrent.futures.ThreadPoolExecutor(max_workers=min(8, max(1, len(addresses)))) as pool:
        answers = dict(zip(addresses, pool.map(ask, addresses)))
    running = {k for ks in answers.values() if ks is not None for k in ks}
    return running, {address for address, ks in answers.items() if ks is None}


def _release_claims(client, names: list[str]) -> None:
    """Forget the partitions' claims on the scheduler, all in one round (a cleared dask Event is deleted)."""

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
    stop = threading.Event()
    task = asyncio.ensure_future(asyncio.to_thread(run_cluster_sweep, engine, name, grid, progress=False, stop=stop, **options))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        stop.set()
        await asyncio.wait([task])  # the stopped sweep records its calls before the cancellation goes on
        raise
