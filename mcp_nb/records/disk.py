"""A history file on disk: a folder of parts, each an Arrow IPC file written whole and then renamed into place.

Why parts and not one file (docs/performance.md, "The history file"; CHANGELOG.md has the measurements): a part is written
to a temporary name and renamed, so a kernel killed while writing leaves at most a
temporary file no reader looks at, never a half-written part; and a column store reads
ten million rows back as arrays, where a row store hands them over one Python tuple at a
time. Small parts are merged into larger ones as they accumulate (`merge`); a part that
covers another's range of the same stream makes that one a leftover, never read twice.

Why Arrow IPC and not Parquet (format 1, still read): its buffers are the arrays themselves,
so reading is copying (or, for a merged part, zstd-decompressing) them, not decoding pages; a
fresh part is written uncompressed (it is small and soon merged), a merged one compressed,
which keeps a file about as small as Parquet's.

What a part holds is records/encoding.py's; reading it back, records/decoding.py's. Nothing in the
folder that is not a regular file (a named pipe, a directory, a device, a link) is ever opened:
it is said, in one line, and left out. pyarrow is imported with this module, and this module
with the first history file set or read: a history kept in memory never loads it.
"""

from __future__ import annotations

import json
import os
import re
import secrets as random_hex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa
import pyarrow.ipc as ipc

from mcp_nb import libraries as lib
from mcp_nb.history_file import FORMAT, KEY, MARKER, HistoryFileError, format_of, kind, older_format, open_regular, shown
from mcp_nb.mistakes import Failure

# A part is an Arrow IPC file (`.arrow`); a file of format 1 has Parquet parts (`.parquet`), read as they are.
_PART = re.compile(r"^(?P<session>[0-9A-Za-z-]+)\.(?P<stream>\d+)\.(?P<first>\d{12})-(?P<last>\d{12})\.(?:arrow|parquet)$")
_FATES = re.compile(r"^(?P<session>[0-9A-Za-z-]+)\.(?P<stream>\d+)\.fates(?P<number>\d{6})\.(?:arrow|parquet)$")
SUFFIX = ".arrow"
BATCH = 65_536  # the rows of a merged part's batches
COMPRESSED = b"mcp_nb.compressed"  # a merged part's schema metadata: its buffers are compressed


def part_name(session: str, stream: int, first: int, last: int) -> str:
    return f"{session}.{stream}.{first:012d}-{last:012d}{SUFFIX}"


def fates_name(session: str, stream: int, number: int) -> str:
    return f"{session}.{stream}.fates{number:06d}{SUFFIX}"


# -- writing ------------------------------------------------------------------------------------


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


def _write_atomically(folder: Path, name: str, write: Callable[[BinaryIO], object], durable: bool = True) -> None:
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


def write_json(folder: Path, name: str, data: bytes) -> None:
    """Write a small file of the folder's own (an episode's JSON) whole or not at all, 0600, as a
    fresh part is written: not forced to the disk."""
    _write_atomically(folder, name, lambda f: f.write(data), durable=False)


def write_part(folder: Path, name: str, part: pa.Table, merged: bool = False, between: Callable[[], None] = lambda: None) -> None:
    """Write a part, an Arrow IPC file. A fresh one is small and soon merged: written as it is,
    uncompressed, and not forced to the disk (a process killed loses nothing the system was handed;
    a power cut may cut it short, which a reader says and skips). A merged one replaces parts it then
    removes: its buffers compressed (zstd), and made durable before they go; `between` is called
    after each of its batches."""
    options = ipc.IpcWriteOptions(compression="zstd" if merged else None)
    if merged:  # said in the schema, so that a reader knows before it reads a buffer
        part = part.replace_schema_metadata({**(part.schema.metadata or {}), COMPRESSED: b"zstd"})

    def write(f: BinaryIO) -> None:
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


def merge(
    folder: Path, names: list[str], into: str, tables: list[pa.Table] | None = None, between: Callable[[], None] = lambda: None
) -> pa.Table:
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
        _ = lib.parquet.ParquetFile(path).metadata  # reading the footer is the check
        return

    with pa.OSFile(str(path)) as f:
        ipc.open_file(f)


# -- reading ------------------------------------------------------------------------------------# -- listing ------------------------------------------------------------------------------------


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
                problems.append(f"{name} ({why(err)})")
                continue
            except Exception as err:  # noqa: BLE001 - pyarrow says "cut short" in several ways
                problems.append(f"{name} ({why(err)})")
                continue
        found.append(Part(name, match["session"], int(match["stream"]), int(match["first"]), int(match["last"]), rows))
    return Listing(folder, _without_leftovers(found), fates, problems)


def _kind(entry: os.DirEntry[str]) -> str:
    try:
        return kind(entry.stat(follow_symlinks=False).st_mode)
    except OSError:
        return "gone"


def why(err: Exception) -> str:
    """Why a part cannot be read, in a few words: pyarrow's own text names the whole path."""
    if isinstance(err, HistoryFileError) and "not a regular file" in str(err):  # replaced since it was listed
        return "not a regular file" + str(err).rsplit("not a regular file", 1)[1]
    if isinstance(err, Misnamed):
        return f"holds {err.held} rows where its name says {err.rows}"
    text = str(err)
    if any(
        sign in text
        for sign in (
            "magic bytes",
            "Could not open Parquet",
            "file size",
            "Couldn't deserialize",
            "too small",
            "Not an Arrow file",
        )
    ):
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


class Misnamed(Failure, ValueError):
    """A part that holds another number of rows than its name says (not one this mcp_nb wrote)."""

    def __init__(self, path: Path, held: int, rows: int) -> None:
        super().__init__(f"{path}: {held} rows, named for {rows}")
        self.path, self.held, self.rows = path, held, rows
