"""The history's DataFrame, from its columns: those still in memory and those read back from its file.

Both halves arrive coded the same way (`Coded`): vocabularies as small integer codes with
their lists of names, nested values as Python objects, times as int64 nanoseconds. Joining
them is remapping the codes of one half onto the other's names and concatenating arrays, so
a frame of ten million calls is built from arrays, never row by row.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from mcp_nb import libraries as lib
from mcp_nb.records.outcome import CAUSES, FATES, OUTCOMES, TARGETS, VIAS, Outcome
from mcp_nb.records.surrogates import SURROGATE

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from mcp_nb.records.lazy import JsonArray

_NO_FLAG = 2
# A coded column: an array, or for a nested column read back from a file, its JSON texts (records/lazy.py)
Column: TypeAlias = "np.ndarray | JsonArray"
VOCABULARIES = ("name", "server", "worker", "client", "session")  # columns coded by a list of names of their own


@dataclass
class Coded:
    """Columns of calls, coded: see the module's docstring. `seq` counts the calls of one kernel's
    history (a reopened file's rows keep the numbers they were written with)."""

    columns: dict[str, Column]
    names: dict[str, list[str]] = field(default_factory=dict)  # vocabulary column -> its names

    def __len__(self) -> int:
        return len(self.columns["call_id"])


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector paused while a frame's millions of nested values are made (and
    turned back on after, if it was on): each of its full passes would walk every one of them
    again, which doubled the time of a frame of a million calls read back from a file."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def nanoseconds(seconds: np.ndarray) -> np.ndarray:
    """Epoch seconds as int64 nanoseconds, rounded as pandas rounds them (`to_datetime(unit="s")`);
    in numpy, as pandas' fixed cost is most of it on a few hundred rows."""
    np = lib.numpy

    seconds = seconds.astype(np.float64)
    whole = seconds.astype(np.int64)
    return whole * 1_000_000_000 + (np.round(seconds - whole, 9) * 1e9).astype(np.int64)


def join(first: Coded, then: Coded) -> Coded:
    """`first`'s rows, then `then`'s, coded by one list of names per vocabulary."""
    if not len(first):
        return then
    if not len(then):
        return first
    names = {}
    remapped = dict(first.columns)
    for column in VOCABULARIES:
        if column not in first.columns or column not in then.columns:
            continue
        ours = list(then.names[column])
        position = {name: i for i, name in enumerate(ours)}
        for name in first.names[column]:
            if name not in position:
                position[name] = len(ours)
                ours.append(name)
        mapping = lib.numpy.array([position[name] for name in first.names[column]] + [-1], dtype=lib.numpy.int64)
        remapped[column] = mapping[first.columns[column]]  # -1 (missing) picks the last entry, -1
        names[column] = ours
    shared = [key for key in then.columns if key in first.columns]  # a file read for some columns only
    columns = {key: _concatenated(key, remapped[key], then.columns[key]) for key in shared}
    return Coded(columns, names)


# The nested columns, by the name the store gives them, and what their JSON text is decoded into
# (records/lazy.py): the file's half keeps them as text, memory's as the objects recorded.
NESTED = {
    "arguments": "json",
    "structured": "json",
    "data": "json",
    "logs": "logs",
    "elicitations": "tuple",
    "samplings": "tuple",
    "progress": "events",
    "retry": "json",
}


def _concatenated(key: str, first: np.ndarray | JsonArray, then: np.ndarray | JsonArray) -> np.ndarray | JsonArray:
    np = lib.numpy

    if isinstance(first, np.ndarray) and isinstance(then, np.ndarray):
        return np.concatenate([first, then])
    first, then = lazy(first, NESTED[key]), lazy(then, NESTED[key])
    return type(first)._concat_same_type([first, then])


def lazy(values: np.ndarray | JsonArray, wrap: str) -> JsonArray:
    """A nested column as a JsonArray: read from a file already, or memory's objects held as they are."""
    from mcp_nb.records.lazy import JsonArray  # pandas: loaded when a frame is first built

    return values if isinstance(values, JsonArray) else JsonArray.held(values, wrap)


