"""A history file's parts read back: the rows of the parts chosen, a column at a time, coded as
the in-memory store codes them (`frame.Coded`), the fates parts applied.

Reading takes a column at a time from every part (`Opened`), so that no more than one column's
Arrow buffers are held beside the frame being built, and decodes each distinct JSON text once
(the parts are dictionary-encoded, and most columns of a sweep hold few distinct values). The
nested columns stay JSON text, decoded when a value is looked at (records/lazy.py). A part that
cannot be read (cut short, not a regular file, holding other rows than its name says) is left
out and said in the listing's `problems`.

pyarrow's own dataset reader (`pyarrow.dataset`, every column of every part at once) was tried
and measured (CHANGELOG.md, the history file's measurements): on ten million calls
it read no faster and the frame's process peaked at 5.54 GB instead of 3.56 GB, as it holds every
column's buffers until the last is decoded; on a file of many small fresh parts it was faster.
Read a column at a time, the peak stays the frame and one column.

numpy and pyarrow are imported with this module, pandas at its first frame.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from mcp_nb import libraries as lib
from mcp_nb.records.disk import COMPRESSED, Listing, Misnamed, Part, listing, read_table, regular, why
from mcp_nb.records.frame import VOCABULARIES, Coded, Column
from mcp_nb.records.json_text import EXACT, events_of, logs_of
from mcp_nb.records.outcome import CAUSES, FATES, OUTCOMES, TARGETS, VIAS
from mcp_nb.records.store import NO_FLAG

# Whole-number columns added to the history after files were written, and their type in the
# store: -1 stands for none (`store.NO_EPISODE`), and a file without the column has none.
ADDED = {"episode": np.int64, "turn": np.int32}
# The vocabulary columns of fixed categories, by the codes the in-memory store gives them.
FIXED = {"target": TARGETS, "outcome": OUTCOMES, "cause": CAUSES, "via": VIAS}


def read(
    found: Listing, parts: list[Part] | None = None, seqs: tuple[int, int] | None = None, columns: list[str] | None = None
) -> Coded:
    """The rows of `parts` (all of them when None), only those with `seqs[0] <= seq < seqs[1]` when
    given, with the fates parts applied; only the tidy `columns` named (all when None). A part that
    cannot be read is said in `found.problems` and skipped."""
    chosen = list(found.parts if parts is None else parts)
    wanted = None
    if columns is not None:
        wanted = list(dict.fromkeys(["session", "seq", "call_id", *columns, EXACT]))
    opened = Opened(wanted)
    try:
        for part in chosen:
            try:
                opened.add(found.folder / part.name, part.rows)
            except FileNotFoundError:
                # merged meanwhile by the kernel writing it: the merged part holds its rows
                opened.close()
                again = listing(found.folder)
                return read(again, _same_rows(again, chosen), seqs, columns)
            except Exception as err:  # noqa: BLE001 - a part cut short since the listing
                found.problems.append(f"{part.name} ({why(err)})")
        if not opened.parts:
            return _decode(None, seqs, [], columns)
        try:
            fates = _fates(found, {p.session for p in chosen}) if columns is None or "server_fate" in columns else []
            return _decode(opened, seqs, fates, columns)
        except Misnamed as err:  # a compressed part's rows are counted as its first column is read
            found.problems.append(f"{Path(err.path).name} ({why(err)})")
            opened.close()
            return read(found, [p for p in chosen if found.folder / p.name != err.path], seqs, columns)
    finally:
        opened.close()


class Opened:
    """The parts being read, each opened once (a part merged away meanwhile stays readable through
    its map or open file) and read a column at a time, so that reading never holds every column's
    buffers at once. An uncompressed part (a fresh one) is mapped and its table taken whole, which
    reads nothing yet; a compressed one (merged) has each column's buffers read and decompressed
    when that column is asked for, and dropped once it is decoded."""

    def __init__(self, wanted: list[str] | None) -> None:
        self.wanted = wanted
        self.parts: list[tuple[Any, Any, str, int, Path]] = []  # (map or open file, its reader or table, how, rows, path)
        self.types: dict[str, Any] = {}  # column -> its type, in the order the first part has them

    @property
    def column_names(self) -> list[str]:
        return list(self.types)

    def add(self, path: Path, rows: int) -> None:
        regular(path)
        if path.suffix == ".parquet":  # a file of format 1
            f = pa.OSFile(str(path))
            try:
                reader: Any = lib.parquet.ParquetFile(f)
                held = reader.metadata.num_rows
            except BaseException:
                f.close()
                raise
            schema, how = reader.schema_arrow, "parquet"
        else:
            f = pa.memory_map(str(path))
            try:
                reader = ipc.open_file(f)
                schema = reader.schema
                if COMPRESSED in (schema.metadata or {}):
                    how, held = "compressed", rows  # counted as its first column is read
                else:  # its buffers are the map's: the table costs nothing until a column is copied out
                    reader, how = reader.read_all(), "mapped"
                    held = reader.num_rows
            except BaseException:
                f.close()
                raise
        if held != rows:
            f.close()
            raise Misnamed(path, held, rows)
        for column in schema:
            if self.wanted is None or column.name in self.wanted:
                self.types.setdefault(column.name, column.type)
        self.parts.append((f, reader, how, rows, path))

    def column(self, name: str) -> pa.ChunkedArray:
        """The column `name` of every part, as one chunked array (nulls for a part without it)."""
        chunks = []
        for f, reader, how, rows, path in self.parts:
            names = reader.schema_arrow.names if how == "parquet" else reader.schema.names
            if name not in names:
                chunks.append(pa.nulls(rows, self.types[name]))
            elif how == "parquet":
                chunks.extend(reader.read(columns=[name]).column(0).chunks)
            elif how == "mapped":
                # copied out of the map, a batch at a time: nothing the frame keeps points into a file
                # that a merge may remove (and that Windows would then refuse to remove)
                chunks.extend(pa.concat_arrays([chunk]) for chunk in reader.column(name).chunks)
            else:  # decompressed into buffers of its own; one column is too little to share among threads
                options = ipc.IpcReadOptions(included_fields=[names.index(name)], use_threads=False)
                read = ipc.open_file(f, options=options).read_all().column(0).chunks
                held = sum(map(len, read))
                if held != rows:
                    raise Misnamed(path, held, rows)
                chunks.extend(read)
        return pa.chunked_array(chunks, type=self.types[name])

    def close(self) -> None:
        for f, *_ in self.parts:
            f.close()
        self.parts = []


def _same_rows(again: Listing, chosen: list[Part]) -> list[Part]:
    keys = {p.key for p in chosen}
    return [p for p in again.parts if p.key in keys]


def _fates(found: Listing, sessions: set[str]) -> list[pa.Table]:
    out: list[pa.Table] = []
    for name in found.fates:
        if name.split(".", 1)[0] in sessions:
            try:
                out.append(read_table(found.folder / name))
            except Exception as err:  # noqa: BLE001
                found.problems.append(f"{name} ({why(err)})")
    return out


@dataclass
class _Filtered:
    """The rows of `source` that `keep` says, a column at a time."""

    source: Any
    keep: Any

    @property
    def column_names(self) -> list[str]:
        names: list[str] = self.source.column_names
        return names

    def column(self, name: str) -> pa.ChunkedArray:
        return self.source.column(name).filter(self.keep)


def _decode(
    whole: Opened | pa.Table | None, seqs: tuple[int, int] | None, fates: list[pa.Table], columns: list[str] | None = None
) -> Coded:
    """The columns of `whole` (all a part has, or those asked for: `columns`; read a column at a
    time) coded as the store codes them. A column added since a file was written (`ADDED`) reads as
    its missing value there."""
    from mcp_nb.records.lazy import JsonArray  # pandas: loaded when a file is first read back

    if whole is None:
        return Coded({"call_id": np.empty(0, dtype=np.int64)})
    if seqs is not None:
        seq = whole.column("seq").to_numpy()
        keep = (seq >= seqs[0]) & (seq < seqs[1])
        if not keep.all():
            whole = _Filtered(whole, pa.array(keep))
    present = set(whole.column_names)
    out: dict[str, Column] = {}
    vocab: dict[str, list[str]] = {}
    for name in VOCABULARIES:
        if name in present:
            out[name], vocab[name] = _codes(whole.column(name))
    for name, vocabulary in FIXED.items():
        if name in present:
            out[name] = _fixed(whole.column(name), vocabulary)
    for name, stored, vocabulary in (
        ("server_fate", "fate", FATES),
        ("fate_outcome", "fate_outcome", OUTCOMES),
        ("fate_cause", "fate_cause", CAUSES),
    ):
        if name in present:
            out[stored] = _fixed(whole.column(name), vocabulary)
    for name, stored in (
        ("call_id", "call_id"),
        ("attempt", "attempt"),
        ("seq", "seq"),
        ("backoff_s", "backoff"),
        ("duration_ms", "duration"),
        ("timeout_s", "timeout"),
        ("max_timeout_s", "max_timeout"),
        ("fate_after_ms", "fate_after"),
        ("deadline_resets", "resets"),
    ):
        if name in present:
            out[stored] = whole.column(name).to_numpy()
    for name, stored in (("started_at", "started_ns"), ("recorded_at", "recorded_ns")):
        if name in present:
            out[stored] = _ns(whole.column(name))
    if "is_error" in present:
        flags = whole.column("is_error")
        out["is_error"] = np.where(
            flags.is_null().to_numpy(zero_copy_only=False),
            NO_FLAG,
            flags.fill_null(False).to_numpy(zero_copy_only=False).astype(np.int8),
        ).astype(np.int8)
    if "code" in present:
        out["code"] = whole.column("code").to_numpy(zero_copy_only=False).astype(np.float64)
    for name in ("content", "message", "protocol"):
        if name in present:
            out[name] = _strings(whole.column(name))
    if EXACT in present:
        _put_back_exact(out, vocab, whole.column(EXACT))
    # the nested columns stay JSON text, decoded when a value is looked at (records/lazy.py)
    for name, stored, wrap in (
        ("arguments", "arguments", "json"),
        ("structured_content", "structured", "json"),
        ("data", "data", "json"),
        ("server_logs", "logs", "logs"),
        ("elicitations", "elicitations", "tuple"),
        ("samplings", "samplings", "tuple"),
        ("progress", "progress", "events"),
        ("retry", "retry", "json"),
    ):
        if name in present:
            out[stored] = JsonArray.from_texts(whole.column(name), wrap)
    rows = len(out["call_id"])  # read whatever else is asked for
    for name, kind in ADDED.items():
        if name in present:
            out[name] = whole.column(name).fill_null(-1).to_numpy().astype(kind, copy=False)
        elif columns is None or name in columns:  # a file written before it was a column
            out[name] = np.full(rows, -1, dtype=kind)
    if fates and "server_fate" in present:
        _apply_fates(out, fates, vocab["session"])
    # A column taken from a mapped part without a copy is read-only: a frame made of it could not
    # be written to (`frame.loc[0, "duration_ms"] = 0`), as a frame of the history in memory can.
    for name, values in out.items():
        if isinstance(values, np.ndarray) and not values.flags.writeable:
            out[name] = values.copy()
    return Coded(out, vocab)


def _put_back_exact(out: dict[str, Column], vocab: dict[str, list[str]], column: pa.ChunkedArray) -> None:
    """The plain texts that held a lone surrogate, as they were (the writer's EXACT column): in the
    rows that had one, in place of their escaped form."""
    present = column.is_valid()
    rows = np.nonzero(present.to_numpy(zero_copy_only=False))[0].tolist()
    if not rows:
        return
    by_column: dict[str, dict[int, str]] = {}
    for row, text in zip(rows, column.filter(present).to_pylist()):
        try:
            held = json.loads(text)
        except ValueError:  # not one this mcp_nb wrote: the escaped texts stand
            continue
        if type(held) is dict:
            for name, value in held.items():
                if type(value) is str and name in out:
                    by_column.setdefault(name, {})[row] = value.encode("latin-1", "replace").decode("unicode_escape", "replace")
    for name, exact in by_column.items():
        values = out[name] = cast("np.ndarray", out[name]).copy()  # a text or a vocabulary column: an array
        if name not in vocab:  # a text column (content, message, protocol)
            for row, value in exact.items():
                values[row] = value
            continue
        # a vocabulary column: each row given the code of its exact name (added to the names), and
        # the escaped names no row has any more left out
        names = vocab[name]
        escaped = {int(values[row]) for row in exact}
        position = {text: i for i, text in enumerate(names)}
        for row, value in exact.items():
            code = position.get(value)
            if code is None:
                code = position[value] = len(names)
                names.append(value)
            values[row] = code
        gone = sorted(code for code in escaped if code >= 0 and not (values == code).any())
        if gone:
            kept = np.ones(len(names), dtype=bool)
            kept[gone] = False
            renumbered = np.append(np.cumsum(kept) - 1, -1).astype(values.dtype)  # -1 (missing) stays -1
            out[name] = renumbered[values]
            vocab[name] = [text for text, keep in zip(names, kept) if keep]


def _ns(column: pa.ChunkedArray) -> np.ndarray:
    ns: np.ndarray = column.cast(pa.int64()).to_numpy().astype(np.int64, copy=False)
    return ns


def _combined(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """One array from a column's chunks; a dictionary column's chunks first given one dictionary."""
    if isinstance(column, pa.ChunkedArray):
        if pa.types.is_dictionary(column.type):
            column = column.unify_dictionaries()
        return column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    return column


def _codes(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, list[str]]:
    """A dictionary column as int32 codes (-1 where missing) and its dictionary."""
    array = _combined(column)
    if not pa.types.is_dictionary(array.type):
        array = array.dictionary_encode()
    indices = array.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int32, copy=False)
    return indices, [str(v) for v in array.dictionary.to_pylist()]


def _fixed(column: pa.ChunkedArray | pa.Array, vocabulary: tuple[str, ...]) -> np.ndarray:
    """A dictionary column of a fixed vocabulary as the store's codes, int8 (-1: missing or unknown here)."""
    indices, values = _codes(column)
    position = {name: i for i, name in enumerate(vocabulary)}
    mapping = np.array([position.get(v, -1) for v in values] + [-1], dtype=np.int8)
    coded: np.ndarray = mapping[indices]  # -1 indexes the last entry: missing stays missing
    return coded


def _strings(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    if pa.types.is_dictionary(column.type):  # a few distinct texts (protocol versions): one str each, shared by their rows
        chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
        out = np.empty(sum(map(len, chunks)), dtype=object)
        at = 0
        for chunk in chunks:
            distinct = _objects([*chunk.dictionary.to_pylist(), None])
            np.take(
                distinct, chunk.indices.fill_null(-1).to_numpy(zero_copy_only=False), out=out[at : at + len(chunk)], mode="wrap"
            )
            at += len(chunk)
        return out
    values: np.ndarray = column.to_numpy(
        zero_copy_only=False
    )  # None where missing, as the store keeps it; chunks converted in place
    return values


def _objects(values: list[Any]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _loads_all(texts: pa.Array) -> list[Any]:
    """Many JSON texts (an Arrow string array without nulls) decoded in one `json.loads`: joined
    by Arrow, so no Python string is made per text."""
    if not len(texts):
        return []
    joined = pc.binary_join(pa.ListArray.from_arrays(pa.array([0, len(texts)], type=pa.int32()), texts), ",")
    values: list[Any] = json.loads("[" + joined[0].as_py() + "]")
    return values


def _json(column: pa.ChunkedArray | pa.Array, wrap: Callable[[Any], Any] | None = None) -> np.ndarray:
    """A JSON column as Python values, each distinct text decoded once; None where missing. Decoded a
    chunk at a time into one array: no chunk's values are copied twice."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    out = np.empty(sum(len(chunk) for chunk in chunks), dtype=object)
    at = 0
    for chunk in chunks:
        n = len(chunk)
        if not pa.types.is_dictionary(chunk.type):  # plain text: rows that mostly differ, decoded as they are
            values = _loads_all(pc.fill_null(chunk, "null"))
            out[at : at + n] = values if wrap is None else [None if v is None else wrap(v) for v in values]
        else:
            values = _loads_all(chunk.dictionary)
            if wrap is not None:
                values = [None if v is None else wrap(v) for v in values]
            distinct = _objects([*values, None])
            indices = chunk.indices.fill_null(-1).to_numpy(zero_copy_only=False)
            np.take(distinct, indices, out=out[at : at + n], mode="wrap")  # -1 picks the None at the end
        at += n
    return out


def _apply_fates(out: dict[str, Column], fates: list[pa.Table], sessions: list[str]) -> None:
    """Rewrite the fate of each timed-out call a fates part names (the latest part wins)."""
    timed_out = np.nonzero(cast("np.ndarray", out["fate"]) >= 0)[
        0
    ]  # only a timeout has a fate to rewrite (fates are codes: an array)
    position = {(sessions[out["session"][i]], int(out["seq"][i])): int(i) for i in timed_out}
    for part in fates:
        rows = _decode_fates(part)
        for session, seq, fate, fate_outcome, fate_cause, after, logs, progress in rows:
            i = position.get((session, seq))
            if i is None:
                continue
            out["fate"][i], out["fate_outcome"][i], out["fate_cause"][i] = fate, fate_outcome, fate_cause
            out["fate_after"][i] = np.nan if after is None else after
            out["logs"][i], out["progress"][i] = logs, progress


def _decode_fates(part: pa.Table) -> list[tuple[Any, ...]]:
    return list(
        zip(
            [str(s) for s in part.column("session").to_pylist()],
            part.column("seq").to_pylist(),
            _fixed(part.column("server_fate"), FATES),
            _fixed(part.column("fate_outcome"), OUTCOMES),
            _fixed(part.column("fate_cause"), CAUSES),
            part.column("fate_after_ms").to_pylist(),
            _json(part.column("server_logs"), logs_of),
            _json(part.column("progress"), events_of),
        )
    )
