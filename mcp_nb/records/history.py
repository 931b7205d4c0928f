"""Every call of this kernel: the History, what recording, clearing, keeping a file and reading do.

One row per call, one column per variable. The calls are kept column by column
(records/store.py); `to_frame()` builds the tidy DataFrame from those columns and, with a history
file, from the calls read back from it (records/reading.py, records/frame.py); views such as
`summary()` are computed from the frame (records/tallies.py), nothing is stored twice.

With a history file, every call is also handed to a writer (records/writer.py) as it is recorded:
one append to its queue, under the lock that recording takes anyway. The writer never calls
back: the history reads how far it has written (`Writer.written`) when it turns pending rows
into a chunk, and lets the oldest calls leave memory once written and past the window.
`clear()` is a mark, never a new store: a call recorded beside it keeps its place, and is
written.

The episodes of a model in the loop (`mcp_nb/episodes/`) are kept here too (`episode_log`), one
plain tuple each (records/episode_log.py): their calls are rows like any other, with their
`episode` and `turn`, and `episodes()` reads the episodes themselves.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import warnings
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import IO, TYPE_CHECKING, Any

from mcp_nb import libraries as lib
from mcp_nb.config import DEFAULT_WINDOW, check_window, settings
from mcp_nb.history_file import SESSION, HistoryFileError, check_readable, check_writable, shown
from mcp_nb.mistakes import BadValue
from mcp_nb.records.cases import CallsLeftOut, Case, LeftOut, from_frame, save
from mcp_nb.records.episode_log import Ended, EpisodeLog
from mcp_nb.records.frame import Coded, build, collector_paused, fate_of, join, overlay
from mcp_nb.records.listeners import Listeners
from mcp_nb.records.outcome import Outcome, Printer, progress_frame
from mcp_nb.records.recovery import by_model, episodes_frame
from mcp_nb.records.store import CHUNK, Store
from mcp_nb.records.structured import NotTabular, records
from mcp_nb.records.surrogates import escape_surrogates
from mcp_nb.records.tallies import by_session, health, summarize
from mcp_nb.views.tables import history_html, history_text

# numpy and pandas are imported where they are used, not with this module: `import mcp_nb`
# (every kernel's `%load_ext mcp_nb`) need not pay for them before a history is looked at.
if TYPE_CHECKING:
    import pandas as pd

    from mcp_nb.records.writer import Writer

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
    "episode",
    "turn",
    "session",
    "recorded_at",
)

WINDOW = DEFAULT_WINDOW  # calls a history with a file keeps in memory, unless told otherwise
# The fewest pending calls turned into columns as the writer's batch falls due (records/writer.py,
# `built`): calls a few a second, each batch due on the writer's clock, would otherwise leave the
# store a chunk per call or two, which costs memory and every frame a concatenation.
SHARED = CHUNK // 4
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


def _without_surrogates(column: pd.Series) -> pd.Series:
    """`column` (of str and None, or categories of str) with each lone surrogate as its escape."""
    if isinstance(column.dtype, lib.pandas.CategoricalDtype):
        names = column.cat.categories.tolist()
        written = [escape_surrogates(name) if type(name) is str else name for name in names]
        if written == names:
            return column
        return column.astype(object).map(lambda v: escape_surrogates(v) if type(v) is str else v)
    values = column.tolist()
    written = [escape_surrogates(v) if type(v) is str else v for v in values]
    return column if written == values else lib.pandas.Series(written, index=column.index, dtype=object)


def _file() -> tuple[ModuleType, ModuleType]:
    """records/reading.py and records/writer.py, which read and write history files. They come with
    the first file set or read, and numpy and pyarrow with them (0.15 s): a history kept in memory
    never needs them."""
    from mcp_nb.records import reading, writer  # numpy and pyarrow: loaded with the first history file

    return reading, writer


def _episode_file() -> ModuleType:
    """records/episode_file.py, which writes a history file's episodes and reads them back: with the
    file's other modules, as they come."""
    from mcp_nb.records import episode_file  # pyarrow: loaded with the first history file

    return episode_file