def overlay(coded: Coded, seqs: dict[int, Outcome]) -> None:
    """Timed-out calls still watched (by seq): their server side may have logged, reported progress
    or ended since they were recorded, so their fate columns are read from them now."""
    columns = coded.columns
    if not seqs or not len(coded) or "seq" not in columns:
        return
    now: dict[str, Callable[[Outcome], Any]] = {
        "logs": lambda o: tuple(o.server_logs),
        "progress": lambda o: o.progress,
        "fate": lambda o: _code(FATES, o.server_fate),
        "fate_outcome": lambda o: _code(OUTCOMES, o.fate_outcome),
        "fate_cause": lambda o: _code(CAUSES, o.fate_cause),
        "fate_after": lambda o: lib.numpy.nan if o.fate_after_ms is None else o.fate_after_ms,
    }
    now = {name: read for name, read in now.items() if name in columns}
    for name in now:
        columns[name] = columns[name].copy()  # never write into an array the store keeps
    where = lib.numpy.searchsorted(columns["seq"], list(seqs))
    for row, (seq, o) in zip(where.tolist(), seqs.items()):
        if row >= len(columns["seq"]) or columns["seq"][row] != seq:
            continue
        for name, read in now.items():
            columns[name][row] = read(o)


def _code(vocabulary: tuple[str, ...], value: str | None) -> int:
    return -1 if value is None else vocabulary.index(value)


def fate_of(o: Outcome) -> tuple[Any, ...]:
    """What a timed-out call's row says of its server side, as the file keeps it."""
    return (o.server_fate, o.fate_outcome, o.fate_cause, o.fate_after_ms, tuple(o.server_logs), o.progress)


# The stored arrays each column of the frame is made from (the same name when not listed).
STORED_AS = {
    "structured_content": "structured",
    "server_logs": "logs",
    "server_fate": "fate",
    "fate_after_ms": "fate_after",
    "started_at": "started_ns",
    "recorded_at": "recorded_ns",
    "duration_ms": "duration",
    "timeout_s": "timeout",
    "backoff_s": "backoff",
    "deadline_resets": "resets",
    "max_timeout_s": "max_timeout",
}


def build(coded: Coded, columns: tuple[str, ...] | list[str]) -> pd.DataFrame:
    """The tidy frame: one row per call, the columns `columns` names (`mcp_nb.COLUMNS`, or some of them)."""
    np = lib.numpy
    pd = lib.pandas

    c = coded.columns
    names = coded.names

    def category(codes: np.ndarray, categories: list[str] | tuple[str, ...]) -> pd.Categorical:
        categories = list(categories)
        joined = "".join(categories)
        if not joined.isascii() and SURROGATE.search(joined) is not None:
            # a name holding a lone surrogate (a server's, a tool's): pandas' `str` categories are
            # Arrow text, which no UTF-8 can hold; `object` ones hold any str
            return pd.Categorical.from_codes(codes, categories=pd.Index(categories, dtype=object))
        made: pd.Categorical = pd.Categorical.from_codes(codes, categories=categories)  # type: ignore[call-overload]  # pandas-stubs: categories an Index only; pandas takes any list-like
        return made

    def flags(values: np.ndarray) -> pd.arrays.BooleanArray:
        values = values.astype(np.int8)
        return pd.arrays.BooleanArray(values == 1, values == _NO_FLAG)

    def objects(values: np.ndarray) -> pd.Series:
        # object, not pandas 3's inferred `str`: None stays None, and no conversion pass
        return pd.Series(values, dtype=object, copy=False)

    def codes(values: np.ndarray) -> pd.arrays.IntegerArray:
        values = values.astype(np.float64, copy=False)
        missing = np.isnan(values)  # NaN where a call has no code: pd.array(..., dtype="Int64") finds them row by row
        return pd.arrays.IntegerArray(np.where(missing, 0, values).astype(np.int64), missing)

    def numbered(values: np.ndarray) -> pd.arrays.IntegerArray:
        values = values.astype(np.int64, copy=False)  # -1 where a call has none (store.NO_EPISODE)
        return pd.arrays.IntegerArray(values, values < 0)

    made: dict[str, Callable[[Any], Any]] = {
        "call_id": lambda v: v.astype(np.int64, copy=False),
        "attempt": lambda v: v.astype(np.int32, copy=False),
        "target": lambda v: category(v, TARGETS),
        "name": lambda v: category(v, names["name"]),
        "server": lambda v: category(v, names["server"]),
        "worker": lambda v: category(v, names["worker"]),
        "outcome": lambda v: category(v, OUTCOMES),
        "cause": lambda v: category(v, CAUSES),
        "content": objects,
        "message": objects,
        "protocol": objects,
        "is_error": flags,
        # the nested values: JSON text decoded when looked at (records/lazy.py)
        "arguments": lambda v: lazy(v, "json"),
        "structured_content": lambda v: lazy(v, "json"),
        "data": lambda v: lazy(v, "json"),
        "server_logs": lambda v: lazy(v, "logs"),
        "elicitations": lambda v: lazy(v, "tuple"),
        "samplings": lambda v: lazy(v, "tuple"),
        "retry": lambda v: lazy(v, "json"),
        "code": codes,
        "started_at": utc_times,
        "recorded_at": utc_times,
        "server_fate": lambda v: category(v, FATES),
        "fate_outcome": lambda v: category(v, OUTCOMES),
        "fate_cause": lambda v: category(v, CAUSES),
        "via": lambda v: category(v, VIAS),
        "client": lambda v: category(v, names["client"]),  # -1 codes read as missing: mcp_nb's own calls
        "session": lambda v: category(v, names["session"]),
        "progress": lambda v: (
            lazy(v, "events").lengths()
            if not isinstance(v, np.ndarray)
            else np.fromiter(map(len, v), dtype=np.int64, count=len(v))
        ),
        "deadline_resets": lambda v: v.astype(np.int64, copy=False),
        "episode": numbered,
        "turn": numbered,  # a call no model asked for has neither
    }
    floats = ("duration_ms", "timeout_s", "backoff_s", "fate_after_ms", "max_timeout_s")
    frame: dict[str, Any] = {}
    for column in columns:
        values = c[STORED_AS.get(column, column)]
        frame[column] = values.astype(np.float64, copy=False) if column in floats else made.get(column, lambda v: v)(values)
    # Each column its own block: consolidating a dozen object columns into one 2-D block copies
    # (and counts a reference to) every value again, a third of the frame's time at a million rows.
    return pd.DataFrame(frame, columns=list(columns), copy=False)


