"""The thread that keeps a History's calls in its file: a few hundred at a time, off the call path.

A call is recorded in memory as before (a tuple appended under the history's lock); the
keeper takes what was recorded since its last write, turns it into a part (an Arrow IPC
file) and writes it (records/disk.py). It writes as soon as WRITE_AT calls wait, and at most
LATENCY_S after the first of them was recorded, so a kernel killed at any moment loses at
most the calls of the last fraction of a second (and never more than about a thousand),
and what was written stays whole. Small parts are merged, MERGE at a time, into parts
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

from mcp_nb.history_file import shown
from mcp_nb.records import disk

if TYPE_CHECKING:
    from mcp_nb.records.history import History

LATENCY_S = 0.25  # the longest a recorded call waits before the write that keeps it begins
WRITE_AT = 512  # or as soon as this many calls wait
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
KEPT_ROWS = 8192  # the tables of parts this small (a write's, a first merge's) stay in memory for the merge that takes them
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
        self.session = disk.SESSION
        self.stream = next(_streams)
        self.start = start  # the seq of the first call this keeper writes
        self.written = start  # the seq of the next call to write
        self.scrub = scrub
        self.failed: str | None = None  # why writing stopped, once it has
        self.fates_written: dict[int, tuple] = {}  # seq -> the fate written for a timed-out call
        self._parts: list[tuple[int, int, int]] = []  # (first, last, level) of this stream's parts, in order
        self._tables: dict[tuple[int, int], Any] = {}  # (first, last) -> the table of a small part, until merged
        self._fates_parts = 0
        self.cpu_s = 0.0  # CPU seconds this thread spent writing (encoding, writing, merging): what the file costs the process
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
            self._poke.wait()
            stopping = self._stopping  # read before the write: it is the last only if it began after close()
            if not stopping:
                self._full.wait(LATENCY_S)
            self._poke.clear()
            self._full.clear()
            if self.failed is None:
                began = time.thread_time()
                try:
                    self._write_due()
                except OSError as err:
                    self._fail(f"{err.strerror or err}" + (f": {shown(err.filename)}" if err.filename else ""))
                except Exception:  # mcp_nb's own bug: its traceback, once, and the calls stay in memory
                    log.exception("writing the history file %s failed", shown(self.folder))
                    self.failed = "mcp_nb's own error (its traceback is on the mcp_nb logger)"
                self.cpu_s += time.thread_time() - began
            if stopping:
                _writing.discard(self)
                return
            if self._stopping:  # close() came while this round was under way: one more round writes what it missed
                self._poke.set()

    def _write_due(self) -> None:
        while True:
            batch = self.history.unwritten(self.written, WRITE_MOST)
            written = batch.first + len(batch)
            if len(batch):
                first, last = batch.first, written - 1
                table = disk.table(batch, self.session, self.scrub)
                disk.write_part(self.folder, disk.part_name(self.session, self.stream, first, last), table)
                self._parts.append((first, last, 0))
                if len(batch) <= KEPT_ROWS:
                    self._tables[(first, last)] = table
                for row, fate in batch.fates.items():
                    self.fates_written[first + row] = fate
                self._merge()
            self._write_fates(written)
            self.written = written  # last: whoever waits for it (`History.sync`) finds everything written
            self.history.kept(self)
            if len(batch) < WRITE_MOST:
                return

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
                                None if any(t is None for t in held) else held)  # fmt: skip
            del parts[-MERGE:]
            parts.append((first, last, level + 1))
            if merged.num_rows <= KEPT_ROWS:
                self._tables[(first, last)] = merged

    def _fail(self, why: str) -> None:
        self.failed = why
        log.warning(
            "the history file %s cannot be written (%s): calls are kept in this kernel's memory only, none lost; "
            "set history_file again to retry", shown(self.folder), why,
        )  # fmt: skip

    def flush(self, seq: int, timeout: float) -> bool:
        """Write now, and wait until every call before `seq` is written; False if writing failed or
        took longer than `timeout` seconds."""
        deadline = time.monotonic() + timeout
        self._full.set()
        self._poke.set()
        while self.written < seq and self.failed is None and self._thread.is_alive():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)
        return self.written >= seq

    def describe(self) -> dict[str, Any]:
        return {"folder": str(self.folder), "session": self.session, "stream": self.stream, "written": self.written - self.start,
                "failed": self.failed, "parts": len(self._parts), "cpu_s": self.cpu_s}  # fmt: skip
