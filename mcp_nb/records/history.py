"""Every call, kept column by column, and the tidy DataFrame built from it.

One row per call, one column per variable. Recording a call is one append of its row
(a tuple of the Outcome's column values) to a short pending list; every thousand calls
that list is turned into column chunks at once (typed arrays for numbers, small integer
codes for the vocabularies, object arrays for the rest). So recording stays cheap on the call path,
and `to_frame()` on a million calls concatenates arrays instead of walking a million
objects. Views such as `summary()` are computed from the frame; nothing is stored twice.
"""

from __future__ import annotations

import json
import logging
import threading
import warnings
from collections import deque
from typing import TYPE_CHECKING, Any, Callable

from mcp_nb.config import settings
from mcp_nb.records.cases import CallsLeftOut, LeftOut, from_frame, save
from mcp_nb.records.listeners import Listeners
from mcp_nb.records.outcome import (
    CAUSES,
    FATES,
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
)

_OUTCOME_CODE = {name: i for i, name in enumerate(OUTCOMES)}
_CAUSE_CODE = {name: i for i, name in enumerate(CAUSES)}
_TARGET_CODE = {name: i for i, name in enumerate(TARGETS)}
_VIA_CODE = {name: i for i, name in enumerate(VIAS)}
_NO_FLAG = 2  # is_error code for "no result, so no flag"
CHUNK = 1024
_STORED = ("call_id", "attempt", "backoff", "server", "worker", "target", "name", "arguments", "outcome", "cause", "content", "structured",
           "is_error", "code", "message", "data", "logs", "elicitations", "samplings", "protocol", "started", "duration", "timeout", "via", "client",
           "progress", "resets", "max_timeout", "retry")  # fmt: skip
# The numeric columns' types (numpy's names); the others are object columns.
_DTYPES = {"call_id": "int64", "attempt": "int32", "backoff": "float64", "server": "int64", "worker": "int64",
           "target": "int8", "name": "int64", "outcome": "int8", "cause": "int8", "is_error": "int8", "code": "float64",
           "started": "float64", "duration": "float64", "timeout": "float64", "via": "int8", "client": "int64",
           "resets": "int32", "max_timeout": "float64"}  # fmt: skip
_NO_CODE = float("nan")  # the code column of a call that got none
_EMPTY: tuple = ()

# numpy and pandas are imported where they are used, not with this module: `import mcp_nb`
# (every kernel's `%load_ext mcp_nb`) need not pay for them before a history is looked at.
if TYPE_CHECKING:
    import numpy as np
    import pandas as pd


