"""A history file on disk: a folder of parts, each an Arrow IPC file written whole and then renamed into place.

One row per call in the tidy columns of `History.to_frame()`, plus `session` (one id per
kernel start), `seq` (the call's place in what its kernel recorded) and `recorded_at`
(when it was recorded). Nested values (arguments, results, logs...) are JSON text, which
any Arrow reader shows (`pyarrow.ipc.open_file`, `pandas.read_feather`);
`progress` holds the events themselves, not their count.

Why parts and not one file (docs/performance.md, "Keeping the history"): a part is written
to a temporary name and renamed, so a kernel killed while writing leaves at most a
temporary file no reader looks at, never a half-written part; and a column store reads
ten million rows back as arrays, where a row store hands them over one Python tuple at a
time. Small parts are merged into larger ones as they accumulate (`merge`); a part that
covers another's range of the same stream makes that one a leftover, never read twice.

Why Arrow IPC and not Parquet (format 1, still read): its buffers are the arrays themselves,
so reading is copying (or, for a merged part, zstd-decompressing) them, not decoding pages; a
fresh part is written uncompressed (it is small and soon merged), a merged one compressed,
which keeps a file about as small as Parquet's.

numpy and pyarrow are imported with this module, and this module with the first history file set
or read (records/history.py, `_file`): a history kept in memory never loads them.

Reading takes a column at a time from every part (`Opened`), so that no more than one
column's Arrow buffers are held beside the frame being built, and decodes each distinct JSON
text once (the parts are dictionary-encoded, and most columns of a sweep hold few distinct
values), in one `json.loads` per column and batch.
"""

from __future__ import annotations

import json
import os
import re
import secrets as random_hex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from mcp_nb import libraries as lib
from mcp_nb.history_file import FORMAT, KEY, MARKER, HistoryFileError, format_of, kind, older_format, open_regular, shown
from mcp_nb.records.frame import VOCABULARIES, Coded, nanoseconds
from mcp_nb.records.outcome import CAUSES, FATES, OUTCOMES, TARGETS, VIAS
from mcp_nb.records.json_text import CHUNKS, ENCODE, events_of, logs_of, plain

# A part is an Arrow IPC file (`.arrow`); a file of format 1 has Parquet parts (`.parquet`), read as they are.
_PART = re.compile(r"^(?P<session>[0-9A-Za-z-]+)\.(?P<stream>\d+)\.(?P<first>\d{12})-(?P<last>\d{12})\.(?:arrow|parquet)$")
_FATES = re.compile(r"^(?P<session>[0-9A-Za-z-]+)\.(?P<stream>\d+)\.fates(?P<number>\d{6})\.(?:arrow|parquet)$")
SUFFIX = ".arrow"
BATCH = 65_536  # the rows of a merged part's batches
COMPRESSED = b"mcp_nb.compressed"  # a merged part's schema metadata: its buffers are compressed
# The vocabulary columns of fixed categories, by the codes the in-memory store gives them.
FIXED = {"target": TARGETS, "outcome": OUTCOMES, "cause": CAUSES, "via": VIAS}
_NO_FLAG = 2


def part_name(session: str, stream: int, first: int, last: int) -> str:
    return f"{session}.{stream}.{first:012d}-{last:012d}{SUFFIX}"


def fates_name(session: str, stream: int, number: int) -> str:
    return f"{session}.{stream}.fates{number:06d}{SUFFIX}"


# -- writing ------------------------------------------------------------------------------------


