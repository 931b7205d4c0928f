"""What the server side did for one call: its log records and its handler's fate.

The engine puts a `ServerTrace` in a context variable before it sends a request.
The SDK's in-process dispatch runs the handler in the caller's task, and anyio
copies the context into the worker thread of a sync handler, so both the log
capture below and the probe around each registered function find the trace of
the call they belong to, even after the client has stopped waiting.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import logging
import time
from dataclasses import dataclass
from typing import Any, Callable

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

    def __str__(self) -> str:
        return f"{self.level} {self.logger}: {self.message}"


def _exception_chain(exc: BaseException | None) -> tuple[tuple[str, str], ...]:
    chain = []
    seen = set()
    while exc is not None and id(exc) not in seen and len(chain) < 10:
        seen.add(id(exc))
        chain.append((type(exc).__name__, str(exc)))
        exc = exc.__cause__ or exc.__context__
    return tuple(chain)


_formatter = logging.Formatter()


def log_from_record(record: logging.LogRecord) -> ServerLog:
    exc = record.exc_info[1] if record.exc_info else None
    return ServerLog(
        level=record.levelname,
        logger=record.name,
        message=record.getMessage(),
        traceback=_formatter.formatException(record.exc_info) if record.exc_info else None,
        template=record.msg if isinstance(record.msg, str) else "",
        exceptions=_exception_chain(exc),
    )


class ServerTrace:
    """Mutable record of the server side of one call; written from the loop or a worker thread."""

    __slots__ = ("t0", "logs", "handler_started", "handler_ended", "status", "error_type", "returned_error")

    def __init__(self, t0: float) -> None:
        self.t0 = t0  # perf_counter() when the request was sent
        self.logs: list[ServerLog] | tuple[()] = ()  # a list from the first record on; most calls log nothing
        self.handler_started: float | None = None
        self.handler_ended: float | None = None
        self.status: str | None = None  # "returned" | "raised" | "cancelled"
        self.error_type: str | None = None  # "ToolError", "MCPError", ... when raised
        self.returned_error = False  # the handler returned a result flagged isError

    def started(self) -> None:
        self.handler_started = time.perf_counter()

    def ended(self, exc: BaseException | None, value: Any = None) -> None:
        if exc is None:
            self.status = "returned"
            self.returned_error = bool(getattr(value, "is_error", False))
        elif isinstance(exc, (GeneratorExit, KeyboardInterrupt)) or _is_cancellation(exc):
            self.status = "cancelled"
        else:
            self.status = "raised"
            self.error_type = _kind_of_error(exc)
        self.handler_ended = time.perf_counter()


def _is_cancellation(exc: BaseException) -> bool:
    return isinstance(exc, asyncio.CancelledError)


def _kind_of_error(exc: BaseException) -> str:
    """Name the exception by the SDK class it is, which decides how it is reported."""
    from mcp import MCPError
    from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError

    for cls in (MCPError, ResourceNotFoundError, ResourceError, ToolError):
        if isinstance(exc, cls):
            return cls.__name__
    return "Exception"


class HandlerExit(RuntimeError):
    """A handler raised SystemExit or KeyboardInterrupt: reported as a crash, not obeyed."""


def _contained(exc: BaseException) -> BaseException:
    # `sys.exit()` in a tool must not stop mcp_nb's loop (or the kernel): the SDK then
    # treats it like any other unexpected exception, a crash with a traceback in the log.
    if isinstance(exc, (SystemExit, KeyboardInterrupt)):
        wrapped = HandlerExit(f"the handler raised {type(exc).__name__}({', '.join(map(repr, exc.args))})")
        wrapped.__cause__ = exc
        return wrapped
    return exc


def probe(fn: Callable[..., Any], faults: Callable[[], Any] | None = None, label: str = "") -> Callable[..., Any]:
    """Wrap a handler so its start and end are written to the current call's trace.

    `functools.wraps` keeps the signature, annotations and docstring the SDK reads to
    build schemas. The user's own function object is left untouched in their namespace.
    `faults()`, when given, returns the `faults.Faults` injected into this handler now
    (or None): they act inside the handler, so they travel the path real faults take.
    """
    from .faults import raise_fault

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def probed_async(*args: Any, **kwargs: Any) -> Any:
            trace = CURRENT_TRACE.get()
            if trace is not None:
                trace.started()
            try:
                injected = faults() if faults is not None else None
                if injected is not None:
                    if injected.latency:
                        await asyncio.sleep(injected.latency)
                    raise_fault(injected.draw(kwargs), label)
                value = await fn(*args, **kwargs)
            except BaseException as exc:
                exc = _contained(exc)
                if trace is not None:
                    trace.ended(exc)
                raise exc
            if trace is not None:
                trace.ended(None, value)
            return value

        probed_async.__mcp_nb_probe__ = True  # type: ignore[attr-defined]
        return probed_async

    @functools.wraps(fn)
    def probed(*args: Any, **kwargs: Any) -> Any:
        trace = CURRENT_TRACE.get()
        if trace is not None:
            trace.started()
        try:
            injected = faults() if faults is not None else None
            if injected is not None:
                if injected.latency:
                    time.sleep(injected.latency)
                raise_fault(injected.draw(kwargs), label)
            value = fn(*args, **kwargs)
        except BaseException as exc:
            exc = _contained(exc)
            if trace is not None:
                trace.ended(exc)
            raise exc
        if trace is not None:
            trace.ended(None, value)
        return value

    probed.__mcp_nb_probe__ = True  # type: ignore[attr-defined]
    return probed


class CaptureHandler(logging.Handler):
    """Files every record emitted during a call under that call's trace."""

    def emit(self, record: logging.LogRecord) -> None:
        trace = CURRENT_TRACE.get()
        if trace is not None:
            entry = log_from_record(record)
            if trace.logs:
                trace.logs.append(entry)
            else:
                trace.logs = [entry]


_capture = CaptureHandler(level=logging.DEBUG)
_live: logging.Handler | None = None
SDK_LOGGER = "mcp"


def install_log_capture() -> None:
    """Capture the SDK's log records per call without printing them.

    Must run before the first `MCPServer()`: its `logging.basicConfig` only installs a
    stderr handler on a root logger that has none, and ours counts as one. The SDK's
    logger tree stops propagating, so its INFO lines never reach the user's handlers;
    records of other loggers (a tool's own `logging.getLogger(__name__)`) reach our
    handler on the root logger as usual.
    """
    root = logging.getLogger()
    if _capture not in root.handlers:
        root.addHandler(_capture)
    sdk = logging.getLogger(SDK_LOGGER)
    if _capture not in sdk.handlers:
        sdk.addHandler(_capture)
    sdk.propagate = False
    if sdk.level == logging.NOTSET or sdk.level > logging.INFO:
        sdk.setLevel(logging.INFO)


def show_live_logs(enabled: bool) -> None:
    """Print the SDK's records as they happen, in addition to capturing them."""
    global _live
    sdk = logging.getLogger(SDK_LOGGER)
    if enabled and _live is None:
        import sys

        _live = logging.StreamHandler(sys.stderr)
        _live.setFormatter(logging.Formatter("[mcp server] %(levelname)s %(name)s: %(message)s"))
        sdk.addHandler(_live)
    elif not enabled and _live is not None:
        sdk.removeHandler(_live)
        _live = None
