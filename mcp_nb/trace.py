"""What the server side did for one call: its log records, its handler's fate, and the loop.

A `Call` puts its `ServerTrace` in a context variable before it sends a request.
The SDK's in-process dispatch runs the handler in the calling task, and anyio copies
the context into the worker thread of a sync handler, so both the log capture below
and the probe around each registered function find the trace of the call they
belong to, even after the client has stopped waiting.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import logging
import threading
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable

from .sdk_compat import SDK_LOGGER

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


SOURCES = ("logging", "context", "stderr", "notification")
MARKED = frozenset({"context", "notification"})


@dataclass(frozen=True, slots=True)
class ProgressEvent:
    """One progress notification the server sent for a call, as the client received it."""

    progress: float
    total: float | None
    message: str | None
    seconds: float  # since the request was sent


def exception_chain(exc: BaseException | None) -> tuple[tuple[str, str], ...]:
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
        exceptions=exception_chain(exc),
        at=record.created,
    )


class ServerTrace:
    """Mutable record of the server side of one call; written from the loop or a worker thread."""

    __slots__ = ("t0", "logs", "progress", "handler_started", "handler_ended", "status", "error_type", "returned_error")

    def __init__(self, t0: float) -> None:
        self.t0 = t0  # perf_counter() when the request was sent
        self.logs: list[ServerLog] | tuple[()] = ()  # a list from the first record on; most calls log nothing
        self.progress: list[ProgressEvent] | tuple[()] = ()  # likewise, from the first progress notification
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
    from mcp import MCPError
    from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError

    for cls in (MCPError, ResourceNotFoundError, ResourceError, ToolError):
        if isinstance(exc, cls):
            return cls.__name__
    return "Exception"


class HandlerExit(RuntimeError):
    """A handler raised a BaseException that is not an Exception (SystemExit, KeyboardInterrupt,
    GeneratorExit, one of its own): reported as a crash, not obeyed."""


def _contained(exc: BaseException, in_task: bool) -> BaseException:
    # The SDK answers an `Exception` from a handler; anything else (`sys.exit()`, a
    # KeyboardInterrupt, a BaseException subclass of the tool's own) would escape the
    # request, the call, and mcp_nb's loop. Wrapped, it is a crash like any other, with
    # the original in the traceback. A real cancellation is the one BaseException that
    # must stay what it is: it is how deadlines and interrupts stop a handler. It can only
    # reach a handler running in a task that is being cancelled; one a handler raises by
    # itself (or in a worker thread, which nothing can cancel) is a crash.
    if isinstance(exc, Exception):
        return exc
    if isinstance(exc, asyncio.CancelledError) and in_task:
        task = asyncio.current_task()
        if task is None or task.cancelling():
            return exc
    wrapped = HandlerExit(f"the handler raised {type(exc).__name__}({', '.join(map(repr, exc.args))})")
    wrapped.__cause__ = exc
    return wrapped


# -- the event loop's health: an async handler that does not await blocks every call ---------------

BLOCKING_AFTER_S = 0.1  # asyncio's own debug threshold for a slow step
# How long a handler held the loop, in its warning; mcp_nb.nbval's sanitizer is built from it.
BLOCKED_FOR = "event loop for {seconds:.2f} s without awaiting"


class LoopWatch:
    """Which async handler holds mcp_nb's loop right now, and for how long, readable from any thread."""

    def __init__(self) -> None:
        self.label: str | None = None
        self.since = 0.0
        self._warned: set[str] = set()
        self._lock = threading.Lock()

    def forget(self) -> None:
        """Warn afresh (a new server has new handlers, perhaps of the same names)."""
        with self._lock:
            self._warned.clear()

    def blocker(self, at_least: float = BLOCKING_AFTER_S) -> tuple[str, float] | None:
        """(handler, seconds) when one async handler has held the loop for `at_least` seconds."""
        label, since = self.label, self.since
        if label is None:
            return None
        held = time.perf_counter() - since
        return (label, held) if held >= at_least else None

    def blocked(self, label: str, seconds: float, trace: ServerTrace | None, where: Any = None) -> None:
        message = (
            f"async {label} blocked mcp_nb's " + BLOCKED_FOR.format(seconds=seconds) + ": every other call "
            "and every deadline waited. Make it a plain `def` (mcp_nb then runs it in a worker thread), or move "
            "the blocking work into `await asyncio.to_thread(...)`."
        )
        if trace is not None:
            trace.add(ServerLog(level="WARNING", logger="mcp_nb", message=message, at=time.time()))
        with self._lock:
            first = label not in self._warned
            self._warned.add(label)
        if first:
            # Pointed at the handler's own `def`, so the warning shows the user's code.
            code = getattr(where, "__code__", None)
            if code is not None:
                module = getattr(where, "__module__", None) or "__main__"
                warnings.warn_explicit(message, LoopBlockedWarning, code.co_filename, code.co_firstlineno, module=module)
            else:
                warnings.warn(message, LoopBlockedWarning, stacklevel=2)


class LoopBlockedWarning(RuntimeWarning):
    """An async handler held mcp_nb's event loop (said once per handler)."""


