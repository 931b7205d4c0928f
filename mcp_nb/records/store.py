"""Every call of a History, kept column by column.

Recording a call is one append of its row (a tuple of the Outcome's column values, the
vocabularies already coded) to a short pending list; every CHUNK calls that list is turned into
column chunks at once: typed arrays for numbers, small integer codes for the vocabularies,
object arrays for the rest. So recording stays cheap on the call path, and a frame of a million
calls concatenates arrays instead of walking a million objects.

A row holds plain values only (numbers, strings, the arguments and results as they came), so
Python's cycle collector stops tracking it at its first pass instead of carrying thousands of
Outcome objects into its oldest generation, where every full collection would walk them again.
Only a timeout's Outcome is kept, for its trace (the server may still log, or finish).

The store is not thread-safe: its History holds a lock around it. numpy is imported at the
first chunk (`libraries.py`), not with this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from time import time
from typing import TYPE_CHECKING, Any, cast

from mcp_nb import libraries as lib
from mcp_nb.history_file import SESSION
from mcp_nb.records.frame import Coded, Column, nanoseconds
from mcp_nb.records.outcome import CAUSES, OUTCOMES, TARGETS, VIAS, Outcome

if TYPE_CHECKING:
    import numpy as np

    from mcp_nb.elicitation import Elicitation

CHUNK = 1024  # pending rows turned into column chunks at once
# A row's values, in order. Thirty at most: CPython compiles a tuple display of more than thirty
# items into a list built item by item (its compiler's STACK_USE_GUIDELINE), which made recording
# a call 0.15 µs slower. So two values hold two columns each, split when the rows become a chunk
# (`columns_of`): `kind`, the call's target and who made it (`via`), one small code; and `step`,
# the episode and turn of a call a model asked for, None (a constant) for any other call.
ROW = (
    "call_id",
    "attempt",
    "backoff",
    "server",
    "worker",
    "kind",
    "name",
    "arguments",
    "outcome",
    "cause",
    "content",
    "structured",
    "is_error",
    "code",
    "message",
    "data",
    "logs",
    "elicitations",
    "samplings",
    "protocol",
    "started",
    "duration",
    "timeout",
    "client",
    "progress",
    "resets",
    "max_timeout",
    "retry",
    "step",
    "recorded",
)
SPLIT = {"kind": ("target", "via"), "step": ("episode", "turn")}
STORED = tuple(column for value in ROW for column in SPLIT.get(value, (value,)))  # a chunk's columns
# The numeric columns' types (numpy's names); the others are object columns.
DTYPES = {
    "call_id": "int64",
    "attempt": "int32",
    "backoff": "float64",
    "server": "int64",
    "worker": "int64",
    "target": "int8",
    "name": "int64",
    "outcome": "int8",
    "cause": "int8",
    "is_error": "int8",
    "code": "float64",
    "started": "float64",
    "duration": "float64",
    "timeout": "float64",
    "via": "int8",
    "client": "int64",
    "resets": "int32",
    "max_timeout": "float64",
    "episode": "int64",
    "turn": "int32",
    "recorded": "float64",
}
NO_EPISODE = -1  # the episode and turn columns of a call no model asked for
NO_FLAG = 2  # is_error code for "no result, so no flag"
_NO_CODE = float("nan")  # the code column of a call that got none
_EMPTY: tuple[()] = ()
_OUTCOME_CODE = {name: i for i, name in enumerate(OUTCOMES)}
_CAUSE_CODE = {name: i for i, name in enumerate(CAUSES)}
# target -> via -> the `kind` code of the two
_KIND_CODE = {target: {via: t * len(VIAS) + v for v, via in enumerate(VIAS)} for t, target in enumerate(TARGETS)}


def objects(values: Sequence[Any]) -> np.ndarray:
    out = lib.numpy.empty(len(values), dtype=object)
    out[:] = values
    return out


def columns_of(rows: list[tuple[Any, ...]]) -> dict[str, np.ndarray]:
    """Rows (`ROW`) as the store's columns, one array per column (`STORED`)."""
    np = lib.numpy
    out: dict[str, np.ndarray] = {}
    for name, values in zip(ROW, zip(*rows)):
        if name == "kind":
            # read as int64: numpy converts Python ints to int8 several times slower (counted)
            target, via = np.divmod(np.array(values, dtype=np.int64), len(VIAS))
            out["target"], out["via"] = target.astype(np.int8), via.astype(np.int8)
            continue
        if name == "step":
            out["episode"], out["turn"] = steps(values)
            continue
        dtype = DTYPES.get(name)
        out[name] = objects(values) if dtype is None else np.array(values, dtype=dtype)
    return out


