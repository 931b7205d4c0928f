"""The calls outside clients make to a served kernel, recorded the way the kernel's own calls are.

A `Recorder` is server middleware (the SDK runs it around every inbound request, in the
request's own task). For `tools/call`, `resources/read` and `prompts/get` from outside,
it makes an `OutsideCall` (a `CallRecord`: it records, it sends nothing), puts the call's
trace in `CURRENT_TRACE` while the SDK runs the handler, so the probe and the log capture
fill it exactly as for the kernel's own calls, and builds the Outcome from the answer
with the same classification. The progress the handler reports is counted on the trace
as it is sent to the client (`counting_progress`): a kernel call's trace counts the events
its client receives, and an outside call's the events its client is sent, so the history's
`progress` says the same for both. Each Outcome says `via` which transport it came and which
`client` sent it. Over HTTP the Outcome is built once the answer has left (the door settles
the history after every response, and every reader of the history settles first), so the
client does not wait on the bookkeeping.

A request that already carries a trace was sent by a `Call` of this process (the
kernel's client dispatches in the caller's task), which records it itself: it passes
through untouched.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data, progress_token_from_params
from mcp_types import (
    INTERNAL_ERROR,
    CallToolResult,
    ErrorData,
    GetPromptResult,
    ReadResourceResult,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_nb import sdk_compat
from mcp_nb.calling.call import CallRecord
from mcp_nb.mistakes import one_line
from mcp_nb.records.classify import refused_request
from mcp_nb.records.outcome import REQUEST_CANCELLED, Outcome
from mcp_nb.records.trace import CURRENT_TRACE, ServerTrace, exception_chain

TARGETS = {"tools/call": "tool", "resources/read": "resource", "prompts/get": "prompt"}
RESULTS = {"tool": CallToolResult, "resource": ReadResourceResult, "prompt": GetPromptResult}
SETTLE_WITHIN_S = 0.1  # the longest an answered call waits to be recorded when no door settles it
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


class OutsideCall(CallRecord):
    """A call an outside client made: its request as received, and the Outcome of its answer."""

    __slots__ = ("via", "client", "_observes", "t1", "_protocol")

    def __init__(
        self,
        target: str,
        name: str,
        arguments: dict[str, Any] | None,
        via: str,
        client: str | None,
        observes: Callable[[str, str], bool],
        protocol: str | None = None,
    ) -> None:
        # The client's deadline is its own and unknown here: NaN, not a number it never set.
        super().__init__(target, name, arguments, math.nan)
        self.via, self.client, self._observes, self._protocol = via, client, observes, protocol
        self.attempt = 1
        self.started = time.time()
        self.t0 = time.perf_counter()
        self.trace = ServerTrace(self.t0)
        self.t1: float | None = None  # perf_counter() when the answer was ready (`answer_ready`)

    def observes(self, target: str, key: str) -> bool:
        return self._observes(target, key)

    def protocol(self) -> str | None:
        return self._protocol

    def answer_ready(self) -> None:
        """Stop the clock: the Outcome may be built later, its duration is the call's."""
        self.t1 = time.perf_counter()

    def _elapsed_ms(self) -> float:
        end = self.t1 if self.t1 is not None else time.perf_counter()
        return (end - self.t0) * 1000.0

    def answered(self, wire: dict[str, Any]) -> Outcome:
        """The Outcome of the result the server sends back (in its wire form)."""
        if wire.get("resultType") == "input_required":
            # 2026-07-28: the handler asked the client for more (an elicitation, a sampling...);
            # the client answers by calling again, which is a call of its own.
            asked = ", ".join(wire.get("inputRequests") or {})
            return self._outcome("result", "ok", self._elapsed_ms(), content=f"input required: {asked}", is_error=False)
        if self.target == "tool":
            text = _text_of(wire.get("content"))
            if text is not None:
                return self._tool_result(text, bool(wire.get("isError", False)), wire.get("structuredContent"))
        try:
            raw = RESULTS[self.target].model_validate(wire)
        except Exception as exc:  # noqa: BLE001 - an answer mcp_nb cannot read is still a recorded call
            return self._client_error(exc)
        return self._result(raw)

    def failed(self, exc: Exception, modern: bool) -> Outcome:
        """The Outcome of a request that ended in a JSON-RPC error: the error the client got for `exc`."""
        error = handler_exception_to_error_data(exc)
        if error is not None:  # an MCPError, or arguments that failed validation: sent as they are
            return self._protocol_error(error)
        # Anything else the SDK logs and answers in its own way on each protocol era, after this
        # middleware has returned; the exception itself says what happened.
        if modern:
            error = ErrorData(code=INTERNAL_ERROR, message="Internal server error")
        else:
            error = ErrorData(code=0, message=str(exc))
        return self._protocol_error(error, exception_chain(exc))

    def cancelled(self, stopping: bool) -> Outcome:
        elapsed = self._elapsed_ms()
        why = "serving was stopped" if stopping else "the client cancelled it"
        return self._outcome(
            "timeout",
            "cancelled",
            elapsed,
            code=REQUEST_CANCELLED,
            message=f"Cancelled after {elapsed / 1000:.3g}s: {why}",
            observed=self.observes(self.target, self.name),
        )