def json_column(values: np.ndarray, scrub: Callable[[str], str]) -> pa.Array:
    """The JSON texts of a column whose rows mostly hold the same few objects (the same empty tuple,
    None): each distinct object encoded once, the rows coded by it, all in C loops."""
    rows = values.tolist()
    if not rows:
        return pa.array([], type=pa.string()).dictionary_encode()
    first = rows[0]
    if rows.count(first) == len(rows):  # every row the same (an identity check first, in C): one text
        codes = np.full(len(rows), -1 if first is None else 0, dtype=np.int32)
        texts = [] if first is None else [ENCODE(plain(first))]
    else:
        ids = list(map(id, rows))
        objects = dict(zip(ids, rows))  # id -> the object: alive while `rows` holds it
        if len(objects) > max(64, len(rows) // 4):  # mostly different after all: text per row
            return distinct_column(values, scrub)
        position = {key: i for i, key in enumerate(objects)}
        codes = np.fromiter(map(position.__getitem__, ids), dtype=np.int32, count=len(ids))
        texts = [ENCODE(plain(value)) for value in objects.values()]
        if id(None) in position:
            codes[codes == position[id(None)]] = -1
    return pa.DictionaryArray.from_arrays(pa.array(codes, mask=codes < 0), pa.array(scrub_all(texts, scrub), type=pa.string()))


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
    return pa.array(scrub_all(texts, scrub), type=pa.string())


def scrub_all(texts: list[str | None], scrub: Callable[[str], str]) -> list[str | None]:
    """`texts` with every secret the scrubber knows replaced; looked for in one pass over them all."""
    if not texts:
        return texts
    joined = "\x00".join(filter(None, texts))
    if scrub(joined) is joined:
        return texts
    return [None if text is None else scrub(text) for text in texts]


def coded(codes: np.ndarray, names: list[str]) -> pa.Array:
    indices = codes.astype(np.int32)
    return pa.DictionaryArray.from_arrays(pa.array(indices, mask=indices < 0), pa.array(names, type=pa.string()))


def texts(values: np.ndarray, scrub: Callable[[str], str]) -> pa.Array:
    rows = values.tolist()
    return pa.array(scrub_all(rows, scrub), type=pa.string())


@dataclass
class Batch:
    """Rows of one History to write, as its store keeps them (vocabularies coded), from `first` on."""

    columns: dict[str, np.ndarray]
    names: list[str]
    servers: list[str]
    workers: list[str]
    clients: list[str]
    first: int  # the seq of the first row
    fates: dict[int, tuple] = field(default_factory=dict)  # row in the batch -> (fate, outcome, cause, after_ms, logs, progress)

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
    columns = {
        "session": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([session])),
        "seq": pa.array(np.arange(batch.first, batch.first + n, dtype=np.int64)),
        "recorded_at": pa.array(nanoseconds(c["recorded"]), type=pa.timestamp("ns", tz="UTC")),
        "call_id": pa.array(c["call_id"].astype(np.int64)),
        "attempt": pa.array(c["attempt"].astype(np.int32)),
        "server": coded(c["server"], batch.servers),
        "worker": coded(c["worker"], batch.workers),
        "target": coded(c["target"], list(TARGETS)),
        "name": coded(c["name"], batch.names),
        "arguments": distinct_column(c["arguments"], scrub),
        "outcome": coded(c["outcome"], list(OUTCOMES)),
        "cause": coded(c["cause"], list(CAUSES)),
        "content": texts(c["content"], scrub),
        "structured_content": distinct_column(c["structured"], scrub, c["content"]),
        "is_error": pa.array(flags == 1, mask=flags == _NO_FLAG),
        "code": pa.array(np.nan_to_num(code).astype(np.int64), mask=np.isnan(code)),
        "message": texts(c["message"], scrub),
        "data": json_column(c["data"], scrub),
        "server_logs": json_column(logs, scrub),
        "elicitations": json_column(c["elicitations"], scrub),
        "samplings": json_column(c["samplings"], scrub),
        "protocol": texts(c["protocol"], scrub),
        "started_at": pa.array(nanoseconds(c["started"]), type=pa.timestamp("ns", tz="UTC")),
        "duration_ms": pa.array(c["duration"].astype(np.float64)),
        "timeout_s": pa.array(c["timeout"].astype(np.float64)),
        "backoff_s": pa.array(c["backoff"].astype(np.float64)),
        "server_fate": coded(fate, list(FATES)),
        "fate_outcome": coded(fate_outcome, list(OUTCOMES)),
        "fate_cause": coded(fate_cause, list(CAUSES)),
        "fate_after_ms": pa.array(fate_after),
        "via": coded(c["via"], list(VIAS)),
        "client": coded(c["client"], batch.clients),
        "progress": json_column(progress, scrub),
        "deadline_resets": pa.array(c["resets"].astype(np.int64)),
        "max_timeout_s": pa.array(c["max_timeout"].astype(np.float64)),
        "retry": json_column(c["retry"], scrub),
    }
    return pa.table(columns)


