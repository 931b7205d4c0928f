"""Calls: one coroutine does the work, with a sync and an async face around it.

`perform` runs on mcp_nb's loop thread. It sends the request through the SDK's
`Client` (connected in-process to the kernel's `MCPServer`), enforces the deadline
itself (`deadline.py`), classifies what came back, and records the Outcome in the history before
returning it — on every path, including timeouts and cancellation.

Why the deadline is ours: the SDK's own `read_timeout_seconds` cancels through an
anyio scope, and a sync handler's worker thread shields that scope, so in-process
a sync tool is never timed out. A native task cancellation returns at the deadline for both kinds; the request is abandoned as the SDK would
abandon it (async handlers are cancelled, a sync handler's thread runs on), and the
probe in `trace.py` reports what the handler did afterwards.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Coroutine

from mcp import Client, MCPError
from mcp.server import MCPServer

from . import classify
from .config import check_timeout, settings
from .deadline import EXPIRED, Deadlines
from .history import History
from .loop import LoopThread
from .outcome import REQUEST_CANCELLED, REQUEST_TIMEOUT, Outcome
from .registry import Registry
from .retry import Retry, check_idempotent, policy, with_retries
from .structured import check_results_locally
from .trace import CURRENT_TRACE, ServerTrace, install_log_capture

METHODS = {"tool": "tools/call", "resource": "resources/read", "prompt": "prompts/get"}
_call_ids = itertools.count(1)  # process-wide, so ids stay unique across `reset()`
CLOSED = (
    "this server was closed by mcp_nb.reset(); call the new one with mcp_nb.call(...) "
    "(a panel of the old one cannot: show a new one with mcp_nb.panel())"
)


class Engine:
    """The in-kernel server, the client connected to it, and the call history."""

    def __init__(self, name: str = "mcp_nb") -> None:
        install_log_capture()  # before MCPServer(): keeps its basicConfig from printing to stderr
        self.server = MCPServer(name)
        self.registry = Registry(self.server)
        self.history = History()
        self._loop: LoopThread | None = None
        self._loop_lock = threading.Lock()
        self._client: Client | None = None
        self._connecting: asyncio.Future[Client] | None = None
        self._closing: asyncio.Event | None = None
        self._owner: asyncio.Task[None] | None = None
        self._deadlines: Deadlines | None = None
        self._listed_version = -1
        self._closed = False
        self._calls: set[asyncio.Task] = set()  # the tasks performing a call right now
        self._close_listeners: list[Callable[[], None]] = []

    # -- the loop and the client session --------------------------------------------------------

    @property
    def closed(self) -> bool:
        """True once `close()` (which `mcp_nb.reset()` calls) has run: no more calls."""
        return self._closed

    @property
    def loop(self) -> LoopThread:
        if self._loop is None:
            if self._closed:
                raise RuntimeError(CLOSED)
            with self._loop_lock:
                if self._loop is None:
                    self._loop = LoopThread()
        return self._loop

    async def _connected(self) -> Client:
        if self._client is not None:
            return self._client
        if self._connecting is None:
            self._connecting = asyncio.get_running_loop().create_future()
            self._closing = asyncio.Event()
            self._owner = asyncio.get_running_loop().create_task(self._own_client(self._connecting, self._closing))
        return await asyncio.shield(self._connecting)

    async def _own_client(self, ready: asyncio.Future[Client], closing: asyncio.Event) -> None:
        # The one task that enters and leaves the client's context, as anyio requires.
        try:
            async with Client(self.server, cache=None) as client:
                check_results_locally(client.session)  # spares the first call the import of jsonschema
                self._client = client
                ready.set_result(client)
                await closing.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
                self._connecting = None
            raise
        finally:
            self._client = None

    def close(self) -> None:
        """Leave the client session (in its owner task), stop the loop thread, tell the listeners.

        Calls still in flight are cancelled first (and whatever is left as the loop stops),
        so whoever waits for them (a panel, a future) gets an answer instead of waiting forever.
        """
        if self._closed:
            return
        self._closed = True
        loop, self._loop = self._loop, None
        try:
            if loop is not None:
                if self._owner is not None and not loop.in_loop():
                    try:
                        loop.run(self._shutdown())
                    except Exception:
                        pass  # closing is best effort: the loop thread stops below either way
                loop.stop()
        finally:
            for listener in list(self._close_listeners):
                try:
                    listener()
                except Exception:  # a broken view must not stop a reset
                    logging.getLogger(__name__).exception("close listener failed")

    def on_close(self, listener: Callable[[], None], remove: bool = False) -> None:
        """Call `listener()` once this engine is closed (`remove=True` takes it back)."""
        if remove:
            if listener in self._close_listeners:
                self._close_listeners.remove(listener)
        else:
            self._close_listeners.append(listener)

    async def _shutdown(self) -> None:
        # Calls in flight first: their callers stop waiting, so each is recorded as
        # cancelled, before the session closes under it (which would fail it otherwise).
        calls = [task for task in self._calls if not task.done()]
        for task in calls:
            task.cancel()
        if calls:
            await asyncio.wait(calls, timeout=5)
        if self._closing is not None:
            self._closing.set()
        if self._owner is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self._owner, timeout=5)

    # -- the one implementation -----------------------------------------------------------------

    async def perform(
        self,
        target: str,
        name: str,
        arguments: dict[str, Any] | None,
        timeout: float,
        call_id: int | None = None,
        attempt: int = 1,
        backoff: float = 0.0,
    ) -> Outcome:
        """One attempt of one call, recorded whatever happens. Retries pass their call_id."""
        task = asyncio.current_task()
        # Known while in flight, so that closing the engine can cancel it (see close()).
        self._calls.add(task)
        try:
            if call_id is None:
                call_id = next(_call_ids)
            # Session set-up is mcp_nb's business, not the request's: it happens before the
            # request's clock and deadline start (in-process it cannot hang).
            try:
                client = self._client or await self._connected()
                if self.registry.version != self._listed_version:
                    await self._relist(client)
            except asyncio.CancelledError:  # interrupted while connecting: still a call, still recorded
                self.history.record(
                    self._cancelled(
                        call_id, target, name, arguments, time.time(), time.perf_counter(), timeout,
                        ServerTrace(time.perf_counter()), attempt, backoff,
                    )  # fmt: skip
                )
                raise
            except Exception as err:
                outcome = self._client_error(
                    call_id, target, name, arguments, err, time.time(), time.perf_counter(), timeout,
                    ServerTrace(time.perf_counter()), attempt, backoff,
                )  # fmt: skip
                self.history.record(outcome)
                return outcome
            started_at = time.time()
            t0 = time.perf_counter()
            trace = ServerTrace(t0)
            # The deadline cancels this task natively at expiry (see the module docstring).
            deadlines = self._deadlines or self._new_deadlines()
            deadline = deadlines.start(timeout, task)
            try:
                try:
                    token = CURRENT_TRACE.set(trace)
                    try:
                        if target == "tool":
                            raw = await client.call_tool(name, arguments)
                        elif target == "resource":
                            raw = await client.read_resource(name)
                        else:
                            raw = await client.get_prompt(name, arguments)
                    finally:
                        CURRENT_TRACE.reset(token)
                finally:
                    deadlines.end(deadline)
            except asyncio.CancelledError:
                if not deadline[EXPIRED]:
                    self.history.record(
                        self._cancelled(call_id, target, name, arguments, started_at, t0, timeout, trace, attempt, backoff)
                    )
                    raise
                task.uncancel()
                outcome = Outcome(
                    call_id, target, name, arguments, "timeout", "deadline", None, None, None, REQUEST_TIMEOUT,
                    f"Timed out after {timeout:g}s waiting for '{METHODS[target]}'", None,
                    started_at, _ms(t0), timeout, trace, self.registry.observes(target, name), attempt, backoff,
                )  # fmt: skip
            except MCPError as err:
                error = err.error
                outcome = Outcome(
                    call_id, target, name, arguments, "protocol_error",
                    classify.protocol_error_cause(target, error.code, trace.logs),
                    None, None, None, error.code, error.message, error.data,
                    started_at, _ms(t0), timeout, trace, True, attempt, backoff,
                )  # fmt: skip
            except Exception as err:  # the client could not finish: still a call, still recorded
                outcome = self._client_error(call_id, target, name, arguments, err, started_at, t0, timeout, trace, attempt, backoff)
            else:
                duration = (time.perf_counter() - t0) * 1000.0
                if target == "tool":  # the hot path, kept inline
                    content = classify.content_text(raw.content)
                    is_error = bool(raw.is_error)
                    kind, cause = classify.tool_result_cause(name, content, is_error, trace.logs)
                    outcome = Outcome(
                        call_id, target, name, arguments, kind, cause, content, raw.structured_content, is_error,
                        None, None, None, started_at, duration, timeout, trace, True, attempt, backoff,
                    )  # fmt: skip
                else:
                    text = classify.resource_text(raw.contents) if target == "resource" else classify.prompt_text(raw.messages)
                    outcome = Outcome(
                        call_id, target, name, arguments, "result", "ok", text, None, False,
                        None, None, None, started_at, duration, timeout, trace, True, attempt, backoff,
                    )  # fmt: skip
            self.history.record(outcome)
            return outcome
        finally:
            self._calls.discard(task)

    def _new_deadlines(self) -> Deadlines:
        self._deadlines = Deadlines(asyncio.get_running_loop())
        return self._deadlines

    async def _relist(self, client: Client) -> None:
        # A re-run cell may have changed a schema: re-list so this session validates
        # against the new one (only after a registration, so calls stay cheap). Should it
        # fail, the SDK still re-lists by itself when the server reports a stale schema.
        version = self.registry.version
        try:
            await client.list_tools()
        except Exception:
            return
        self._listed_version = version

    def _cancelled(self, call_id, target, name, arguments, started_at, t0, timeout, trace, attempt, backoff) -> Outcome:
        elapsed = _ms(t0)
        return Outcome(
            call_id, target, name, arguments, "timeout", "cancelled", None, None, None, REQUEST_CANCELLED,
            f"Cancelled by the caller after {elapsed / 1000:.3g}s", None,
            started_at, elapsed, timeout, trace, self.registry.observes(target, name), attempt, backoff,
        )  # fmt: skip

    @staticmethod
    def _client_error(call_id, target, name, arguments, err, started_at, t0, timeout, trace, attempt, backoff) -> Outcome:
        return Outcome(
            call_id, target, name, arguments, "protocol_error", "client_error", None, None, None, None,
            f"{type(err).__name__}: {err}", None, started_at, _ms(t0), timeout, trace, True, attempt, backoff,
        )  # fmt: skip

    # -- the two faces --------------------------------------------------------------------------

    def request(
        self, target: str, name: str, arguments: Mapping[str, Any] | None, timeout: float | None
    ) -> tuple[str, str, dict[str, Any] | None, float]:
        """Check a call before anything is sent; bad input raises here and records nothing."""
        if self._closed:
            raise RuntimeError(CLOSED)
        what = "uri" if target == "resource" else "name"
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"{what} must be a non-empty string, got {name!r}")
        if arguments is not None and not isinstance(arguments, Mapping):
            raise TypeError(f"arguments must be a mapping (a dict of argument names to values), got {type(arguments).__name__}")
        seconds = settings.timeout if timeout is None else check_timeout(timeout)
        return target, name, None if arguments is None else dict(arguments), seconds

    def prepare(
        self,
        target: str,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        retry: Retry | int | bool | None = None,
    ) -> Coroutine[Any, Any, Outcome]:
        """The coroutine that makes a call (with its retries); every check runs here, first."""
        request = self.request(target, name, arguments, timeout)
        rule = policy(retry)
        if rule is None:
            return self.perform(*request)
        check_idempotent(target, name, self.registry.annotations(name) if target == "tool" else None, rule)
        return with_retries(self.perform, next(_call_ids), rule, request)

    def run(self, target: str, name: str, arguments=None, timeout=None, retry=None) -> Outcome:
        return self.loop.run(self.prepare(target, name, arguments, timeout, retry))

    async def arun(self, target: str, name: str, arguments=None, timeout=None, retry=None) -> Outcome:
        return await self.loop.run_async(self.prepare(target, name, arguments, timeout, retry))

    def submit(
        self, target: str, name: str, arguments=None, timeout=None, retry=None
    ) -> concurrent.futures.Future[Outcome]:
        """Start a call without waiting (for callbacks that must not block the kernel)."""
        return self.loop.submit(self.prepare(target, name, arguments, timeout, retry))


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000.0
