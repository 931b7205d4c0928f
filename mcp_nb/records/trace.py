"""What the server side did for one call: its log records, its progress, its handler's fate.

A `Call` puts its `ServerTrace` in a context variable before it sends a request.
The SDK's in-process dispatch runs the handler in the calling task, and anyio copies
the context into the worker thread of a sync handler, so both the log capture
(`registering.logs`) and the probe around each registered function (`registering.probe`)
find the trace of the call they belong to, even after the client has stopped waiting.
This module holds the data only; it knows nothing of how it is filled.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from dataclasses import dataclass
from typing import Any

from mcp import MCPError
from mcp.server.mcpserver.exceptions import (
    ResourceError,
    ResourceNotFoundError,
    ToolError,
)

from mcp_nb.views.theme import MARKED

CURRENT_TRACE: contextvars.ContextVar[ServerTrace | None] = contextvars.ContextVar("mcp_nb_trace", default=None)


@dataclass(frozen=True, slots=True)
class ServerLog:
    """One log record emitted while the server handled a call (what the operator sees)."""

    level: str
    logger: str
    message: str
    traceback: str | None = None
    template: str = ""  # the record's unformatted message, which classification matches on
    exceptions: tuple[tuple[str, str], ...] = ()  # (type, text) of the logged exception and its causes
    # "logging" (a log record here), "context" (a handler's `ctx.info(...)`), "stderr" (a stdio
    # server's), "notification" (a log message an outside server sent)
    source: str = "logging"
    at: float | None = None  # when it was heard, in seconds since the epoch

    def __str__(self) -> str:
        # A log record and a stderr line say where they come from by their logger; a handler's
        # Context and an outside server's log notification are marked.
        mark = f"[{self.source}] " if self.source in MARKED else ""
        return f"{mark}{self.level} {self.logger}: {self.message}" if self.logger else f"{mark}{self.level}: {self.message}"

    def __repr__(self) -> str:
        # One short line each, so a list of them (`o.server_logs`) reads at a glance; the fields
        # (`.message`, `.traceback`, ...) hold everything.
        shown = str(self)
        first = shown.splitlines()[0] if shown else ""
        more = " ..." if len(first) > 120 or len(shown) > len(first) else ""
        return f"<ServerLog {first[:120]}{more}{' +traceback' if self.traceback else ''}>"


SOURCES = ("logging", "context", "stderr", "notification")


@dataclass(frozen=True, slots=True)
class ProgressEvent:
    """One progress notification the server sent for a call, as the client received it."""

    progress: float
    total: float | None
    message: str | None
    seconds: float  # since the request was sent


def exception_chain(exc: BaseException | None) -> tuple[tuple[str, str], ...]:
    chain: list[tuple[str, str]] = []
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen and len(chain) < 10:
        seen.add(id(exc))
        chain.append((type(exc).__name__, str(exc)))
        exc = exc.__cause__ or exc.__context__
    return tuple(chain)


_formatter = logging.Formatter()


# A record whose traceback held a secret carries it as scrubbed text (`exc_text`) instead of the
# exception (registering/log_secrets.py), and the exceptions' names and scrubbed texts under this
# attribute: what the error model reads of a call's log stays when the secret goes.
EXCEPTIONS = "_mcp_nb_exceptions"


def log_from_record(record: logging.LogRecord) -> ServerLog:
    traceback: str | None
    if record.exc_info:
        traceback, exceptions = _formatter.formatException(record.exc_info), exception_chain(record.exc_info[1])
    else:
        traceback, exceptions = record.exc_text or None, getattr(record, EXCEPTIONS, ())
    return ServerLog(
        level=record.levelname,
        logger=record.name,
        message=record.getMessage(),
        traceback=traceback,
        template=record.msg if isinstance(record.msg, str) else "",
        exceptions=exceptions,
        at=record.created,
    )


class ServerTrace:
    """Mutable record of the server side of one call; written from the loop or a worker thread."""

    __slots__ = (
        "t0",
        "logs",
        "progress",
        "handler_started",
        "handler_ended",
        "status",
        "error_type",
        "returned_error",
        "held",
    )

    def __init__(self, t0: float) -> None:
        self.t0 = t0  # perf_counter() when the request was sent
        self.logs: list[ServerLog] | tuple[()] = ()  # a list from the first record on; most calls log nothing
        self.progress: list[ProgressEvent] | tuple[()] = ()  # likewise, from the first progress notification
        self.handler_started: float | None = None
        self.handler_ended: float | None = None
        self.status: str | None = None  # "returned" | "raised" | "cancelled"
        self.error_type: str | None = None  # "ToolError", "MCPError", ... when raised
        self.returned_error = False  # the handler returned a result flagged isError
        # (handler, seconds) of the longest step the call's own async handler held the loop for,
        # past the watch's threshold; None when it never did.
        self.held: tuple[str, float] | None = None

    def started(self) -> None:
        self.handler_started = time.perf_counter()

    def ended(self, exc: BaseException | None, value: Any = None) -> None:
        if exc is None:
            self.status = "returned"
            self.returned_error = bool(getattr(value, "is_error", False))
        elif isinstance(exc, (asyncio.CancelledError, GeneratorExit)):
            self.status = "cancelled"
        else:
            self.status = "raised"
            self.error_type = _kind_of_error(exc)
        self.handler_ended = time.perf_counter()

    def add(self, entry: ServerLog) -> None:
        if self.logs:
            self.logs.append(entry)
        else:
            self.logs = [entry]

    def progressed(self, progress: float, total: float | None, message: str | None) -> ProgressEvent:
        event = ProgressEvent(progress, total, message, time.perf_counter() - self.t0)
        if self.progress:
            self.progress.append(event)
        else:
            self.progress = [event]
        return event


def _kind_of_error(exc: BaseException) -> str:
    """Name the exception by the SDK class it is, which decides how it is reported."""
    for cls in (MCPError, ResourceNotFoundError, ResourceError, ToolError):
        if isinstance(exc, cls):
            return cls.__name__
    return "Exception"
