"""The probe: what mcp_nb wraps around every handler it registers.

It writes the handler's start and end to the current call's trace (so a timed-out
call's fate can be seen), acts out injected faults on the path real faults take, files
a handler's Context logs under its call, contains a handler's BaseExceptions, refuses a
value no JSON can carry (NaN, an infinity: `records/structured.py`), and times each step
of an async handler on the engine's `LoopWatch`.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import time
from collections.abc import Callable
from typing import Any

from mcp import MCPError
from mcp.server.mcpserver.exceptions import ToolError

from mcp_nb import sdk_compat
from mcp_nb.records.structured import RETURN_INSTEAD, not_json
from mcp_nb.records.trace import CURRENT_TRACE, ServerTrace
from mcp_nb.registering.context import context_parameter, filed
from mcp_nb.registering.faults import raise_fault
from mcp_nb.registering.loop_watch import BLOCKING_AFTER_S, LoopWatch


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


class _Stepped:
    """Runs a handler's coroutine one step at a time, timing each step.

    A step is the code between two awaits; while it runs nothing else on mcp_nb's loop
    does (no other call, no deadline). A step longer than `BLOCKING_AFTER_S` is reported
    on the call's trace, and the handler is named while it holds the loop, so a caller
    waiting from another thread can say who made it wait.
    """

    __slots__ = ("coro", "label", "trace", "fn", "watch")

    def __init__(self, coro, label: str, trace: ServerTrace | None, fn: Any, watch: LoopWatch) -> None:
        self.coro, self.label, self.trace, self.fn, self.watch = coro, label, trace, fn, watch

    def __await__(self):
        coro, watch = self.coro, self.watch
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
        watch = self.watch
        watch.label = None
        held = time.perf_counter() - start
        if held >= BLOCKING_AFTER_S:
            watch.blocked(self.label, held, self.trace, self.fn)


def probe(
    fn: Callable[..., Any],
    watch: LoopWatch,
    faults: Callable[[], Any] | None = None,
    label: str = "",
    kind: str = "handler",
) -> Callable[..., Any]:
    """Wrap a handler so its start and end are written to the current call's trace.

    `functools.wraps` keeps the signature, annotations and docstring the SDK reads to
    build schemas. The user's own function object is left untouched in their namespace.
    `faults()`, when given, returns the `faults.Faults` injected into this handler now
    (or None): they act inside the handler, so they travel the path real faults take.
    `label` and `kind` name the handler in messages (`add`, `tool`).
    """
    named = f"{kind} {label or fn.__name__!r}"
    # A handler's log messages through its Context are filed under its call (context.py).
    ctx_name = context_parameter(fn)
    handler = label or fn.__name__
    # What a call to it may need of its request: progress, questions, completions (`Registry.reaches_request`).
    reaches = ctx_name is not None or sdk_compat.uses_resolvers(fn)

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
                value = await _Stepped(fn(*args, **kwargs), named, trace, fn, watch)
                _refuse_non_json(value, kind)
            except BaseException as exc:
                exc = _contained(exc, in_task=True)
                if trace is not None:
                    trace.ended(exc)
                raise exc
            if trace is not None:
                trace.ended(None, value)
            return value

        probed_async.__mcp_nb_probe__ = True  # type: ignore[attr-defined]
        probed_async.__mcp_nb_reaches__ = reaches  # type: ignore[attr-defined]
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
            _refuse_non_json(value, kind)
        except BaseException as exc:
            exc = _contained(exc, in_task=False)
            if trace is not None:
                trace.ended(exc)
            raise exc
        if trace is not None:
            trace.ended(None, value)
        return value

    probed.__mcp_nb_probe__ = True  # type: ignore[attr-defined]
    probed.__mcp_nb_reaches__ = reaches  # type: ignore[attr-defined]
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


INTERNAL_ERROR = -32603


def _refuse_non_json(value: Any, kind: str) -> None:
    # A number JSON cannot carry would reach a client as null in structured content (breaking a
    # `-> float` tool's own output schema) and as a bare NaN in the text the SDK writes: neither
    # is what the handler meant. Refused where it is made, saying which number and where: a tool
    # gets the tool_error the model reads, a resource or a prompt (no isError) a JSON-RPC error.
    refusal = not_json(value)  # a str, an int, None: no walk
    if refusal is None:
        return
    if kind == "tool":
        raise ToolError(refusal + RETURN_INSTEAD)
    raise MCPError(code=INTERNAL_ERROR, message=refusal + RETURN_INSTEAD)