# -- pandas' one private, checked -------------------------------------------------------------------
# `DatetimeArray._simple_new(values, dtype=)` wraps an int64 array viewed as datetime64[ns] as it
# is; pandas' public constructors copy it once or twice (`pd.array`, `to_datetime`, `tz_localize`:
# 0.13 - 0.6 s a column of ten million calls, measured). Checked in the pandas releases PANDAS_CHECKED
# names: `pandas_problems()` names what moved if an upgrade moves it (tests/test_history_frame_lazy.py
# fails by name), and until then the frame's times are made by the public `tz_localize`: slower,
# never wrong.
PANDAS_CHECKED = ("3.1",)
_private_fits: bool | None = None  # whether pandas_problems() found nothing, asked once


def pandas_problems() -> list[str]:
    """What moved in the installed pandas of the one private the frame uses; empty when nothing did."""
    np, pd = lib.numpy, lib.pandas
    values = np.array([0, 1_000_000_000], dtype=np.int64)
    try:
        made = pd.arrays.DatetimeArray._simple_new(values.view("M8[ns]"), dtype=pd.DatetimeTZDtype(unit="ns", tz="UTC"))  # type: ignore[attr-defined]  # the private checked here
        # (`asi8` is public in pandas, not in pandas-stubs)
        fits = (
            isinstance(made, pd.arrays.DatetimeArray)
            and str(made.dtype) == "datetime64[ns, UTC]"
            and np.shares_memory(made.asi8, values)  # type: ignore[attr-defined]  # pandas-stubs lack asi8
            and made[1] == pd.Timestamp(1, unit="s", tz="UTC")
        )
    except (AttributeError, TypeError, ValueError) as err:
        return [f"pandas {pd.__version__}: DatetimeArray._simple_new(values, dtype=) failed ({type(err).__name__}: {err})"]
    if not fits:
        return [
            f"pandas {pd.__version__}: DatetimeArray._simple_new(values, dtype=) no longer wraps the array it is given as UTC times"
        ]
    return []


def utc_times(nanoseconds: np.ndarray) -> pd.arrays.DatetimeArray:
    """int64 nanoseconds since the epoch as pandas' UTC times, the array itself wrapped where the
    installed pandas allows it (see above)."""
    global _private_fits
    np, pd = lib.numpy, lib.pandas
    values = nanoseconds.astype(np.int64, copy=False).view("M8[ns]")
    if _private_fits is None:
        _private_fits = not pandas_problems()
    if _private_fits:
        simple_new = pd.arrays.DatetimeArray._simple_new  # type: ignore[attr-defined]  # the private checked above
        wrapped: pd.arrays.DatetimeArray = simple_new(values, dtype=pd.DatetimeTZDtype(unit="ns", tz="UTC"))
        return wrapped
    return pd.Series(values, copy=False).dt.tz_localize("UTC").array
