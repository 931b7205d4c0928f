"""Every call, kept column by column, and the tidy DataFrame built from it.

One row per call, one column per variable. Recording a call is one append of its row
(a tuple of the Outcome's column values) to a short pending list; every thousand calls
that list is turned into column chunks at once (typed arrays for numbers, small integer
codes for the vocabularies, object arrays for the rest). So recording stays cheap on the call path,
and `to_frame()` on a million calls concatenates arrays instead of walking a million
objects. Views such as `summary()` are computed from the frame; nothing is stored twice.
"""

from __future__ import annotations

import gc
import json
import logging
import threading
import warnings
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from time import time
from typing import TYPE_CHECKING, Any, Callable, Iterator

from mcp_nb import libraries as lib
from mcp_nb.config import DEFAULT_WINDOW, check_window, settings
from mcp_nb.history_file import SESSION, HistoryFileError, check_readable, check_writable, shown
from mcp_nb.records.frame import Coded, build, fate_of, join, nanoseconds, overlay
from mcp_nb.records.cases import CallsLeftOut, LeftOut, call_keys, from_frame, save
from mcp_nb.records.listeners import Listeners
from mcp_nb.records.outcome import (
    CAUSES,
    OUTCOMES,
    TARGETS,
    VIAS,
    Outcome,
    progress_frame,
)
from mcp_nb.records.structured import NotTabular, records
from mcp_nb.views.tables import history_html, history_text
from mcp_nb.mistakes import BadValue

COLUMNS = (
    "call_id",
    "attempt",
    "server",
    "worker",
    "target",
    "name",
    "arguments",
    "outcome",
    "cause",
    "content",
    "structured_content",
    "is_error",
    "code",
    "message",
    "data",
    "server_logs",
    "elicitations",
    "samplings",
    "protocol",
    "started_at",
    "duration_ms",
    "timeout_s",
    "backoff_s",
    "server_fate",
    "fate_outcome",
    "fate_cause",
    "fate_after_ms",
    "via",
    "client",
    "progress",
    "deadline_resets",
    "max_timeout_s",
    "retry",
    "session",
    "recorded_at",
)

_OUTCOME_CODE = {name: i for i, name in enumerate(OUTCOMES)}
_CAUSE_CODE = {name: i for i, name in enumerate(CAUSES)}
_TARGET_CODE = {name: i for i, name in enumerate(TARGETS)}
_VIA_CODE = {name: i for i, name in enumerate(VIAS)}
_NO_FLAG = 2  # is_error code for "no result, so no flag"
CHUNK = 1024
_STORED = ("call_id", "attempt", "backoff", "server", "worker", "target", "name", "arguments", "outcome", "cause", "content", "structured",
           "is_error", "code", "message", "data", "logs", "elicitations", "samplings", "protocol", "started", "duration", "timeout", "via", "client",
           "progress", "resets", "max_timeout", "retry", "recorded")  # fmt: skip
# The numeric columns' types (numpy's names); the others are object columns.
_DTYPES = {"call_id": "int64", "attempt": "int32", "backoff": "float64", "server": "int64", "worker": "int64",
           "target": "int8", "name": "int64", "outcome": "int8", "cause": "int8", "is_error": "int8", "code": "float64",
           "started": "float64", "duration": "float64", "timeout": "float64", "via": "int8", "client": "int64",
           "resets": "int32", "max_timeout": "float64", "recorded": "float64"}  # fmt: skip
_NO_CODE = float("nan")  # the code column of a call that got none
_EMPTY: tuple = ()
WINDOW = DEFAULT_WINDOW  # calls a history with a file keeps in memory, unless told otherwise
# What the history's views (`views/tables.py`) read of every call, besides the texts of the latest.
_SHORT = ["call_id", "attempt", "server", "target", "name", "outcome", "cause", "code", "duration_ms", "via", "client", "session"]


class HistoryFileWarning(UserWarning):
    """Part of a history file could not be read (cut short, not a regular file...): the message says
    which and why; the other calls are kept."""


@dataclass
class _Segment:
    """Calls of this history no longer in memory: seqs `first` to `last` (excluded), in `folder`, in the
    streams this history wrote there (a file resumed after a stop or a failed write holds a call in one
    stream only: each writer writes what the file lacks)."""

    folder: Path
    first: int
    last: int


def _nothing_secret(text: str) -> str:
    return text


@contextmanager
def _collector_paused() -> Iterator[None]:
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

# numpy and pandas are imported where they are used, not with this module: `import mcp_nb`
# (every kernel's `%load_ext mcp_nb`) need not pay for them before a history is looked at.
if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from mcp_nb.records import disk
    from mcp_nb.records.keeper import Keeper