def steps(values: tuple[Any, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The rows' `step` values as their episode and turn columns (NO_EPISODE for a call no model asked for)."""
    np = lib.numpy
    n = len(values)
    episode = np.full(n, NO_EPISODE, dtype=DTYPES["episode"])
    turn = np.full(n, NO_EPISODE, dtype=DTYPES["turn"])
    if values.count(None) == n:
        return episode, turn
    for i, step in enumerate(values):
        if step is not None:
            episode[i], turn[i] = step
    return episode, turn


def empty(name: str) -> np.ndarray:
    return lib.numpy.empty(0, dtype=DTYPES.get(name, object))


class Vocabularies:
    """The names the rows' codes stand for: each dict maps a name to its code, in the order given.
    Only ever added to, so a list taken of one at any moment names every code given before it (a
    writer's thread reads them so, beside the recording thread that adds)."""

    __slots__ = ("names", "servers", "workers", "clients")

    def __init__(self) -> None:
        self.names: dict[str, int] = {}
        self.servers: dict[str, int] = {"kernel": 0}
        self.workers: dict[str, int] = {}  # dask workers' addresses; a call made in the kernel has none (-1)
        self.clients: dict[str, int] = {}  # an outside client's "name version" -> code (-1: no client)

    def lists(self) -> tuple[list[str], list[str], list[str], list[str]]:
        return list(self.names), list(self.servers), list(self.workers), list(self.clients)


class Store:
    """Column chunks, plus the calls not yet turned into columns. A row's index is its seq, counted
    from the History's first call: rows leave memory from the oldest (`drop_oldest`), never
    renumbered."""

    def __init__(self) -> None:
        self.chunks: dict[str, list[np.ndarray]] = {column: [] for column in STORED}
        self.rows = 0  # rows in the chunks, counting those dropped
        self.sizes: list[int] = []  # rows per chunk still in memory
        self.dropped = 0  # the oldest rows, no longer in memory: a history file holds them
        self.pending: list[tuple[Any, ...]] = []
        self.vocabularies = Vocabularies()
        self.timeouts: dict[int, Outcome] = {}  # seq -> Outcome, for the live server-fate columns

    @property
    def recorded(self) -> int:
        """How many calls were ever added: the seq the next one gets."""
        return self.rows + len(self.pending)

    def add(self, o: Outcome) -> tuple[Any, ...]:
        """Queue `o` as a row (`ROW`); returns the row."""
        if o.outcome == "timeout":
            self.timeouts[self.recorded] = o
        v = self.vocabularies
        names, servers, workers, clients = v.names, v.servers, v.workers, v.clients
        trace = o.trace
        row = (
            o.call_id,
            o.attempt,
            o.backoff_s,
            servers.setdefault(o.server, len(servers)),
            -1 if o.worker is None else workers.setdefault(o.worker, len(workers)),
            _KIND_CODE[o.target][o.via],
            names.setdefault(o.name, len(names)),
            o.arguments,
            _OUTCOME_CODE[o.outcome],
            _CAUSE_CODE[o.cause],
            o.content,
            o.structured_content,
            NO_FLAG if o.is_error is None else o.is_error,
            _NO_CODE if o.code is None else o.code,
            o.message,
            o.data,
            # What the server logged and reported is read now: only a timeout's trace can still
            # grow, and its Outcome is kept above for exactly that.
            tuple(trace.logs) if trace is not None and trace.logs else _EMPTY,
            tuple(_asked(e) for e in o.elicitations) if o.elicitations else _EMPTY,
            tuple(sampled.as_dict() for sampled in o.samplings) if o.samplings else _EMPTY,
            o.protocol,
            o.started,
            o.duration_ms,
            o.timeout_s,
            -1 if o.client is None else clients.setdefault(o.client, len(clients)),
            tuple(trace.progress) if trace is not None and trace.progress else _EMPTY,
            o.deadline_resets,
            _NO_CODE if o.max_timeout_s is None else o.max_timeout_s,
            o.retry,
            None if o.episode is None else (o.episode, -1 if o.turn is None else o.turn),
            time(),
        )
        self.pending.append(row)
        return row

    def flush(self) -> dict[str, np.ndarray] | None:
        """Turn the pending rows into a chunk of columns; returns the chunk (None: no row was pending)."""
        rows, self.pending = self.pending, []
        if not rows:
            return None
        chunk = columns_of(rows)
        for name, values in chunk.items():
            self.chunks[name].append(values)
        self.sizes.append(len(rows))
        self.rows += len(rows)
        return chunk

    def tail(self, start: int, most: int | None = None, fresh: bool = False) -> dict[str, np.ndarray]:
        """Every column from row `start` on (rows in the chunks, still in memory), at most `most` rows,
        reading only the chunks it needs. `fresh`: arrays of their own, never a chunk's (a frame
        written to must not write into the history)."""
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
                out[name] = empty(name)
                continue
            if len(picked) > 1:
                whole = lib.numpy.concatenate(picked)
            else:
                whole = picked[0].copy() if fresh else picked[0]
            out[name] = whole[offset:] if most is None else whole[offset : offset + most]
        return out

    def coded(self, start: int) -> Coded:
        """The rows from `start` on (in the chunks: flush first), coded as a history file's rows are
        read back (records/frame.py), so that the two join by their codes."""
        np = lib.numpy
        memory = self.tail(start, fresh=True)
        n = len(memory["call_id"])
        first = self.rows - n
        memory["started_ns"] = nanoseconds(memory.pop("started"))
        memory["recorded_ns"] = nanoseconds(memory.pop("recorded"))
        memory["session"] = np.zeros(n, dtype=np.int64)
        memory["seq"] = np.arange(first, first + n, dtype=np.int64)
        for name in ("fate", "fate_outcome", "fate_cause"):
            memory[name] = np.full(n, -1, dtype=np.int64)
        memory["fate_after"] = np.full(n, np.nan)
        names, servers, workers, clients = self.vocabularies.lists()
        return Coded(
            cast("dict[str, Column]", memory),
            {"name": names, "server": servers, "worker": workers, "client": clients, "session": [SESSION]},
        )

    def drop_oldest(self) -> int:
        """Forget the oldest chunk; returns how many rows it held."""
        size = self.sizes.pop(0)
        for parts in self.chunks.values():
            del parts[0]
        self.dropped += size
        return size

    def forget(self) -> None:
        """Let every call go: those in the chunks and those pending (seqs go on counting)."""
        self.rows += len(self.pending)
        self.pending = []
        self.chunks = {column: [] for column in STORED}
        self.sizes = []
        self.dropped = self.rows
        self.timeouts = {}

    def drop_before(self, seq: int, window: int, kept_from: int) -> None:
        """Forget the oldest chunks that end at or before `seq` (written to a file, or cleared without
        one) and either end at or before `kept_from` (cleared) or leave `window` rows in memory, the
        pending ones counted."""
        sizes = self.sizes
        while (
            sizes
            and self.dropped + sizes[0] <= seq
            and (self.dropped + sizes[0] <= kept_from or self.recorded - self.dropped - sizes[0] >= window)
        ):
            self.drop_oldest()


def _asked(question: Elicitation) -> dict[str, Any]:
    """A question and its answer as the history keeps it: with its schema, which says what a
    saved case must not write down (a field marked as a secret)."""
    return {**question.as_dict(), "schema": question.schema}
