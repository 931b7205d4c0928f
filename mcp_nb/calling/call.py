"""One call, from the moment a face asks for it to the row it leaves in the history.

A `Call` owns everything about one call: what was asked (target, name, the arguments
as sent), its deadline, its attempts, the task running it, the server-side trace of
the current attempt, and the Outcomes it records. Every face makes Calls through
`Engine.prepare`; nothing else builds an Outcome.

Where it runs. The work (`run`) runs on mcp_nb's loop, in a task of its own or in the
task of whoever awaits it there (a sweep's worker). A face in another thread waits with
`wait()`, which keeps the deadline's promise even when mcp_nb's loop is held by an
async handler that never awaits: at the deadline the waiting thread records the
timeout itself, and the loop's side, when it comes back, finds the call settled.

What a Call talks to is a `Connection` (`connections/`); a Call knows nothing of the
in-kernel server. How its Outcomes are built is its base's, `record.CallRecord`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import math
import threading
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import TYPE_CHECKING, Protocol

from mcp import MCPError
from mcp.shared.dispatcher import ProgressFnT
from mcp_types import CreateMessageRequestParams

from mcp_nb.calling.connections import METHODS, REFUSED_ANSWER, Answer, Connection, ConnectionLost
from mcp_nb.calling.current import CURRENT_CALL
from mcp_nb.calling.deadline import Deadline
from mcp_nb.calling.record import CallRecord
from mcp_nb.calling.retry import Retry, with_retries
from mcp_nb.calling.sampling import Sampler, Sampling
from mcp_nb.calling.sent import sent_arguments
from mcp_nb.config import settings
from mcp_nb.elicitation import Answerer, Ask, Elicitation, answerer, elicit
from mcp_nb.mistakes import Mistake
from mcp_nb.records import classify
from mcp_nb.records.outcome import Outcome
from mcp_nb.records.trace import CURRENT_TRACE, ProgressEvent, ServerTrace
from mcp_nb.sdk_compat import BROKEN_ANSWER_TEXTS, HTTP_STATUS_TEXTS
from mcp_nb.views.theme import HELD_BY  # who held the loop, in the timeout's message

if TYPE_CHECKING:
    from mcp_nb.calling.engine import Engine

log = logging.getLogger("mcp_nb")

# How often a waiting thread redraws the live view of a call's progress.
WATCH_S = 0.1
# With `reset_on_progress` and no `max_timeout`, the ceiling is this many timeouts.
DEFAULT_CEILING = 10
# How long after its deadline a waiting thread gives mcp_nb's loop to report a timeout
# itself, before it checks whether the loop is held and, if so, records the timeout.
GRACE_S = 0.05
# Why a question has no answer when its call was cancelled while it waited (Ctrl-C, a panel's Cancel).
CANCELLED_WAITING = "the call was cancelled while waiting for the answer"
# A waiting thread's longest single wait: `expected_by` is infinite while the call waits for a
# person's answer, and a lock's timeout must be finite.
LONGEST_WAIT_S = 3600.0
# Past a call's deadline, mcp_nb's loop counts as held when it runs no callback for LOOP_ANSWERS_S,
# and a loop that answers is waited for up to SLOW_LOOP_S more. A tenth of a second was too little:
# with a thread of the user's holding the GIL, calls that their retries would have saved were
# settled from the waiting thread as "the event loop did not answer" (tests/test_retries.py).
LOOP_ANSWERS_S = 1.0
SLOW_LOOP_S = 5.0
PAST_DEADLINE_POLL_S = 0.05  # meanwhile the waiting thread asks the loop at most this often, not every millisecond
# The same, when the answer came after the deadline and the handler that held the loop is not known.
HELD_LATE = " (the answer came after the deadline: mcp_nb's event loop was held)"
# What a coroutine must never swallow: it is being closed (GeneratorExit), or the process is
# being stopped. Anything else escaping the SDK is a failure of the call, recorded.
_NOT_SWALLOWED = (GeneratorExit,)
# The errors a transport makes of an answer the client could not take (the SDK's streamable HTTP
# transport, mcp_nb's stdio one: `connections.inbound`), recorded `invalid_response`.
_BROKEN_ANSWERS = {"http": BROKEN_ANSWER_TEXTS, "stdio": (REFUSED_ANSWER,)}
_NO_CHILDREN: list[Call] = []  # shared by every Call that started none; never appended to (`adopt` makes a new list)


class Watcher(Protocol):
    """A live view of a call's progress, drawn by the thread that waits (`views.live.ProgressView`)."""

    def __call__(self, done: bool = False) -> None: ...


