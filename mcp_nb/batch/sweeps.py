"""One tool over many argument sets, concurrently, with a progress bar and a tidy result.

The calls run on mcp_nb's loop, `concurrency` at a time, each recorded in the history
like any other call. The caller's thread only waits and moves the progress bar, so the
bar (a widget in a notebook) is only ever touched from the kernel's own thread. An
interrupt cancels what is in flight (those calls are recorded as cancelled) and the
sweep returns what finished.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import math
import threading
from collections.abc import Mapping
from typing import Any, Iterable

import pandas as pd

from mcp_nb.calling.retry import Retry

RESULT_COLUMNS = ["call_id", "attempt", "outcome", "cause", "duration_ms", "content", "code", "message"]


GRID_RULE = "a grid is a dict of value lists, a DataFrame, or a list of argument dicts"


def argument_sets(grid: Mapping[str, Iterable[Any]] | pd.DataFrame | Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A grid (every combination of the listed values), a DataFrame (one call per row, empty
    cells left out), or an iterable of argument dicts, as a list of argument dicts.

    Anything else raises TypeError (ValueError for a DataFrame with a repeated column),
    saying what a grid must be, before any call is made."""
    if isinstance(grid, pd.DataFrame):
        for column in grid.columns:
            if not isinstance(column, str):
                raise TypeError(f"argument names are strings; the DataFrame has column {column!r}")
        repeated = grid.columns[grid.columns.duplicated()]
        if len(repeated):
            raise ValueError(f"the DataFrame has the column {repeated[0]!r} twice")
        return [{k: v for k, v in row.items() if not _missing(v)} for row in grid.to_dict("records")]
    if isinstance(grid, Mapping):
        values = []
        for name, options in grid.items():
            if not isinstance(name, str):
                raise TypeError(f"argument names are strings; the grid has {name!r}")
            if isinstance(options, (str, bytes, Mapping)) or not isinstance(options, Iterable):
                raise TypeError(f"grid values must be lists of values to try; {name!r} is {_a(options)}")
            values.append(list(options))
        return [dict(zip(grid, combo, strict=True)) for combo in itertools.product(*values)]
    if isinstance(grid, (str, bytes, pd.Series)) or not isinstance(grid, Iterable):
        raise TypeError(f"{GRID_RULE}, not {_a(grid)}")
    sets = []
    for i, item in enumerate(grid):
        if not isinstance(item, Mapping):
            raise TypeError(f"{GRID_RULE}: item {i} is {type(item).__name__}")
        for name in item:
            if not isinstance(name, str):
                raise TypeError(f"argument names are strings; item {i} has {name!r}")
        sets.append(dict(item))
    return sets


def _a(value: Any) -> str:
    if value is None:
        return "None"
    name = type(value).__name__
    return f"an {name}" if name[:1].lower() in "aeiou" else f"a {name}"


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