def _objects(values: list) -> np.ndarray:
    import numpy as np

    out = np.empty(len(values), dtype=object)
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

    Replaced whole by `clear()`, so a reader never sees a half-cleared store.
    """

    def __init__(self) -> None:
        self.chunks: dict[str, list[np.ndarray]] = {column: [] for column in _STORED}
        self.rows = 0  # rows in the chunks
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
            _NO_CODE if o.max_timeout_s is None else o.max_timeout_s, o.retry,
        ))  # fmt: skip

    def flush(self) -> None:
        rows, self.pending = self.pending, []
        if not rows:
            return
        import numpy as np

        chunks = self.chunks
        for name, values in zip(_STORED, zip(*rows)):
            dtype = _DTYPES.get(name)
            chunks[name].append(_objects(values) if dtype is None else np.array(values, dtype=dtype))
        self.rows += len(rows)

    def column(self, name: str, dtype) -> np.ndarray:
        import numpy as np

        parts = self.chunks[name]
        if not parts:
            return np.empty(0, dtype=dtype)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _asked(question) -> dict[str, Any]:
    """A question and its answer as the history keeps it: with its schema, which says what a
    saved case must not write down (a field marked as a secret)."""
    return {**question.as_dict(), "schema": question.schema}


class History:
    """The call history of this kernel. Thread-safe; every call is recorded, whatever its outcome."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._store = _Store()
        self._listeners = Listeners("history listener")
        self._later: deque[Callable[[], Outcome]] = deque()  # calls answered, their Outcomes not built yet
        # Taken before `_lock`, never after it; re-entrant, as a listener that reads the
        # history while a call is being settled settles the next ones itself.
        self._settling = threading.RLock()
        self._in_settle = 0  # threads inside `settle` (changed only while holding `_settling`)

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
            if len(store.pending) >= CHUNK:
                store.flush()
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
        with self._lock:  # a flush moves rows from `pending` to the chunks: never read halfway
            store = self._store
            return store.rows + len(store.pending)

    def clear(self) -> None:
        """Forget every recorded call."""
        self.settle()
        with self._lock:
            self._store = _Store()
        if self._listeners:
            self._listeners(None)

    def to_frame(self) -> pd.DataFrame:
        """One row per call; the columns are listed in `mcp_nb.COLUMNS` and docs/guide.md."""
        import numpy as np
        import pandas as pd

        self.settle()
        with self._lock:
            s = self._store
            s.flush()
            columns = {name: s.column(name, object) for name in _STORED}
            names = list(s.names)
            servers = list(s.servers)
            workers = list(s.workers)
            clients = list(s.clients)
            timeouts = dict(s.timeouts)
        n = len(columns["call_id"])
        if timeouts:
            columns["logs"] = columns["logs"].copy()  # never write into the stored chunk
        if timeouts:
            columns["progress"] = columns["progress"].copy()
        for row, o in timeouts.items():
            # A timed-out call's server side may have logged (or reported progress) since it was recorded.
            columns["logs"][row] = tuple(o.server_logs)
            columns["progress"][row] = o.progress
        fate = np.full(n, None, dtype=object)
        fate_outcome = np.full(n, None, dtype=object)
        fate_cause = np.full(n, None, dtype=object)
        fate_after = np.full(n, np.nan)
        for row, o in timeouts.items():
            fate[row], fate_outcome[row], fate_cause[row] = o.server_fate, o.fate_outcome, o.fate_cause
            after = o.fate_after_ms
            fate_after[row] = np.nan if after is None else after
        flags = columns["is_error"].astype(np.int8)

        def category(codes: np.ndarray, categories: list[str]) -> pd.Categorical:
            return pd.Categorical.from_codes(codes.astype(np.int64), categories=categories)

        return pd.DataFrame(
            {
                "call_id": columns["call_id"].astype(np.int64),
                "attempt": columns["attempt"].astype(np.int32),
                "target": category(columns["target"], list(TARGETS)),
                "name": category(columns["name"], names),
                "server": category(columns["server"], servers),
                "worker": category(columns["worker"], workers),
                "arguments": columns["arguments"],
                "outcome": category(columns["outcome"], list(OUTCOMES)),
                "cause": category(columns["cause"], list(CAUSES)),
                # object, not pandas 3's inferred `str`: None stays None, and no conversion pass
                "content": pd.Series(columns["content"], dtype=object, copy=False),
                "structured_content": columns["structured"],
                "is_error": pd.arrays.BooleanArray(flags == 1, flags == _NO_FLAG),
                "code": pd.array(columns["code"].astype(np.float64), dtype="Int64"),
                "message": pd.Series(columns["message"], dtype=object, copy=False),
                "data": columns["data"],
                "server_logs": columns["logs"],
                "elicitations": columns["elicitations"],
                "samplings": columns["samplings"],
                "protocol": pd.Series(columns["protocol"], dtype=object, copy=False),
                "started_at": pd.to_datetime(columns["started"].astype(np.float64), unit="s", utc=True),
                "duration_ms": columns["duration"].astype(np.float64),
                "timeout_s": columns["timeout"].astype(np.float64),
                "backoff_s": columns["backoff"].astype(np.float64),
                "server_fate": pd.Categorical(fate, categories=list(FATES)),
                "fate_outcome": pd.Categorical(fate_outcome, categories=list(OUTCOMES)),
                "fate_cause": pd.Categorical(fate_cause, categories=list(CAUSES)),
                "fate_after_ms": fate_after,
                "via": category(columns["via"], list(VIAS)),
                "client": category(columns["client"], clients),  # -1 codes read as missing: mcp_nb's own calls
                "progress": np.fromiter((len(events) for events in columns["progress"]), dtype=np.int64, count=n),
                "deadline_resets": columns["resets"].astype(np.int64),
                "max_timeout_s": columns["max_timeout"].astype(np.float64),
                "retry": columns["retry"],
            },
            columns=list(COLUMNS),
        )

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
        import pandas as pd

        return pd.DataFrame.from_records(records(row["structured_content"], key))

    def progress(self, call_id: int | None = None) -> pd.DataFrame:
        """The progress events of a call (every attempt of it), or of every call when `call_id` is None:
        call_id, attempt, progress, total, message, seconds since the request was sent."""

        self.settle()
        with self._lock:
            s = self._store
            s.flush()
            ids = s.column("call_id", object)
            attempts = s.column("attempt", object)
            events = s.column("progress", object)
            timeouts = dict(s.timeouts)
        rows = range(len(ids)) if call_id is None else [int(i) for i in (ids == call_id).nonzero()[0]]
        if call_id is not None and not rows:
            raise KeyError(f"no call #{call_id} in the history")
        return progress_frame(
            (int(ids[row]), int(attempts[row]), timeouts[row].progress if row in timeouts else events[row]) for row in rows
        )

    def summary(self) -> pd.DataFrame:
        """Calls per target and name × outcome, with totals."""
        return summarize(self.to_frame())

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

    def _repr_html_(self) -> str:
        return history_html(self.to_frame(), settings.history_rows)

    def __repr__(self) -> str:
        return history_text(self.to_frame(), settings.history_rows)

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(repr(self))


def summarize(frame: pd.DataFrame) -> pd.DataFrame:
    """Counts per (server, target, name) × outcome, every outcome type a column, plus totals."""
    import pandas as pd

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


def health(frame: pd.DataFrame, last: int = 20) -> pd.DataFrame:
    """Per (server, target, name), over its latest `last` calls: calls, attempts, failures,
    failure_rate, and the latest outcome and cause; the worst first.

    A call is counted once, by its final attempt (so a call that succeeded after two timeouts
    is a success), and `attempts` counts the attempts those calls took. A failure is a call
    whose final attempt is anything but `result`.
    """
    import pandas as pd

    if not isinstance(last, int) or isinstance(last, bool) or last < 1:
        raise BadValue(f"last must be a whole number >= 1, got {last!r}")
    keys = ["server", "target", "name"]
    columns = ["calls", "attempts", "failures", "failure_rate", "latest_outcome", "latest_cause"]
    if frame.empty:
        return pd.DataFrame(columns=keys + columns).set_index(keys)
    # Latest by start (call ids are given out as calls start), not by arrival: concurrent
    # calls finish in any order, and the view should not depend on it.
    ordered = frame.sort_values(["call_id", "attempt"], kind="stable")
    by_call = ordered.groupby("call_id", sort=False)
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
