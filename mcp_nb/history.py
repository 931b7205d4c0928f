"""Every call, kept column by column, and the tidy DataFrame built from it.

One row per call, one column per variable. Columns are stored as they arrive
(typed arrays for numbers, small integer codes for the vocabularies) so that
recording stays a few appends and `to_frame()` on a million calls is a matter of
wrapping arrays, not of walking a million objects. Views such as `summary()` are
computed from the frame; nothing is stored twice.
"""

from __future__ import annotations

import json
import threading
from array import array
from typing import Any

import numpy as np
import pandas as pd

from .outcome import CAUSES, FATES, OUTCOMES, TARGETS, Outcome

COLUMNS = (
    "call_id",
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
    "started_at",
    "duration_ms",
    "timeout_s",
    "server_fate",
    "fate_outcome",
    "fate_cause",
    "fate_after_ms",
)

_OUTCOME_CODE = {name: i for i, name in enumerate(OUTCOMES)}
_CAUSE_CODE = {name: i for i, name in enumerate(CAUSES)}
_TARGET_CODE = {name: i for i, name in enumerate(TARGETS)}
_NO_FLAG = 2  # is_error code for "no result, so no flag"


class _Store:
    """The raw columns; replaced whole by `clear()` so a snapshot never sees a half-cleared store."""

    def __init__(self) -> None:
        self.call_id = array("q")
        self.target = bytearray()
        self.name = array("l")
        self.names: dict[str, int] = {}
        self.arguments: list[Any] = []
        self.outcome = bytearray()
        self.cause = bytearray()
        self.content: list[Any] = []
        self.structured: list[Any] = []
        self.is_error = bytearray()
        self.code = array("d")
        self.message: list[Any] = []
        self.data: list[Any] = []
        self.traces: list[Any] = []
        self.started = array("d")
        self.duration = array("d")
        self.timeout = array("d")
        self.timeouts: dict[int, Outcome] = {}  # row -> Outcome, for the live server-fate columns


