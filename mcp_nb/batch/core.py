"""Many prepared calls at once: how they run, how the caller waits, and the frame they leave.

A sweep, a replay and a sweep on a dask cluster are one thing seen from the kernel: calls
prepared first (every refusal before anything is sent), then run while the caller's thread
waits, moving a progress bar and answering an interrupt, then a frame of the calls that
were made. They differ only in where the calls run (`Lanes` on mcp_nb's loop, partitions on
dask workers) and in what their frame says; the waiting and the telling are here, once.

The caller's thread only waits and moves the bar, so the bar (a widget in a notebook) is
only ever touched from the kernel's own thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from mcp_nb import libraries as lib
from mcp_nb.calling.loop import BLOCKS_OWN_LOOP
from mcp_nb.mistakes import BadValue, McpNbError
from mcp_nb.views.live import close_bar, progress_bar

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)

RESULT_COLUMNS = ["call_id", "attempt", "outcome", "cause", "duration_ms", "content", "code", "message"]
# Shown only when some call reported progress: how much each reported, and how often that moved
# its deadline, beside how long it took. Other batches keep their columns.
PROGRESS_COLUMNS = ["progress", "deadline_resets"]
TICK_S = 0.1  # how often the waiting thread moves the bar (and looks for a stop)
# How long a stopped batch waits for its cancelled calls to record themselves; past it (a handler
# holding mcp_nb's loop, a machine under load), the batch records them itself (`Lanes.stop`).
STOP_WAIT_S = 10.0
INTERRUPTED = "interrupted"
RESET = "stopped by mcp_nb.reset()"


def check_concurrency(concurrency: Any) -> int:
    if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
        raise BadValue(f"concurrency must be a whole number >= 1, got {concurrency!r}")
    return concurrency


class Batch(Protocol):
    """What `wait` needs of a batch."""

    def start(self) -> None:
        """Send its calls on their way; returns at once."""

    @property
    def done(self) -> int:
        """How many of its calls have ended (not cancelled): what the bar shows."""

    def step(self, seconds: float) -> bool:
        """Wait up to `seconds` for the batch to end; True once it has. Raises
        concurrent.futures.CancelledError when the engine was closed under it."""

    def stop(self, cancel: bool) -> None:
        """Stop it (cancel: the caller asked; else the engine already cancelled its calls): it
        starts no call more, and every call it started has its Outcome when this returns."""


class Lanes:
    """Prepared calls on mcp_nb's loop, in lanes: up to `concurrency` lanes run side by side,
    and the calls of one lane one after another, in order (by default each call is a lane).

    `ended(i, finished)`, when given, is called on the loop as call i ends (finished False:
    it was cancelled).

    Stopped (`stop`), it starts no call more, and every call it did start has an Outcome when
    `stop` returns, by construction: the calls in flight are cancelled and record themselves, and
    one that has not by the end of a bounded wait (its handler holds mcp_nb's loop, the machine
    is loaded) is recorded as cancelled by the batch (`Call.settle_cancelled`), its own late
    record then dropped. So the frame of an interrupted batch holds every call it started, and
    the history each of them once."""

    def __init__(
        self,
        engine: Any,
        calls: Sequence[Any],
        concurrency: int,
        lanes: list[list[int]] | None = None,
        ended: Callable[[int, bool], None] | None = None,
    ) -> None:
        self.engine = engine
        self.calls = list(calls)
        self.concurrency = check_concurrency(concurrency)
        self.lanes = lanes if lanes is not None else [[i] for i in range(len(self.calls))]
        self.done = 0
        self.finished = threading.Event()  # set once `run` has returned or raised
        self._ended = ended
        self._future: concurrent.futures.Future | None = None
        # Which calls were started, and whether the batch was stopped: both under `_lock`, so that
        # a call is either started before the stop (and `stop` answers for it) or never.
        self._lock = threading.Lock()
        self._started: list[int] = []
        self._stopped = False
        self._task: asyncio.Task | None = None  # `run`'s own, once it runs

    async def run(self) -> None:
        self._task = asyncio.current_task()
        try:
            # Workers pull the next lane: `concurrency` lanes in flight, input order kept.
            lanes = iter(self.lanes)
            workers = [asyncio.ensure_future(self._worker(lanes)) for _ in range(min(self.concurrency, len(self.lanes)))]
            try:
                await asyncio.gather(*workers)
            except BaseException:
                for worker in workers:
                    worker.cancel()
                await asyncio.gather(*workers, return_exceptions=True)
                raise
        finally:
            self.finished.set()

    async def _worker(self, lanes) -> None:
        # A cancelled call records itself before the cancellation goes on.
        for lane in lanes:
            for i in lane:
                with self._lock:
                    if self._stopped:
                        return
                    self._started.append(i)
                finished = False
                try:
                    outcome = await self.calls[i].run()
                    finished = self.finished_as(outcome)
                    self.done += finished
                finally:
                    if self._ended is not None:
                        self._ended(i, finished)

    def finished_as(self, outcome: Any) -> bool:
        """Whether what a call's `run` returned counts as finished (what the bar counts): a call
        the batch settled as cancelled before it took a step returns that Outcome. A batch of
        other things to run (an evaluation's episodes) says what finished means for them."""
        return outcome.cause != "cancelled"

    def outcomes(self) -> list[Any]:
        """Each call's latest Outcome, None for a call never made (the batch was stopped first)."""
        return [call.outcome for call in self.calls]

    # -- the Batch a thread waits on ------------------------------------------------------------

    def start(self) -> None:
        if self.engine.loop.in_loop():
            raise RuntimeError(BLOCKS_OWN_LOOP.format(example="await mcp_nb.asweep(...)"))
        self._future = self.engine.loop.submit(self.run())

    def step(self, seconds: float) -> bool:
        try:
            self._future.result(timeout=seconds)
        except concurrent.futures.TimeoutError:
            return False
        return True

    def _cancel(self) -> None:
        """On the loop: cancel `run` (a `run` not begun yet starts no call: `_stopped` is set)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()

    def stop(self, cancel: bool) -> None:
        with self._lock:
            self._stopped = True  # from here no worker starts a call
            started = [self.calls[i] for i in self._started]
        if cancel:
            # On the loop, not through `_future`: an interrupt may land in `start` before it kept it.
            try:
                self.engine.loop.call_soon(self._cancel)
            except RuntimeError:
                pass  # the loop is closed: the engine answered for its calls
        # `run` ends once each call it started has ended, and a call records itself before it ends.
        ended = not started or self.finished.wait(timeout=STOP_WAIT_S)
        late = [call for call in started if call.outcome is None]
        for call in late:
            call.settle_cancelled()  # its own record of the attempt, when its task gets there, is dropped
        if late and not ended:
            log.warning(
                "stopped batch: %d call(s) in flight had not recorded themselves after %g s: the batch recorded them "
                "as cancelled (their handlers go on until they let go of mcp_nb's loop)",
                len(late),
                STOP_WAIT_S,
            )


class Stopped(McpNbError):
    """`wait`'s `stop` event was set (the async face's waiter was cancelled): stop as an interrupt would."""


def wait(batch: Batch, total: int, label: str | None, subject: str, unit: str, stop: threading.Event | None = None) -> bool:
    """Wait in this thread until `batch` ends, moving a progress bar named `label` (None: no
    bar). An interrupt, or `stop` being set, stops it; so does closing the engine under it
    (`mcp_nb.reset()`): either way it is said in one line, "<subject> interrupted: 3 of 8
    <unit>", and the batch's calls in flight have recorded themselves. Returns whether it was
    stopped early (the frame's `interrupted`)."""
    bar = ProgressBar(total, label)
    stopped_by = None
    try:
        batch.start()
        while not batch.step(TICK_S):
            if stop is not None and stop.is_set():
                raise Stopped
            bar.advance(batch.done)
    except (KeyboardInterrupt, Stopped):
        stopped_by = INTERRUPTED
        batch.stop(cancel=True)
    except concurrent.futures.CancelledError:
        # The engine was closed under the batch: its calls in flight recorded themselves as
        # cancelled, and what finished is returned as after an interrupt.
        stopped_by = RESET
        batch.stop(cancel=False)
    finally:
        bar.advance(batch.done)
        bar.close()
    if stopped_by is not None:
        print(f"{subject} {stopped_by}: {batch.done} of {total} {unit}")
    return stopped_by is not None


class ProgressBar:
    """tqdm's bar (a widget in a notebook, text elsewhere) counting calls; nothing without a label."""

    def __init__(self, total: int, label: str | None) -> None:
        self._bar = None
        if label is not None:
            self._bar = progress_bar(total=total, desc=label, unit="call")

    def advance(self, done: int) -> None:
        bar = self._bar
        if bar is not None and done > bar.n:
            bar.update(done - bar.n)

    def close(self) -> None:
        if self._bar is not None:
            close_bar(self._bar)


def result_frame(
    sets: Sequence[dict[str, Any]], outcomes: Sequence[Any], extra: Sequence[str] = (), **attrs: Any
) -> pd.DataFrame:
    """One row per call that was made (an Outcome; None: never made), in input order: the
    arguments, then RESULT_COLUMNS (with PROGRESS_COLUMNS when a call reported progress), then
    the `extra` fields of the Outcomes. `attrs` go to the frame's attrs."""
    made = [(arguments, outcome) for arguments, outcome in zip(sets, outcomes, strict=True) if outcome is not None]
    shown = list(RESULT_COLUMNS)
    if any(outcome.progress for _, outcome in made):
        at = shown.index("duration_ms") + 1
        shown[at:at] = PROGRESS_COLUMNS
    shown += list(extra)
    rows = []
    for arguments, outcome in made:
        row = dict(arguments)
        for column in shown:
            row[column] = len(outcome.progress) if column == "progress" else getattr(outcome, column)
        rows.append(row)
    keys = list(dict.fromkeys(k for arguments in sets for k in arguments))
    frame = lib.pandas.DataFrame(rows, columns=[k for k in keys if k not in shown] + shown)
    frame["code"] = frame["code"].astype("Int64")
    frame.attrs.update(attrs)
    return frame