LOOP = LoopWatch()


class _Stepped:
    """Runs a handler's coroutine one step at a time, timing each step.

    A step is the code between two awaits; while it runs nothing else on mcp_nb's loop
    does (no other call, no deadline). A step longer than `BLOCKING_AFTER_S` is reported
    on the call's trace, and the handler is named while it holds the loop, so a caller
    waiting from another thread can say who made it wait.
    """

    __slots__ = ("coro", "label", "trace", "fn")

    def __init__(self, coro, label: str, trace: ServerTrace | None, fn: Any = None) -> None:
        self.coro, self.label, self.trace, self.fn = coro, label, trace, fn

    def __await__(self):
        coro, watch = self.coro, LOOP
        value: Any = None
        error: BaseException | None = None
        while True:
            start = time.perf_counter()
            watch.label, watch.since = self.label, start
            try:
                step = coro.send(value) if error is None else coro.throw(error)
            except StopIteration as stop:
                self._timed(start)
                return stop.value
            except BaseException:
                self._timed(start)
                raise
            self._timed(start)
            try:
                value, error = (yield step), None
            except GeneratorExit:  # the awaiting coroutine is being closed: close the handler too
                coro.close()
                raise
            except BaseException as exc:  # thrown in at the await (a cancellation): pass it on
                value, error = None, exc

    def _timed(self, start: float) -> None:
        watch = LOOP
        watch.label = None
        held = time.perf_counter() - start
        if held >= BLOCKING_AFTER_S:
            watch.blocked(self.label, held, self.trace, self.fn)


def probe(
    fn: Callable[..., Any], faults: Callable[[], Any] | None = None, label: str = "", kind: str = "handler"
) -> Callable[..., Any]:
    """Wrap a handler so its start and end are written to the current call's trace.

    `functools.wraps` keeps the signature, annotations and docstring the SDK reads to
    build schemas. The user's own function object is left untouched in their namespace.
    `faults()`, when given, returns the `faults.Faults` injected into this handler now
    (or None): they act inside the handler, so they travel the path real faults take.
    `label` and `kind` name the handler in messages (`add`, `tool`).
    """
    from .context import context_parameter, filed
    from .faults import raise_fault

    named = f"{kind} {label or fn.__name__!r}"
    # A handler's log messages through its Context are filed under its call (context.py).
    ctx_name = context_parameter(fn)
    handler = label or fn.__name__

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
                if ctx_name is not None and ctx_name in kwargs:
                    kwargs[ctx_name] = filed(kwargs[ctx_name], handler)
                value = await _Stepped(fn(*args, **kwargs), named, trace, fn)
            except BaseException as exc:
                exc = _contained(exc, in_task=True)
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
            if ctx_name is not None and ctx_name in kwargs:
                kwargs[ctx_name] = filed(kwargs[ctx_name], handler)
            value = fn(*args, **kwargs)
            _check_returned(value, named)
        except BaseException as exc:
            exc = _contained(exc, in_task=False)
            if trace is not None:
                trace.ended(exc)
            raise exc
        if trace is not None:
            trace.ended(None, value)
        return value

    probed.__mcp_nb_probe__ = True  # type: ignore[attr-defined]
    return probed


class NotAResult(TypeError):
    """A sync handler returned something to await or to iterate, not a result."""


# What tools return most: none of these can be awaited or iterated lazily (checked first,
# as the three checks below cost a few µs on every call, served calls included).
_PLAIN_RESULTS = frozenset({str, int, float, bool, dict, list, tuple, bytes, type(None)})


def _check_returned(value: Any, named: str) -> None:
    # A plain `def` returning a coroutine or a generator would "succeed" with the object's
    # repr as its text (and the coroutine would never run). Said at once, as a crash.
    if type(value) in _PLAIN_RESULTS:
        return
    if inspect.isawaitable(value) or inspect.isgenerator(value) or inspect.isasyncgen(value):
        kind = "a generator" if inspect.isgenerator(value) or inspect.isasyncgen(value) else "an awaitable"
        if inspect.iscoroutine(value):
            value.close()  # never awaited: closed here, so Python does not warn about it later
        raise NotAResult(
            f"{named} returned {kind} ({type(value).__name__}), not a result: "
            "write it as `async def` and await inside, or return the value itself"
        )


# -- log records: filed under the call they belong to, and the user's logging left alone ----------

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
_live: logging.Formatter | None = None  # set while show_server_logs is on


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
        record = self.inner(*args, **kwargs)
        trace = CURRENT_TRACE.get()
        if trace is not None:
            trace.add(log_from_record(record))
        if _is_sdk(record.name):
            logger = logging.getLogger(record.name)
            if _users_level not in logger.filters:
                logger.addFilter(_users_level)
            live = _live
            if live is not None:
                import sys

                print(live.format(record), file=sys.stderr)
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
        _installed = True


def show_live_logs(enabled: bool) -> None:
    """Print the SDK's records as they happen, in addition to capturing them."""
    global _live
    _live = logging.Formatter("[mcp server] %(levelname)s %(name)s: %(message)s") if enabled else None