class History:
    """The call history of this kernel. Thread-safe; every call is recorded, whatever its outcome."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._store = _Store()

    def record(self, o: Outcome) -> None:
        # Keep a trace only where it says something: logs, or a timeout's late fate.
        trace = o.trace if (o.trace is not None and (o.trace.logs or o.outcome == "timeout")) else None
        with self._lock:
            s = self._store
            name_code = s.names.get(o.name)
            if name_code is None:
                name_code = s.names[o.name] = len(s.names)
            row = len(s.call_id)
            s.call_id.append(o.call_id)
            s.target.append(_TARGET_CODE[o.target])
            s.name.append(name_code)
            s.arguments.append(o.arguments)
            s.outcome.append(_OUTCOME_CODE[o.outcome])
            s.cause.append(_CAUSE_CODE[o.cause])
            s.content.append(o.content)
            s.structured.append(o.structured_content)
            s.is_error.append(_NO_FLAG if o.is_error is None else int(o.is_error))
            s.code.append(np.nan if o.code is None else o.code)
            s.message.append(o.message)
            s.data.append(o.data)
            s.traces.append(trace)
            s.started.append(o.started_at.timestamp())
            s.duration.append(o.duration_ms)
            s.timeout.append(o.timeout_s)
            if o.outcome == "timeout":
                s.timeouts[row] = o

    def __len__(self) -> int:
        return len(self._store.call_id)

    def clear(self) -> None:
        """Forget every recorded call."""
        with self._lock:
            self._store = _Store()

    def _snapshot(self) -> _Store:
        with self._lock:
            s, copy = self._store, _Store()
            n = len(s.call_id)
            copy.call_id = s.call_id[:n]
            copy.target, copy.name = s.target[:n], s.name[:n]
            copy.names = dict(s.names)
            copy.arguments, copy.outcome, copy.cause = s.arguments[:n], s.outcome[:n], s.cause[:n]
            copy.content, copy.structured, copy.is_error = s.content[:n], s.structured[:n], s.is_error[:n]
            copy.code, copy.message, copy.data = s.code[:n], s.message[:n], s.data[:n]
            copy.traces = s.traces[:n]
            copy.started, copy.duration, copy.timeout = s.started[:n], s.duration[:n], s.timeout[:n]
            copy.timeouts = dict(s.timeouts)
        return copy

    def to_frame(self) -> pd.DataFrame:
        """One row per call; the columns are listed in `mcp_nb.history.COLUMNS` and docs/guide.md."""
        s = self._snapshot()
        n = len(s.call_id)
        names = list(s.names)
        empty: tuple = ()

        def codes(buf: bytearray | array, categories) -> pd.Categorical:
            values = np.frombuffer(buf, dtype=np.int8 if isinstance(buf, bytearray) else np.int_) if n else []
            return pd.Categorical.from_codes(np.asarray(values, dtype=np.int64), categories=categories)

        def objects(values: list) -> np.ndarray:
            out = np.empty(n, dtype=object)
            out[:] = values
            return out

        flags = np.frombuffer(s.is_error, dtype=np.int8) if n else np.zeros(0, np.int8)
        fate = objects([None] * n)
        fate_outcome = objects([None] * n)
        fate_cause = objects([None] * n)
        fate_after = np.full(n, np.nan)
        for row, o in s.timeouts.items():
            fate[row], fate_outcome[row], fate_cause[row] = o.server_fate, o.fate_outcome, o.fate_cause
            after = o.fate_after_ms
            fate_after[row] = np.nan if after is None else after

        frame = pd.DataFrame(
            {
                "call_id": np.frombuffer(s.call_id, dtype=np.int64) if n else np.zeros(0, np.int64),
                "target": codes(s.target, list(TARGETS)),
                "name": pd.Categorical.from_codes(
                    np.frombuffer(s.name, dtype=np.dtype(f"i{s.name.itemsize}")).astype(np.int64)
                    if n
                    else np.zeros(0, np.int64),
                    categories=names,
                ),
                "arguments": objects(s.arguments),
                "outcome": codes(s.outcome, list(OUTCOMES)),
                "cause": codes(s.cause, list(CAUSES)),
                "content": objects(s.content),
                "structured_content": objects(s.structured),
                "is_error": pd.arrays.BooleanArray(flags == 1, flags == _NO_FLAG),
                "code": pd.array(np.frombuffer(s.code, dtype=np.float64) if n else np.zeros(0), dtype="Int64"),
                "message": objects(s.message),
                "data": objects(s.data),
                "server_logs": objects([tuple(t.logs) if t is not None else empty for t in s.traces]),
                "started_at": pd.to_datetime(
                    np.frombuffer(s.started, dtype=np.float64) if n else np.zeros(0), unit="s", utc=True
                ),
                "duration_ms": np.frombuffer(s.duration, dtype=np.float64) if n else np.zeros(0),
                "timeout_s": np.frombuffer(s.timeout, dtype=np.float64) if n else np.zeros(0),
                "server_fate": pd.Categorical(fate, categories=list(FATES)),
                "fate_outcome": pd.Categorical(fate_outcome, categories=list(OUTCOMES)),
                "fate_cause": pd.Categorical(fate_cause, categories=list(CAUSES)),
                "fate_after_ms": fate_after,
            },
            columns=list(COLUMNS),
        )
        return frame

    def summary(self) -> pd.DataFrame:
        """Calls per target and name × outcome, with totals."""
        return summarize(self.to_frame())

    # -- export ---------------------------------------------------------------------------------

    def to_records_frame(self) -> pd.DataFrame:
        """The frame with its nested columns (arguments, data, logs...) as JSON text, for files."""
        frame = self.to_frame()
        for column in ("arguments", "structured_content", "data"):
            frame[column] = [None if v is None else json.dumps(v, default=str) for v in frame[column]]
        frame["server_logs"] = [
            json.dumps([{"level": r.level, "logger": r.logger, "message": r.message, "traceback": r.traceback} for r in logs])
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

    # -- display --------------------------------------------------------------------------------

    def _repr_html_(self) -> str:
        from .config import settings
        from .display import history_html

        return history_html(self.to_frame(), settings.history_rows)

    def __repr__(self) -> str:
        from .config import settings
        from .display import history_text

        return history_text(self.to_frame(), settings.history_rows)

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(repr(self))


def summarize(frame: pd.DataFrame) -> pd.DataFrame:
    """Counts per (target, name) × outcome, every outcome type a column, plus totals."""
    counts = (
        frame.groupby(["target", "name", "outcome"], observed=True)
        .size()
        .unstack("outcome", fill_value=0)
        .reindex(columns=list(OUTCOMES), fill_value=0)
    )
    counts.columns = pd.Index(list(OUTCOMES), name="outcome")
    counts.index = pd.MultiIndex.from_tuples(
        [(str(t), str(n)) for t, n in counts.index], names=["target", "name"]
    )
    counts["total"] = counts.sum(axis=1)
    totals = pd.DataFrame([counts.sum(axis=0)], index=pd.MultiIndex.from_tuples([("total", "")], names=["target", "name"]))
    return pd.concat([counts, totals]).astype("int64")