def fates_table(session: str, rows: list[tuple], scrub: Callable[[str], str]) -> pa.Table:
    """A fates part: for timed-out calls whose server side changed after they were written, (seq, fate...)."""
    seqs, fate, fate_outcome, fate_cause, after, logs, progress = zip(*rows)
    logs, progress = _objects(list(logs)), _objects(list(progress))

    def codes(values, vocabulary):
        return coded(np.array([-1 if v is None else vocabulary.index(v) for v in values]), list(vocabulary))

    return pa.table({
        "session": pa.array([session] * len(rows)),
        "seq": pa.array(seqs, type=pa.int64()),
        "server_fate": codes(fate, FATES), "fate_outcome": codes(fate_outcome, OUTCOMES), "fate_cause": codes(fate_cause, CAUSES),
        "fate_after_ms": pa.array([np.nan if a is None else a for a in after], type=pa.float64()),
        "server_logs": json_column(logs, scrub), "progress": json_column(progress, scrub),
    })  # fmt: skip


def load() -> None:
    """Import pandas now, on the thread that sets the file (numpy and pyarrow came with this module):
    a keeper's last write may come at the interpreter's exit, when nothing can be imported any more
    (pandas, which pyarrow loads on first use, starts a thread pool's exit hook)."""
    lib.pandas  # noqa: B018 - imported here, not at the exit


def create(folder: Path) -> None:
    """Make `folder` a history file (mode 0700, its marker 0600), or check that it is one already, of
    the format this mcp_nb writes (an older one is read, never written to: one line says so)."""
    load()
    if folder.exists():
        number = format_of(folder)
        if number is not None:
            if number < FORMAT:
                raise HistoryFileError(older_format(folder, number))
            return
    else:
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:  # another kernel made it a moment ago
            pass
    text = json.dumps({KEY: FORMAT, "what": "mcp_nb's call history: a folder of Arrow IPC parts, one row per call"})
    _write_atomically(folder, MARKER, lambda f: f.write(text.encode()))
    os.chmod(folder, 0o700)


def _write_atomically(folder: Path, name: str, write: Callable[[Any], None], durable: bool = True) -> None:
    """Write `name` under a temporary name (mode 0600), then rename it into place: a reader sees the
    whole file or none of it, whenever the writer dies. `durable`: on disk before it has its name, so
    that a power cut cannot leave it empty (a killed process loses nothing the system was handed)."""
    temporary = folder / f".{name}.{os.getpid()}.{random_hex.token_hex(4)}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.rename(temporary, folder / name)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def write_part(folder: Path, name: str, part: pa.Table, merged: bool = False,
               between: Callable[[], None] = lambda: None) -> None:  # fmt: skip
    """Write a part, an Arrow IPC file. A fresh one is small and soon merged: written as it is,
    uncompressed, and not forced to the disk (a process killed loses nothing the system was handed;
    a power cut may cut it short, which a reader says and skips). A merged one replaces parts it then
    removes: its buffers compressed (zstd), and made durable before they go; `between` is called
    after each of its batches."""
    options = ipc.IpcWriteOptions(compression="zstd" if merged else None)
    if merged:  # said in the schema, so that a reader knows before it reads a buffer
        part = part.replace_schema_metadata({**(part.schema.metadata or {}), COMPRESSED: b"zstd"})

    def write(f) -> None:
        with ipc.new_file(f, part.schema, options=options) as writer:
            if not merged:
                writer.write_table(part)
                return
            # a merged part's many small chunks as fewer, larger batches: a batch costs its reader a
            # setup per column and buffer, whatever its size (copied a slice at a time, not all at once)
            for start in range(0, part.num_rows, BATCH):
                writer.write_table(part.slice(start, BATCH).combine_chunks())
                between()

    _write_atomically(folder, name, write, durable=merged)


def merge(folder: Path, names: list[str], into: str, tables: list | None = None,
          between: Callable[[], None] = lambda: None) -> pa.Table:  # fmt: skip
    """Write the parts `names` (whose tables the writer may still hold: `tables`) as one part `into`,
    then remove them; returns the merged table. A reader that comes in between sees `into` cover
    them, and reads `into` alone. `between` is called between the steps (the writer's other work)."""
    if tables is None:  # the writer keeps the small ones; larger ones are read back
        tables = []
        for name in names:
            tables.append(read_table(folder / name))
            between()
    # one dictionary per column for every batch: an IPC file cannot replace a dictionary midway
    merged = pa.concat_tables(tables, promote_options="permissive").unify_dictionaries()
    between()
    write_part(folder, into, merged, merged=True, between=between)
    for name in names:
        between()
        try:
            os.unlink(folder / name)
        except FileNotFoundError:
            pass
    return merged


