"""Roots: the folders and files a client lets a server work in.

A server may ask its client which roots it has (`roots/list`); on the handshake era the
client says when they change (`notifications/roots/list_changed`). `connect(..., roots=...)`
takes paths (a `pathlib.Path`, or text without a scheme: made absolute, as `file://` URIs),
URIs (`file:///data`, `git://...`), `(uri_or_path, name)` pairs, or a function returning
any of those, asked each time the server asks (in a worker thread, never on mcp_nb's loop, and
for at most LISTED_WITHIN_S seconds).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mcp_nb.elicitation import in_thread
from mcp_nb.mistakes import BadType, BadValue

Root = str | os.PathLike[str] | tuple[str | os.PathLike[str], str | None]  # a path or a URI, with a name or not
RootsSource = Sequence[Root] | Callable[[], Sequence[Root]] | None  # what `connect(roots=)` takes

# How long a roots function may take to answer a server that asks: the server waits meanwhile.
LISTED_WITHIN_S = 30.0


def check_roots(value: object) -> None:
    if value is None or callable(value):
        return
    listed(value)


def listed(value: Any) -> list[tuple[str, str | None]]:
    """`value` (a list of roots as the user wrote them) as (uri, name) pairs; one line if it cannot be."""
    if isinstance(value, (str, os.PathLike)) or not isinstance(value, Sequence):
        raise BadType(f"roots is a list of paths or URIs (or a function returning one), got {type(value).__name__}")
    return [_root(item) for item in value]


def current(value: Any) -> list[tuple[str, str | None]]:
    """The roots now: the function's answer when `value` is one."""
    if value is None:
        return []
    return listed(value() if callable(value) else value)


async def asked(value: Any, within: float = LISTED_WITHIN_S) -> list[tuple[str, str | None]]:
    """The roots now, for a server that asks. A roots function is the user's code and may block
    (it may read a config, or a network share): it runs in a thread of its own (`in_thread`), so
    that every other call goes on meanwhile, and one that has not answered within `within`
    seconds raises TimeoutError."""
    if not callable(value):
        return current(value)
    answering = asyncio.ensure_future(in_thread(value))
    try:
        done, _ = await asyncio.wait({answering}, timeout=within)
    finally:
        if not answering.done():
            answering.cancel()
    if not done:
        raise TimeoutError(f"the roots function did not answer within {within:g} s")
    return listed(answering.result())


def _root(item: Any) -> tuple[str, str | None]:
    name = None
    if isinstance(item, tuple) and len(item) == 2 and (item[1] is None or isinstance(item[1], str)):
        item, name = item
    if isinstance(item, os.PathLike) or (isinstance(item, str) and not _has_scheme(item)):
        if isinstance(item, str) and not item.strip():
            raise BadValue("a root is a path or a URI, got an empty string")
        try:
            path = Path(item).expanduser().resolve()
        except (OSError, RuntimeError, ValueError) as err:  # a NUL in it, an unknown ~user
            raise BadValue(f"the root {str(item)!r} is not a path this machine can use: {err}") from None
        return path.as_uri(), name if name is not None else path.name or str(path)
    if isinstance(item, str):
        return item, name
    raise BadType(f"a root is a path, a URI or a (path_or_uri, name) pair, got {type(item).__name__}")


def _has_scheme(text: str) -> bool:
    try:
        scheme = urlsplit(text).scheme
    except ValueError:
        return False
    return len(scheme) > 1  # "C:\\data" is a Windows path, not a URI with scheme "c"
