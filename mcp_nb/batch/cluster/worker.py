"""What runs on a dask worker: one partition of a sweep, through an engine of the worker's own.

Each worker process keeps one engine, built from the toolbox the kernel shipped (the same
registrations, or a connection to the same outside server) and kept while the kernel
sends the same toolbox, so a sweep's partitions pay for it once. A partition is a local
sweep on that engine: the same checks, deadlines, retries and fault injection as in the
kernel, because it is the same code. Its records go back to the kernel as the calls end
(dask events on one topic, every 50 ms, for the progress bar and in case the worker dies)
and all of them again as the partition's result.

A partition runs once. When a worker dies, dask runs its tasks again elsewhere; a rerun
would repeat calls that may have had side effects, which is the kernel's decision (the
idempotency rule), never the scheduler's. So the first run claims the partition on the
scheduler (a dask `Event` named after it) and a later run finds the claim and returns at
once: the kernel records the calls it never heard of as `worker_lost`.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import dataclasses
import pickle
import sys
import threading
from typing import Any

from mcp_nb import libraries as lib
from mcp_nb._version import __version__
from mcp_nb.batch.cluster.toolbox import build, faults_fields, unpack
from mcp_nb.batch.core import Lanes
from mcp_nb.batch.sweeps import prepare_calls
from mcp_nb.calling import default
from mcp_nb.calling.current import CURRENT_CALL
from mcp_nb.calling.retry import Retry
from mcp_nb.registering.faults import Faults

TOPIC = "mcp_nb-sweeps"  # one topic for every sweep: the scheduler keeps a bounded log per topic
# The scheduler keeps the last 1000 events of a topic (dask's low-level-log-length), so an
# event's size bounds what the sweeps leave there; larger batches travel only in the result.
EVENT_RECORDS_MAX = 32 * 1024
TELL_EVERY_S = 0.05  # how often a partition tells the kernel which calls ended
SWEEPS_KEPT = 16  # the sweeps whose fault draws a worker process remembers
# CPython 3.11 before 3.11.9 can deadlock a whole process when one thread reads every thread's
# frames (sys._current_frames) while another starts or ends a thread and the garbage collector
# runs (CPython gh-106883, fixed in 3.11.9). A dask worker reads them every 10 ms while a task
# runs (its statistical profiler), and a partition starts and ends many threads (the SDK's
# worker threads for sync tools): seen here as a sweep hung for good, every thread of the
# worker waiting. On those Pythons the worker's profiler is stopped before a partition's first
# call; dask itself keeps its event-loop profiler off on 3.11 for the same reason.
FRAMES_DEADLOCK = (3, 11) <= sys.version_info[:3] < (3, 11, 9)
PROFILER_STOP_WAIT_S = 5.0


@dataclasses.dataclass(frozen=True)
class Job:
    """What every partition of one sweep shares."""

    sweep: str  # the sweep's id: in every event, and the prefix of its partitions' claims
    name: str
    timeout: float
    retry: Retry | None
    concurrency: int
    server: str | None
    seen: dict[str, int] | None  # the kernel's count of seeded fault draws per argument set (`Faults.drawn`)
    # What each position runs when it is not one call of `name` (an evaluation's episodes):
    # `work.on(engine, sets, concurrency, ended)` gives the lanes to run, which records are the
    # partition's (`owns(outcome)`), and what its answer carries besides them (`results()`).
    work: Any = None


@dataclasses.dataclass
class Partition:
    """A partition's answer: its records as (index, grid position or None for a nested call, Outcome)."""

    k: int
    worker: str
    records: list = dataclasses.field(default_factory=list)
    finished: list[int] = dataclasses.field(default_factory=list)  # grid positions whose call ended
    seen: dict[str, int] = dataclasses.field(default_factory=dict)  # this sweep's fault draws in this process so far
    rerun: bool = False  # dask ran it again after its first worker died: it did nothing
    stopped: bool = False  # the sweep was stopped before this partition started
    results: list = dataclasses.field(default_factory=list)  # a `Job.work`'s results (an evaluation's episodes)


class _Run:
    """A partition running in this process, for `stop` to cancel."""

    def __init__(self) -> None:
        self.future: concurrent.futures.Future | None = None
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True
        if self.future is not None:
            self.future.cancel()


_lock = threading.Lock()
_running: dict[str, dict[int, _Run]] = {}  # sweep id -> partition -> run
_stopped: set[str] = set()
_seeded: dict[str, tuple[Faults, dict[str, int]]] = {}  # sweep id -> the swept tool's faults here, and the kernel's counts
_exit_hook = threading.Event()


