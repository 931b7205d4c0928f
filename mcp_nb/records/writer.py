"""The thread that writes a History's calls to its file, fed by a bounded queue.

The history hands each call over as it records it: the row its store keeps (the same tuple,
nothing copied) goes into this writer's queue, with a timed-out call's Outcome (its server side
may still end, and its fate is written again when it does). The thread takes what is queued a
batch at a time, encodes it (records/encoding.py), writes it as a part, an Arrow IPC file, and
merges parts as they accumulate (records/disk.py). As a batch falls due, the history turns its
pending rows into the store's columns and hands them over too (`built`): the thread encodes
those rather than build them a second time (those of rows it takes before, it builds). How far it has written is a number it
publishes (`written`), which the history reads to let its oldest calls leave memory. The writer
knows nothing of the History: it is given rows and the vocabularies their codes name, and it
never calls back.

When a batch is written: as soon as WRITE_AT calls wait, and at most LATENCY_S after the first of
them was queued (QUIET_S when no call follows), so that a kernel killed at any moment loses at
most the calls of its last second (and, beside calls, which take a tenth of a millisecond or more
each, never more than about 1,024: WRITE_AT, and the calls queued while that batch is written);
what was written stays whole.

The thread that records never waits for the writer: nothing it does depends on what the writer
is doing, and a writer held (its thread blocked in a write, a disk that hangs) holds no call. One
concession to CPython's GIL remains. A thread that records back to back (mcp_nb's loop in a sweep
of an async tool, a script recording Outcomes) keeps the GIL, and the writer's thread, which gives
it up at each of the many steps in pyarrow that a part takes, gets it back only when that thread
lets go: an event loop lets go at every step of its loop but takes it back at once (CPython 3.11
asks the holder to let go only after a switch interval in which nobody took it), so a writer
woken beside it waits for as long as the loop runs while each of its futile wakes costs the
loop; a plain thread lets go every switch interval (5 ms), so a part of a hundred steps takes half
a second. So the writer's thread sleeps on its own events, not on the GIL, until the recorder
wakes it (the first call after it went quiet, a batch due), and the recorder then *lends* it the
GIL: it waits, for a moment (LEND_S) to let it wake, or, as a batch falls due and again while it
is not written GRACE calls later, until the writer's round is done but never longer than twice
the CPU time the writer's last part took (at most LEND_MOST_S). So a part is encoded by a thread
that has the GIL to itself, in one stretch: beside a loop, woken without a lend, it took seconds
of the wall clock and three times its CPU time in futile wakes, while the batch grew tenfold. A
lend's longest is set before it begins, never by what the writer does during it; and while the
writer does not move, the lends come at 2, 4, 8... times GRACE calls: a held writer costs the
recorder a handful of lends, not one per call.

The queue holds at most QUEUE_MOST calls. A thread that is not running an event loop (a script
recording Outcomes in a loop, faster than any disk takes them) and finds it three quarters full
waits, up to PACE_LIMIT_S, until it is half empty; a loop's thread never does, and past the bound
the history keeps its calls and hands them over when there is room again (`put` says there is
none), which is said once in one line. A write that fails (a full disk, a removed folder) is said
once, in one line; the writer then writes nothing more and the calls stay in the kernel's memory.
`close()` writes what is queued and ends the thread; `mcp_nb.reset()` and the interpreter's exit
close it.
"""

from __future__ import annotations

import asyncio
import atexit
import itertools
import logging
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mcp_nb.history_file import SESSION, shown
from mcp_nb.records import disk, encoding
from mcp_nb.records.frame import fate_of
from mcp_nb.records.store import columns_of

if TYPE_CHECKING:
    from mcp_nb.records.outcome import Outcome
    from mcp_nb.records.store import Vocabularies