def _file():
    """records/disk.py and records/keeper.py, which write and read a history file. They come with
    the first file set or read, and numpy and pyarrow with them (0.15 s): a history kept in memory
    never needs them."""
    from mcp_nb.records import disk, keeper  # numpy and pyarrow: loaded with the first history file

    return disk, keeper


def _objects(values: list) -> np.ndarray:
    out = lib.numpy.empty(len(values), dtype=object)
    out[:] = values
    return out


class _Store:
    """Column chunks, plus the calls not yet turned into columns.

    A call waits as a row: a tuple of its column values, in `_STORED` order, with the
    vocabularies already coded. Rows hold plain values only (numbers, strings, the
    arguments and results as they came), so Python's cycle collector stops tracking them
    at its first pass instead of carrying thousands of Outcome objects into its oldest
    generation, where every full collection would walk them again. Only a timeout's
    Outcome is kept, for its trace (the server may still log, or finish).

    A row's index is its seq, counting from the history's first call: `clear()` marks a row, it never
    replaces the store, so a call recorded beside it keeps its place (and is written).
    """

    def __init__(self) -> None:
        self.chunks: dict[str, list[np.ndarray]] = {column: [] for column in _STORED}
        self.rows = 0  # rows in the chunks, counting those dropped
        self.sizes: list[int] = []  # rows per chunk
        self.dropped = 0  # the oldest rows, no longer in memory: a history file holds them
        self.pending: list[tuple] = []
        self.names: dict[str, int] = {}
        self.servers: dict[str, int] = {"kernel": 0}
        self.workers: dict[str, int] = {}  # dask workers' addresses; a call made in the kernel has none (-1)
        self.clients: dict[str, int] = {}  # an outside client's "name version" -> code (-1: no client)
        self.timeouts: dict[int, Outcome] = {}  # row -> Outcome, for the live server-fate columns

    def add(self, o: Outcome) -> None:
        """Queue `o` as a row (the caller holds the history's lock)."""
        if o.outcome == "timeout":
            self.timeouts[self.rows + len(self.pending)] = o
        names, servers, workers, clients = self.names, self.servers, self.workers, self.clients
        trace = o.trace
        self.pending.append((
            o.call_id, o.attempt, o.backoff_s, servers.setdefault(o.server, len(servers)),
            -1 if o.worker is None else workers.setdefault(o.worker, len(workers)), _TARGET_CODE[o.target],
            names.setdefault(o.name, len(names)), o.arguments, _OUTCOME_CODE[o.outcome], _CAUSE_CODE[o.cause],
            o.content, o.structured_content, _NO_FLAG if o.is_error is None else o.is_error,
            _NO_CODE if o.code is None else o.code, o.message, o.data,
            # What the server logged and reported is read now: only a timeout's trace can still
            # grow, and its Outcome is kept above for exactly that.
            tuple(trace.logs) if trace is not None and trace.logs else _EMPTY,
            tuple(_asked(e) for e in o.elicitations) if o.elicitations else _EMPTY,
            tuple(sampled.as_dict() for sampled in o.samplings) if o.samplings else _EMPTY,
            o.protocol,
            o.started, o.duration_ms, o.timeout_s, _VIA_CODE[o.via],
            -1 if o.client is None else clients.setdefault(o.client, len(clients)),
            tuple(trace.progress) if trace is not None and trace.progress else _EMPTY, o.deadline_resets,
            _NO_CODE if o.max_timeout_s is None else o.max_timeout_s, o.retry, time(),
        ))  # fmt: skip

    def flush(self) -> None:
        rows, self.pending = self.pending, []
        if not rows:
            return
        chunks = self.chunks
        for name, values in zip(_STORED, zip(*rows)):
            dtype = _DTYPES.get(name)
            chunks[name].append(_objects(values) if dtype is None else lib.numpy.array(values, dtype=dtype))
        self.sizes.append(len(rows))
        self.rows += len(rows)

    def column(self, name: str, dtype) -> np.ndarray:
        parts = self.chunks[name]
        if not parts:
            return lib.numpy.empty(0, dtype=dtype)
        return parts[0] if len(parts) == 1 else lib.numpy.concatenate(parts)

    def tail(self, start: int, most: int | None = None) -> dict[str, np.ndarray]:
        """Every column from row `start` on (rows still in memory), at most `most` rows, reading only
        the chunks it needs."""
        first, skip = len(self.sizes), self.rows - start
        while first > 0 and skip > 0:
            first -= 1
            skip -= self.sizes[first]
        offset = -skip  # rows of chunk `first` before `start`
        end = len(self.sizes)
        if most is not None:  # the chunks that hold the first `most` rows from `start`
            end, held = first, -offset
            while end < len(self.sizes) and held < most:
                held += self.sizes[end]
                end += 1
        out = {}
        for name, parts in self.chunks.items():
            picked = parts[first:end]
            if not picked:
                out[name] = lib.numpy.empty(0, dtype=_DTYPES.get(name, object))
                continue
            whole = picked[0] if len(picked) == 1 else lib.numpy.concatenate(picked)
            out[name] = whole[offset:] if most is None else whole[offset : offset + most]
        return out

    def drop_oldest(self) -> int:
        """Forget the oldest chunk (its calls are in the history file); returns how many rows it held."""
        size = self.sizes.pop(0)
        for parts in self.chunks.values():
            del parts[0]
        self.dropped += size
        return size


