"""The thread that keeps a History's calls in its file: a few hundred at a time, off the call path.

A call is recorded in memory as before (a tuple appended under the history's lock); the
keeper takes what was recorded since its last write, turns it into a part (an Arrow IPC
file) and writes it (records/disk.py). It writes as soon as WRITE_AT calls wait, and at most
LATENCY_S after the first of them was recorded (QUIET_S when no call follows), so a kernel
killed at any moment loses at most the calls of the last half second (and never more than
WRITE_AT + GRACE, under 1,024), and what was written stays whole. A thread that records calls
back to back hands the GIL over when a batch is late (`hand_over`): beside it, the writer
would wait for the GIL for as long as it kept calling. Small parts are merged, MERGE at a time, into parts
MERGE times larger, so that ten million calls are a few dozen files, not twenty thousand.

A write that fails (a full disk, a removed folder, a permission taken away) is said once,
in one line, on the `mcp_nb` logger; from then on this keeper writes nothing and the calls
stay in the kernel's memory, none lost. The thread ends with `close()`, which writes what
is left first; `mcp_nb.reset()` and the interpreter's exit close it.
"""

from __future__ import annotations

import atexit
import itertools
import logging
import threading
import time
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from mcp_nb.history_file import SESSION, shown
from mcp_nb.records import disk

if TYPE_CHECKING:
    from mcp_nb.records.history import History

LATENCY_S = 0.25  # the longest a recorded call waits before the write that keeps it begins, while calls come
QUIET_S = 0.5  # and when no call follows it (the writer's own clock; see `hand_over`)
WRITE_AT = 960  # or as soon as this many calls wait (the crash bound is 1,024: a margin for the calls other threads record meanwhile)
# The most calls one part takes. A writer that fell behind (calls recorded faster than it writes)
# catches up a part of this size at a time: one part of everything waiting made each write longer
# than the last, so the next batch was larger still; ten million calls recorded as fast as a loop
# can went into three parts of millions, and the encoding of one took 3.8 GB.
WRITE_MOST = 65_536
# The most calls recorded and not yet written. Past it, whoever records waits (up to BEHIND_WAIT_S)
# until the writer is halfway back: calls recorded faster than they can be written (tens of
# thousands a second: Outcomes recorded in a loop, not calls) would otherwise pile up in memory
# without a bound, beside the window. A call takes a millisecond or so: real calls never wait.
BEHIND_MOST = 131_072
BEHIND_WAIT_S = 10.0
MERGE = 16  # parts of one size merged into one MERGE times larger
KEPT_ROWS = 16_384  # the tables of parts this small (a write's, a first merge's) stay in memory for the merge that takes them
LEND_S = 0.05  # the longest the thread that filled a batch waits while the writer writes it (`hand_over`)
GRACE = 32  # calls recorded after a batch is due before the recorder hands the GIL over (within the crash bound: 960 + 32 < 1,024)
WAKE_S = 0.005  # the longest the first call after a quiet spell waits for the writer to wake
CLOSE_LIMIT_S = 30.0  # the longest `close()` waits for the last write (a disk that hangs)

log = logging.getLogger(__name__)
_streams = itertools.count()  # each keeper of this process writes a stream of its own
_writing: weakref.WeakSet[Keeper] = weakref.WeakSet()  # this process's keepers still writing


_exit_hook = threading.Event()


def _close_all_at_exit() -> None:
    # A history kept by hand (`History.keep`), not the engine's: its last calls are written at the
    # interpreter's exit too, and its thread ends then (the engine's own is closed with the engine).
    if not _exit_hook.is_set():
        _exit_hook.set()
        atexit.register(lambda: [keeper.close() for keeper in list(_writing)])


def flush_all(folder: Path, timeout: float = 10.0) -> None:
    """Write now what this process's keepers of `folder` hold: a file reopened in the kernel that
    writes it shows every call made so far."""
    for keeper in list(_writing):
        if keeper.folder == folder and keeper.failed is None:
            keeper.history.sync(timeout)