class Sweep:
    """The calls of one sweep: which finished, in input order."""

    def __init__(
        self, engine, name: str, sets: list[dict[str, Any]], concurrency: int, timeout: float | None, retry, server: str | None = None,
        **limits: Any,
    ) -> None:  # fmt: skip
        if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
            raise ValueError(f"concurrency must be a whole number >= 1, got {concurrency!r}")
        self.engine = engine
        self.name = name
        self.sets = sets
        self.concurrency = concurrency
        # Every call is prepared before anything is sent: bad arguments, a bad timeout or a
        # refused retry raise here, and the sweep records nothing.
        self.calls = [engine.prepare("tool", name, arguments, timeout, retry, server, **limits) for arguments in sets]
        self.done = 0
        self.finished = threading.Event()

    async def run(self) -> None:
        try:
            positions = iter(range(len(self.sets)))
            workers = [asyncio.ensure_future(self._worker(positions)) for _ in range(min(self.concurrency, len(self.sets)))]
            try:
                await asyncio.gather(*workers)
            except BaseException:
                for worker in workers:
                    worker.cancel()
                await asyncio.gather(*workers, return_exceptions=True)
                raise
        finally:
            self.finished.set()

    async def _worker(self, positions) -> None:
        # Workers pull the next position: `concurrency` calls in flight, input order kept.
        # A cancelled call records itself before the cancellation goes on.
        for i in positions:
            await self.calls[i].run()
            self.done += 1

    def frame(self, interrupted: bool) -> pd.DataFrame:
        """One row per call that was made (finished, or cancelled when the sweep was stopped)."""
        rows = []
        for arguments, call in zip(self.sets, self.calls, strict=True):
            outcome = call.outcome
            if outcome is None:
                continue
            row = dict(arguments)
            for column in RESULT_COLUMNS:
                row[column] = getattr(outcome, column)
            row["progress"], row["deadline_resets"] = len(outcome.progress), outcome.deadline_resets
            rows.append(row)
        keys = list(dict.fromkeys(k for arguments in self.sets for k in arguments))
        shown = list(RESULT_COLUMNS)
        if any(row["progress"] for row in rows):
            # A tool that reports progress: how much each call reported, and how often that
            # moved its deadline, beside how long it took. Other sweeps keep their columns.
            at = shown.index("duration_ms") + 1
            shown[at:at] = ["progress", "deadline_resets"]
        columns = [k for k in keys if k not in shown] + shown
        frame = pd.DataFrame(rows, columns=columns)
        frame["code"] = frame["code"].astype("Int64")
        frame.attrs.update(tool=self.name, calls=len(self.sets), completed=self.done, interrupted=interrupted)
        return frame


def run_sweep(
    engine, name, grid, *, concurrency=8, timeout=None, retry: Retry | int | bool | None = None, progress=True, server=None,
    **limits,
) -> pd.DataFrame:  # fmt: skip
    sweep = Sweep(engine, name, argument_sets(grid), concurrency, timeout, retry, server, **limits)
    stopped_by = drive(engine, sweep, len(sweep.sets), f"sweep {name}" if progress else None)
    if stopped_by:
        print(f"sweep of {name!r} {stopped_by}: {sweep.done} of {len(sweep.sets)} calls finished")
    return sweep.frame(stopped_by is not None)


def drive(engine, sweep: Sweep, total: int, label: str | None) -> str | None:
    """Run `sweep` on mcp_nb's loop and wait in this thread, moving a progress bar named
    `label` (None: no bar). Returns None, or what stopped it early (an interrupt, a reset)."""
    bar = _progress_bar(total, "", label) if label is not None else None
    future: concurrent.futures.Future = engine.loop.submit(sweep.run())
    stopped_by = None
    try:
        while True:
            try:
                future.result(timeout=0.1)
                break
            except concurrent.futures.TimeoutError:
                _advance(bar, sweep.done)
    except KeyboardInterrupt:
        # Stop promptly, but let the cancelled calls be recorded before answering.
        stopped_by = "interrupted"
        future.cancel()
        sweep.finished.wait(timeout=10)
    except concurrent.futures.CancelledError:
        # The engine was closed under the sweep (mcp_nb.reset()): its calls in flight
        # recorded themselves as cancelled, and what finished is returned as after an interrupt.
        stopped_by = "stopped by mcp_nb.reset()"
        sweep.finished.wait(timeout=10)
    finally:
        _advance(bar, sweep.done)
        if bar is not None:
            bar.close()
    return stopped_by


async def arun_sweep(engine, name, grid, *, concurrency=8, timeout=None, retry=None, server=None, **limits) -> pd.DataFrame:
    sweep = Sweep(engine, name, argument_sets(grid), concurrency, timeout, retry, server, **limits)
    try:
        await engine.loop.run_async(sweep.run())
    except asyncio.CancelledError:
        if asyncio.current_task().cancelling():
            raise  # the awaiting task itself was cancelled
        return sweep.frame(True)  # the engine was closed under the sweep
    return sweep.frame(False)


def _progress_bar(total: int, name: str, label: str | None = None):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=label or f"sweep {name}", unit="call")


def _advance(bar, done: int) -> None:
    if bar is not None and done > bar.n:
        bar.update(done - bar.n)
