"""The engine: the in-kernel server, the connection to it, the history, and the calls.

Every face makes a `Call` through `prepare` (every check runs there, before anything
is sent) and runs it: the sync face blocks on it (`run`), the async face awaits it
from any event loop (`arun`), a widget starts it and returns (`submit`). The Call
does the work on mcp_nb's loop thread (`loop.py`) and records every attempt in the
history, whatever happens.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import os
import threading
from collections.abc import Awaitable, Callable, Mapping

from mcp.server.mcpserver.exceptions import ToolError

from mcp_nb import libraries as lib
from mcp_nb import sdk_compat
from mcp_nb.calling.call import Call, CallDepthError, ProgressListener, Watcher
from mcp_nb.calling.connections import KERNEL, Connection, KernelConnection, RemoteConnection, ServerSpec
from mcp_nb.calling.current import CURRENT_CALL
from mcp_nb.calling.deadline import Deadlines
from mcp_nb.calling.era import check_era
from mcp_nb.calling.loop import BLOCKS_OWN_LOOP, LoopThread
from mcp_nb.calling.retry import Retry, check_idempotent, policy
from mcp_nb.config import check_timeout, connect_seconds, settings
from mcp_nb.elicitation import Ask, check_elicit, is_secret
from mcp_nb.mistakes import BadValue, Mistake
from mcp_nb.records.history import History
from mcp_nb.records.listeners import Listeners
from mcp_nb.records.outcome import Outcome
from mcp_nb.records.redact import scrubber
from mcp_nb.records.trace import CURRENT_TRACE
from mcp_nb.registering import log_secrets
from mcp_nb.registering.logs import install_log_capture
from mcp_nb.registering.registry import Registry

CLOSED = (
    "this server was closed by mcp_nb.reset(); call the new one with mcp_nb.call(...) "
    "(a panel of the old one cannot: show a new one with mcp_nb.panel())"
)
# The longest `close` waits for the shutdown on the loop (servers stopped, calls cancelled,
# sessions left) while the loop keeps answering; one that stops answering (an async handler
# holds it) is given up on sooner, after `loop.HELD_LIMIT_S`.
CLOSE_LIMIT_S = 30.0
# How long the calls cancelled by a close get to record themselves before the sessions close.
CANCELLED_CALLS_S = 5.0
CLOSER_S = 10.0  # how long a closer (`on_closing`: a server for outside clients stopping) is waited for

log = logging.getLogger("mcp_nb")


class ResetRefused(Mistake, ToolError, RuntimeError):
    """`mcp_nb.reset()` (or `Engine.close()`) from inside a handler: it would close the server
    running that handler and wait for itself. A ToolError, so that the message is what the
    call's Outcome says."""