# The longest a queued call waits before the write that keeps it begins, while calls come. Where
# calls come slowly (a cell's, a few hundred a second) this clock, not WRITE_AT, makes each batch,
# and a batch costs its thread several times the CPU it costs one kept busy: the thread slept
# since the last one and runs cold. Half a second halves those batches and leaves the other half
# of the crash bound's second for the write.
LATENCY_S = 0.5
QUIET_S = 0.5  # and when no call follows it (the writer's own clock)
WRITE_AT = 960  # or as soon as this many calls wait (the crash bound is 1,024: a margin for the calls queued while it is written)
# The most calls one part takes. A writer that fell behind catches up a part of this size at a time:
# one part of everything waiting made each write longer than the last, and encoding one of millions
# took gigabytes.
WRITE_MOST = 65_536
QUEUE_MOST = 131_072  # calls queued and not taken; past it the history keeps them until there is room
PACE_LIMIT_S = 10.0  # the longest a thread that is no event loop's waits for room (a disk that hangs is not waited for)
MERGE = 16  # parts of one size merged into one MERGE times larger
KEPT_ROWS = 16_384  # the tables of parts this small (a write's, a first merge's) stay in memory for the merge that takes them
LEND_S = 0.0005  # the GIL lent to the writer's thread to wake: it needs a few steps to start its clock
LEND_MOST_S = 0.02  # the longest a lend for a batch lasts (it ends sooner when the writer is done: the docstring)
GRACE = 32  # calls recorded after a batch fell due before the GIL is lent (within the crash bound: 960 + 32 < 1,024)
BUILT_MOST = 4  # the store's latest chunks held for the rows queued (older ones cover calls taken long ago)
CLOSE_LIMIT_S = 30.0  # the longest `close()` waits for the last write (a disk that hangs)

log = logging.getLogger(__name__)
_streams = itertools.count()  # each writer of this process writes a stream of its own
_writing: weakref.WeakSet[Writer] = weakref.WeakSet()  # this process's writers still writing
_exit_hook = threading.Event()


def _close_all_at_exit() -> None:
    # A history kept by hand (`History.keep`), not the engine's: its last calls are written at the
    # interpreter's exit too, and its thread ends then (the engine's own is closed with the engine).
    if not _exit_hook.is_set():
        _exit_hook.set()
        atexit.register(_close_each)


def _close_each() -> None:
    for writer in list(_writing):
        writer.close()


def flush_all(folder: Path, timeout: float = 10.0) -> None:
    """Write now what this process's writers of `folder` were given: a file reopened in the kernel
    that writes it shows every call made so far."""
    for writer in list(_writing):
        if writer.folder == folder and writer.failed is None:
            writer.flush(writer.received, timeout)


class Columns:
    """Calls handed over as columns (the store's, after the queue had no room for them as rows)."""

    __slots__ = ("columns", "size")

    def __init__(self, columns: dict[str, np.ndarray]) -> None:
        self.columns = columns
        self.size = len(columns["call_id"])