class Keeper:
    """Writes the calls `history` records to the history file at `folder`, on a thread of its own."""

    def __init__(self, folder: Path, history: History, start: int, scrub: Callable[[str], str]) -> None:
        disk.create(folder)  # raises, in one line, before anything changes (the path was checked already)
        self.folder = folder
        self.history = history
        self.session = SESSION
        self.stream = next(_streams)
        self.start = start  # the seq of the first call this keeper writes
        self.written = start  # the seq of the next call to write
        self._taken = start  # the seq of the next call to take: the calls between are written, and not yet said so
        self.scrub = scrub
        self.failed: str | None = None  # why writing stopped, once it has
        self.fates_written: dict[int, tuple] = {}  # seq -> the fate written for a timed-out call
        self._parts: list[tuple[int, int, int]] = []  # (first, last, level) of this stream's parts, in order
        self._tables: dict[tuple[int, int], Any] = {}  # (first, last) -> the table of a small part, until merged
        self._fates_parts = 0
        self.cpu_s = 0.0  # CPU seconds this thread spent writing (encoding, writing, merging): what the file costs the process
        self._progress = threading.Condition()  # notified whenever `written` or `_idle` moves, or writing stops
        self._idle = True  # no call waits to be written: the thread sleeps until one is recorded
        self._due = start  # every call before it waits to be written now: a recorder waits for it
        self._since = 0.0  # when the first call of the batch was recorded (time.monotonic)
        self._due_at = WRITE_AT  # the batch is due when this many calls wait (fewer, once LATENCY_S passed)
        self._poke = threading.Event()
        self._full = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name=f"mcp_nb history file {self.stream}", daemon=True)
        self._thread.start()
        _writing.add(self)
        _close_all_at_exit()

    # -- told by the history (on the recording thread: cheap) ---------------------------------------

    def recorded(self, waiting: int) -> None:
        """`waiting` calls are recorded and not written: the first starts the clock, WRITE_AT writes now."""
        if waiting == 1:
            self._poke.set()
        elif waiting == WRITE_AT:
            self._full.set()
            self._poke.set()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def close(self) -> None:
        """Write what is left, and end the thread (bounded: a disk that hangs is not waited for)."""
        self._stopping = True
        self._full.set()
        self._poke.set()
        if self._thread is not threading.current_thread():
            self._thread.join(CLOSE_LIMIT_S)
            if self._thread.is_alive():
                log.warning("the history file %s did not finish its last write within %g s", shown(self.folder), CLOSE_LIMIT_S)

    # -- the thread -----------------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            if self._idle:  # nothing was recorded since the last write: sleep until a call is
                self._poke.wait()
                with self._progress:
                    self._idle = False  # the first call's recorder, handing the GIL over, goes on
                    self._progress.notify_all()
            stopping = self._stopping  # read before the write: it is the last only if it began after close()
            if not stopping:
                self._full.wait(QUIET_S)
            self._poke.clear()
            self._full.clear()
            if self.failed is None:
                began = time.thread_time()
                try:
                    # Calls came since the last round: more are likely, so the next round waits for a
                    # batch (or LATENCY_S) at once, not for the first call: a thread woken while the
                    # loop calls back to back waits long for the GIL (`hand_over`), once a batch is enough.
                    wrote = self._write_due()
                    with self._progress:
                        self._idle = not wrote
                except OSError as err:
                    self._fail(f"{err.strerror or err}" + (f": {shown(err.filename)}" if err.filename else ""))
                except Exception:  # mcp_nb's own bug: its traceback, once, and the calls stay in memory
                    log.exception("writing the history file %s failed", shown(self.folder))
                    self.failed = "mcp_nb's own error (its traceback is on the mcp_nb logger)"
                self.cpu_s += time.thread_time() - began
            if stopping:
                _writing.discard(self)
                with self._progress:
                    self._progress.notify_all()
                return
            if self._stopping:  # close() came while this round was under way: one more round writes what it missed
                self._poke.set()
            if self.failed is not None:
                self._idle = True  # nothing more will be written: sleep until close() pokes

    def _write_due(self) -> int:
        """Write every call recorded and not written, merging parts as they come; how many."""
        wrote = 0
        while True:
            n = self._write_batch()
            if n:
                self._merge()  # before the write is said done: in the time the recorder hands over
            self._publish()
            wrote += n
            if n < WRITE_MOST:
                return wrote

    def _write_batch(self) -> int:
        """Write the calls recorded and not yet taken (at most WRITE_MOST) as a part; how many."""
        batch = self.history.unwritten(self._taken, WRITE_MOST)
        if len(batch):
            first, last = batch.first, batch.first + len(batch) - 1
            table = disk.table(batch, self.session, self.scrub)
            disk.write_part(self.folder, disk.part_name(self.session, self.stream, first, last), table)
            self._parts.append((first, last, 0))
            if len(batch) <= KEPT_ROWS:
                self._tables[(first, last)] = table
            for row, fate in batch.fates.items():
                self.fates_written[first + row] = fate
        self._taken = batch.first + len(batch)
        return len(batch)

    def _publish(self) -> None:
        """Say that every call taken is written: to whoever waits, and to the history (its window)."""
        self._write_fates(self._taken)
        with self._progress:
            self.written = self._taken  # whoever waits for it (`History.sync`, `hand_over`) finds everything before it written
            self._progress.notify_all()
        self.history.kept(self)

    def _between(self) -> None:
        """Between the steps of a merge: write the batch a recorder waits for (`hand_over`). A large
        merge takes longer than a recorder waits; without this, calls went unwritten until it
        ended (3,008 of them, for 0.9 s, at a merge of 245,000 calls in a loop calling back to back)."""
        if self._due > self._taken:
            self._write_batch()
            self._publish()

    def _write_fates(self, upto: int) -> None:
        """A timed-out call's server side may end after its row was written: its fate, written again."""
        changed = []
        for seq, fate in self.history.fates(upto).items():
            if self.fates_written.get(seq) not in (None, fate):
                changed.append((seq, *fate))
        if not changed:
            return
        self._fates_parts += 1
        name = disk.fates_name(self.session, self.stream, self._fates_parts)
        disk.write_part(self.folder, name, disk.fates_table(self.session, changed, self.scrub))
        for seq, *fate in changed:
            self.fates_written[seq] = tuple(fate)

    def _merge(self) -> None:
        """Merge the last MERGE parts when they are of one size and follow each other, level by level."""
        parts = self._parts
        while len(parts) >= MERGE:
            tail = parts[-MERGE:]
            level = tail[0][2]
            if any(p[2] != level for p in tail) or any(b[0] != a[1] + 1 for a, b in zip(tail, tail[1:])):
                return
            first, last = tail[0][0], tail[-1][1]
            names = [disk.part_name(self.session, self.stream, a, b) for a, b, _ in tail]
            held = [self._tables.pop((a, b), None) for a, b, _ in tail]
            merged = disk.merge(self.folder, names, disk.part_name(self.session, self.stream, first, last),
                                None if any(t is None for t in held) else held, self._between)  # fmt: skip
            at = parts.index(tail[0])  # parts written meanwhile (`_between`) follow the merged ones
            parts[at : at + MERGE] = [(first, last, level + 1)]
            if merged.num_rows <= KEPT_ROWS:
                self._tables[(first, last)] = merged

    def _fail(self, why: str) -> None:
        with self._progress:
            self.failed = why
            self._progress.notify_all()
        log.warning(
            "the history file %s cannot be written (%s): calls are kept in this kernel's memory only, none lost; "
            "set history_file again to the same path (or call History.keep again) to write what it lacks", shown(self.folder), why,
        )  # fmt: skip

    def flush(self, seq: int, timeout: float) -> bool:
        """Write now, and wait until every call before `seq` is written; False if writing failed or
        took longer than `timeout` seconds."""
        self._full.set()
        self._poke.set()
        with self._progress:
            self._progress.wait_for(lambda: self.written >= seq or self.failed is not None or not self._thread.is_alive(), timeout)
        return self.written >= seq

    def hold_back(self, behind: int) -> None:
        """Called by whoever recorded a call, `behind` calls ahead of what is written: past
        BEHIND_MOST, it waits (up to BEHIND_WAIT_S) until the writer is halfway back."""
        if behind > BEHIND_MOST and self.failed is None:
            self.flush(self.written + behind - BEHIND_MOST // 2, BEHIND_WAIT_S)

    def hand_over(self, waiting: int, seq: int) -> None:
        """Called by the thread that recorded a call (every call before `seq`), `waiting` calls now
        unwritten, outside the history's lock: when the writer must run now (the first call after a
        quiet spell wakes it; a due batch it has not taken GRACE calls later is written), wait for
        it, giving up the GIL.

        A thread that calls back to back (mcp_nb's loop running a sweep of an async tool) gives the
        GIL up at every step of its loop and takes it back at once. Another thread, woken
        meanwhile, is woken again at each of those moments and loses the race each time, as long as
        the loop runs: in CPython 3.11 a thread waiting for the GIL asks for it only after a switch
        interval (5 ms) in which nobody took it. Those futile wakes, hundreds a write, cost an
        async call 16 - 24 % more than the writer's own work; a write was put off for seconds
        (docs/performance.md). Waiting here, the recorder hands the GIL over: the writer runs at once,
        and the calls pay for its work only. A disk slower than LEND_S is not waited for.
        """
        if self.failed is not None or self._thread is threading.current_thread():
            return
        if waiting == 1:
            self._since, self._due_at = time.monotonic(), WRITE_AT
            if self._idle:
                with self._progress:
                    self._progress.wait_for(lambda: not self._idle or self.failed is not None, WAKE_S)
            return
        if waiting < self._due_at and time.monotonic() - self._since >= LATENCY_S:
            # The batch's first call waited LATENCY_S while calls kept coming (the writer's own
            # clock, QUIET_S, is for when they stop: the recording thread then leaves the GIL free).
            self._due_at = waiting
            self._full.set()
        if waiting == self._due_at:  # due: the writer may well take it by itself (a thread that waits for its calls leaves it the GIL)
            self._due = max(self._due, seq)  # and a merge under way writes it between its steps (`_between`)
        elif waiting == self._due_at + GRACE:  # it did not: hand the GIL over
            self._due = max(self._due, seq)
            self._full.set()
            self._poke.set()
            with self._progress:
                self._progress.wait_for(lambda: self.written >= seq or self.failed is not None, LEND_S)

    def describe(self) -> dict[str, Any]:
        return {"folder": str(self.folder), "session": self.session, "stream": self.stream, "written": self.written - self.start,
                "failed": self.failed, "parts": len(self._parts), "cpu_s": self.cpu_s}  # fmt: skip