def regular(path: Path) -> None:
    """Raise HistoryFileError (one line) unless `path` is a regular file: checked before pyarrow opens it,
    as an ordinary open of a named pipe waits for a writer for ever, and a link may point anywhere."""
    os.close(open_regular(path))


def read_table(path: Path) -> pa.Table:
    """A part's whole table, read into memory (a merge's inputs, a fates part)."""
    regular(path)
    if path.suffix == ".parquet":  # a file of format 1
        return lib.parquet.read_table(path)

    with pa.OSFile(str(path)) as f:
        return ipc.open_file(f).read_all()


def check_part(path: Path) -> None:
    """Raise if the part cannot be read: not a regular file, or its footer (at its end) missing or broken."""
    regular(path)
    if path.suffix == ".parquet":
        lib.parquet.ParquetFile(path).metadata
        return

    with pa.OSFile(str(path)) as f:
        ipc.open_file(f)


# -- reading ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Part:
    name: str
    session: str
    stream: int
    first: int
    last: int
    rows: int

    @property
    def key(self) -> tuple[str, int]:
        return (self.session, self.stream)


@dataclass
class Listing:
    """The parts of a history file worth reading (leftovers of a merge left out), in the order
    their calls were recorded: by session (they sort by when they began), stream, seq."""

    folder: Path
    parts: list[Part]
    fates: list[str]
    problems: list[str]  # a part cut short, said in one line each

    @property
    def rows(self) -> int:
        return sum(p.rows for p in self.parts)


def listing(folder: Path, footers: bool = True, again: int = 8) -> Listing:
    """What `folder` holds. Raises HistoryFileError (one line) for a folder that is no history file;
    a part that cannot be read (cut short) is left out and said in `problems`. A part gone while its
    end was checked was merged meanwhile by the kernel writing the file, whose merged part was in
    place before it went: the folder is listed again (`again` times at most), never said cut short."""
    format_of(folder)
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError as err:
        raise HistoryFileError(f"cannot read {shown(folder)}: {err.strerror or err}") from None
    found: list[Part] = []
    fates: list[str] = []
    problems: list[str] = []
    for entry in entries:
        name = entry.name
        match = _PART.match(name)
        if match is None and not _FATES.match(name):
            continue
        if not entry.is_file(follow_symlinks=False):  # a named pipe, a directory, a link...: never opened
            problems.append(f"{name} (not a regular file: {_kind(entry)})")
            continue
        if match is None:
            fates.append(name)
            continue
        rows = int(match["last"]) - int(match["first"]) + 1
        if footers:
            try:
                check_part(folder / name)
            except PermissionError:
                raise HistoryFileError(f"cannot read {shown(folder / name)}: permission denied") from None
            except FileNotFoundError as err:
                if again > 0:
                    return listing(folder, footers, again - 1)
                problems.append(f"{name} ({_why(err)})")
                continue
            except Exception as err:  # noqa: BLE001 - pyarrow says "cut short" in several ways
                problems.append(f"{name} ({_why(err)})")
                continue
        found.append(Part(name, match["session"], int(match["stream"]), int(match["first"]), int(match["last"]), rows))
    return Listing(folder, _without_leftovers(found), fates, problems)


def _kind(entry: os.DirEntry) -> str:
    try:
        return kind(entry.stat(follow_symlinks=False).st_mode)
    except OSError:
        return "gone"


def _why(err: Exception) -> str:
    """Why a part cannot be read, in a few words: pyarrow's own text names the whole path."""
    if isinstance(err, HistoryFileError) and "not a regular file" in str(err):  # replaced since it was listed
        return "not a regular file" + str(err).rsplit("not a regular file", 1)[1]
    if isinstance(err, Misnamed):
        return f"holds {err.held} rows where its name says {err.rows}"
    text = str(err)
    if any(sign in text for sign in ("magic bytes", "Could not open Parquet", "file size", "Couldn't deserialize", "too small", "Not an Arrow file")):
        return "its end is missing"
    return (text.splitlines()[0] if text else type(err).__name__)[:80]


