"""The process's default engine: the one every face uses unless it is handed another.

One owner for the singleton. The API (`mcp_nb.engine()`, `mcp_nb.reset()`) reads and replaces
it here, and a dask worker makes the engine hosting the kernel's shipped tools the default
with `adopt`, so a tool that calls tools through `mcp_nb.call` reaches the worker's own.
"""

from __future__ import annotations

import atexit
import logging
import threading
import weakref

from mcp_nb.calling.engine import Engine
from mcp_nb.config import settings
from mcp_nb.mistakes import first_line

_engine: Engine | None = None
_lock = threading.Lock()
_exit_hook = threading.Event()
_keeps: weakref.ref[Engine] | None = None  # the default engine this module made: the one that writes the history file
log = logging.getLogger(__name__)


def engine() -> Engine:
    """The default engine (server, client, history), created on first use."""
    global _engine
    current = _engine
    if current is None:
        with _lock:
            if _engine is None:
                _engine = Engine()
                _close_at_exit()
                _keep(_engine)
            current = _engine
    return current


def _keep(made: Engine) -> None:
    """The kernel's history goes to the configured history file. Only an engine made here: a dask
    worker's (`adopt`) sends its records to the kernel, which writes them."""
    global _keeps
    _keeps = weakref.ref(made)  # not a reference that keeps an engine alive after reset()
    if settings.history_file is None:
        return
    try:
        made.keep_history(settings.history_file, settings.history_window)
    except ValueError as err:  # the file changed since it was checked (removed, made read-only): in memory
        log.warning("%s; the history is kept in memory only", first_line(err))


def _history_file_changed(change: object) -> None:
    # Already checked by the setting (`config.py`): a history file this mcp_nb can write, or None.
    made = _keeps() if _keeps is not None else None
    if made is not None and made is _engine and not made.closed:
        made.keep_history(settings.history_file, settings.history_window)


settings.observe(_history_file_changed, names=["history_file", "history_window"])


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