def _lacking(disk, folder: Path, streams: set[int], start: int) -> int:
    """The first call from `start` on that the file at `folder` lacks, of those this history's
    `streams` wrote there: a file resumed (after a stop, another file, a failed write) is given only
    what it lacks, never a call twice."""
    if not streams or not folder.is_dir():
        return start
    try:
        found = disk.listing(folder, footers=False)
    except HistoryFileError:  # said when the keeper checks the folder
        return start
    at = start
    for part in sorted((p for p in found.parts if p.session == SESSION and p.stream in streams), key=lambda p: p.first):
        if part.first <= at <= part.last:
            at = part.last + 1
    return at


def _asked(question) -> dict[str, Any]:
    """A question and its answer as the history keeps it: with its schema, which says what a
    saved case must not write down (a field marked as a secret)."""
    return {**question.as_dict(), "schema": question.schema}


class History:
    """The call history of this kernel. Thread-safe; every call is recorded, whatever its outcome.

    With a history file (`keep`, or the `history_file` setting for the kernel's own), every call
    is also written there as it is recorded, and memory keeps only the latest `window` calls;
    the others are read back from the file when a frame is asked for. `History.open(path)` reads
    a file back, every session's calls in one History.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._store = _Store()
        self._listeners = Listeners("history listener")
        self._later: deque[Callable[[], Outcome]] = deque()  # calls answered, their Outcomes not built yet
        # Taken before `_lock`, never after it; re-entrant, as a listener that reads the
        # history while a call is being settled settles the next ones itself.
        self._settling = threading.RLock()
        self._in_settle = 0  # threads inside `settle` (changed only while holding `_settling`)
        self._hidden = 0  # the seq of the first call shown: those before it were cleared (and written, with a file)
        self._streams: set[int] = set()  # the streams of this history's keepers: a seq is in one of them only
        self._keeper: Keeper | None = None
        self._window = WINDOW
        self._on_disk: list[_Segment] = []  # where the calls no longer in memory are, oldest first
        self._opened: Path | None = None  # a history file read back (`History.open`)
        self._said: set[str] = set()  # what was said once about the file
        self._keeping = threading.Lock()  # held while the file is set or unset

    # -- a history file ---------------------------------------------------------------------------

    @classmethod
    def open(cls, path) -> History:
        """Every session's calls in the history file at `path`, as one History (`to_frame()`,
        `summary(by="session")`, `to_cases()`...); it reads the file anew whenever it is asked.

        A file that is missing, unreadable, not a history file or from a newer mcp_nb raises
        `HistoryFileError` in one line. A part cut short (the disk filled, the machine lost power
        while it was written) is said in one line, as a `HistoryFileWarning`, and the calls
        before it are kept."""
        folder = check_readable(path)
        disk, keeping = _file()
        keeping.flush_all(folder)  # this kernel's own calls, written up to now
        found = disk.listing(folder)
        history = cls()
        history._opened = folder
        history._report(found.problems, stacklevel=3)
        return history

    @property
    def file(self) -> Path | None:
        """The history file this history is written to, or read from; None when it has none."""
        keeper = self._keeper
        return self._opened if keeper is None else keeper.folder

    @property
    def in_memory(self) -> int:
        """How many of its calls this history holds in memory now (with a history file, the latest
        `history_window` or so; the others are read back from the file when asked for)."""
        with self._lock:
            store = self._store
            return store.rows + len(store.pending) - max(store.dropped, self._hidden)

    def keep(self, path, window: int | None = None, scrub: Callable[[str], str] | None = None) -> None:
        """Write every call of this history to the history file at `path`: those in memory now, then
        each as it is recorded; None stops writing. Memory then keeps the latest `window` calls.

        Bad input raises `HistoryFileError` in one line and changes nothing. `scrub(text)` takes
        out what must never be written (the engine's gives its connections' secrets)."""
        folder = check_writable(path)
        if window is not None:
            check_window(window)
        with self._keeping:  # two threads setting the file at once: one after the other, never two writers
            self._keep(folder, window, scrub)

    def _keep(self, folder: Path | None, window: int | None, scrub: Callable[[str], str] | None) -> None:
        if window is not None:
            self._window = window
        old = self._keeper
        if old is not None and folder == old.folder and old.failed is None:
            return
        if old is not None:
            self._stop_keeping()
        if folder is None:
            return
        with self._lock:
            start = self._store.dropped  # the first call still in memory
            streams = set(self._streams)
        disk, keeping = _file()
        try:
            keeper = keeping.Keeper(folder, self, _lacking(disk, folder, streams, start), scrub or _nothing_secret)
        except OSError as err:
            raise HistoryFileError(f"cannot keep the history in {shown(folder)}: {err.strerror or err}") from None
        with self._lock:
            self._keeper = keeper
            self._streams.add(keeper.stream)
            self._on_disk.append(_Segment(folder, start, start))
        keeper.recorded(1)  # what memory holds now is written first

    def close(self) -> None:
        """Write what is left to the history file and stop writing to it (calls are recorded in memory
        from then on; those written stay readable). `mcp_nb.reset()` closes the kernel's history."""
        with self._keeping:
            self._stop_keeping()

    def sync(self, timeout: float = 10.0) -> bool:
        """Wait until every call recorded so far is in the history file; False if it could not be
        (writing failed, or took longer than `timeout` seconds). True at once without a file."""
        self.settle()
        keeper = self._keeper
        if keeper is None:
            return True
        with self._lock:
            upto = self._store.rows + len(self._store.pending)
        return keeper.flush(upto, timeout)

    def _stop_keeping(self) -> None:
        keeper = self._keeper
        if keeper is None:
            return
        keeper.close()
        with self._lock:
            if self._keeper is keeper:
                self._keeper = None

    # What the keeper asks, on its own thread.

    def unwritten(self, seq: int, most: int | None = None) -> disk.Batch:
        """The calls from `seq` on (at most `most` of them), as the store keeps them, for the keeper to write."""
        disk, _ = _file()
        with self._lock:
            store = self._store
            store.flush()
            start = max(seq, store.dropped)
            columns = store.tail(start, most)
            end = start + len(columns["call_id"])
            timeouts = {row - start: o for row, o in store.timeouts.items() if start <= row < end}
            batch = disk.Batch(columns, list(store.names), list(store.servers), list(store.workers), list(store.clients), start)
        batch.fates = {row: fate_of(o) for row, o in timeouts.items()}
        return batch

    def fates(self, upto: int) -> dict[int, tuple]:
        """The fate now of each timed-out call still watched, written before `upto`, by seq."""
        with self._lock:
            timeouts = dict(self._store.timeouts)
        return {row: fate_of(o) for row, o in timeouts.items() if row < upto}

    def kept(self, keeper: Keeper) -> None:
        """The keeper wrote everything before `keeper.written`: forget the oldest calls past the window."""
        with self._lock:
            if keeper is self._keeper:
                self._trim(keeper.written, keeper.fates_written)

    def _trim(self, written: int, fates_written: dict[int, tuple]) -> None:
        """Forget the oldest chunks written before `written` that are cleared or past the window (the
        caller holds the lock)."""
        store = self._store
        while store.sizes and store.dropped + store.sizes[0] <= written and (
            store.dropped + store.sizes[0] <= self._hidden or store.rows - store.dropped - store.sizes[0] >= self._window
        ):
            store.drop_oldest()
        segment = self._on_disk[-1]
        segment.last = max(segment.last, store.dropped)
        # A timed-out call no longer in memory whose fate the file already says is kept no longer.
        for row in [row for row in store.timeouts if row < store.dropped]:
            fate = fates_written.get(row)
            if fate is not None and fate[0] != "running" and fate == fate_of(store.timeouts[row]):
                del store.timeouts[row]

    def _report(self, problems: list[str], stacklevel: int = 2) -> None:
        """Say, once each, in one line, which parts of the file were cut short."""
        fresh = list(dict.fromkeys(p for p in problems if p.split(" ", 1)[0] not in self._said))
        if not fresh:
            return
        self._said.update(p.split(" ", 1)[0] for p in fresh)
        where = shown(self.file) if self.file is not None else "the history file"
        listed = "; ".join(fresh[:3]) + (f"; and {len(fresh) - 3} more" if len(fresh) > 3 else "")
        cut = any("its end is missing" in p for p in fresh)
        warnings.warn(
            f"{where}: {len(fresh)} part{'s' if len(fresh) != 1 else ''} left out with {'their' if len(fresh) != 1 else 'its'} "
            f"calls{' (a part cut short: written when a kernel died, or a disk filled?)' if cut else ''}; the other calls are "
            f"kept: {listed}", HistoryFileWarning, stacklevel=stacklevel + 1,
        )  # fmt: skip

    # -- recording --------------------------------------------------------------------------------

    def record(self, o: Outcome) -> None:
        if self._later:
            self.settle()  # those answered earlier come first
        self._append(o)

    def record_later(self, build: Callable[[], Outcome]) -> None:
        """Record a call whose Outcome `build()` makes once its answer has left (`settle()`).

        An outside client's answer need not wait for the bookkeeping: the door that sent it
        settles right after. Every reader settles first, so a call that was answered is
        always in what it reads.
        """
        self._later.append(build)

    def settle(self) -> None:
        """Record the calls waiting since `record_later`, in the order they came."""
        later = self._later
        if not later and not self._in_settle:
            return
        # A reader that finds the queue empty while another thread is still recording what it
        # took from it waits for that thread: an answered call is in whatever comes next.
        with self._settling:
            self._in_settle += 1
            try:
                while later:
                    build = later.popleft()
                    try:
                        outcome = build()
                    except Exception:  # a bug of mcp_nb's; said, and the next calls are still recorded
                        logging.getLogger(__name__).exception("an answered call could not be recorded")
                        continue
                    self._append(outcome)
            finally:
                self._in_settle -= 1

    def _append(self, o: Outcome) -> None:
        with self._lock:
            store = self._store
            store.add(o)
            waiting = len(store.pending)
            if waiting >= CHUNK:
                store.flush()
            keeper = self._keeper
            if keeper is not None:
                keeper.recorded(waiting)  # two comparisons; it is woken at the first call waiting, and when many are
                recorded = store.rows + len(store.pending)
                behind = recorded - keeper.written
        if keeper is not None:  # outside the lock, which the writer takes
            keeper.hand_over(waiting, recorded)
            keeper.hold_back(behind)
        if self._listeners:
            self._listeners(o)  # one that fails is logged: a broken view never loses a call or breaks the loop

    def subscribe(self, listener) -> None:
        """Call `listener(outcome)` after every recorded call, and `listener(None)` after `clear()`.

        Listeners run on the thread that recorded the call (mcp_nb's loop thread for calls):
        keep them short, and hand any real work elsewhere. A bound method is held weakly (a
        view that is gone stops listening by itself); a function is held until `unsubscribe`.
        """
        self._listeners.add(listener)

    def unsubscribe(self, listener) -> None:
        self._listeners.remove(listener)

    def __len__(self) -> int:
        self.settle()
        if self._opened is not None:
            disk, keeping = _file()
            keeping.flush_all(self._opened)  # a file this kernel writes: every call made so far
            return disk.listing(self._opened, footers=False).rows
        with self._lock:  # a flush moves rows from `pending` to the chunks: never read halfway
            store = self._store
            return store.rows + len(store.pending) - self._hidden

    def clear(self) -> None:
        """Forget every recorded call. A mark, not a new store: the calls before it are no longer shown;
        without a history file they leave memory now, with one once they are written (none lost,
        whatever is recorded meanwhile)."""
        self.settle()
        with self._lock:
            store = self._store
            store.flush()  # the mark falls between two chunks
            self._hidden = store.rows
            keeper = self._keeper
            if keeper is None:
                while store.sizes:
                    store.drop_oldest()
                store.timeouts = {row: o for row, o in store.timeouts.items() if row >= self._hidden}
            else:
                self._trim(keeper.written, keeper.fates_written)
        if self._listeners:
            self._listeners(None)

    # -- reading ----------------------------------------------------------------------------------

    def _coded(self, columns: list[str] | None = None, last: int | None = None) -> Coded:
        """Every call of this history (the `last` ones), coded (records/frame.py): those read back from
        the file, then those in memory; of the file, only the tidy `columns` named (all when None)."""
        np = lib.numpy

        self.settle()
        with self._lock:
            s = self._store
            s.flush()
            shown = max(s.dropped, self._hidden)
            memory = s.tail(max(shown, s.rows - last) if last is not None else shown)
            names = {"name": list(s.names), "server": list(s.servers), "worker": list(s.workers),
                     "client": list(s.clients), "session": [SESSION]}  # fmt: skip
            hidden, first = self._hidden, s.rows - len(memory["call_id"])
            timeouts = dict(s.timeouts)
            streams = frozenset(self._streams)
            segments = [(g.folder, max(g.first, hidden), g.last) for g in self._on_disk if g.last > hidden]
        n = len(memory["call_id"])
        memory["started_ns"] = nanoseconds(memory.pop("started"))
        memory["recorded_ns"] = nanoseconds(memory.pop("recorded"))
        memory["session"] = np.zeros(n, dtype=np.int64)
        memory["seq"] = np.arange(first, first + n, dtype=np.int64)
        for name in ("fate", "fate_outcome", "fate_cause"):
            memory[name] = np.full(n, -1, dtype=np.int64)
        memory["fate_after"] = np.full(n, np.nan)
        coded = Coded(memory, names)
        wanted = None if last is None else last - n  # rows still to read from the file, newest first
        with _collector_paused():
            for folder, lo, hi in reversed(segments):
                if wanted is not None and wanted <= 0:
                    break
                lo = lo if wanted is None else max(lo, hi - wanted)
                older = self._read(folder, lambda p: p.session == SESSION and p.stream in streams, (lo, hi), columns)
                coded = join(older, coded)
                wanted = None if wanted is None else wanted - len(older)
            if self._opened is not None and (wanted is None or wanted > 0):
                coded = join(self._read(self._opened, None, None, columns, wanted), coded)
        overlay(coded, timeouts)
        return coded

    def _read(self, folder: Path, chosen: Callable[[disk.Part], bool] | None, seqs: tuple[int, int] | None,
              columns: list[str] | None, last: int | None = None) -> Coded:  # fmt: skip
        disk, keeping = _file()
        if chosen is None:
            keeping.flush_all(folder)  # a reopened file this kernel writes: every call made so far
        found = disk.listing(folder, footers=False)
        parts = [p for p in found.parts if (chosen is None or chosen(p)) and (seqs is None or (p.last >= seqs[0] and p.first < seqs[1]))]
        if last is not None:  # the newest parts that hold the `last` calls
            taken, rows = [], 0
            for part in reversed(parts):
                if rows >= last:
                    break
                taken.append(part)
                rows += part.rows
            parts = taken[::-1]
        coded = disk.read(found, parts, seqs, columns)
        self._report(found.problems)
        if last is not None and len(coded) > last:
            coded = Coded({key: values[-last:] for key, values in coded.columns.items()}, coded.names)
        return coded

    def to_frame(self, last: int | None = None, columns: list[str] | None = None) -> pd.DataFrame:
        """One row per call; the columns are listed in `mcp_nb.COLUMNS` and docs/guide.md.

        With a history file, `last=N` (only the latest N calls) and `columns=[...]` (only those)
        read no more of the file than they need."""
        if last is not None and (isinstance(last, bool) or not isinstance(last, int) or last < 0):
            raise BadValue(f"last must be a whole number >= 0, got {last!r}")
        chosen = list(COLUMNS) if columns is None else list(columns)
        unknown = [c for c in chosen if c not in COLUMNS]
        if unknown:
            raise BadValue(f"unknown column(s) {', '.join(map(repr, unknown))}; the history's columns are mcp_nb.COLUMNS")
        with _collector_paused():
            return build(self._coded(None if columns is None else chosen, last), chosen)

    def result_frame(self, call_id: int | None = None, key: str | None = None) -> pd.DataFrame:
        """The structured result of call `call_id` (the latest call when None) as a DataFrame, one row
        per record, as `Outcome.frame` gives it; its final attempt counts."""

        frame = self.to_frame()
        if frame.empty:
            raise NotTabular("the history is empty: no call to tabulate")
        rows = frame if call_id is None else frame[frame["call_id"] == call_id]
        if rows.empty:
            raise NotTabular(f"no call #{call_id} in the history")
        row = rows.iloc[-1]
        if row["outcome"] != "result":
            raise NotTabular(f"call #{row['call_id']} ended as {row['outcome']} ({row['cause']}): there is no result to tabulate")
        return lib.pandas.DataFrame.from_records(records(row["structured_content"], key))

    def progress(self, call_id: int | None = None) -> pd.DataFrame:
        """The progress events of a call (every attempt of it), or of every call when `call_id` is None:
        call_id, attempt, progress, total, message, seconds since the request was sent."""

        c = self._coded(["call_id", "attempt", "progress"]).columns
        ids, attempts, events = c["call_id"], c["attempt"], c["progress"]
        rows = range(len(ids)) if call_id is None else [int(i) for i in (ids == call_id).nonzero()[0]]
        if call_id is not None and not rows:
            raise KeyError(f"no call #{call_id} in the history")
        return progress_frame((int(ids[row]), int(attempts[row]), events[row]) for row in rows)

    def summary(self, by: str | None = None) -> pd.DataFrame:
        """Calls per target and name × outcome, with totals. `by="session"`: the sessions side by
        side (a reopened history file's kernels, before and after a change): per tool, each
        session's outcome counts and its median and 90th-percentile durations."""
        if by is None:
            return summarize(self.to_frame())
        if by != "session":
            raise BadValue(f"summary(by=...) takes 'session' (or None), got {by!r}")
        return by_session(self.to_frame())

    def health(self, last: int = 20) -> pd.DataFrame:
        """Failure rate per name over its last `last` calls (a retried call counts once, by its
        final attempt; `attempts` says how many it took): which tools keep failing."""
        return health(self.to_frame(), last)

    # -- export ---------------------------------------------------------------------------------

    def to_records_frame(self) -> pd.DataFrame:
        """The frame with its nested columns (arguments, data, logs...) as JSON text, for files."""
        frame = self.to_frame()
        for column in ("arguments", "structured_content", "data", "retry"):
            frame[column] = [None if v is None else json.dumps(v, default=str) for v in frame[column]]
        frame["elicitations"] = [json.dumps(list(asked), default=str) for asked in frame["elicitations"]]
        frame["samplings"] = [json.dumps(list(sampled), default=str) for sampled in frame["samplings"]]
        frame["server_logs"] = [
            json.dumps([
                {"level": r.level, "logger": r.logger, "message": r.message, "traceback": r.traceback, "source": r.source, "at": r.at}
                for r in logs
            ])  # fmt: skip
            for logs in frame["server_logs"]
        ]
        return frame

    def to_csv(self, path, **kwargs: Any):
        return self.to_records_frame().to_csv(path, index=False, **kwargs)

    def to_json(self, path, **kwargs: Any):
        kwargs.setdefault("orient", "records")
        kwargs.setdefault("date_format", "iso")
        return self.to_records_frame().to_json(path, **kwargs)

    def to_parquet(self, path, **kwargs: Any):
        return self.to_records_frame().to_parquet(path, index=False, **kwargs)

    def to_cases(
        self, path, *, last: int | None = None, name: str | None = None, server: str | None = None,
        replayed: bool = False, left_out: list[LeftOut] | None = None,
    ):  # fmt: skip
        """Write the calls as a cases file (JSON) for `mcp_nb.replay` and the pytest plugin; returns the cases.

        One case per call, by its final attempt, with every option the call had (its retry
        policy, a deadline reset on progress, the answers to the server's questions). `last`:
        the latest N calls; `name`: a glob on the name (`get_*`); `server`: only that
        connection's calls; `replayed`: also the calls a replay made (`via` "replay"), which are
        left out by default: they are the saved cases again. A call no case can hold is left
        out, and a `CallsLeftOut` warning says which and why (or, given a list as `left_out`,
        each is added to it instead). See docs/cases.md.
        """
        found: list[LeftOut] = left_out if left_out is not None else []
        cases = from_frame(self.to_frame(), last=last, name=name, server=server, replayed=replayed, left_out=found)
        save(cases, path)
        if found and left_out is None:
            listed = "; ".join(map(str, found[:5])) + (f"; and {len(found) - 5} more" if len(found) > 5 else "")
            warnings.warn(f"{len(found)} call{'s' if len(found) != 1 else ''} left out of {path}: {listed}", CallsLeftOut, stacklevel=2)
        return cases

    # -- display --------------------------------------------------------------------------------

    def _shown(self) -> pd.DataFrame:
        """The frame the views draw. With a history file, which may hold millions of calls, not the
        whole of it: every call's short columns (for the counts), and the texts of the latest only."""
        if self.file is None:
            return self.to_frame()
        frame = self.to_frame(columns=_SHORT)
        latest = min(len(frame), max(4 * settings.history_rows, 1000))  # the views show the latest by call id
        texts = self.to_frame(last=latest, columns=["content", "message"])
        for column in ("content", "message"):
            values = lib.numpy.full(len(frame), None, dtype=object)
            values[len(frame) - len(texts):] = texts[column].to_numpy(dtype=object)
            frame[column] = values
        return frame

    def _repr_html_(self) -> str:
        return history_html(self._shown(), settings.history_rows)

    def __repr__(self) -> str:
        return history_text(self._shown(), settings.history_rows)

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(repr(self))


