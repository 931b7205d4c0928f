"""One tool over many argument sets, concurrently, with a progress bar and a tidy result.

The calls run on mcp_nb's loop, `concurrency` at a time, each recorded in the history
like any other call, and the caller waits as for any batch (`core.py`): an interrupt
cancels what is in flight (those calls are recorded as cancelled) and the sweep returns
what finished.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import sys
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

from mcp_nb.batch.core import Lanes, check_concurrency, result_frame, wait
from mcp_nb.calling.retry import Retry
from mcp_nb.mistakes import BadType, BadValue

GRID_RULE = "a grid is a dict of value lists, a DataFrame, or a list of argument dicts"


def argument_sets(grid: Mapping[str, Iterable[Any]] | pd.DataFrame | Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A grid (every combination of the listed values), a DataFrame (one call per row, empty
    cells left out), or an iterable of argument dicts, as a list of argument dicts.

    Anything else raises TypeError (ValueError for a DataFrame with a repeated column),
    saying what a grid must be, before any call is made."""
    # A grid can be a DataFrame or a Series only once pandas is loaded: a sweep of plain lists
    # does not load it.
    pd = sys.modules.get("pandas")
    frames = (pd.DataFrame, pd.Series) if pd is not None else ()
    if frames and isinstance(grid, frames[0]):
        for column in grid.columns:
            if not isinstance(column, str):
                raise BadType(f"argument names are strings; the DataFrame has column {column!r}")
        repeated = grid.columns[grid.columns.duplicated()]
        if len(repeated):
            raise BadValue(f"the DataFrame has the column {repeated[0]!r} twice")
        return [{k: v for k, v in row.items() if not _missing(v)} for row in grid.to_dict("records")]
    if isinstance(grid, Mapping):
        values = []
        for name, options in grid.items():
            if not isinstance(name, str):
                raise BadType(f"argument names are strings; the grid has {name!r}")
            if isinstance(options, (str, bytes, Mapping)) or not isinstance(options, Iterable):
                raise BadType(f"grid values must be lists of values to try; {name!r} is {_a(options)}")
            values.append(list(options))
        return [dict(zip(grid, combo, strict=True)) for combo in itertools.product(*values)]
    if isinstance(grid, (str, bytes, *frames[1:])) or not isinstance(grid, Iterable):
        raise BadType(f"{GRID_RULE}, not {_a(grid)}")
    sets = []
    for i, item in enumerate(grid):
        if not isinstance(item, Mapping):
            raise BadType(f"{GRID_RULE}: item {i} is {type(item).__name__}")
        for name in item:
            if not isinstance(name, str):
                raise BadType(f"argument names are strings; item {i} has {name!r}")
        sets.append(dict(item))
    return sets


def _a(value: Any) -> str:
    if value is None:
        return "None"
    name = type(value).__name__
    return f"an {name}" if name[:1].lower() in "aeiou" else f"a {name}"


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def prepare_calls(engine, name: str, sets: list[dict[str, Any]], timeout, retry, server: str | None = None, **limits) -> list:
    """A sweep's calls, every one prepared before anything is sent: bad arguments, a bad
    timeout or a refused retry raise here, and the sweep records nothing."""
    return [engine.prepare("tool", name, arguments, timeout, retry, server, **limits) for arguments in sets]


class Sweep(Lanes):
    """The calls of one sweep: which finished, in input order."""

    def __init__(
        self,
        engine,
        name: str,
        sets: list[dict[str, Any]],
        concurrency: int,
        timeout: float | None,
        retry,
        server: str | None = None,
        **limits: Any,
    ) -> None:
        check_concurrency(concurrency)
        super().__init__(engine, prepare_calls(engine, name, sets, timeout, retry, server, **limits), concurrency)
        self.name = name
        self.sets = sets

    def frame(self, interrupted: bool) -> pd.DataFrame:
        """One row per call that was made (finished, or cancelled when the sweep was stopped)."""
        return result_frame(
            self.sets, self.outcomes(), tool=self.name, calls=len(self.sets), completed=self.done, interrupted=interrupted
        )


def run_sweep(
    engine,
    name,
    grid,
    *,
    concurrency=8,
    timeout=None,
    retry: Retry | int | bool | None = None,
    progress=True,
    server=None,
    **limits,
) -> pd.DataFrame:
    sweep = Sweep(engine, name, argument_sets(grid), concurrency, timeout, retry, server, **limits)
    label = f"sweep {name}" if progress else None
    return sweep.frame(wait(sweep, len(sweep.sets), label, f"sweep of {name!r}", "calls finished"))


async def arun_sweep(engine, name, grid, *, concurrency=8, timeout=None, retry=None, server=None, **limits) -> pd.DataFrame:
    sweep = Sweep(engine, name, argument_sets(grid), concurrency, timeout, retry, server, **limits)
    try:
        await engine.loop.run_async(sweep.run())
    except asyncio.CancelledError:
        if asyncio.current_task().cancelling():
            raise  # the awaiting task itself was cancelled
        return sweep.frame(True)  # the engine was closed under the sweep
    return sweep.frame(False)