def check(blob: bytes) -> str:
    """Run on every worker before a sweep: the toolbox loads here (its functions' modules
    import) and its registrations register the same here as in the kernel; returns the
    worker's mcp_nb version, which the kernel compares with its own."""

    toolbox = unpack(blob)
    if toolbox.version == __version__ and toolbox.remote is None:
        # Registered on an engine of its own, never started, then dropped: no server runs.
        build(toolbox).close()
    return __version__


def stop(sweep: str) -> list[int]:
    """Stop a sweep in this worker: running partitions cancel their calls (each records itself
    as cancelled), later ones do not start. Returns the partitions that were running."""
    with _lock:
        _stopped.add(sweep)
        runs = dict(_running.get(sweep, {}))
    for run in runs.values():
        run.stop()
    return sorted(runs)


def run_partition(blob: bytes, digest: str, job: Job, k: int, positions: list[int], sets: list[dict]) -> Partition:
    worker = lib.distributed.get_worker()
    address = worker.address
    run = _Run()
    with _lock:
        if job.sweep in _stopped:
            return Partition(k, address, stopped=True)
        _running.setdefault(job.sweep, {})[k] = run
    try:
        # Not atomic, and need not be: dask runs a task again only once its first run was
        # given up for lost, and by then that run had claimed it before its first call.
        claim = lib.distributed.Event(f"{job.sweep}-{k}")
        if claim.is_set():
            return Partition(k, address, rerun=True)
        claim.set()
        _tell(worker, {"s": job.sweep, "k": k, "w": address, "start": True})
        if FRAMES_DEADLOCK:
            _stop_profiler(worker)
        engine = _engines.acquire(blob, digest)
        try:
            return _run(worker, address, engine, job, k, positions, sets, run)
        finally:
            _engines.release(digest)
    finally:
        with _lock:
            runs = _running.get(job.sweep, {})
            runs.pop(k, None)
            if not runs:
                _running.pop(job.sweep, None)


def _stop_profiler(worker: Any) -> None:
    """Stop the worker's statistical profiler (see FRAMES_DEADLOCK), on the worker's own loop,
    which owns it; this task thread waits until it has stopped."""
    profiler = getattr(worker, "periodic_callbacks", {}).get("profile")
    if profiler is None or not profiler.is_running():
        return
    stopped = threading.Event()

    def stop() -> None:
        profiler.stop()
        stopped.set()

    worker.loop.add_callback(stop)
    stopped.wait(PROFILER_STOP_WAIT_S)  # a loop that does not answer is no reason to refuse the partition