class Engine:
    """The in-kernel server, the connection to it, the call history, and the calls in flight."""

    def __init__(self, name: str = "mcp_nb") -> None:
        sdk_compat.verify_once()
        install_log_capture()
        self.server = sdk_compat.new_server(name)
        self.registry = Registry(self.server)
        self.history = History()
        self.connection = KernelConnection(self.server, self.registry)
        self.connections: dict[str, Connection] = {KERNEL: self.connection}  # by name; the kernel's own first
        self.calls: set[Call] = set()  # the calls running on the loop right now
        self._eras: set[Connection] = set()  # connections at a pinned protocol era (`at_era`), open now
        self._loop: LoopThread | None = None
        self._loop_lock = threading.Lock()
        self._deadlines: Deadlines | None = None
        self._closed = False
        # Views of this engine (a panel): bound methods held weakly, a failing one logged.
        self._close_listeners = Listeners("close listener")
        self._connection_listeners = Listeners("connections listener")
        self._closers: list[Callable[[], Awaitable[None]]] = []
        # What must never be written to a history file besides the connections' own secrets
        # (`scrub`): the bearer token of a kernel being served, say.
        self.secrets: set[str] = set()
        self._scrubber = scrubber(self.known_secrets)
        log_secrets.watch(self.known_secrets)  # nor to a log record, whoever makes it

    # -- the loop -------------------------------------------------------------------------------

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

    def deadlines(self) -> Deadlines:
        """The one deadline timer of the calls on the loop (made there, on first use)."""
        if self._deadlines is None:
            self._deadlines = Deadlines(asyncio.get_running_loop())
        return self._deadlines

    # -- making calls ---------------------------------------------------------------------------

    def prepare(
        self,
        target: str,
        name: str,
        arguments: Mapping[str, object] | None = None,
        timeout: float | None = None,
        retry: Retry | int | bool | None = None,
        server: str | None = None,
        reset_on_progress: bool = False,
        max_timeout: float | None = None,
        elicit: object = None,
        connection: Connection | None = None,
    ) -> Call:
        """The Call for a request. Every check runs here: bad input raises, and nothing is sent
        or recorded.

        `connection`: the connection to send it over, when it is not one of the engine's
        connections by name (one `at_era` opened); `server` is then not read.

        `elicit` answers the questions the server asks during the call (`mcp_nb.elicitation`):
        a function `(message, schema) -> answer`, a list of prepared answers, or "decline" /
        "cancel"; the configured default (`settings.elicit`) when None."""
        if self._closed:
            raise RuntimeError(CLOSED)
        check_request(target, name, None)  # the timeout is checked once, below
        check_elicit(elicit)
        seconds = settings.timeout if timeout is None else check_timeout(timeout)
        ceiling = check_ceiling(seconds, reset_on_progress, max_timeout)
        connection = connection if connection is not None else self.connection_for(server)
        rule = policy(retry)
        if rule is not None:
            check_idempotent(target, name, connection.annotations(name) if target == "tool" else None, rule)
        parent = CURRENT_CALL.get()
        if parent is not None and parent.depth >= settings.max_depth:
            chain = " → ".join([*parent.chain(), name])
            raise CallDepthError(
                f"calls nest {parent.depth + 1} deep, over the limit of {settings.max_depth}: {chain} "
                "(a tool calling itself through mcp_nb needs a base case; raise the limit with "
                "mcp_nb.configure(max_depth=N))"
            )
        return Call(self, target, name, arguments, seconds, rule, parent, connection, reset_on_progress, ceiling, elicit)

    def run(
        self,
        target: str,
        name: str,
        arguments: Mapping[str, object] | None = None,
        timeout: float | None = None,
        retry: Retry | int | bool | None = None,
        server: str | None = None,
        watch: Callable[[Call], Watcher] | None = None,
        *,
        reset_on_progress: bool = False,
        max_timeout: float | None = None,
        elicit: object = None,
    ) -> Outcome:
        """Make a call and block this thread for its Outcome (the sync face).

        `watch(call)`, when given, makes the live view of the call's progress (`live.py`): this
        thread, the one waiting, draws it. The rest as for `prepare`."""
        call = self.prepare(target, name, arguments, timeout, retry, server, reset_on_progress, max_timeout, elicit)
        if self.loop.in_loop():
            raise RuntimeError(BLOCKS_OWN_LOOP.format(example="await mcp_nb.acall(...)"))
        try:  # an interrupt anywhere from here on still leaves the call in the history
            call.start()
            return call.wait(watch(call) if watch is not None else None)
        except KeyboardInterrupt:
            call.interrupted()
            raise

    async def arun(
        self,
        target: str,
        name: str,
        arguments: Mapping[str, object] | None = None,
        timeout: float | None = None,
        retry: Retry | int | bool | None = None,
        server: str | None = None,
        ask: Ask | None = None,
        *,
        reset_on_progress: bool = False,
        max_timeout: float | None = None,
        elicit: object = None,
    ) -> Outcome:
        """Make a call and await its Outcome, from any event loop (the async face). `ask`: as for `submit`."""
        call = self.prepare(target, name, arguments, timeout, retry, server, reset_on_progress, max_timeout, elicit)
        call.ask = ask
        if not self.loop.in_loop():
            return await call.start().wait_async()
        # A handler on mcp_nb's loop calling through mcp_nb: the nested call gets a task of
        # its own, so its deadline and bookkeeping are its own.
        nested = asyncio.ensure_future(call.run())
        try:
            return await nested
        except asyncio.CancelledError:
            if _cancelling():
                raise  # the caller itself is being cancelled
            return call.future.result()  # only the nested call was: its recorded Outcome

    def submit(
        self,
        target: str,
        name: str,
        arguments: Mapping[str, object] | None = None,
        timeout: float | None = None,
        retry: Retry | int | bool | None = None,
        server: str | None = None,
        progress_listener: ProgressListener | None = None,
        ask: Ask | None = None,
        *,
        reset_on_progress: bool = False,
        max_timeout: float | None = None,
        elicit: object = None,
    ) -> Call:
        """Start a call without waiting (for callbacks that must not block the kernel).

        Returns the `Call`: `call.future` resolves to its Outcome, `call.cancel()` stops it
        (the future then resolves to the recorded `cancelled` Outcome). `progress_listener(call,
        event)` hears each progress event on mcp_nb's loop, from the first one on. `ask`: a
        coroutine function `(message, schema, url) -> answer` that asks a person (the panel's
        form), used when neither `elicit` nor the configured default answers."""
        call = self.prepare(target, name, arguments, timeout, retry, server, reset_on_progress, max_timeout, elicit)
        call.progress_listener = progress_listener
        call.ask = ask
        return call.start()

    # -- servers ---------------------------------------------------------------------------------

    def connection_for(self, server: str | None) -> Connection:
        """The connection named `server` (None: the kernel's own); a one-line error for any other name."""
        if server is None:
            return self.connection
        if not isinstance(server, str) or not server:
            raise BadValue(f"server must be the name of a connection, got {server!r}")
        connection = self.connections.get(server)
        if connection is None:
            known = ", ".join(self.connections)
            raise BadValue(f"no server named {server!r} is connected (connected: {known})")
        return connection

    def connect(self, spec: ServerSpec, timeout: float | None = None) -> RemoteConnection:
        """Connect to the outside server `spec` names and keep the connection under its name.

        A connection already under that name is replaced once the new one is connected;
        if the new one fails, the old one stays as it was.
        """
        seconds = connect_seconds(timeout)
        return self.open(self.checked(spec), seconds)

    def checked(self, spec: ServerSpec) -> RemoteConnection:
        """A connection to the outside server `spec` names, not yet opened (so a configuration's
        entries are all made before any is connected)."""
        if self._closed:
            raise RuntimeError(CLOSED)
        connection = RemoteConnection(spec)
        log_secrets.watch(connection.secret_values)  # from its first request on, kept or not
        return connection

    def open(self, connection: RemoteConnection, seconds: float) -> RemoteConnection:
        """Open a `checked` connection and keep it under its name (see `connect`)."""
        if self._closed:
            raise RuntimeError(CLOSED)
        name = connection.name
        self.loop.run(connection.open(seconds))
        _ready_to_check(connection)
        old = self.connections.get(name)
        self.connections[name] = connection
        if old is not None:
            self.loop.run(old.close())
        self._connections_changed()
        return connection

    def authorized(self, connection: RemoteConnection, seconds: float) -> RemoteConnection:
        """Wait until an authorizing connection (an OAuth flow waiting for the person) is connected."""
        try:
            self.loop.run(connection.finish(seconds))
        except BaseException:
            if self.connections.get(connection.name) is connection:
                del self.connections[connection.name]
                self._connections_changed()
            raise
        _ready_to_check(connection)
        self._connections_changed()
        return connection

    def hand_back(self, url: str) -> RemoteConnection:
        """Give the address the person landed on (`url`) to the OAuth flow it answers; returns that
        connection, which `authorized` then waits for. Bad input raises, and nothing changes."""
        connection = self.authorizing(url)
        connection.complete_auth(url)
        return connection

    def authorizing(self, url: str) -> RemoteConnection:
        """The connection whose OAuth flow the address `url` (where the person landed) answers."""
        waiting = [c for c in self.connections.values() if isinstance(c, RemoteConnection) and c.authorization_link]
        if not waiting:
            raise BadValue("no connection is waiting for an authorization (mcp_nb.connect(..., auth=mcp_nb.OAuth()) starts one)")
        matching = [c for c in waiting if c.answered_by(url)]
        if not matching:
            names = ", ".join(repr(c.name) for c in waiting)
            raise BadValue(
                f"that address answers none of the authorizations waiting ({names}): paste the whole address the browser landed on after approving"
            )
        return matching[0]

    def disconnect(self, name: str) -> Connection:
        """Close the connection `name` (a stdio server's process ends) and forget it."""
        if name == KERNEL:
            raise BadValue("the kernel's own server cannot be disconnected (mcp_nb.reset() starts a new one)")
        connection = self.connection_for(name)
        del self.connections[name]
        self.loop.run(connection.close())
        self._connections_changed()
        return connection

    def reconnect(self, name: str, timeout: float | None = None) -> RemoteConnection:
        """Connect again to the server of connection `name` (after its process exited, say)."""
        old = self.connection_for(name)
        if not isinstance(old, RemoteConnection):
            raise BadValue("the kernel's own server needs no reconnecting")
        return self.connect(old.spec, timeout)

    def at_era(self, server: str | None, mode: str, timeout: float | None = None) -> Connection:
        """A connection to the server `server` names (None: the kernel's own) that speaks the
        protocol era `mode` ("2025-11-25" or "2026-07-28"), for a caller that closes it with
        `close_era`. The kernel's server gets a client of its own at that era; an outside server
        is reached as its connection reaches it (the same command, URL, headers and answers), at
        that era, unless its connection already speaks it, which is then shared. Not among the
        connections (`server=` finds the usual one); closed with the engine all the same."""
        check_era(mode)
        base = self.connection_for(server)
        if self._closed:
            raise RuntimeError(CLOSED)
        if base.mode == mode or (base.mode == "auto" and base.state == "connected" and base.protocol == mode):
            return base  # it speaks that era already: shared
        if not isinstance(base, RemoteConnection):
            era: Connection = KernelConnection(self.server, self.registry, mode=mode)
        else:
            era = self.checked(dataclasses.replace(base.spec, mode=mode))
            self.loop.run(era.open(connect_seconds(timeout)))
            if era.state == "authorizing":
                self.loop.run(era.close())
                raise BadValue(
                    f"{base.name!r} needs an authorization approved again to be reached at {mode}: connect it with mode={mode!r} first"
                )
        self._eras.add(era)
        return era

    def close_era(self, connection: Connection) -> None:
        """Close a connection `at_era` opened (one it shared is left open)."""
        if connection in self._eras:
            self._eras.discard(connection)
            if not self._closed:
                self.loop.run(connection.close())

    def on_connections(self, listener: Callable[[], None], remove: bool = False) -> None:
        """Call `listener()` after every connect and disconnect (`remove=True` takes it back)."""
        if remove:
            self._connection_listeners.remove(listener)
        else:
            self._connection_listeners.add(listener)

    def _connections_changed(self) -> None:
        self._connection_listeners()

    # -- closing --------------------------------------------------------------------------------

    def refuse_inside(self) -> None:
        """Raise `ResetRefused` when called from inside a handler, or on this engine's loop.

        Closing waits for the loop to cancel the calls in flight and stop: a handler running
        there (an async one on the loop's own thread, a sync one in a worker thread the loop
        waits for) would wait for itself, or be cancelled under its own feet."""
        loop = self._loop
        trace = CURRENT_TRACE.get()
        in_handler = trace is not None and trace.handler_started is not None and trace.handler_ended is None
        if not in_handler and not (loop is not None and loop.in_loop()):
            return
        call = CURRENT_CALL.get()
        where = f"{call.target} {call.name!r}" if call is not None else "a handler"
        raise ResetRefused(
            f"mcp_nb.reset() cannot run inside {where}: it would close the server running it and wait for "
            "itself; reset from a cell or a script instead"
        )

    def close(self) -> None:
        """Cancel the calls in flight, leave the session, stop the loop thread, tell the listeners.

        Each cancelled call records itself as `cancelled`, so whoever waits for it (a
        sync `call()` in another thread, a panel) gets that Outcome instead of an error.
        Bounded: an async handler holding the loop without awaiting is waited for
        `loop.HELD_LIMIT_S` at most, and named on the `mcp_nb` logger; its calls are then
        recorded as cancelled from here, and the old loop ends when the handler lets go.
        From inside a handler it raises `ResetRefused` and changes nothing.
        """
        if self._closed:
            return
        self.refuse_inside()
        self._closed = True
        loop, self._loop = self._loop, None
        try:
            if loop is not None:
                try:
                    self._stop(loop)
                finally:
                    # A call started a moment before the stop whose task never ran, or one whose
                    # handler still holds the loop: answered here.
                    for call in list(self.calls):
                        call.abandon()
        finally:
            try:
                self.history.close()  # every call recorded, the cancelled ones included, is written before the file is let go
            finally:
                self._close_listeners()  # a broken view, logged, does not stop a reset

    def known_secrets(self) -> list[str]:
        """The secrets this engine holds: its connections' header values, URL credentials and
        OAuth tokens, `secrets` (a served kernel's token), and the secret fields of the answers
        its calls in flight are sending (`is_secret`). A history file never holds them (`scrub`),
        nor a log record (`registering.log_secrets`)."""
        found = set(self.secrets)
        for connection in list(self.connections.values()):
            found.update(getattr(connection, "secret_values", lambda: ())())
        for call in list(self.calls):
            for asked in call.elicitations:
                found.update(
                    str(value)
                    for field, value in (asked.content or {}).items()
                    if is_secret(field, asked.schema) and isinstance(value, (str, int, float)) and not isinstance(value, bool)
                )
        return sorted(found, key=len, reverse=True)  # the longest first: a secret inside another goes with it

    def scrub(self, text: str) -> str:
        """`text` as a history file may hold it: without any secret this engine knows, nor a URL's password,
        a bearer token or a query parameter named like a secret."""
        return self._scrubber(text)

    def keep_history(self, path: str | os.PathLike[str] | None, window: int | None = None) -> None:
        """Write this engine's history to the history file at `path` (None: stop), its secrets scrubbed."""
        self.history.keep(path, window, scrub=self._scrubber)

    def on_close(self, listener: Callable[[], None], remove: bool = False) -> None:
        """Call `listener()` once this engine is closed (`remove=True` takes it back)."""
        if remove:
            self._close_listeners.remove(listener)
        else:
            self._close_listeners.add(listener)

    def on_closing(self, closer: Callable[[], Awaitable[None]], remove: bool = False) -> None:
        """Await `closer()` on the loop first when this engine closes, while calls can still be
        recorded (a server for outside clients stops there); `remove=True` takes it back."""
        if remove:
            if closer in self._closers:
                self._closers.remove(closer)
        else:
            self._closers.append(closer)

    def _stop(self, loop: LoopThread) -> None:
        """Shut down on the loop, then stop it; never waits without a bound (see `close`)."""
        steps = self._shutdown()
        try:
            shutdown = loop.submit(steps)
        except RuntimeError:  # the loop is closed already (its thread ended): nothing left to stop
            steps.close()
            log.debug("closing mcp_nb's engine: its event loop was closed already")
            return
        try:
            finished = loop.wait(shutdown, CLOSE_LIMIT_S)
        except KeyboardInterrupt:  # the stop button during a reset: the loop still stops
            loop.stop(timeout=0.0)
            raise
        if not finished:
            held = self.registry.watch.blocker(0.0)
            if held is not None:
                why = f"async {held[0]} has held it for {held[1]:.1f} s without awaiting"
            elif not loop.answers(0.1):
                why = "it did not answer"
            else:
                why = f"its shutdown took longer than {CLOSE_LIMIT_S:g} s"
            log.warning(
                "closing mcp_nb's engine stopped waiting for its event loop: %s. Its calls in flight are recorded "
                "as cancelled; the old loop stops once the handler lets go.",
                why,
            )
            loop.stop(timeout=0.0)  # asked to stop; a held loop cannot be waited for
            return
        if not shutdown.cancelled() and shutdown.exception() is not None:
            log.debug("closing mcp_nb's engine: the shutdown failed", exc_info=shutdown.exception())
        if not loop.stop():
            log.debug("closing mcp_nb's engine: its event loop's thread did not end within 5 s")

    async def _shutdown(self) -> None:
        for closer in list(self._closers):
            await _best_effort(functools.partial(_within, closer, CLOSER_S), f"the closer {closer!r}")
        # Calls in flight first, so each is recorded as cancelled before the session
        # closes under it (which would fail it otherwise). Nested calls share nothing,
        # so each call's own task is cancelled once.
        tasks = {call.task for call in list(self.calls) if call.task is not None and not call.task.done()}
        for task in tasks:
            task.cancel()
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=CANCELLED_CALLS_S)
            if pending:
                log.debug("closing mcp_nb's engine: %d cancelled calls did not end within %g s", len(pending), CANCELLED_CALLS_S)
        for connection in [*self.connections.values(), *self._eras]:
            await _best_effort(connection.close, f"closing the connection {connection.name!r}")


