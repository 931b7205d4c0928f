"""A file written whole or not at all, and read only when it is a file: what a cases file and a
snapshot are saved and loaded with.

Written in place (`Path.write_text`), a file is half written while it is written: a kernel that
dies then (or a full disk) leaves half a JSON document, which the next `load` refuses, and two
writers at once (two kernels saving one cases file) interleave their bytes. So the text goes to a
temporary file of this save's own beside the target (a unique name: two writers never share one),
reaches the disk, and is moved over the target in one step (`os.replace`): a reader sees the old
file or the new one, and of two writers the last one's whole file stays. The same pattern as the
OAuth token file (calling/oauth.py), without its lock: a save replaces the file, it merges nothing.

A path that exists and is not a regular file (a FIFO, a device) is refused rather than written
or read: opening a FIFO waits for the other end for ever (the kernel with it), a device may never
end, and replacing one would change what the user made.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from mcp_nb.mistakes import Mistake


class NotARegularFile(Mistake, OSError):
    """The path exists and is no regular file (a folder, a FIFO, a device)."""


def _refuse_unless_regular(path: Path) -> int | None:
    """The mode of the file at `path` (None: nothing there); NotARegularFile for anything else."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(mode):
        raise NotARegularFile(f"{'a folder' if stat.S_ISDIR(mode) else 'not a regular file'}")
    return mode


def read_text(path: str | os.PathLike[str]) -> str:
    """The text of the file at `path` (UTF-8). Raises FileNotFoundError, `NotARegularFile` (a folder,
    a FIFO, a device: checked before it is opened), another OSError, or ValueError (not UTF-8)."""
    path = Path(path)
    if _refuse_unless_regular(path) is None:
        raise FileNotFoundError(2, "No such file or directory", str(path))
    # O_NONBLOCK: a FIFO put there since the check opens without waiting, and is refused below.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as source:
        if not stat.S_ISREG(os.fstat(source.fileno()).st_mode):
            raise NotARegularFile("not a regular file")
        return source.read().decode("utf-8")


def write_whole(path: str | os.PathLike[str], text: str) -> Path:
    """Write `text` (UTF-8) to `path` whole or not at all; returns the path written. Raises OSError
    (`NotARegularFile` for a path that is a folder, a FIFO or a device) and ValueError (a NUL in the path)."""
    path = Path(path)
    if path.is_symlink():
        path = path.resolve()  # the file it points to is the one saved, as writing in place would
    mode = _refuse_unless_regular(path)
    data = text.encode("utf-8")
    partial = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as out:
            if mode is not None and hasattr(os, "fchmod"):
                os.fchmod(out.fileno(), stat.S_IMODE(mode))  # the file keeps who may read it
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise
    return path