class _Engines:
    """The engines of this worker process, one per toolbox, the latest being `mcp_nb.engine()`.

    A tool that calls tools through mcp_nb (`mcp_nb.call` in its body) reaches the
    process-wide engine, so the engine hosting the shipped tools is that one. An engine
    whose toolbox was replaced (the kernel's tools changed) is closed once no partition
    uses it any more.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, list] = {}  # digest -> [engine, partitions using it]
        self._latest: str | None = None

    def acquire(self, blob: bytes, digest: str) -> Any:
        with self._lock:  # one build per toolbox, even when the worker's threads start together
            held = self._held.get(digest)
            if held is None:
                held = self._held[digest] = [self._build(blob), 0]
            held[1] += 1
            if digest != self._latest:
                default.adopt(held[0])
                self._latest = digest
                retired = [d for d, (_, users) in self._held.items() if d != digest and users == 0]
                old = [self._held.pop(d)[0] for d in retired]
            else:
                old = []
        for engine in old:
            engine.close()
        return held[0]

    def release(self, digest: str) -> None:
        with self._lock:
            held = self._held[digest]
            held[1] -= 1
            gone = self._held.pop(digest)[0] if held[1] == 0 and digest != self._latest else None
        if gone is not None:
            gone.close()

    @staticmethod
    def _build(blob: bytes) -> Any:
        toolbox = unpack(blob)
        if toolbox.version != __version__:
            raise RuntimeError(f"this worker runs mcp_nb {__version__}, the kernel {toolbox.version}")
        engine = build(toolbox)
        _close_at_exit()
        return engine

    def close_all(self) -> None:
        with self._lock:
            engines = [engine for engine, _ in self._held.values()]
            self._held.clear()
        for engine in engines:
            engine.close()


_engines = _Engines()


def _close_at_exit() -> None:
    # The engines' stdio servers end with the worker process (a worker that is killed
    # cannot do this: its servers' own end-of-input on stdin ends them).
    if not _exit_hook.is_set():
        _exit_hook.set()
        atexit.register(_engines.close_all)


def _run(
    worker: Any, address: str, engine: Any, job: Job, k: int, positions: list[int], sets: list[dict], run: _Run
) -> Partition:
    _seeded_faults(engine, job)
    lock = threading.Lock()
    records: list = []
    sent = [0]
    finished: list[int] = []
    ids: dict[int, int] = {}

    def heard(outcome: Any) -> None:
        # Every call this process's engine records comes here, other partitions' too (a
        # worker with several threads runs several): this partition's are its grid calls and
        # the calls their tools made, whose chain of parents leads to one of them. A grid call
        # the stop records from this thread (`Lanes.stop`) is known by its id.
        if outcome is None or (outcome.call_id not in ids and not owns(outcome)):
            return
        with lock:
            records.append((len(records), ids.get(outcome.call_id), outcome))

    told = [0, False]  # finished calls told so far; whether a message is due

    def tell() -> None:
        with lock:
            batch, sent[0] = records[sent[0] :], len(records)
            done, told[0], told[1] = finished[told[0] :], len(finished), False
        _tell(worker, {"s": job.sweep, "k": k, "w": address, "f": done, "r": _packed(batch)})

    def ended(i: int, done: bool) -> None:
        # Runs on the engine's loop as each call ends. The calls that ended within TELL_EVERY_S
        # go in one message: one per call would cost the scheduler and the kernel more than the
        # call itself, for a trivial tool.
        with lock:
            if done:
                finished.append(positions[i])
            due, told[1] = told[1], True
        if not due:
            asyncio.get_running_loop().call_later(TELL_EVERY_S, tell)

    if job.work is None:
        calls = prepare_calls(engine, job.name, sets, job.timeout, job.retry, job.server)
        lanes = Lanes(engine, calls, job.concurrency, ended=ended)
        ids.update({call.id: positions[i] for i, call in enumerate(calls)})

        def owns(outcome: Any) -> bool:
            return _root(CURRENT_CALL.get()) in ids

        results: Any = list
    else:
        worked = job.work.on(engine, sets, job.concurrency, ended)
        lanes, owns, results = worked.lanes, worked.owns, worked.results
    engine.history.subscribe(heard)
    try:
        future = engine.loop.submit(lanes.run())
        run.future = future
        if run.stopped:  # stopped while the engine was being made
            future.cancel()
        try:
            future.result()
        except concurrent.futures.CancelledError:
            # Every call the partition started has its Outcome when this returns: the cancelled
            # calls record themselves, and one that cannot within the bounded wait (its handler
            # holds the engine's loop) is recorded as cancelled from here, once.
            lanes.stop(cancel=True)
    finally:
        engine.history.unsubscribe(heard)
        engine.history.clear()  # the kernel keeps the history: the records are in `records`
    with lock:
        rest, done = records[sent[0] :], finished[told[0] :]
        sent[0], told[0] = len(records), len(finished)
    _tell(worker, {"s": job.sweep, "k": k, "w": address, "f": done, "r": _packed(rest)})
    return Partition(k, address, records=records, finished=finished, seen=_draws(job), results=results())


def _root(call: Any) -> int | None:
    """The id of the outermost call of a chain of nested calls."""
    if call is None:
        return None
    while call.parent is not None:
        call = call.parent
    return call.id


def _seeded_faults(engine: Any, job: Job) -> Faults | None:
    """The swept tool's seeded faults for this sweep in this process, counting on from the
    kernel's draws, so that each call draws what it would have drawn in the kernel."""
    with _lock:
        held = _seeded.get(job.sweep)
        if held is None:
            faults = engine.registry.faults.get(job.name)
            if faults is None or faults.seed is None:
                return None
            fresh = Faults(**faults_fields(faults))
            fresh.count(job.seen or {})
            engine.registry.inject(job.name, fresh)
            held = _seeded[job.sweep] = (fresh, dict(job.seen or {}))
            while len(_seeded) > SWEEPS_KEPT:  # the oldest sweeps here are long over
                del _seeded[next(iter(_seeded))]
    return held[0]


def _draws(job: Job) -> dict[str, int]:
    """The draws made in this process for this sweep so far (they only grow: the kernel keeps the largest)."""
    held = _seeded.get(job.sweep)
    if held is None:
        return {}
    fresh, base = held
    return {digest: n - base.get(digest, 0) for digest, n in fresh.drawn().items() if n != base.get(digest, 0)}


def _packed(batch: list) -> bytes | None:
    if not batch:
        return None
    try:
        data = pickle.dumps(batch)
    except Exception:  # noqa: BLE001 - the partition's result carries them all the same
        return None
    return data if len(data) <= EVENT_RECORDS_MAX else None


def _tell(worker: Any, message: dict) -> None:
    try:
        worker.log_event(TOPIC, message)
    except Exception:  # noqa: BLE001 - an event is news ahead of the result, never the only copy
        pass
