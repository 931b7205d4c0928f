"""Calls as a history file's part: the tidy columns in Arrow, their vocabularies as dictionaries,
nested values as JSON text, every secret the engine knows scrubbed.

One row per call in the tidy columns of `History.to_frame()`, plus `session` (one id per kernel
start), `seq` (the call's place in what its kernel recorded) and `recorded_at` (when it was
recorded). Nested values (arguments, results, logs...) are JSON text, which any Arrow reader
shows (`pyarrow.ipc.open_file`, `pandas.read_feather`); `progress` holds the events themselves,
not their count. Each distinct object of a column is encoded once (most columns of a sweep hold
few distinct values), and a batch is scrubbed in one pass over its texts.

numpy and pyarrow are imported with this module, which the writer's thread imports with the
first history file set (records/history.py): a history kept in memory never loads them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from mcp_nb.records.frame import nanoseconds
from mcp_nb.records.json_text import CHUNKS, ENCODE, EXACT, plain
from mcp_nb.records.outcome import CAUSES, FATES, OUTCOMES, TARGETS, VIAS
from mcp_nb.records.store import NO_FLAG, objects
from mcp_nb.records.surrogates import escape_surrogates


def json_column(values: np.ndarray, scrub: Callable[[str], str]) -> pa.Array:
    """The JSON texts of a column whose rows mostly hold the same few objects (the same empty tuple,
    None): each distinct object encoded once, the rows coded by it, all in C loops."""
    rows = values.tolist()
    if not rows:
        return pa.array([], type=pa.string()).dictionary_encode()
    first = rows[0]
    ids = list(map(id, rows))
    if ids.count(ids[0]) == len(ids):  # every row the same object (not merely equal: False == 0): one text
        codes = np.full(len(rows), -1 if first is None else 0, dtype=np.int32)
        texts = [] if first is None else [ENCODE(plain(first))]
    else:
        objects = dict(zip(ids, rows))  # id -> the object: alive while `rows` holds it
        if len(objects) > max(64, len(rows) // 4):  # mostly different after all: text per row
            return distinct_column(values, scrub)
        position = {key: i for i, key in enumerate(objects)}
        codes = np.fromiter(map(position.__getitem__, ids), dtype=np.int32, count=len(ids))
        texts = [ENCODE(plain(value)) for value in objects.values()]
        if id(None) in position:
            codes[codes == position[id(None)]] = -1
    return pa.DictionaryArray.from_arrays(pa.array(codes, mask=codes < 0), arrow_texts(scrub_all(texts, scrub)))


# What JSON text would escape: a text without it is its own JSON string's inside.
_ESCAPED = re.compile(r'["\\\x00-\x1f]')


def distinct_column(values: np.ndarray, scrub: Callable[[str], str], content: np.ndarray | None = None) -> pa.Array:
    """The JSON texts of a column whose rows mostly differ (arguments, structured results), as plain
    text. A tool that returns a str has the structured result {"result": its content}: given
    `content`, that text is put together without the encoder (the reader takes the same shortcut)."""
    texts: list[str | None] = []
    add = texts.append
    escaped = _ESCAPED.search
    chunks = CHUNKS if CHUNKS is not None else (lambda value, level: ENCODE(value))
    join = "".join
    rows = values.tolist()
    for value, text in zip(rows, rows if content is None else content.tolist()):
        if type(value) is dict:
            if not value:
                add("{}")
                continue
            if len(value) == 1 and type(text) is str and value.get("result") == text and escaped(text) is None:
                add('{"result":"' + text + '"}')
                continue
            try:
                add(join(chunks(value, 0)))
            except (TypeError, ValueError, RecursionError):
                add(ENCODE(value))
        elif value is None:
            add(None)
        else:
            add(ENCODE(plain(value)))
    return arrow_texts(scrub_all(texts, scrub))


def scrub_all(texts: Sequence[str | None], scrub: Callable[[str], str]) -> Sequence[str | None]:
    """`texts` with every secret the scrubber knows replaced; looked for in one pass over them all."""
    if not texts:
        return texts
    joined = "\x00".join(filter(None, texts))
    if scrub(joined) is joined:
        return texts
    return [None if text is None else scrub(text) for text in texts]


def arrow_texts(texts: Sequence[str | None], changed: dict[int, str] | None = None) -> pa.Array:
    """`texts` as Arrow text. A lone surrogate, which no UTF-8 (so no Arrow text) holds, is written
    as its JSON escape: in JSON text, it reads back the same (records/surrogates.py). Plain texts
    are given `changed`: each row whose text was escaped is added to it, with its text as it was.
    Arrow's own encoding finds them (no pass of its own over every batch's texts)."""
    try:
        return pa.array(texts, type=pa.string())
    except UnicodeEncodeError:
        escaped = [None if text is None else escape_surrogates(text) for text in texts]
        if changed is not None:
            changed.update(
                (row, text) for row, (text, written) in enumerate(zip(texts, escaped)) if text is not None and text is not written
            )
        return pa.array(escaped, type=pa.string())


def exact_texts(exact: dict[str, dict[int, str]], n: int) -> pa.Array | None:
    """The EXACT column, for a part whose plain texts had lone surrogates escaped: for each row that
    had one, a JSON object of its texts as they were, by column, each in Python's `unicode_escape`
    (ASCII, and exact where JSON's escapes are not: JSON reads a high and a low surrogate side by
    side as one character); null for every other row. None when no row had one (left out)."""
    if not exact:
        return None
    rows: dict[int, dict[str, str]] = {}
    for column, changed in exact.items():
        for row, text in changed.items():
            rows.setdefault(row, {})[column] = text.encode("unicode_escape").decode("ascii")
    out: list[str | None] = [None] * n
    for row, held in rows.items():
        out[row] = json.dumps(held, separators=(",", ":"))
    return pa.array(out, type=pa.string())


def coded(codes: np.ndarray, names: list[str], changed: dict[int, str] | None = None) -> pa.Array:
    """A vocabulary column: the codes, and the names as its dictionary. Given `changed`, a name
    holding a lone surrogate is written escaped, and each row that has it is added to `changed`."""
    indices = codes.astype(np.int32)
    escaped: dict[int, str] = {}
    dictionary = arrow_texts(names, escaped)
    if escaped and changed is not None:
        for row in np.nonzero(np.isin(indices, list(escaped)))[0].tolist():
            changed[row] = escaped[int(indices[row])]
    return pa.DictionaryArray.from_arrays(pa.array(indices, mask=indices < 0), dictionary)


def numbered(values: np.ndarray, kind: pa.DataType) -> pa.Array:
    """A column of whole numbers where -1 is none (`store.NO_EPISODE`), as nulls."""
    return pa.array(values, type=kind, mask=values < 0)


def texts(values: np.ndarray, scrub: Callable[[str], str], changed: dict[int, str] | None = None) -> pa.Array:
    rows = values.tolist()
    return arrow_texts(scrub_all(rows, scrub), changed)


@dataclass
class Batch:
    """Rows of one History to write, as its store keeps them (vocabularies coded), from `first` on."""

    columns: dict[str, np.ndarray]
    names: list[str]
    servers: list[str]
    workers: list[str]
    clients: list[str]
    first: int  # the seq of the first row
    fates: dict[int, tuple[Any, ...]] = field(
        default_factory=dict
    )  # row in the batch -> (fate, outcome, cause, after_ms, logs, progress)

    def __len__(self) -> int:
        return len(self.columns["call_id"])


def table(batch: Batch, session: str, scrub: Callable[[str], str]) -> pa.Table:
    """The part's table: the tidy columns, their vocabularies as dictionaries, the nested as JSON text."""
    c = batch.columns
    n = len(batch)
    logs, progress = c["logs"], c["progress"]
    fate = np.full(n, -1, dtype=np.int8)
    fate_outcome = np.full(n, -1, dtype=np.int8)
    fate_cause = np.full(n, -1, dtype=np.int8)
    fate_after = np.full(n, np.nan)
    if batch.fates:
        logs, progress = logs.copy(), progress.copy()
        for row, (f, fo, fc, after, row_logs, row_progress) in batch.fates.items():
            fate[row] = FATES.index(f) if f is not None else -1
            fate_outcome[row] = OUTCOMES.index(fo) if fo is not None else -1
            fate_cause[row] = CAUSES.index(fc) if fc is not None else -1
            fate_after[row] = np.nan if after is None else after
            logs[row], progress[row] = row_logs, row_progress
    flags = c["is_error"].astype(np.int8)
    code = c["code"].astype(np.float64)
    exact: dict[str, dict[int, str]] = {}  # column -> {row: its text as it was}, for the texts escaped
    columns = {
        "session": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([session])),
        "seq": pa.array(np.arange(batch.first, batch.first + n, dtype=np.int64)),
        "recorded_at": pa.array(nanoseconds(c["recorded"]), type=pa.timestamp("ns", tz="UTC")),
        "call_id": pa.array(c["call_id"].astype(np.int64)),
        "attempt": pa.array(c["attempt"].astype(np.int32)),
        "server": coded(c["server"], batch.servers, exact.setdefault("server", {})),
        "worker": coded(c["worker"], batch.workers, exact.setdefault("worker", {})),
        "target": coded(c["target"], list(TARGETS)),
        "name": coded(c["name"], batch.names, exact.setdefault("name", {})),
        "arguments": distinct_column(c["arguments"], scrub),
        "outcome": coded(c["outcome"], list(OUTCOMES)),
        "cause": coded(c["cause"], list(CAUSES)),
        "content": texts(c["content"], scrub, exact.setdefault("content", {})),
        "structured_content": distinct_column(c["structured"], scrub, c["content"]),
        "is_error": pa.array(flags == 1, mask=flags == NO_FLAG),
        "code": pa.array(np.nan_to_num(code).astype(np.int64), mask=np.isnan(code)),
        "message": texts(c["message"], scrub, exact.setdefault("message", {})),
        "data": json_column(c["data"], scrub),
        "server_logs": json_column(logs, scrub),
        "elicitations": json_column(c["elicitations"], scrub),
        "samplings": json_column(c["samplings"], scrub),
        "protocol": texts(c["protocol"], scrub, exact.setdefault("protocol", {})),
        "started_at": pa.array(nanoseconds(c["started"]), type=pa.timestamp("ns", tz="UTC")),
        "duration_ms": pa.array(c["duration"].astype(np.float64)),
        "timeout_s": pa.array(c["timeout"].astype(np.float64)),
        "backoff_s": pa.array(c["backoff"].astype(np.float64)),
        "server_fate": coded(fate, list(FATES)),
        "fate_outcome": coded(fate_outcome, list(OUTCOMES)),
        "fate_cause": coded(fate_cause, list(CAUSES)),
        "fate_after_ms": pa.array(fate_after),
        "via": coded(c["via"], list(VIAS)),
        "client": coded(c["client"], batch.clients, exact.setdefault("client", {})),
        "progress": json_column(progress, scrub),
        "deadline_resets": pa.array(c["resets"].astype(np.int64)),
        "max_timeout_s": pa.array(c["max_timeout"].astype(np.float64)),
        "retry": json_column(c["retry"], scrub),
        "episode": numbered(c["episode"], pa.int64()),
        "turn": numbered(c["turn"], pa.int32()),
    }
    held = exact_texts({column: changed for column, changed in exact.items() if changed}, n)
    if held is not None:
        columns[EXACT] = held
    return pa.table(columns)


def fates_table(session: str, rows: list[tuple[Any, ...]], scrub: Callable[[str], str]) -> pa.Table:
    """A fates part: for timed-out calls whose server side changed after they were written, (seq, fate...)."""
    seqs, fate, fate_outcome, fate_cause, after, logs_rows, progress_rows = zip(*rows)
    logs, progress = objects(list(logs_rows)), objects(list(progress_rows))

    def codes(values: Sequence[str | None], vocabulary: Sequence[str]) -> pa.Array:
        return coded(np.array([-1 if v is None else vocabulary.index(v) for v in values]), list(vocabulary))

    return pa.table(
        {
            "session": pa.array([session] * len(rows)),
            "seq": pa.array(seqs, type=pa.int64()),
            "server_fate": codes(fate, FATES),
            "fate_outcome": codes(fate_outcome, OUTCOMES),
            "fate_cause": codes(fate_cause, CAUSES),
            "fate_after_ms": pa.array([np.nan if a is None else a for a in after], type=pa.float64()),
            "server_logs": json_column(logs, scrub),
            "progress": json_column(progress, scrub),
        }
    )
