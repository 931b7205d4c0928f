"""The process's default engine: the one every face uses unless it is handed another.

One owner for the singleton. The API (`mcp_nb.engine()`, `mcp_nb.reset()`) reads and replaces
it here, and a dask worker makes the engine hosting the kernel's shipped tools the default
with `adopt`, so a tool that calls tools through `mcp_nb.call` reaches the worker's own.
"""

from __future__ import annotations

import atexit
import threading

from mcp_nb.calling.engine import Engine

_engine: Engine | None = None
_lock = threading.Lock()
_exit_hook = threading.Event()


def engine() -> Engine:
    """The default engine (server, client, history), created on first use."""
    global _engine
    current = _engine
    if current is None:
        with _lock:
            if _engine is None:
                _engine = Engine()
                _close_at_exit()
            current = _engine
    return current


def current() -> Engine | None:
    """The default engine if there is one, without creating it."""
    return _engine


def adopt(replacement: Engine) -> None:
    """Make `replacement` the default engine (the old one, if any, is left to its owner)."""
    global _engine
    with _lock:
        _engine = replacement


def reset() -> Engine | None:
    """Forget the default engine and close it; the next `engine()` makes a new one. Returns the old one."""
    global _engine
    with _lock:
        old = _engine
        if old is not None:
            old.refuse_inside()  # from inside a handler: refused before anything changes
        _engine = None
    if old is not None:
        old.close()
    return old


def _close_at_exit() -> None:
    # No process mcp_nb starts outlives it: at the interpreter's exit (a script ending, a
    # kernel shut down) the engine is closed, which ends every stdio server's process.
    if not _exit_hook.is_set():
        _exit_hook.set()
        atexit.register(_close_current)


def _close_current() -> None:
    if _engine is not None:
        _engine.close()