def _without_leftovers(parts: list[Part]) -> list[Part]:
    """Parts in reading order, without those a merged part covers (a merge's inputs not yet removed)."""
    kept: list[Part] = []
    ordered = sorted(parts, key=lambda p: (p.session, p.stream, p.first, -p.last))
    for part in ordered:
        if kept and kept[-1].key == part.key and kept[-1].first <= part.first and part.last <= kept[-1].last:
            continue
        kept.append(part)
    return kept


def read(found: Listing, parts: list[Part] | None = None, seqs: tuple[int, int] | None = None, columns: list[str] | None = None) -> Coded:
    """The rows of `parts` (all of them when None), only those with `seqs[0] <= seq < seqs[1]` when
    given, with the fates parts applied; only the tidy `columns` named (all when None). A part that
    cannot be read is said in `found.problems` and skipped."""
    chosen = list(found.parts if parts is None else parts)
    wanted = None
    if columns is not None:
        wanted = list(dict.fromkeys(["session", "seq", "call_id", *columns]))
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
                found.problems.append(f"{part.name} ({_why(err)})")
        if not opened.parts:
            return _decode(None, seqs, [])
        try:
            return _decode(opened, seqs, _fates(found, {p.session for p in chosen}) if columns is None or "server_fate" in columns else [])
        except Misnamed as err:  # a compressed part's rows are counted as its first column is read
            found.problems.append(f"{Path(err.path).name} ({_why(err)})")
            opened.close()
            return read(found, [p for p in chosen if found.folder / p.name != err.path], seqs, columns)
    finally:
        opened.close()


class Misnamed(ValueError):
    """A part that holds another number of rows than its name says (not one this mcp_nb wrote)."""

    def __init__(self, path: Path, held: int, rows: int) -> None:
        super().__init__(f"{path}: {held} rows, named for {rows}")
        self.path, self.held, self.rows = path, held, rows


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

    def column(self, name: str):
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


def _fates(found: Listing, sessions: set[str]) -> list:
    out = []
    for name in found.fates:
        if name.split(".", 1)[0] in sessions:
            try:
                out.append(read_table(found.folder / name))
            except Exception as err:  # noqa: BLE001
                found.problems.append(f"{name} ({_why(err)})")
    return out


@dataclass
class _Filtered:
    """The rows of `source` that `keep` says, a column at a time."""

    source: Any
    keep: Any

    @property
    def column_names(self) -> list[str]:
        return self.source.column_names

    def column(self, name: str):
        return self.source.column(name).filter(self.keep)


def _decode(whole: Opened | pa.Table | None, seqs: tuple[int, int] | None, fates: list) -> Coded:
    """The columns of `whole` (all a part has, or those asked for; read a column at a time) coded as
    the store codes them."""
    from mcp_nb.records.lazy import JsonArray  # pandas: loaded when a file is first read back

    if whole is None:
        return Coded({"call_id": np.empty(0, dtype=np.int64)})
    if seqs is not None:
        seq = whole.column("seq").to_numpy()
        keep = (seq >= seqs[0]) & (seq < seqs[1])
        if not keep.all():
            whole = _Filtered(whole, pa.array(keep))
    present = set(whole.column_names)
    out: dict[str, np.ndarray] = {}
    vocab: dict[str, list[str]] = {}
    for name in VOCABULARIES:
        if name in present:
            out[name], vocab[name] = _codes(whole.column(name))
    for name, vocabulary in FIXED.items():
        if name in present:
            out[name] = _fixed(whole.column(name), vocabulary)
    for name, stored, vocabulary in (("server_fate", "fate", FATES), ("fate_outcome", "fate_outcome", OUTCOMES), ("fate_cause", "fate_cause", CAUSES)):
        if name in present:
            out[stored] = _fixed(whole.column(name), vocabulary)
    for name, stored in (("call_id", "call_id"), ("attempt", "attempt"), ("seq", "seq"), ("backoff_s", "backoff"),
                         ("duration_ms", "duration"), ("timeout_s", "timeout"), ("max_timeout_s", "max_timeout"),
                         ("fate_after_ms", "fate_after"), ("deadline_resets", "resets")):  # fmt: skip
        if name in present:
            out[stored] = whole.column(name).to_numpy()
    for name, stored in (("started_at", "started_ns"), ("recorded_at", "recorded_ns")):
        if name in present:
            out[stored] = _ns(whole.column(name))
    if "is_error" in present:
        flags = whole.column("is_error")
        out["is_error"] = np.where(flags.is_null().to_numpy(zero_copy_only=False), _NO_FLAG,
                                   flags.fill_null(False).to_numpy(zero_copy_only=False).astype(np.int8)).astype(np.int8)  # fmt: skip
    if "code" in present:
        out["code"] = whole.column("code").to_numpy(zero_copy_only=False).astype(np.float64)
    for name in ("content", "message", "protocol"):
        if name in present:
            out[name] = _strings(whole.column(name))
    # the nested columns stay JSON text, decoded when a value is looked at (records/lazy.py)
    for name, stored, wrap in (("arguments", "arguments", "json"), ("structured_content", "structured", "json"),
                               ("data", "data", "json"), ("server_logs", "logs", "logs"), ("elicitations", "elicitations", "tuple"),
                               ("samplings", "samplings", "tuple"), ("progress", "progress", "events"), ("retry", "retry", "json")):  # fmt: skip
        if name in present:
            out[stored] = JsonArray.from_texts(whole.column(name), wrap)
    if fates and "server_fate" in present:
        _apply_fates(out, fates, vocab["session"])
    return Coded(out, vocab)


