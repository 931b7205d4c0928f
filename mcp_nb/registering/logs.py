"""Log records, filed under the call they belong to, and the user's logging left alone."""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from mcp_nb.config import settings
from mcp_nb.records.trace import CURRENT_TRACE, log_from_record
from mcp_nb.registering.log_secrets import hide
from mcp_nb.registering.log_secrets import install as hide_in_traffic_loggers
from mcp_nb.sdk_compat import SDK_LOGGER, SDK_SESSION_LOGGER

# The SDK's INFO records carry half of the error model (a ToolError's "Tool 'x' failed"),
# so they must be made. This level (just below INFO) is mcp_nb's mark on the SDK's
# logger: it is only ever set where the user set no level, and recognised as not theirs.
OWN_LEVEL = logging.INFO - 1


def _is_sdk(name: str) -> bool:
    return name == SDK_LOGGER or name.startswith(SDK_LOGGER + ".")


class _UsersLevel(logging.Filter):
    """Lets an SDK record on only where the user's own configuration would have made it.

    Records below that level exist only because of `OWN_LEVEL`, for the call's log; past
    this filter (on the logger that made them) nobody sees them, as without mcp_nb.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= _plain_level(record.name)


def _plain_level(name: str) -> int:
    """The effective level the logger `name` would have without mcp_nb's mark on the SDK's logger."""
    logger: logging.Logger | None = logging.getLogger(name)
    while logger is not None:
        level = logger.level
        if level and not (logger.name == SDK_LOGGER and level == OWN_LEVEL):
            return level
        logger = logger.parent  # type: ignore[assignment]
    return logging.WARNING


_users_level = _UsersLevel()
# How an SDK record is printed live while `show_server_logs` is on (read at each record, so the
# setting needs no observer).
_LIVE = logging.Formatter("[mcp server] %(levelname)s %(name)s: %(message)s")


class _RecordFiler:
    """A log record factory: files every record made during a call under that call.

    A factory sees the records of every logger (the SDK's, the tool's own, the root's)
    when they are made, without a handler anywhere, so the root logger keeps no handler
    of mcp_nb's: the user's `logging.basicConfig()` works, and their records go where
    they would have gone without mcp_nb. It wraps whatever factory was there before.
    It also puts `_UsersLevel` on each SDK logger the first time one makes a record (the
    filter runs after the factory, so none is missed), and prints the SDK's records live
    when `show_server_logs` is on.
    """

    def __init__(self, inner: Callable[..., logging.LogRecord]) -> None:
        self.inner = inner

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record = hide(self.inner(*args, **kwargs))  # no secret in it, before anyone reads it (log_secrets.py)
        trace = CURRENT_TRACE.get()
        if trace is not None:
            trace.add(log_from_record(record))
        if _is_sdk(record.name):
            logger = logging.getLogger(record.name)
            if _users_level not in logger.filters:
                logger.addFilter(_users_level)
            if settings.show_server_logs:
                print(_LIVE.format(record), file=sys.stderr)
        return record


_installed = False
_install_lock = threading.Lock()


def install_log_capture() -> None:
    """File log records under their calls, leaving the root logger and the user's levels alone."""
    global _installed
    with _install_lock:
        if _installed:
            return
        factory = logging.getLogRecordFactory()
        if not isinstance(factory, _RecordFiler):
            logging.setLogRecordFactory(_RecordFiler(factory))
        sdk = logging.getLogger(SDK_LOGGER)
        if sdk.level == logging.NOTSET:
            sdk.setLevel(OWN_LEVEL)
        # What a library adds to its own top logger: with no handler configured anywhere,
        # a crash of an in-kernel tool is shown on its Outcome, not printed as stray lines
        # in the cell by logging's last-resort handler.
        if not any(isinstance(h, logging.NullHandler) for h in sdk.handlers):
            sdk.addHandler(logging.NullHandler())
        # The SDK's client session logs as "client", outside its tree (a server's notification
        # it could not read, with its traceback): the same NullHandler's effect there.
        unheard(SDK_SESSION_LOGGER, SDK_LOGGER)
        hide_in_traffic_loggers()
        _installed = True


class Unheard(logging.Filter):
    """A library's NullHandler, for a logger outside its own tree (a name the user's code may also
    use): a record the library `package` made there that no handler would take is dropped, rather
    than printed into the cell by logging's last-resort handler. A handler anyone configured still
    gets it (a call's log has filed it already: the record factory runs first), and records made
    by anyone else's code on that logger are never touched."""

    def __init__(self, package: str) -> None:
        super().__init__()
        self.package = package

    def filter(self, record: logging.LogRecord) -> bool:
        made_by = sys.modules.get(self.package)  # looked up: a record it made means it is loaded
        folder = getattr(made_by, "__file__", None)
        if folder is None or not record.pathname.startswith(os.path.dirname(os.path.abspath(folder)) + os.sep):
            return True
        logger: logging.Logger | None = logging.getLogger(record.name)
        while logger is not None:  # as Logger.callHandlers looks for a handler
            if logger.handlers:
                return True
            logger = logger.parent if logger.propagate else None  # type: ignore[assignment]
        return False


def unheard(logger: str, package: str) -> None:
    """Put `Unheard(package)` on `logger`, once: what `package` says there that nobody configured
    a handler for stays out of the cell."""
    target = logging.getLogger(logger)
    if not any(isinstance(f, Unheard) and f.package == package for f in target.filters):
        target.addFilter(Unheard(package))