class Writer:
    """Writes the calls it is given to the history file at `folder`, on a thread of its own: seqs
    from `start` on, their codes named by `vocabularies`, every text through `scrub`."""

    def __init__(self, folder: Path, start: int, vocabularies: Vocabularies, scrub: Callable[[str], str]) -> None:
        disk.create(folder)  # raises, in one line, before anything changes (the path was checked already)
        self.folder = folder
        self.session = SESSION
        self.stream = next(_streams)
        self.start = start  # the seq of the first call this writer writes
        self.received = start  # the seq of the next call handed over (counted by the recorder)
        self.taken = start  # the seq of the next call the thread takes from the queue
        self.written = start  # every call before it is in the file
        self.vocabularies = vocabularies
        self.scrub = scrub
        self.failed: str | None = None  # why writing stopped, once it has
        self.fates_written: dict[int, tuple[Any, ...]] = {}  # seq -> the fate written for a timed-out call
        self.cpu_s = 0.0  # CPU seconds the thread spent (encoding, writing, merging): what the file costs the process
        self._queue: deque[Any] = deque()  # rows (a call each), or Columns
        self._timed_out: deque[tuple[int, Outcome]] = deque()  # (seq, Outcome) of timed-out calls handed over
        self._watched: dict[int, Outcome] = {}  # timed-out calls whose fate may change (the thread's own)
        self._parts: list[tuple[int, int, int]] = []  # (first, last, level) of this stream's parts, in order
        self._tables: dict[tuple[int, int], Any] = {}  # (first, last) -> the table of a small part, until merged
        self._fates_parts = 0
        self._progress = threading.Condition()  # notified when `taken` or `written` moves, or writing stops
        self._poke = threading.Event()  # a call came while the thread slept
        self._due = threading.Event()  # a batch is due (or a flush, or the end)
        self._rested = threading.Event()  # the thread finished a round of writing (or stopped): a lend ends
        self._idle = True  # the thread sleeps until a call comes
        self._since: float | None = None  # when the first call of the batch being filled was handed over
        self._due_at = start + WRITE_AT  # the batch being filled falls due when this seq is handed over
        self._built: deque[tuple[int, dict[str, np.ndarray]]] = deque(maxlen=BUILT_MOST)  # (first seq, columns) the store made
        self._lend_at: int | None = None  # once a batch fell due, until it is written: the seq at which the GIL is lent next
        self._gap = GRACE  # calls between two lends: doubled while the writer does not move
        self._moved = (start, start)  # (taken, written) when the GIL was last lent
        self._lend_s = LEND_MOST_S  # the longest a lend for a batch lasts: set from the CPU time the last part took
        self._said_behind = False
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name=f"mcp_nb history file {self.stream}", daemon=True)
        self._thread.start()
        _writing.add(self)
        _close_all_at_exit()

    # -- on the thread that records (the history holds its lock for `put`) ------------------------

    def put(self, row: tuple[Any, ...], timed_out: Outcome | None = None) -> bool:
        """Queue one call; False (and nothing queued) when the queue has no room or writing stopped:
        the history hands it over later, as `Columns`."""
        if self.failed is not None or self.received - self.taken >= QUEUE_MOST:
            if self.failed is None and not self._said_behind:
                self._said_behind = True
                log.warning(
                    "the history file %s is %d calls behind (a slow disk?): calls are kept in memory and "
                    "written as it catches up",
                    shown(self.folder),
                    self.received - self.taken,
                )
            return False
        if timed_out is not None:
            self._timed_out.append((self.received, timed_out))
        self._queue.append(row)
        self.received += 1
        return True

    def put_columns(self, columns: dict[str, np.ndarray], timed_out: dict[int, Outcome]) -> None:
        """Queue the calls from `received` on, as columns (those `put` found no room for)."""
        item = Columns(columns)
        self._timed_out.extend(timed_out.items())
        self._queue.append(item)
        self.received += item.size

    def built(self, first: int, columns: dict[str, np.ndarray]) -> None:
        """The columns the store made of the calls from seq `first` on: the thread takes these for the
        rows it was queued, rather than build them again. Only the latest few are held, and none once
        writing stopped."""
        if self.failed is None:
            self._built.append((first, columns))

    def room(self) -> bool:
        """Whether calls `put` refused may be handed over now."""
        return self.failed is None and self.received - self.taken < QUEUE_MOST // 2

    def falls_due(self) -> bool:
        """Told by the thread that recorded a call, after `put`, under the history's lock: whether the
        batch being filled falls due with it. The history then turns its pending rows into columns and
        hands them over (`built`), before `recorded(True)` wakes the thread to write them."""
        if self.failed is not None or self._lend_at is not None:
            return False
        received, since = self.received, self._since
        if since is None:  # the first call of a batch (the writer's thread sets it back to None as it takes one)
            self._since = since = time.monotonic()
        if received < self._due_at and time.monotonic() - since < LATENCY_S:
            return False
        self._gap, self._lend_at = GRACE, received + GRACE
        self._rested.clear()
        return True

    def recorded(self, due: bool | None = None) -> None:
        """Told by the thread that recorded a call, after `put`, outside the history's lock, with what
        `falls_due` said (asked here when not given): wake the writer's thread when it must run, and
        lend it the GIL then (the module's docstring)."""
        if self.failed is not None:
            return
        if due is None:
            due = self.falls_due()
        received, lend, lend_at = self.received, 0.0, self._lend_at
        if due:
            self._due.set()
            lend = self._lend_s  # at once: the writer then encodes alone, not in a tug of war for the GIL
        elif lend_at is not None and received >= lend_at:  # due, not written yet: lend, again GRACE calls later while it moves
            moved = (self.taken, self.written)
            self._gap = GRACE if moved != self._moved else 2 * self._gap  # held, or a disk that hangs: ever more rarely
            self._moved, self._lend_at = moved, received + self._gap
            lend = self._lend_s
        if self._idle:  # it sleeps until a call comes (none came for QUIET_S): woken, it starts its clock
            self._idle = False
            self._poke.set()
            if not lend and _in_event_loop():  # another thread gives the GIL up every switch interval anyway
                lend = LEND_S
        if lend:
            self._rested.wait(lend)  # no longer than set now, and less when the writer is done sooner
        if received - self.taken >= QUEUE_MOST * 3 // 4 and not _in_event_loop():
            self._pace()

    def _pace(self) -> None:
        """Wait (a thread that runs no event loop) until the queue is half empty, writing stops or
        PACE_LIMIT_S pass."""
        self._due.set()
        with self._progress:
            self._progress.wait_for(
                lambda: self.received - self.taken <= QUEUE_MOST // 2 or self.failed is not None, PACE_LIMIT_S
            )

    # -- asked by the history, on its readers' threads --------------------------------------------

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def flush(self, seq: int, timeout: float) -> bool:
        """Write now, and wait until every call before `seq` is written; False if writing failed or
        took longer than `timeout` seconds."""
        self._due.set()
        self._poke.set()
        with self._progress:
            self._progress.wait_for(
                lambda: self.written >= seq or self.failed is not None or not self._thread.is_alive(), timeout
            )
        return self.written >= seq

    def close(self) -> None:
        """Write what is queued, and end the thread (bounded: a disk that hangs is not waited for)."""
        self._stopping = True
        self._due.set()
        self._poke.set()
        if self._thread is not threading.current_thread():
            self._thread.join(CLOSE_LIMIT_S)
            if self._thread.is_alive():
                log.warning("the history file %s did not finish its last write within %g s", shown(self.folder), CLOSE_LIMIT_S)

    def describe(self) -> dict[str, Any]:
        return {
            "folder": str(self.folder),
            "session": self.session,
            "stream": self.stream,
            "written": self.written - self.start,
            "failed": self.failed,
            "parts": len(self._parts),
            "cpu_s": self.cpu_s,
        }

    # -- the thread -----------------------------------------------------------------------------------

    def _run(self) -> None:
        wrote = False
        while True:
            # Nothing came since the last round: sleep until a call comes. After a round that wrote,
            # it waits for the next batch instead: calls are likely to keep coming, and a thread
            # woken for each first call would contend for the GIL with a loop calling back to back.
            if not wrote and not self._queue and not self._stopping:
                self._idle = True
                if not self._queue:  # a call queued just before `_idle` was set woke nobody
                    self._poke.wait()
                self._poke.clear()
                self._idle = False
            stopping = self._stopping  # read before the write: it is the last only if it began after close()
            if not stopping:
                self._due.wait(QUIET_S)
            self._due.clear()
            wrote = False
            if self.failed is None:
                began = time.thread_time()
                try:
                    wrote = self._write_due(everything=stopping)
                except OSError as err:
                    self._fail(f"{err.strerror or err}" + (f": {shown(err.filename)}" if err.filename else ""))
                except Exception:  # mcp_nb's own bug: its traceback, once, and the calls stay in memory
                    log.exception("writing the history file %s failed", shown(self.folder))
                    self._fail(None)
                self.cpu_s += time.thread_time() - began
            self._rested.set()
            if stopping and (not self._queue or self.failed is not None):
                self._built.clear()
                _writing.discard(self)
                with self._progress:
                    self._progress.notify_all()
                return

    def _write_due(self, everything: bool) -> bool:
        """Write the calls queued, a part of at most WRITE_MOST at a time, merging parts as they come;
        whether there were any. The calls queued while a part was written wait for the next batch
        (a part of a few calls costs its fixed price for each), unless `everything` is asked for (the
        last round) or the part was a full one (a writer that fell behind catches up)."""
        wrote = False
        while self._queue:
            n = self._write_batch()
            wrote = True
            if n:
                self._merge()
            if not everything and n < WRITE_MOST:
                break
        self._write_fates()
        return wrote

    def _take(self) -> tuple[dict[str, np.ndarray], int, dict[int, Outcome]]:
        """The queued calls (at most about WRITE_MOST), as columns; their first seq; their timed-out Outcomes."""
        queue, rows, parts = self._queue, [], []
        first, room = self.taken, WRITE_MOST
        at = first  # the seq of the first of `rows`
        while queue and room > 0:
            item = queue.popleft()
            if type(item) is tuple:
                rows.append(item)
                room -= 1
                continue
            if rows:
                parts += self._columns_of(rows, at)
                at += len(rows)
                rows = []
            if item.size > room:  # the rest waits for the next part
                queue.appendleft(Columns({name: values[room:] for name, values in item.columns.items()}))
                item = Columns({name: values[:room] for name, values in item.columns.items()})
            parts.append(item.columns)
            room -= item.size
            at += item.size
        if rows:
            parts += self._columns_of(rows, at)
        columns = parts[0] if len(parts) == 1 else {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
        n = len(columns["call_id"])
        while self._timed_out and self._timed_out[0][0] < first + n:
            seq, o = self._timed_out.popleft()
            self._watched[seq] = o
        with self._progress:
            self.taken = first + n
            self._since = time.monotonic() if queue else None
            self._progress.notify_all()
        return columns, first, {seq - first: o for seq, o in self._watched.items() if first <= seq < first + n}

    def _columns_of(self, rows: list[tuple[Any, ...]], seq: int) -> list[dict[str, np.ndarray]]:
        """`rows`, the calls from `seq` on, as columns: slices of the store's chunks where it made
        them already (`built`), the others made here. In order, one dict of columns per stretch."""
        end, parts = seq + len(rows), []
        chunks = [(first, columns) for first, columns in list(self._built) if first + len(columns["call_id"]) > seq]
        at = seq
        for first, columns in chunks:
            if first >= end:
                break
            if first > at:  # rows queued before the store made a chunk of them
                parts.append(columns_of(rows[at - seq : first - seq]))
                at = first
            size = len(columns["call_id"])
            stop = min(first + size, end)
            if (at, stop) == (first, first + size):
                parts.append(columns)
            else:
                parts.append({name: values[at - first : stop - first] for name, values in columns.items()})
            at = stop
        if at < end:
            parts.append(columns_of(rows[at - seq :]))
        return parts

    def _write_batch(self) -> int:
        """Take the queued calls and write them as a part; how many."""
        columns, first, timed_out = self._take()
        n = len(columns["call_id"])
        if not n:
            return 0
        last = first + n - 1
        began = time.thread_time()
        names, servers, workers, clients = self.vocabularies.lists()
        batch = encoding.Batch(
            columns, names, servers, workers, clients, first, {row: fate_of(o) for row, o in timed_out.items()}
        )
        table = encoding.table(batch, self.session, self.scrub)
        disk.write_part(self.folder, disk.part_name(self.session, self.stream, first, last), table)
        # The longest of the next lend: twice the CPU time this part took (not its waits for the GIL or the disk).
        self._lend_s = min(LEND_MOST_S, max(LEND_S, 2 * (time.thread_time() - began) * min(1.0, WRITE_AT / n)))
        self._parts.append((first, last, 0))
        if n <= KEPT_ROWS:
            self._tables[(first, last)] = table
        for row, fate in batch.fates.items():
            self.fates_written[first + row] = fate
        self._write_fates()  # before the write is said done: whoever waits for it reads the fates as they are
        self._publish(first + n)
        return n

    def _publish(self, written: int) -> None:
        with self._progress:
            self.written = written  # whoever waits for it (`flush`) finds everything before it written
            if written >= self.taken:  # the batch taken is written: the next falls due WRITE_AT calls on
                self._due_at, self._lend_at = written + WRITE_AT, None
            self._progress.notify_all()

    def _between(self) -> None:
        """Between the steps of a merge: write the batch that fell due meanwhile. A large merge takes
        longer than a batch may wait (3,008 calls went unwritten for 0.9 s at a merge of 245,000
        calls beside a loop calling back to back)."""
        if self._due.is_set() and self._queue:
            self._due.clear()
            self._write_batch()

    def _write_fates(self) -> None:
        """A timed-out call's server side may end after its row was written: its fate, written again
        in a small fates part; a call whose fate can no longer change is watched no longer."""
        changed: list[tuple[Any, ...]] = []
        for seq, o in list(self._watched.items()):
            if seq >= self.written:
                continue
            fate = fate_of(o)
            if self.fates_written.get(seq) != fate:
                changed.append((seq, *fate))
            elif fate[0] != "running":
                del self._watched[seq]
        if not changed:
            return
        self._fates_parts += 1
        name = disk.fates_name(self.session, self.stream, self._fates_parts)
        disk.write_part(self.folder, name, encoding.fates_table(self.session, changed, self.scrub))
        for seq, *written in changed:
            self.fates_written[seq] = tuple(written)

    def _mergeable_run_end(self) -> int | None:
        """Where the newest run of MERGE consecutive parts of one level ends (None: none), counting
        only a run that no part of its level or higher follows."""
        parts = self._parts
        for end in range(len(parts), MERGE - 1, -1):
            tail = parts[end - MERGE : end]
            level = tail[0][2]
            if any(p[2] != level for p in tail) or any(b[0] != a[1] + 1 for a, b in zip(tail, tail[1:])):
                continue
            if all(p[2] < level for p in parts[end:]):
                return end
        return None

    def _merge(self) -> None:
        """Merge MERGE parts of one level that follow each other, level by level: the newest such
        run, wherever parts of a lower level written since (during a merge, `_between`) follow it.
        Looking at the last MERGE parts alone, a writer kept busy never merged past the first
        level: a batch written during each merge always followed its result."""
        parts = self._parts
        while True:
            end = self._mergeable_run_end()
            if end is None:
                return
            tail = parts[end - MERGE : end]
            level = tail[0][2]
            first, last = tail[0][0], tail[-1][1]
            names = [disk.part_name(self.session, self.stream, a, b) for a, b, _ in tail]
            held = [self._tables.pop((a, b), None) for a, b, _ in tail]
            merged = disk.merge(
                self.folder,
                names,
                disk.part_name(self.session, self.stream, first, last),
                None if any(t is None for t in held) else held,
                self._between,
            )
            at = parts.index(tail[0])  # parts written meanwhile (`_between`) follow the merged ones
            parts[at : at + MERGE] = [(first, last, level + 1)]
            if merged.num_rows <= KEPT_ROWS:
                self._tables[(first, last)] = merged

    def _fail(self, why: str | None) -> None:
        # said before it is published: whoever sees the failure (a sync that returns False) finds it said
        if why is not None:
            log.warning(
                "the history file %s cannot be written (%s): calls are kept in this kernel's memory only, none lost; set "
                "history_file again to the same path (or call History.keep again) to write what it lacks",
                shown(self.folder),
                why,
            )
        with self._progress:
            self.failed = why or "mcp_nb's own error (its traceback is on the mcp_nb logger)"
            self._queue.clear()  # the calls are in the history's memory: none lost
            self._built.clear()
            self._progress.notify_all()


def _in_event_loop() -> bool:
    """Whether this thread runs an asyncio event loop (waiting here would stall every task on it)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