class History:
    """The call history of this kernel. Thread-safe; every call is recorded, whatever its outcome.

    With a history file (`keep`, or the `history_file` setting for the kernel's own), every call
    is also written there as it is recorded, and memory keeps only the latest `window` calls;
    the others are read back from the file when a frame is asked for. `History.open(path)` reads
    a file back, every session's calls in one History.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._store = Store()
        self._listeners = Listeners("history listener")
        self._later: deque[Callable[[], Outcome]] = deque()  # calls answered, their Outcomes not built yet
        # Taken before `_lock`, never after it; re-entrant, as a listener that reads the
        # history while a call is being settled settles the next ones itself.
        self._settling = threading.RLock()
        self._in_settle = 0  # threads inside `settle` (changed only while holding `_settling`)
        self._hidden = 0  # the seq of the first call shown: those before it were cleared (and written, with a file)
        self._writer: Writer | None = None
        self._unsent: int | None = None  # the first call the writer's queue had no room for: handed over later
        self._streams: set[int] = set()  # the streams of this history's writers: a seq is in one of them only
        self._window = WINDOW
        self._on_disk: list[_Segment] = []  # where the calls no longer in memory are, oldest first
        self._opened: Path | None = None  # a history file read back (`History.open`)
        self._said: set[str] = set()  # what was said once about the file
        self._keeping = threading.Lock()  # held while the file is set or unset
        self.episode_log = EpisodeLog()  # the episodes whose calls this history records (`record_episode`)

    # -- a history file ---------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> History:
        """Every session's calls in the history file at `path`, as one History (`to_frame()`,
        `summary(by="session")`, `to_cases()`...); it reads the file anew whenever it is asked.

        A file that is missing, unreadable, not a history file or from a newer mcp_nb raises
        `HistoryFileError` in one line. A part cut short (the disk filled, the machine lost power
        while it was written) or that is not a regular file is said in one line, as a
        `HistoryFileWarning`, and left out; the other calls are kept."""
        folder = check_readable(path)
        reading, writer = _file()
        writer.flush_all(folder)  # this kernel's own calls, written up to now
        problems: list[str] = []
        reading.opened(folder, problems)
        history = cls()
        history._opened = folder
        history._report(problems, stacklevel=3)
        return history

    @property
    def file(self) -> Path | None:
        """The history file this history is written to, or read from; None when it has none."""
        writer = self._writer
        return self._opened if writer is None else writer.folder

    @property
    def in_memory(self) -> int:
        """How many of its calls this history holds in memory now (with a history file, the latest
        `history_window` or so; the others are read back from the file when asked for)."""
        with self._lock:
            store = self._store
            return store.recorded - max(store.dropped, self._hidden)

    def keep(
        self, path: str | os.PathLike[str] | None, window: int | None = None, scrub: Callable[[str], str] | None = None
    ) -> None:
        """Write every call of this history to the history file at `path`: those in memory now that it
        lacks, then each as it is recorded; None stops writing. Memory then keeps the latest `window`
        calls. Set to the same path after a write failed, it writes what the file lacks.

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
        old = self._writer
        if old is not None and folder == old.folder and old.failed is None:
            return
        self._stop_writing()
        if folder is None:
            return
        reading, writing = _file()
        store = self._store
        with self._lock:
            start = store.dropped  # the first call still in memory
            streams = set(self._streams)
        try:
            writer = writing.Writer(folder, reading.lacking(folder, streams, start), store.vocabularies, scrub or _nothing_secret)
        except OSError as err:
            raise HistoryFileError(f"cannot keep the history in {shown(folder)}: {err.strerror or err}") from None
        with self._lock:
            store.flush()
            if store.rows > writer.start:  # what memory holds and the file lacks is written first
                writer.put_columns(store.tail(writer.start), {seq: o for seq, o in store.timeouts.items() if seq >= writer.start})
            self._writer, self._unsent = writer, None
            self._streams.add(writer.stream)
            self._on_disk.append(_Segment(folder, start, start))
            due = writer.falls_due()
        writer.recorded(due)

    def close(self) -> None:
        """Write what is left to the history file and stop writing to it (calls are recorded in memory
        from then on; those written stay readable). `mcp_nb.reset()` closes the kernel's history."""
        with self._keeping:
            self._stop_writing()

    def sync(self, timeout: float = 10.0) -> bool:
        """Wait until every call recorded so far is in the history file; False if it could not be
        (writing failed, or took longer than `timeout` seconds). True at once without a file."""
        self.settle()
        with self._lock:
            writer = self._writer
            if writer is None:
                return True
            self._hand_unsent(writer)
            upto = self._store.recorded
        done = writer.flush(upto, timeout)
        with self._lock:
            if writer is self._writer:
                self._let_go(writer)
        return done

    def _stop_writing(self) -> None:
        with self._lock:
            writer = self._writer
            if writer is None:
                return
            self._hand_unsent(writer)
            self._writer, self._unsent = None, None  # calls recorded from now on stay in memory (a later file gets them)
        writer.close()
        with self._lock:
            self._let_go(writer)

    def _hand_unsent(self, writer: Writer) -> None:
        """Hand the writer the calls its queue had no room for (the caller holds the lock)."""
        start = self._unsent
        if start is None or writer.failed is not None:
            return
        store = self._store
        store.flush()
        writer.put_columns(store.tail(start), {seq: o for seq, o in store.timeouts.items() if seq >= start})
        self._unsent = None

    def _let_go(self, writer: Writer) -> None:
        """Forget the oldest chunks `writer` wrote that are cleared or past the window (the caller holds
        the lock); and the Outcome of a timed-out call gone from memory whose final fate is written."""
        store = self._store
        store.drop_before(writer.written, self._window, self._hidden)
        segment = self._on_disk[-1]
        segment.last = max(segment.last, store.dropped)
        for seq in [seq for seq in store.timeouts if seq < store.dropped]:
            fate = writer.fates_written.get(seq)
            if fate is not None and fate[0] != "running" and fate == fate_of(store.timeouts[seq]):
                del store.timeouts[seq]

    def _say_once(self, what: str, text: str) -> None:
        """Say `text` in one line, a HistoryFileWarning, the first time only that `what` happens."""
        if what in self._said:
            return
        self._said.add(what)
        warnings.warn(text, HistoryFileWarning, stacklevel=3)

    def _report(self, problems: list[str], stacklevel: int = 2) -> None:
        """Say, once each, in one line, which parts of the file were left out, and why."""
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
            f"kept: {listed}",
            HistoryFileWarning,
            stacklevel=stacklevel + 1,
        )

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
            row = store.add(o)
            writer = self._writer
            due = False
            if writer is not None:  # handed over as recorded: one append to its queue
                if self._unsent is None:
                    if not writer.put(row, o if o.outcome == "timeout" else None):
                        self._unsent = store.recorded - 1
                elif writer.room():
                    self._hand_unsent(writer)
                due = writer.falls_due()
            if len(store.pending) >= (SHARED if due else CHUNK):
                self._flush(writer)
        if writer is not None:  # outside the lock: it may lend the writer the GIL
            writer.recorded(due)
        if self._listeners:
            self._listeners(o)  # one that fails is logged: a broken view never loses a call or breaks the loop

    def _flush(self, writer: Writer | None) -> None:
        """Turn the pending rows into columns (the caller holds the lock). With a file, also as the
        writer's batch of SHARED calls or more falls due: the writer takes the columns of its batch
        as the store made them, not building them a second time on its thread (the rows stay queued:
        it builds any it takes before the store made them, and a small batch's)."""
        store = self._store
        first = store.rows
        chunk = store.flush()
        if writer is not None:
            if chunk is not None:
                writer.built(first, chunk)
            self._let_go(writer)

    def record_episode(self, episode: Ended) -> None:
        """Keep an episode of a model in the loop as it ends (anything with `id` and `kept()`, as
        `mcp_nb.Episode` has), once: its calls are recorded as they are made. With a history file,
        the episode is written there too (records/episode_file.py)."""
        kept = self.episode_log.record(episode)
        writer = self._writer
        if kept is None or writer is None or writer.failed is not None:
            return
        try:
            _episode_file().write(writer.folder, writer.session, kept, writer.scrub)
        except OSError as err:  # the episode stays in memory; the file's calls go on being written
            self._say_once(
                "episode not written",
                f"episode {kept[0]} was not written to {shown(writer.folder)}: {err.strerror or err}; it is kept in memory",
            )

    def subscribe(self, listener: Callable[[Outcome | None], object]) -> None:
        """Call `listener(outcome)` after every recorded call, and `listener(None)` after `clear()`.

        Listeners run on the thread that recorded the call (mcp_nb's loop thread for calls):
        keep them short, and hand any real work elsewhere. A bound method is held weakly (a
        view that is gone stops listening by itself); a function is held until `unsubscribe`.
        """
        self._listeners.add(listener)

    def unsubscribe(self, listener: Callable[[Outcome | None], object]) -> None:
        self._listeners.remove(listener)

    def __len__(self) -> int:
        self.settle()
        if self._opened is not None:
            reading, writer = _file()
            writer.flush_all(self._opened)  # a file this kernel writes: every call made so far
            problems: list[str] = []
            count: int = reading.count(self._opened, problems)
            self._report(problems)
            return count
        with self._lock:
            return self._store.recorded - self._hidden

    def clear(self) -> None:
        """Forget every recorded call, and every episode that ended. A mark, not a new store: the calls
        before it are no longer shown; without a history file they leave memory now, with one once
        they are written (none lost, whatever is recorded meanwhile). An episode still running is
        kept when it ends, with its calls made after the mark."""
        self.settle()
        self.episode_log.clear()
        with self._lock:
            store = self._store
            self._hidden = store.recorded
            writer = self._writer
            if writer is None:
                store.forget()
            else:
                self._let_go(writer)
        if self._listeners:
            self._listeners(None)

    # -- reading ----------------------------------------------------------------------------------

    def _coded(self, columns: list[str] | None = None, last: int | None = None) -> Coded:
        """Every call of this history (the `last` ones), coded (records/frame.py): those read back from
        the file, then those in memory; of the file, only the tidy `columns` named (all when None)."""
        self.settle()
        with self._lock:
            s = self._store
            s.flush()
            shown = max(s.dropped, self._hidden)
            coded = s.coded(max(shown, s.rows - last) if last is not None else shown)
            timeouts = dict(s.timeouts)
            streams = frozenset(self._streams)
            segments = [(g.folder, max(g.first, self._hidden), g.last) for g in self._on_disk if g.last > self._hidden]
        wanted = None if last is None else last - len(coded)  # rows still to read from the file, newest first
        if (segments or self._opened is not None) and (wanted is None or wanted > 0):
            reading, writer = _file()
            problems: list[str] = []
            with collector_paused():
                if segments:
                    older = reading.segments(segments, streams, columns, wanted, problems)
                    if older.columns:
                        coded = join(older, coded)
                        wanted = None if wanted is None else wanted - len(older)
                if self._opened is not None and (wanted is None or wanted > 0):
                    writer.flush_all(self._opened)  # a reopened file this kernel writes: every call made so far
                    coded = join(reading.read(self._opened, None, None, columns, wanted, problems), coded)
            self._report(problems)
        overlay(coded, timeouts)
        return coded

    def to_frame(self, last: int | None = None, columns: list[str] | None = None) -> pd.DataFrame:
        """One row per call; the columns are listed in `mcp_nb.COLUMNS` and docs/outcomes.md.

        With a history file, `last=N` (only the latest N calls) and `columns=[...]` (only those)
        read no more of the file than they need."""
        if last is not None and (isinstance(last, bool) or not isinstance(last, int) or last < 0):
            raise BadValue(f"last must be a whole number >= 0, got {last!r}")
        chosen = list(COLUMNS) if columns is None else list(columns)
        unknown = [c for c in chosen if c not in COLUMNS]
        if unknown:
            raise BadValue(f"unknown column(s) {', '.join(map(repr, unknown))}; the history's columns are mcp_nb.COLUMNS")
        with collector_paused():
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

    def episodes(self) -> pd.DataFrame:
        """One row per episode of a model in the loop that ended, in the order they ended: its task,
        model, turns, calls, failures by outcome, what the model did after each failure (`recovered`,
        `repeated`, `retried`, `switched`, `gave_up`, `cut_short`), how it ended (`stop`), its
        duration and the tokens its model reported. Its calls are the rows of `to_frame()` with its
        `episode` number. A history read back from a file (`History.open`) has every session's."""
        if self._opened is None:
            return episodes_frame(dict(row, session=SESSION) for row in self.episode_log.rows())
        problems: list[str] = []
        rows = _episode_file().read(self._opened, problems)
        if problems:
            self._say_once(
                "episodes left out", f"{shown(self._opened)}: {len(problems)} episode file(s) left out: {'; '.join(problems[:3])}"
            )
        return episodes_frame(rows)

    def summary(self, by: str | None = None) -> pd.DataFrame:
        """Calls per target and name × outcome, with totals. `by="session"`: the sessions side by
        side (a reopened history file's kernels, before and after a change): per tool, each
        session's outcome counts and its median and 90th-percentile durations. `by="episode"`: the
        episodes per model and task: how they ended, their failures, what followed each, and the
        recovery rate (of the failures, those recovered)."""
        if by is None:
            return summarize(self.to_frame())
        if by == "session":
            return by_session(self.to_frame())
        if by == "episode":
            return by_model(self.episodes())
        raise BadValue(f"summary(by=...) takes 'session' or 'episode' (or None), got {by!r}")

    def health(self, last: int = 20) -> pd.DataFrame:
        """Failure rate per name over its last `last` calls (a retried call counts once, by its
        final attempt; `attempts` says how many it took): which tools keep failing."""
        return health(self.to_frame(), last)

    # -- export ---------------------------------------------------------------------------------

    def to_records_frame(self) -> pd.DataFrame:
        """The frame with its nested columns (arguments, data, logs...) as JSON text, for files. A
        lone surrogate (which no UTF-8 file holds) in a text or a name is written as its escape
        (`\\ud800`); in the JSON text, as JSON writes it, which reads back as the same str."""
        frame = self.to_frame()
        for column in ("content", "message", "protocol", "name", "server", "worker", "client"):
            if column in frame.columns:
                frame[column] = _without_surrogates(frame[column])
        for column in ("arguments", "structured_content", "data", "retry"):
            frame[column] = [None if v is None else json.dumps(v, default=str) for v in frame[column]]
        frame["elicitations"] = [json.dumps(list(asked), default=str) for asked in frame["elicitations"]]
        frame["samplings"] = [json.dumps(list(sampled), default=str) for sampled in frame["samplings"]]
        frame["server_logs"] = [
            json.dumps(
                [
                    {
                        "level": r.level,
                        "logger": r.logger,
                        "message": r.message,
                        "traceback": r.traceback,
                        "source": r.source,
                        "at": r.at,
                    }
                    for r in logs
                ]
            )
            for logs in frame["server_logs"]
        ]
        return frame

    def to_csv(self, path: str | os.PathLike[str] | IO[str], **kwargs: Any) -> str | None:
        return self.to_records_frame().to_csv(path, index=False, **kwargs)

    def to_json(self, path: str | os.PathLike[str] | IO[str], **kwargs: Any) -> str | None:
        kwargs.setdefault("orient", "records")
        kwargs.setdefault("date_format", "iso")
        return self.to_records_frame().to_json(path, **kwargs)

    def to_parquet(self, path: str | os.PathLike[str] | IO[bytes], **kwargs: Any) -> bytes | None:
        return self.to_records_frame().to_parquet(path, index=False, **kwargs)

    def to_cases(
        self,
        path: str | os.PathLike[str],
        *,
        last: int | None = None,
        name: str | None = None,
        server: str | None = None,
        replayed: bool = False,
        left_out: list[LeftOut] | None = None,
    ) -> list[Case]:
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
            warnings.warn(
                f"{len(found)} call{'s' if len(found) != 1 else ''} left out of {path}: {listed}", CallsLeftOut, stacklevel=2
            )
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
            values[len(frame) - len(texts) :] = texts[column].to_numpy(dtype=object)
            frame[column] = values
        return frame

    def _repr_html_(self) -> str:
        return history_html(self._shown(), settings.history_rows)

    def __repr__(self) -> str:
        return history_text(self._shown(), settings.history_rows)

    def _repr_pretty_(self, printer: Printer, cycle: bool) -> None:
        printer.text(repr(self))
