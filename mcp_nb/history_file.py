"""What a history file is on disk, and whether a path can be one.

A history file (`calls.mcpnb`) is a folder: a marker naming its format, and parts, each an
Arrow IPC file (records/disk.py writes and reads them; format 1, before, had Parquet parts,
which this mcp_nb still reads but no longer adds to). The checks here are those that need no more than
the standard library, so that the setting's own check (`config.py`, below every folder:
`%config McpMagics.history_file`, `mcp_nb.configure(history_file=...)` and the environment
variable MCP_NB_HISTORY_FILE) refuses a path that cannot be a history file before anything
changes, as `elicitation.check_elicit` does for `elicit`.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
import time
from pathlib import Path

from mcp_nb.mistakes import BadValue, read_json

# One id per kernel start: its time (so that sessions sort in the order they began) and a few
# random hex digits (so that two kernels started in the same second differ).
SESSION = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)
FORMAT = 2  # what a file of this version says it is; a later format gets a new number, and this one stays readable
# 1: Parquet parts (read, never written to); 2: Arrow IPC parts, the merged ones' buffers compressed
MARKER = "mcpnb.json"  # the folder's marker: {"mcp_nb_history": FORMAT}
ENV = "MCP_NB_HISTORY_FILE"  # CI keeps its calls without editing notebooks
KEY = "mcp_nb_history"
MARKER_MOST = 65_536  # bytes: a marker is a line of JSON


class HistoryFileError(BadValue):
    """A history file that cannot be opened (missing, unreadable, not a history file, from a newer
    mcp_nb); the message says which, in one line."""


def shown(path: os.PathLike | str) -> str:
    return repr(os.fspath(path))


def as_path(value: object) -> Path | None:
    """The setting's value as an absolute path; None (or an empty text) is no history file."""
    if value is None or value == "":
        return None
    if not isinstance(value, (str, os.PathLike)) or isinstance(value, bytes):
        raise HistoryFileError(f"history_file is a path (a str), or None for no file; got {type(value).__name__}")
    text = os.fspath(value)
    if not isinstance(text, str) or not text.strip():
        raise HistoryFileError("history_file is a path (a str), or None for no file")
    if "\x00" in text:
        raise HistoryFileError("history_file holds a NUL character, which no path can")
    try:
        return Path(text).expanduser().absolute()
    except RuntimeError:  # "~name" of no user this machine knows
        raise HistoryFileError(f"history_file {text!r} starts with a home folder this machine does not know") from None


def format_of(folder: Path) -> int | None:
    """The format the folder's marker names; None for an empty folder (a new history file).

    Raises HistoryFileError, in one line, for anything else: not a folder, a folder of other
    files, a marker that cannot be read or names a format newer than this mcp_nb reads."""
    if not folder.is_dir():
        raise HistoryFileError(f"{shown(folder)} is not a history file (a folder mcp_nb writes): it is a file")
    marker = folder / MARKER
    try:
        text = read_marker(marker)
    except FileNotFoundError:
        try:
            empty = not any(folder.iterdir())
        except OSError as err:
            raise HistoryFileError(f"cannot read {shown(folder)}: {err.strerror or err}") from None
        if empty:
            return None
        raise HistoryFileError(f"{shown(folder)} is not a history file: the folder holds other files and no {MARKER}") from None
    except (OSError, UnicodeDecodeError) as err:
        why = err.strerror if isinstance(err, OSError) and err.strerror else "not text"
        raise HistoryFileError(f"cannot read {shown(marker)}: {why}") from None
    try:
        number = read_json(text)[KEY]
    except (ValueError, TypeError, KeyError):
        raise HistoryFileError(f"{shown(folder)} is not a history file: {MARKER} does not name its format") from None
    if isinstance(number, bool) or not isinstance(number, int) or number < 1:
        raise HistoryFileError(f"{shown(folder)} is not a history file: {MARKER} names format {number!r}")
    if number > FORMAT:
        raise HistoryFileError(
            f"{shown(folder)} was written by a newer mcp_nb (history format {number}; this one reads up to "
            f"{FORMAT}): upgrade mcp_nb to open it"
        )
    return number


def kind(mode: int) -> str:
    """What a file that is not a regular one is, in a few words."""
    for test, what in (
        (stat.S_ISFIFO, "a named pipe"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return what
    return "not a file"


def open_regular(path: Path) -> int:
    """A descriptor of `path` open for reading, if it is a regular file; else HistoryFileError, in one
    line, before anything is read. Opened without following a link and without waiting for a writer
    (a named pipe blocks an ordinary open until someone writes to it), then asked what it is."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
    except BaseException:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise HistoryFileError(f"cannot read {shown(path)}: not a regular file ({kind(mode)})")
    return fd


def read_marker(marker: Path) -> str:
    """The marker's text. A link, a named pipe, a device... is refused unread; so is a file larger than
    a marker ever is (read whole, it could fill the memory)."""
    try:
        fd = open_regular(marker)
    except OSError as err:
        if err.errno == errno.ELOOP:  # O_NOFOLLOW met a symbolic link
            raise HistoryFileError(f"cannot read {shown(marker)}: not a regular file (a symbolic link)") from None
        raise
    with os.fdopen(fd, "rb") as f:
        data = f.read(MARKER_MOST + 1)
    if len(data) > MARKER_MOST:
        raise HistoryFileError(f"{shown(marker)} is too large to be a history file's marker (over {MARKER_MOST:,} bytes)")
    return data.decode("utf-8")


def older_format(folder: Path, number: int) -> str:
    return (
        f"{shown(folder)} is a history file of an older format ({number}; this mcp_nb writes {FORMAT}): "
        "it can be opened (History.open), not written to; keep the history in a new file"
    )


def check_writable(value: object) -> Path | None:
    """The path a kernel may keep its history in: a history file of the format this mcp_nb
    writes, an empty folder, or a name not taken yet in a folder that exists."""
    path = as_path(value)
    if path is None:
        return None
    if path.exists():
        number = format_of(path)
        if number is not None and number < FORMAT:
            raise HistoryFileError(older_format(path, number))
        if not os.access(path, os.W_OK | os.X_OK):
            raise HistoryFileError(f"cannot write to {shown(path)}: permission denied")
        return path
    parent = path.parent
    if not parent.is_dir():
        raise HistoryFileError(f"cannot keep the history in {shown(path)}: the folder {shown(parent)} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise HistoryFileError(f"cannot create {shown(path)}: permission denied in {shown(parent)}")
    return path


def check_readable(value: object) -> Path:
    """The history file to open for reading; raises HistoryFileError, in one line, when there is none."""
    path = as_path(value)
    if path is None:
        raise HistoryFileError("name the history file to open (a path)")
    if not path.exists():
        raise HistoryFileError(f"no history file at {shown(path)}")
    if format_of(path) is None:
        raise HistoryFileError(f"{shown(path)} is an empty folder, not a history file")
    if not os.access(path, os.R_OK | os.X_OK):
        raise HistoryFileError(f"cannot read {shown(path)}: permission denied")
    return path