def _text_of(blocks: Any) -> str | None:
    """The text of a tool result made of text blocks only (the common case), read straight from
    the wire form the SDK built a moment ago from its own models; None for anything else, which
    is then validated and read as the kernel's own calls read it."""
    if type(blocks) is not list:
        return None
    texts = []
    for block in blocks:  # a loop, not all(...) over a generator: this runs for every outside call
        if type(block) is not dict or block.get("type") != "text":
            return None
        texts.append(str(block.get("text", "")))
    return texts[0] if len(texts) == 1 else "\n".join(texts)


def client_name(session: Any) -> str | None:
    """The client's name and version as it introduced itself (initialize, or the request's envelope)."""
    params = session.client_params
    info = getattr(params, "client_info", None)
    if info is None:
        return None
    # The client's words, in every row of its calls: one safe line of a bounded length.
    return one_line(f"{info.name} {info.version}", CLIENT_NAME) or None


CLIENT_NAME = 200  # characters of a client's name and version the history keeps


class Recorder:
    """Server middleware that records outside clients' calls in the engine's history."""

    def __init__(self, engine: Any, via: str, clients: Any, later: bool = False) -> None:
        self.history = engine.history
        self.observes = engine.registry.observes
        self.via = via
        self.clients = clients  # the Clients of this served kernel: connections, log levels
        # Whether an answered call's Outcome is built after its answer has left: where a door
        # sees every answer leave and settles the history then (HTTP: `guard.Guard`).
        self.later = later
        self._settle_soon = False  # a settle of the history is scheduled on the loop
        self.stopping = False
        self.recorded = 0  # outside calls recorded so far

    async def __call__(self, ctx: Any, call_next: Callable[[Any], Any]) -> Any:
        if CURRENT_TRACE.get() is not None:  # sent by a Call of this process, which records it
            return await call_next(ctx)
        level = self.clients.seen(ctx.session)
        if level is not None:
            sdk_compat.restrict_log_levels(ctx.session, frozenset(LOG_LEVELS[LOG_LEVELS.index(level) :]))
        target = TARGETS.get(ctx.method)
        if target is None:
            result = await call_next(ctx)
            if ctx.method == "initialize" and isinstance(result, dict):
                announce_changes(result)
            return result
        params = ctx.params or {}
        session = ctx.session
        key = "uri" if target == "resource" else "name"
        arguments = None if target == "resource" else params.get("arguments")
        call = OutsideCall(
            target,
            str(params.get(key, "")),
            arguments,
            self.via,
            client_name(session),
            self.observes,
            getattr(session, "protocol_version", None) or None,
        )
        meta = params.get("_meta")
        # Most calls ask for no progress: the SDK's reading of the token only for those that might.
        if type(meta) is dict and "progressToken" in meta and progress_token_from_params(params) is not None:
            counting_progress(session, call.trace)
        token = CURRENT_TRACE.set(call.trace)
        try:
            result = await call_next(ctx)
        except asyncio.CancelledError:
            self._record(call.cancelled(self.stopping))
            raise
        except Exception as exc:
            if not refused_request(exc):  # refused before any handler (params of the wrong shape): no call was made
                self._record(call.failed(exc, ctx.session.protocol_version in MODERN_PROTOCOL_VERSIONS))
            raise
        finally:
            CURRENT_TRACE.reset(token)
        if self.later:
            call.answer_ready()
            self.recorded += 1
            self.history.record_later(partial(call.answered, result))
            if not self._settle_soon:
                # The door settles after the answer leaves; should no answer leave (a stream
                # the client dropped), the views still hear of the call within moments. One
                # timer at a time: a busy server's doors settle long before it fires.
                self._settle_soon = True
                asyncio.get_running_loop().call_later(SETTLE_WITHIN_S, self._settle)
        else:
            self._record(call.answered(result))
        return result

    def _settle(self) -> None:
        self._settle_soon = False
        self.history.settle()

    def _record(self, outcome: Outcome) -> None:
        self.recorded += 1
        self.history.record(outcome)


def counting_progress(session: Any, trace: ServerTrace) -> None:
    """Count on `trace` each progress event the handler sends through this request's `session`.

    The SDK makes a session for each inbound request, and a handler's `Context` reports
    progress through it (`ctx.report_progress` -> `session.report_progress`), so wrapping
    it here counts this call's events and no other's. Called only when the client asked
    for progress (a progress token): without one the SDK sends nothing, and nothing is
    counted. An event is counted once it has been sent. A kernel call never passes here
    (its own client counts what it receives), so no event is counted twice.
    """
    send = session.report_progress

    async def report_progress(progress: float, total: float | None = None, message: str | None = None) -> None:
        await send(progress, total, message)
        trace.progressed(progress, total, message)

    session.report_progress = report_progress


def announce_changes(result: dict[str, Any]) -> None:
    """Tell a client at initialize that the lists it gets may change (a re-run cell), and that it
    will hear when they do."""
    capabilities = result.get("capabilities")
    if not isinstance(capabilities, dict):
        return
    for kind in ("tools", "resources", "prompts"):
        if isinstance(capabilities.get(kind), dict):
            capabilities[kind]["listChanged"] = True