ProgressListener = Callable[["Call", ProgressEvent], None]  # told of each progress event, on mcp_nb's loop


class CallDepthError(Mistake, RuntimeError):
    """Calls nested deeper than `settings.max_depth` (a tool that calls tools that call tools...)."""


class Call(CallRecord):
    """One call: what was asked, its attempts, and the Outcomes they recorded."""

    __slots__ = (
        "rule",
        "parent",
        "depth",
        "engine",
        "connection",
        "task",
        "outcome",
        "expected_by",
        "_future",
        "_lock",
        "_settled",
        "_recorded",
        "_ended",
        "_cancel_asked",
        "_begun",
        "_phase",
        "children",
        "_entry",
        "_ceiling",
        "progress_listener",
        "elicit",
        "answerers",
        "ask",
        "via",
    )

    def __init__(
        self,
        engine: Engine,
        target: str,
        name: str,
        arguments: Mapping[str, object] | None,
        timeout: float,
        rule: Retry | None = None,
        parent: Call | None = None,
        connection: Connection | None = None,
        reset_on_progress: bool = False,
        max_timeout: float | None = None,
        elicit: object = None,
    ) -> None:
        super().__init__(target, name, sent_arguments(arguments), timeout)
        if reset_on_progress:
            self.reset_on_progress = True
            self.max_timeout = max_timeout if max_timeout is not None else timeout * DEFAULT_CEILING
        # Who answers the server's questions: the call's own elicit=, then the configured
        # default; `ask` (set by a face that can show a form) when neither is given. Made at the
        # first question (`elicited`): most calls are asked none.
        self.elicit = elicit
        self.answerers: tuple[Answerer | None, ...] | None = None
        self.ask: Ask | None = None
        self.via = "kernel"  # a replay marks its calls "replay"
        self.engine = engine  # the loop, the deadlines, the history, the calls in flight
        self.connection = connection if connection is not None else engine.connection  # the server it talks to
        self.rule = rule  # a retry.Retry, or None for one attempt
        self.parent = parent
        self.depth: int = 1 if parent is None else parent.depth + 1
        self.task: asyncio.Task[object] | None = None
        self.outcome: Outcome | None = None  # the latest recorded Outcome
        # By when a thread waiting for this call should hear of it (perf_counter); moves
        # with each attempt, so the deadline always counts from the request in flight.
        self.expected_by = time.perf_counter() + timeout + GRACE_S
        self._future: concurrent.futures.Future[Outcome] | None = None
        self._lock = threading.Lock()
        self._settled = False  # a waiting thread settled the call: the loop's side records nothing more
        self._recorded: int | None = None  # the attempt recorded last (under `_lock`: each attempt is recorded once)
        self._ended = False
        self._cancel_asked = False
        self._begun = False  # its task was made (on the loop's thread only)
        self._phase = "new"  # "attempt" while one runs, "waiting" once recorded, "recorded" when it raised
        self.children: list[Call] = _NO_CHILDREN  # a list of its own once it starts one (`adopt`)
        self._entry: Deadline | None = None  # the deadline in force for the attempt in flight
        self._ceiling: float = math.inf  # loop time past which no progress moves that deadline
        # Called on mcp_nb's loop with each progress event (a panel hands it to the kernel's thread).
        self.progress_listener: ProgressListener | None = None
        if parent is not None:
            parent.adopt(self)

    def observes(self, target: str, key: str) -> bool:
        return self.connection.observes(target, key)

    def server_name(self) -> str:
        return self.connection.name

    def local(self) -> bool:
        return self.connection.transport == "in-kernel"

    def timed_out_text(self) -> str:
        return self.connection.timed_out

    def protocol(self) -> str | None:
        return self.connection.protocol

    # -- nesting --------------------------------------------------------------------------------

    def adopt(self, child: Call) -> None:
        with self._lock:
            if self._ended:
                raise RuntimeError(
                    f"call #{self.id} ({self.target} {self.name!r}) already ended as {self.outcome.outcome if self.outcome else 'cancelled'}, "
                    f"so the {child.target} {child.name!r} it would start now is refused: a handler that outlives "
                    "its call cannot start new calls"
                )
            self.children = [*(c for c in self.children if not c._ended), child]

    def chain(self) -> list[str]:
        """The names from the outermost call down to this one."""
        names: list[str] = []
        call: Call | None = self
        while call is not None:
            names.append(call.name)
            call = call.parent
        return names[::-1]

    # -- running (on mcp_nb's loop) -------------------------------------------------------------

    async def run(self) -> Outcome:
        """Make the call, every attempt of it, each recorded; returns the last Outcome.

        Cancelled, it records the attempt in flight as cancelled and raises
        CancelledError, as a coroutine should; its `future` still gets that Outcome.
        """
        self.task = asyncio.current_task()
        token = CURRENT_CALL.set(self)
        calls = self.engine.calls
        calls.add(self)
        try:
            if self._cancel_asked:  # cancelled before its task had taken a step
                return self._record(self._unsent(1))
            if self.rule is None:  # one attempt, awaited here: a coroutine fewer on every call's path
                self._arm(1, 0.0)
                outcome = await self._send()
                self._phase = "waiting"
                return outcome
            return await with_retries(self._attempt, self.rule)
        except asyncio.CancelledError:
            if self._phase == "waiting":  # between attempts: the next one was never sent
                self._record(self._unsent(self.attempt + 1))
            raise
        finally:
            calls.discard(self)
            CURRENT_CALL.reset(token)
            self._end()

    async def _attempt(self, number: int, backoff: float) -> Outcome:
        """One attempt of a call that retries, recorded whatever happens (a cancellation is
        recorded, then raised)."""
        self._arm(number, backoff)
        outcome = await self._send()
        self._phase = "waiting"
        # A retry may wait before its attempt starts; the waiting thread must not take that
        # wait for a held loop.
        rule = self.rule
        assert rule is not None  # only a call that retries makes attempts this way
        self.expected_by = time.perf_counter() + rule.max_backoff + rule.jitter + self.timeout + GRACE_S
        return outcome

    def _arm(self, number: int, backoff: float) -> None:
        """Ready the call for attempt `number`, sent after `backoff` seconds of waiting."""
        self.attempt, self.backoff = number, backoff
        self.t0 = None
        self.trace = None
        self.elicitations = ()
        self.samplings = ()
        self.resets, self._by_ceiling = 0, False
        self.expected_by = time.perf_counter() + self.timeout + GRACE_S
        self._phase = "attempt"

    async def _send(self) -> Outcome:
        task = self.task
        assert task is not None  # `run` keeps its task before it sends
        connection = self.connection
        # Session set-up is mcp_nb's business, not the request's: it happens before the
        # request's clock starts (in-process it cannot hang).
        try:
            client = connection.open_session() or await connection.ready()
        except ConnectionLost as err:
            return self._record(self._client_error(err))
        except asyncio.CancelledError:
            if task.cancelling():
                self._record(self._unsent(self.attempt))
                self._phase = "recorded"
                raise
            return self._record(self._client_error(asyncio.CancelledError("raised while connecting")))
        except _NOT_SWALLOWED:
            raise
        except BaseException as err:  # noqa: BLE001 - a failure to connect is still a call, still recorded
            return self._record(self._failed(err))
        with self._lock:
            if self._settled:  # a waiting thread gave up on it while the loop was held: do not send
                return self.outcome  # type: ignore[return-value]
            self.started = time.time()
            t0 = self.t0 = time.perf_counter()
            trace = self.trace = ServerTrace(t0)
        self.expected_by = t0 + self.timeout + GRACE_S
        # The deadline cancels this task natively at expiry, as asyncio.timeout would; the
        # count of cancellations pending when it starts tells ours from anyone else's.
        entered = task.cancelling()
        deadlines = self.engine.deadlines()
        self._entry = deadlines.start(self.timeout, task)
        if self.reset_on_progress:
            self._ceiling = asyncio.get_running_loop().time() + self.max_timeout  # type: ignore[operator]
        token = CURRENT_TRACE.set(trace)
        connection.sending.add(self)  # the server's own stream (stderr, log messages) lands on this trace too
        try:
            raw: Answer | None = None
            failure: BaseException | None = None
            try:
                raw = await connection.send(client, self.target, self.name, self.arguments, self._progress_for(trace))
            except asyncio.CancelledError:
                entry = self._entry
                if entry.expired:
                    outcome = self._record(self._deadline())
                    if task.uncancel() <= entered:
                        return outcome
                    self._phase = "recorded"
                    raise  # a cancellation arrived with the deadline (a reset, an interrupt): it goes on
                if task.cancelling() > entered:
                    self._record(self._cancelled())
                    self._phase = "recorded"
                    raise
                # Nobody cancelled this task: a handler raised CancelledError by itself.
                failure = asyncio.CancelledError("raised inside the request, though nothing cancelled it")
            except _NOT_SWALLOWED:
                raise
            except BaseException as err:  # noqa: BLE001 - whatever escapes the SDK is recorded (and logged: `_failed`)
                failure = err
            finally:
                deadlines.end(self._entry)
                CURRENT_TRACE.reset(token)
            # An answer that came after the deadline is a timeout, whoever waits for it: the loop
            # was held past the deadline (by this call's own async handler, say), so the timer
            # could not fire before the answer was read.
            late = self._overdue()
            if connection.transport == "stdio":
                # A stdio server writes what it says about a call to stderr before it answers:
                # those lines go on the call before it is classified (a prompt's failure, say).
                try:
                    await connection.heard_all()
                except asyncio.CancelledError:
                    self._record(self._answered(connection, raw, failure, late))
                    self._phase = "recorded"
                    raise
            return self._record(self._answered(connection, raw, failure, late))
        finally:
            connection.sending.discard(self)

    async def elicited(self, message: str, schema: Mapping[str, object] | None, url: str | None = None) -> Elicitation:
        """Answer a question the server asked during this call, and record it on the call.

        The deadline stands still while the answer is awaited: a person filling a form is not
        the server being slow. A thread waiting for the call (`wait`) waits as long.
        """
        t0 = time.perf_counter()
        try:
            async with self._clock_stopped():
                if self.answerers is None:  # the first question of the call: its answerers, kept for every attempt
                    self.answerers = (answerer(self.elicit, "elicit"), answerer(settings.elicit, "default"))
                asked = await elicit(self.answerers, self.ask, message, schema, url)
        except asyncio.CancelledError:
            waited = (time.perf_counter() - t0) * 1000.0
            self.elicitations += (Elicitation(message, schema, url, "cancel", None, "none", CANCELLED_WAITING, waited),)
            raise
        self.elicitations += (asked,)
        return asked

    async def sampled(self, sampler: Sampler, params: CreateMessageRequestParams) -> Sampling:
        """Answer a completion the server asked for during this call, and record it on the call.
        The deadline stands still meanwhile, as for a question: the model is the client's, not
        the server's, and may take its time."""
        async with self._clock_stopped():
            sampled = await sampler.answer(params)
        self.samplings += (sampled,)
        return sampled

    @contextlib.asynccontextmanager
    async def _clock_stopped(self) -> AsyncGenerator[None, None]:
        """The attempt's deadline (and its ceiling) held while the client answers the server."""
        deadlines, entry = self.engine.deadlines(), self._entry
        left = deadlines.hold(entry) if entry is not None else None
        self.expected_by = float("inf")
        t0 = time.perf_counter()
        try:
            yield
        finally:
            if entry is not None and left is not None:
                deadlines.resume(entry, left)
                if self.reset_on_progress:  # the ceiling, too, does not count the wait
                    self._ceiling += time.perf_counter() - t0
            self.expected_by = time.perf_counter() + (left if left is not None else 0.0) + GRACE_S

    def _progress_for(self, trace: ServerTrace) -> ProgressFnT | None:
        """The SDK's progress callback for this attempt: each event recorded on its trace, and
        the deadline restarted when the call resets on progress."""
        if self.target != "tool":
            return None  # the SDK's Client takes a progress callback for tools/call only
        if not self.connection.reaches_request(self.name):
            # A kernel tool without a Context parameter can send no progress: none is asked for
            # (the SDK's progress plumbing for a callback costs 1.5 % of a trivial call).
            return None

        async def progressed(progress: float, total: float | None, message: str | None) -> None:
            event = trace.progressed(progress, total, message)
            if self.reset_on_progress and self.trace is trace and self._entry is not None:
                moved = self.engine.deadlines().restart(self._entry, self.timeout, self._ceiling)
                if moved is not None:  # not when the deadline already fired: it stays fired
                    self._entry = moved
                    self.resets += 1
                    self._by_ceiling = moved.when >= self._ceiling
                    left = moved.when - asyncio.get_running_loop().time()
                    self.expected_by = time.perf_counter() + left + GRACE_S
            listener = self.progress_listener
            if listener is not None:
                try:
                    listener(self, event)
                except Exception:  # a broken view must never break the call
                    log.exception("progress listener failed")

        return progressed

    def _overdue(self) -> str | None:
        """The note of a timeout when the attempt's answer came after the deadline in force (None
        when it came in time, or while the call waited for a person's answer)."""
        entry = self._entry
        if entry is None or entry.held:
            return None
        if not entry.expired and asyncio.get_running_loop().time() < entry.when:
            return None
        held = self.trace.held if self.trace is not None else None
        return " (mcp_nb's " + HELD_BY.format(handler=held[0], seconds=held[1]) if held is not None else HELD_LATE

    def _answered(
        self, connection: Connection, raw: Answer | None, failure: BaseException | None, late: str | None = None
    ) -> Outcome:
        """The Outcome of an attempt that got an answer, or failed some other way than a cancellation.

        `late`: the answer came after the deadline (`_overdue`): a timeout, the answer dropped as
        a late answer always is; the handler's fate on the trace says how it ended."""
        if late is not None:
            if failure is not None:
                self._answered(connection, raw, failure)  # a connection it found lost is marked so
            return self._deadline(late)
        if failure is None:
            assert raw is not None  # an attempt that did not fail was answered
            return self._result(raw)
        if isinstance(failure, MCPError):
            outcome = self._protocol_error(failure.error)
            if connection.transport == "http" and failure.error.message in HTTP_STATUS_TEXTS:
                status = connection.http_error(METHODS[self.target], self._sent_params())
                if status is not None:
                    outcome = self._http_error(failure.error, status)
            elif failure.error.message.startswith(_BROKEN_ANSWERS.get(connection.transport, ())):
                outcome = self._outcome(
                    "protocol_error",
                    "invalid_response",
                    self._elapsed_ms(),
                    code=failure.error.code,
                    message=failure.error.message,
                    data=failure.error.data,
                )
            if outcome.cause == "disconnected":
                connection.lost(f"the connection closed during a call ({failure.error.message})")
            return outcome
        outcome = self._failed(failure)
        if outcome.cause == "disconnected":
            connection.lost(f"the connection failed during a call ({outcome.message})")
        return outcome

    def _failed(self, err: BaseException) -> Outcome:
        """`_client_error`, and what no cause explains logged with its traceback on the `mcp_nb`
        logger: recorded as `client_error`, a bug of mcp_nb's (or the SDK's) must not look like
        an ordinary failure of the call."""
        outcome = self._client_error(err)
        if outcome.cause == "client_error" and err.__traceback__ is not None and not classify.refused_request(err):
            log.error(
                "call #%d (%s %r): %s escaped the client; recorded as client_error. Unless a handler that "
                "mcp_nb does not watch raised it, this is a bug in mcp_nb or the SDK",
                self.id,
                self.target,
                self.name,
                type(err).__name__,
                exc_info=err,
            )
        return outcome

    def _record(self, outcome: Outcome) -> Outcome:
        """Record the attempt's Outcome, unless it is recorded already: the loop and a waiting
        thread (`_settle_here`) decide under one lock which of them records an attempt."""
        with self._lock:
            if self._settled or self._recorded == self.attempt:  # a waiting thread settled the call
                return self.outcome  # type: ignore[return-value]
            self.outcome = outcome
            self._recorded = self.attempt
        self.engine.history.record(outcome)
        return outcome

    def _end(self) -> None:
        with self._lock:
            self._ended = True
            children = self.children
            if children:
                self.children = _NO_CHILDREN
        for child in children:  # a call that ends takes the calls it started with it
            if not child._ended:
                child.cancel()
        future = self._future
        if future is not None and not future.done() and self.outcome is not None:
            try:
                future.set_result(self.outcome)
            except concurrent.futures.InvalidStateError:
                pass

    # -- the faces in other threads -------------------------------------------------------------

    @property
    def future(self) -> concurrent.futures.Future[Outcome]:
        """Resolves to the call's final Outcome, also when the call was cancelled (then `cancelled`)."""
        if self._future is None:
            with self._lock:
                if self._future is None:
                    self._future = concurrent.futures.Future()
                    if self._ended and self.outcome is not None:
                        self._future.set_result(self.outcome)
        return self._future

    def start(self) -> Call:
        """Run the call in a task of its own on mcp_nb's loop; returns at once."""
        self.future  # noqa: B018 - created before the task can end
        self.engine.calls.add(self)  # in flight from now: a closing engine answers for it
        # Its own future is what a waiter waits on, so the task is made directly on the loop
        # (no second future chained to it, as `run_coroutine_threadsafe` would add).
        try:
            self.engine.loop.call_soon(self._begin)
        except RuntimeError:
            self.engine.calls.discard(self)
            raise
        except KeyboardInterrupt:
            self.interrupted()  # the handoff to the loop may or may not have landed
            raise
        return self

    def _begin(self) -> None:
        if not self._begun:
            self._begun = True
            asyncio.get_running_loop().create_task(self._drive())

    def interrupted(self) -> None:
        """The caller's thread was interrupted (Ctrl-C, the stop button) at any point after
        `start` was called: the call is recorded as cancelled, whether or not its task exists
        yet, so no interrupted call is missing from the history. From any thread."""
        try:
            self.engine.loop.call_soon(self._begin_cancelled)
        except RuntimeError:
            pass  # the loop is closed: `Engine.close` answers for the calls in flight

    def _begin_cancelled(self) -> None:
        if self._begun:
            self._cancel_here()
        else:  # never handed over: it begins only to record itself as cancelled, unsent
            self._cancel_asked = True
            self._begin()

    async def _drive(self) -> None:
        try:
            await self.run()
        except asyncio.CancelledError:
            pass  # recorded as cancelled; the future has that Outcome
        except GeneratorExit:
            raise  # the task is being destroyed with its loop: `Engine.close` answers the waiter (`abandon`)
        except BaseException as err:  # a bug in mcp_nb: `run` records every way a call can end
            future = self.future
            if future.done():  # nobody is left to hear of it (a waiting thread settled the call)
                log.error(
                    "call #%d (%s %r) failed inside mcp_nb after it was settled", self.id, self.target, self.name, exc_info=err
                )
            else:
                future.set_exception(err)  # the waiter raises it: the sync face, the panel, a future
            if not isinstance(err, Exception):
                raise  # KeyboardInterrupt, SystemExit: not for a task to swallow (the loop's thread logs them)

    def done(self) -> bool:
        return self._ended or self._settled

    def cancel(self) -> bool:
        """Stop the call (from any thread). It is recorded as cancelled, and its future resolves to
        that Outcome. False when it had already ended."""
        if self.done():
            return False
        loop = self.engine.loop
        if loop.in_loop():
            self._cancel_here()
        else:
            try:
                loop.call_soon(self._cancel_here)
            except RuntimeError:  # the loop is gone: nothing runs the call any more
                return False
        return True

    def _cancel_here(self) -> None:
        task = self.task
        if task is None:
            self._cancel_asked = True  # its task has not taken a step yet: `run` sees this first
        elif not task.done() and not self._ended:
            task.cancel()

    def result(self, timeout: float | None = None) -> Outcome:
        """Wait for the final Outcome (see `wait`); `timeout` bounds the wait, not the call."""
        if timeout is None:
            return self.wait()
        return self.future.result(timeout)

    def wait(self, watch: Watcher | None = None) -> Outcome:
        """Block this thread until the call ends, and no later than its deadline.

        If the deadline passes and mcp_nb's loop does not answer (an async handler is
        holding it), the timeout is recorded from here; the handler's fate is still
        traced. An interrupt (Ctrl-C, the kernel's stop button) cancels the call and is
        re-raised. `watch()`, when given, is called every `WATCH_S` while the call runs and
        `watch(done=True)` at its end, on this thread: a live view of its progress is drawn
        by the thread that waits (in a notebook, the kernel's, which owns the widgets).
        """
        try:
            future = self.future
            tick = WATCH_S if watch is not None else math.inf
            while True:
                wait = self.expected_by - time.perf_counter()
                try:
                    if wait <= 0:  # past the deadline: asking the loop whether it answers is paced
                        wait = PAST_DEADLINE_POLL_S
                    return future.result(timeout=min(max(min(wait, tick), 0.001), LONGEST_WAIT_S))
                except concurrent.futures.TimeoutError:
                    if watch is not None:
                        watch()
                    if time.perf_counter() < self.expected_by:
                        continue  # the next attempt moved the deadline
                    if self._loop_may_be_slow() and self.engine.loop.answers(LOOP_ANSWERS_S):
                        continue
                    return self._settle_here()
        except KeyboardInterrupt:
            self.interrupted()
            raise
        finally:
            if watch is not None:
                watch(done=True)

    async def wait_async(self) -> Outcome:
        """`wait` for a coroutine on another event loop (the kernel's, for top-level await)."""
        wrapped = asyncio.wrap_future(self.future)
        try:
            while True:
                wait = self.expected_by - time.perf_counter()
                try:
                    if wait <= 0:
                        wait = PAST_DEADLINE_POLL_S
                    return await asyncio.wait_for(asyncio.shield(wrapped), min(max(wait, 0.001), LONGEST_WAIT_S))
                except TimeoutError:
                    if time.perf_counter() < self.expected_by:
                        continue
                    if self._loop_may_be_slow() and await self.engine.loop.answers_async(LOOP_ANSWERS_S):
                        continue
                    return self._settle_here()
        except asyncio.CancelledError:
            self.cancel()
            raise

    def _loop_may_be_slow(self) -> bool:
        """Past the deadline with no answer: whether mcp_nb's loop may be only slow (a busy machine,
        a thread of the user's holding the GIL), so that its own deadline will report if it still
        answers within LOOP_ANSWERS_S; False when an async handler is known to hold it, or after
        SLOW_LOOP_S of waiting: the timeout is then recorded from here."""
        return time.perf_counter() < self.expected_by + SLOW_LOOP_S and self.engine.registry.watch.blocker() is None

    def _settle_here(self) -> Outcome:
        """Settle the call from the waiting thread: mcp_nb's loop is held (or silent) past the deadline.

        Under the lock that `_record` takes: an attempt the loop has not recorded is recorded
        here as a timeout; one it recorded already (its answer came, and then something held the
        loop: a slow listener of the history, say) is what the call gives back, recorded once.
        Either way the loop's side then records nothing more and sends no further attempt."""
        held = self.engine.registry.watch.blocker(0.0)
        note = (
            " (mcp_nb's " + HELD_BY.format(handler=held[0], seconds=held[1])
            if held is not None
            else " (mcp_nb's event loop did not answer)"
        )
        fresh = False
        with self._lock:
            if self._ended or self._settled:
                settled = self.outcome  # whoever ended or settled it recorded it
            elif self._recorded == self.attempt:
                settled = self.outcome  # the loop recorded this attempt, then stalled
                self._settled = True
            else:
                if self.trace is None:  # never sent: a trace with no handler start reads as dropped
                    self.trace = ServerTrace(time.perf_counter())
                settled = self.outcome = self._deadline(note)
                self._settled, self._recorded, fresh = True, self.attempt, True
        if settled is None:
            return self.future.result()
        if fresh:
            self.engine.history.record(settled)
        future = self.future
        if not future.done():
            try:
                future.set_result(settled)
            except concurrent.futures.InvalidStateError:
                pass
            self.cancel_soon()
        return future.result()

    def abandon(self) -> None:
        """The loop is gone and this call never ran (or never ended): record it as cancelled
        from here, so its waiter gets an Outcome. Only for a closed engine's leftovers. An
        attempt the loop recorded already is not recorded again: the waiter gets that Outcome."""
        with self._lock:
            if self._ended or self._settled:
                return
            self._settled = True
            outcome = self.outcome
            fresh = self._recorded != self.attempt or outcome is None
            if outcome is None or fresh:
                outcome = self.outcome = self._cancelled() if self.t0 is not None else self._unsent(max(self.attempt, 1))
                self._recorded = self.attempt
        if fresh:
            self.engine.history.record(outcome)
        future = self.future
        if not future.done():
            future.set_result(outcome)

    def settle_cancelled(self) -> Outcome | None:
        """A batch that started this call was stopped, and builds its frame now: unless the call
        has recorded an Outcome already, record it as cancelled from here (any thread), as its own
        task would (unsent, if its request has not gone out: it then never does), and return the
        call's Outcome. Its own record of that attempt, when its task gets there, is dropped
        (`_record`): recorded once."""
        with self._lock:
            if self.outcome is not None or self._settled or self._ended:
                return self.outcome
            self._settled = True
            outcome = self.outcome = self._cancelled() if self.t0 is not None else self._unsent(max(self.attempt, 1))
        self.engine.history.record(outcome)
        future = self.future
        if not future.done():
            try:
                future.set_result(outcome)
            except concurrent.futures.InvalidStateError:
                pass
        return outcome

    def cancel_soon(self) -> None:
        try:
            self.engine.loop.call_soon(self._cancel_here)
        except RuntimeError:
            pass  # the loop is closed (or the engine is): nothing runs the call any more

    def __repr__(self) -> str:
        state = "ended" if self._ended else "settled" if self._settled else "running" if self.task else "new"
        return f"<Call #{self.id} {self.target} {self.name!r} attempt {self.attempt} {state}>"