def _ns(column) -> np.ndarray:
    return column.cast(pa.int64()).to_numpy().astype(np.int64, copy=False)


def _combined(column):
    """One array from a column's chunks; a dictionary column's chunks first given one dictionary."""
    if isinstance(column, pa.ChunkedArray):
        if pa.types.is_dictionary(column.type):
            column = column.unify_dictionaries()
        return column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    return column


def _codes(column) -> tuple[np.ndarray, list[str]]:
    """A dictionary column as int32 codes (-1 where missing) and its dictionary."""
    array = _combined(column)
    if not pa.types.is_dictionary(array.type):
        array = array.dictionary_encode()
    indices = array.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int32, copy=False)
    return indices, [str(v) for v in array.dictionary.to_pylist()]


def _fixed(column, vocabulary: tuple[str, ...]) -> np.ndarray:
    """A dictionary column of a fixed vocabulary as the store's codes, int8 (-1: missing or unknown here)."""
    indices, values = _codes(column)
    position = {name: i for i, name in enumerate(vocabulary)}
    mapping = np.array([position.get(v, -1) for v in values] + [-1], dtype=np.int8)
    return mapping[indices]  # -1 indexes the last entry: missing stays missing


def _strings(column) -> np.ndarray:
    if pa.types.is_dictionary(column.type):  # a few distinct texts (protocol versions): one str each, shared by their rows
        chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
        out = np.empty(sum(map(len, chunks)), dtype=object)
        at = 0
        for chunk in chunks:
            distinct = _objects([*chunk.dictionary.to_pylist(), None])
            np.take(distinct, chunk.indices.fill_null(-1).to_numpy(zero_copy_only=False), out=out[at : at + len(chunk)], mode="wrap")
            at += len(chunk)
        return out
    return column.to_numpy(zero_copy_only=False)  # None where missing, as the store keeps it; chunks converted in place


def _objects(values: list) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _loads_all(texts) -> list:
    """Many JSON texts (an Arrow string array without nulls) decoded in one `json.loads`: joined
    by Arrow, so no Python string is made per text."""
    if not len(texts):
        return []
    joined = pc.binary_join(pa.ListArray.from_arrays(pa.array([0, len(texts)], type=pa.int32()), texts), ",")
    return json.loads("[" + joined[0].as_py() + "]")


def _json(column, wrap: Callable[[Any], Any] | None = None) -> np.ndarray:
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


def _apply_fates(out: dict[str, np.ndarray], fates: list, sessions: list[str]) -> None:
    """Rewrite the fate of each timed-out call a fates part names (the latest part wins)."""
    timed_out = np.nonzero(out["fate"] >= 0)[0]  # only a timeout has a fate to rewrite
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


def _decode_fates(part) -> list[tuple]:
    return list(zip(
        [str(s) for s in part.column("session").to_pylist()], part.column("seq").to_pylist(),
        _fixed(part.column("server_fate"), FATES), _fixed(part.column("fate_outcome"), OUTCOMES),
        _fixed(part.column("fate_cause"), CAUSES), part.column("fate_after_ms").to_pylist(),
        _json(part.column("server_logs"), logs_of), _json(part.column("progress"), events_of),
    ))  # fmt: skip