def summarize(frame: pd.DataFrame) -> pd.DataFrame:
    """Counts per (server, target, name) × outcome, every outcome type a column, plus totals."""
    pd = lib.pandas

    keys = ["server", "target", "name"]
    counts = (
        frame.groupby([*keys, "outcome"], observed=True)
        .size()
        .unstack("outcome", fill_value=0)
        .reindex(columns=list(OUTCOMES), fill_value=0)
    )
    counts.columns = pd.Index(list(OUTCOMES), name="outcome")
    counts.index = pd.MultiIndex.from_tuples([tuple(map(str, row)) for row in counts.index], names=keys)
    counts["total"] = counts.sum(axis=1)
    totals = pd.DataFrame([counts.sum(axis=0)], index=pd.MultiIndex.from_tuples([("total", "", "")], names=keys))
    return pd.concat([counts, totals]).astype("int64")


def by_session(frame: pd.DataFrame) -> pd.DataFrame:
    """The sessions side by side: one row per (server, target, name), and for each session (in the
    order they began) its calls per outcome, their total, and the median and 90th-percentile
    duration in ms. A tool a session did not call has zeros and empty durations there."""
    pd = lib.pandas

    keys = ["server", "target", "name"]
    measures = [*OUTCOMES, "total", "median_ms", "p90_ms"]
    sessions = [str(s) for s in frame["session"].cat.categories if (frame["session"] == s).any()] if len(frame) else []
    if not sessions:
        return pd.DataFrame(columns=pd.MultiIndex.from_product([[], measures], names=["session", ""]))
    grouped = frame.groupby(["session", *keys], observed=True)
    counts = grouped["outcome"].value_counts().unstack("outcome", fill_value=0).reindex(columns=list(OUTCOMES), fill_value=0)
    counts["total"] = counts.sum(axis=1)
    durations = grouped["duration_ms"]
    counts["median_ms"] = durations.median()
    counts["p90_ms"] = durations.quantile(0.9)
    table = counts.unstack("session")  # (measure, session) columns
    table = table.swaplevel(axis=1).reindex(columns=pd.MultiIndex.from_product([sessions, measures]))
    for session in sessions:
        for outcome in [*OUTCOMES, "total"]:
            table[(session, outcome)] = table[(session, outcome)].fillna(0).astype("int64")
    table.columns.names = ["session", ""]
    table.index = pd.MultiIndex.from_tuples([tuple(map(str, row)) for row in table.index], names=keys)
    return table