async def _within(step: Callable[[], Awaitable[None]], seconds: float) -> None:
    await asyncio.wait_for(step(), timeout=seconds)


def _cancelling() -> bool:
    """Whether the task running now is being cancelled (not only a task it awaited)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


async def _best_effort(step: Callable[[], Awaitable[None]], what: str) -> None:
    """Await `step()` while the engine closes: what goes wrong is logged (debug, `mcp_nb`), and
    the next step runs. A cancellation of the shutdown itself goes on."""
    try:
        await step()
    except asyncio.CancelledError:
        if _cancelling():
            raise
        log.debug("closing mcp_nb's engine: %s was cancelled", what)
    except Exception:
        log.debug("closing mcp_nb's engine: %s failed", what, exc_info=True)


def _ready_to_check(connection: Connection) -> None:
    """The SDK checks a structured result against its tool's output schema with jsonschema,
    which it imports at the first one: on mcp_nb's loop, inside that call's deadline (about a
    second in a Jupyter environment), so a fast answer was recorded as a timeout. Imported
    here instead, on the thread that connects, before any call."""
    if any(entry.output_schema for entry in connection.entries()):
        lib.jsonschema  # noqa: B018 - imported now: only a server with output schemas needs it


def check_ceiling(timeout: float, reset_on_progress: object, max_timeout: object) -> float | None:
    """The hard ceiling of a deadline that resets on progress (None when it does not reset); bad
    values raise ValueError, as a bad timeout does."""
    if not isinstance(reset_on_progress, bool):
        raise BadValue(f"reset_on_progress must be True or False, got {reset_on_progress!r}")
    if max_timeout is None:
        return None
    ceiling = check_timeout(max_timeout, "max_timeout")
    if not reset_on_progress:
        raise BadValue(
            "max_timeout is the ceiling of a deadline that resets on progress: add reset_on_progress=True "
            "(--reset-on-progress), or give the call a longer timeout"
        )
    if ceiling < timeout:
        raise BadValue(f"max_timeout ({ceiling:g} s) must be at least the timeout ({timeout:g} s)")
    return ceiling


def check_request(target: str, name: str, timeout: float | None) -> None:
    """The checks of a request that need no server: bad input raises before anything is sent."""
    what = "uri" if target == "resource" else "name"
    if not isinstance(name, str) or not name.strip():
        raise BadValue(f"{what} must be a non-empty string, got {name!r}")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError as err:  # a lone surrogate: the request's Mcp-Name header cannot carry it
        raise BadValue(
            f"{what} {name!r} holds {name[err.start]!r}, a lone surrogate no UTF-8 can carry: no server can be sent it"
        ) from None
    if timeout is not None:
        check_timeout(timeout)
