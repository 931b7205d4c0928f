"""The history's DataFrame, from its columns: those still in memory and those read back from its file.

Both halves arrive coded the same way (`Coded`): vocabularies as small integer codes with
their lists of names, nested values as Python objects, times as int64 nanoseconds. Joining
them is remapping the codes of one half onto the other's names and concatenating arrays, so
a frame of ten million calls is built from arrays, never row by row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcp_nb.records.outcome import CAUSES, FATES, OUTCOMES, TARGETS, VIAS, Outcome

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

_NO_FLAG = 2
VOCABULARIES = ("name", "server", "worker", "client", "session")  # columns coded by a list of names of their own


@dataclass
class Coded:
    """Columns of calls, coded: see the module's docstring. `seq` counts the calls of one kernel's
    history (a reopened file's rows keep the numbers they were written with)."""

    columns: dict[str, np.ndarray]
    names: dict[str, list[str]] = field(default_factory=dict)  # vocabulary column -> its names

    def __len__(self) -> int:
        return len(self.columns["call_id"])


def join(first: Coded, then: Coded) -> Coded:
    """`first`'s rows, then `then`'s, coded by one list of names per vocabulary."""
    import numpy as np

    if not len(first):
        return then
    if not len(then):
        return first
    names = {}
    remapped = dict(first.columns)
    for column in VOCABULARIES:
        ours = list(then.names[column])
        position = {name: i for i, name in enumerate(ours)}
        for name in first.names[column]:
            if name not in position:
                position[name] = len(ours)
                ours.append(name)
        mapping = np.array([position[name] for name in first.names[column]] + [-1], dtype=np.int64)
        remapped[column] = mapping[first.columns[column]]  # -1 (missing) picks the last entry, -1
        names[column] = ours
    columns = {key: np.concatenate([remapped[key], then.columns[key]]) for key in then.columns}
    return Coded(columns, names)


def overlay(coded: Coded, seqs: dict[int, Outcome]) -> None:
    """Timed-out calls still watched (by seq): their server side may have logged, reported progress
    or ended since they were recorded, so their fate columns are read from them now."""
    import numpy as np

    if not seqs or not len(coded):
        return
    columns = coded.columns
    for name in ("logs", "progress", "fate", "fate_outcome", "fate_cause", "fate_after"):
        columns[name] = columns[name].copy()  # never write into an array the store keeps
    where = np.searchsorted(columns["seq"], list(seqs))
    for row, (seq, o) in zip(where.tolist(), seqs.items()):
        if row >= len(columns["seq"]) or columns["seq"][row] != seq:
            continue
        columns["logs"][row] = tuple(o.server_logs)
        columns["progress"][row] = o.progress
        columns["fate"][row] = _code(FATES, o.server_fate)
        columns["fate_outcome"][row] = _code(OUTCOMES, o.fate_outcome)
        columns["fate_cause"][row] = _code(CAUSES, o.fate_cause)
        after = o.fate_after_ms
        columns["fate_after"][row] = np.nan if after is None else after


def _code(vocabulary: tuple[str, ...], value: str | None) -> int:
    return -1 if value is None else vocabulary.index(value)


def fate_of(o: Outcome) -> tuple[Any, ...]:
    """What a timed-out call's row says of its server side, as the file keeps it."""
    return (o.server_fate, o.fate_outcome, o.fate_cause, o.fate_after_ms, tuple(o.server_logs), o.progress)


def build(coded: Coded, columns: tuple[str, ...]) -> pd.DataFrame:
    """The tidy frame: one row per call, the columns `columns` names (`mcp_nb.COLUMNS`)."""
    import numpy as np
    import pandas as pd

    c = coded.columns
    n = len(coded)
    flags = c["is_error"].astype(np.int8)

    def category(codes: np.ndarray, categories: list[str] | tuple[str, ...]) -> pd.Categorical:
        return pd.Categorical.from_codes(codes.astype(np.int64), categories=list(categories))

    names = coded.names
    return pd.DataFrame(
        {
            "call_id": c["call_id"].astype(np.int64),
            "attempt": c["attempt"].astype(np.int32),
            "target": category(c["target"], TARGETS),
            "name": category(c["name"], names["name"]),
            "server": category(c["server"], names["server"]),
            "worker": category(c["worker"], names["worker"]),
            "arguments": c["arguments"],
            "outcome": category(c["outcome"], OUTCOMES),
            "cause": category(c["cause"], CAUSES),
            # object, not pandas 3's inferred `str`: None stays None, and no conversion pass
            "content": pd.Series(c["content"], dtype=object, copy=False),
            "structured_content": c["structured"],
            "is_error": pd.arrays.BooleanArray(flags == 1, flags == _NO_FLAG),
            "code": pd.array(c["code"].astype(np.float64), dtype="Int64"),
            "message": pd.Series(c["message"], dtype=object, copy=False),
            "data": c["data"],
            "server_logs": c["logs"],
            "elicitations": c["elicitations"],
            "samplings": c["samplings"],
            "protocol": pd.Series(c["protocol"], dtype=object, copy=False),
            "started_at": pd.to_datetime(c["started_ns"].astype(np.int64), unit="ns", utc=True),
            "duration_ms": c["duration"].astype(np.float64),
            "timeout_s": c["timeout"].astype(np.float64),
            "backoff_s": c["backoff"].astype(np.float64),
            "server_fate": category(c["fate"], FATES),
            "fate_outcome": category(c["fate_outcome"], OUTCOMES),
            "fate_cause": category(c["fate_cause"], CAUSES),
            "fate_after_ms": c["fate_after"].astype(np.float64),
            "via": category(c["via"], VIAS),
            "client": category(c["client"], names["client"]),  # -1 codes read as missing: mcp_nb's own calls
            "progress": np.fromiter(map(len, c["progress"]), dtype=np.int64, count=n),
            "deadline_resets": c["resets"].astype(np.int64),
            "max_timeout_s": c["max_timeout"].astype(np.float64),
            "retry": c["retry"],
            "session": category(c["session"], names["session"]),
            "recorded_at": pd.to_datetime(c["recorded_ns"].astype(np.int64), unit="ns", utc=True),
        },
        columns=list(columns),
    )