def health(frame: pd.DataFrame, last: int = 20) -> pd.DataFrame:
    """Per (server, target, name), over its latest `last` calls: calls, attempts, failures,
    failure_rate, and the latest outcome and cause; the worst first.

    A call is counted once, by its final attempt (so a call that succeeded after two timeouts
    is a success), and `attempts` counts the attempts those calls took. A failure is a call
    whose final attempt is anything but `result`.
    """
    pd = lib.pandas

    if not isinstance(last, int) or isinstance(last, bool) or last < 1:
        raise BadValue(f"last must be a whole number >= 1, got {last!r}")
    keys = ["server", "target", "name"]
    columns = ["calls", "attempts", "failures", "failure_rate", "latest_outcome", "latest_cause"]
    if frame.empty:
        return pd.DataFrame(columns=keys + columns).set_index(keys)
    # Latest by start (call ids are given out as calls start), not by arrival: concurrent
    # calls finish in any order, and the view should not depend on it.
    calls = call_keys(frame)
    ordered = frame.sort_values([*calls, "attempt"], kind="stable")
    by_call = ordered.groupby(calls, sort=False, observed=True)
    calls = by_call.tail(1).assign(attempts=by_call["attempt"].transform("size"))
    recent = calls.groupby(keys, observed=True, sort=False).tail(last)
    failed = recent["outcome"].astype(str) != "result"
    grouped = recent.assign(failed=failed).groupby(keys, observed=True)
    table = pd.DataFrame(
        {
            "calls": grouped.size(),
            "attempts": grouped["attempts"].sum().astype("int64"),
            "failures": grouped["failed"].sum().astype("int64"),
            "latest_outcome": grouped["outcome"].last().astype(str),
            "latest_cause": grouped["cause"].last().astype(str),
        }
    )
    table["failure_rate"] = table["failures"] / table["calls"]
    table.index = pd.MultiIndex.from_tuples([tuple(map(str, row)) for row in table.index], names=keys)
    table = table[columns]
    return table.sort_values(["failure_rate", "failures"], ascending=False, kind="stable")
