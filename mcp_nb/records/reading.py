"""A History's calls read back from history files: those its window let go, or a whole file reopened.

A History with a file remembers where the calls that left its memory are (segments: a range of
seqs, in the folder it wrote them to, in any of the streams it wrote there: a file resumed after
a stop or a failed write holds each call in one stream only); a reopened file (`History.open`)
is every session's calls. Either way the rows come back coded as the store codes them
(records/frame.py), to be joined with what memory holds by their codes.

pyarrow comes with this module (records/decoding.py), and this module with the first history
file set or read (records/history.py): a history kept in memory never loads it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mcp_nb.history_file import SESSION
from mcp_nb.records import decoding, disk
from mcp_nb.records.frame import Coded, join


def segments(
    found: list[tuple[Path, int, int]],
    streams: frozenset[int],
    columns: list[str] | None,
    wanted: int | None,
    problems: list[str],
) -> Coded:
    """The calls of these (folder, first, last) segments, oldest first, of this session's `streams`;
    only the `wanted` latest when given (the newest segments first, reading no more than needed)."""
    coded = Coded({})
    for folder, lo, hi in reversed(found):
        if wanted is not None and wanted <= 0:
            break
        lo = lo if wanted is None else max(lo, hi - wanted)
        older = read(folder, lambda p: p.session == SESSION and p.stream in streams, (lo, hi), columns, None, problems)
        coded = join(older, coded) if len(coded.columns) else older
        wanted = None if wanted is None else wanted - len(older)
    return coded


def read(
    folder: Path,
    chosen: Callable[[disk.Part], bool] | None,
    seqs: tuple[int, int] | None,
    columns: list[str] | None,
    last: int | None,
    problems: list[str],
) -> Coded:
    """The rows of the parts of `folder` that `chosen` picks (all when None), with `seqs[0] <= seq < seqs[1]`
    when given, the `last` latest when given; what cannot be read is added to `problems`."""
    found = disk.listing(folder, footers=False)
    parts = [
        p for p in found.parts if (chosen is None or chosen(p)) and (seqs is None or (p.last >= seqs[0] and p.first < seqs[1]))
    ]
    if last is not None:  # the newest parts that hold the `last` calls
        taken, rows = [], 0
        for part in reversed(parts):
            if rows >= last:
                break
            taken.append(part)
            rows += part.rows
        parts = taken[::-1]
    coded = decoding.read(found, parts, seqs, columns)
    problems.extend(found.problems)
    if last is not None and len(coded) > last:
        coded = Coded({key: values[-last:] for key, values in coded.columns.items()}, coded.names)
    return coded


def count(folder: Path, problems: list[str]) -> int:
    """How many calls the file at `folder` holds, by its parts' names."""
    found = disk.listing(folder, footers=False)
    problems.extend(found.problems)
    return found.rows


def opened(folder: Path, problems: list[str]) -> None:
    """Check the file at `folder` as `History.open` opens it: every part's end read."""
    problems.extend(disk.listing(folder).problems)


def lacking(folder: Path, streams: set[int], start: int) -> int:
    """The first call from `start` on that the file at `folder` lacks, of those `streams` (this
    session's, one History's) wrote there: a file resumed (after a stop, another file, a failed
    write) is given only what it lacks, never a call twice."""
    if not streams or not folder.is_dir():
        return start
    try:
        found = disk.listing(folder, footers=False)
    except ValueError:  # no history file (yet): the writer's check says why
        return start
    at = start
    for part in sorted((p for p in found.parts if p.session == SESSION and p.stream in streams), key=lambda p: p.first):
        if part.first <= at <= part.last:
            at = part.last + 1
    return at
