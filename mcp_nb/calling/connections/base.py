"""The session owner: one client session to one server, owned by one task on mcp_nb's loop.

The SDK's `Client` is an anyio context manager whose cancel scopes must be entered and left by
the same task, so a connection keeps one long-lived owner task that enters the session, parks
until `close()`, and leaves it. Calls only borrow the session (`open_session`, `ready`).

A `Connection` also answers what its server offers (its catalog), keeps what the server said
outside any answer (its log), routes a request the server makes of the client (a question, a
completion) to the call it belongs to (`asking_call`), and tells the watches on the session
when it ends. Its subclasses say how the session is reached: `kernel.KernelConnection`,
`remote.RemoteConnection`.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import logging
import sys
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol, cast

from mcp import Client
from mcp.client import ClientRequestContext
from mcp.shared.dispatcher import ProgressFnT
from mcp_types import (
    CallToolResult,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    ErrorData,
    GetPromptResult,
    ReadResourceResult,
    ToolAnnotations,
)

from mcp_nb import sdk_compat
from mcp_nb.calling.connections.errors import ConnectionLost
from mcp_nb.calling.connections.failures import reason
from mcp_nb.calling.current import CURRENT_CALL
from mcp_nb.calling.sampling import REFUSED
from mcp_nb.config import settings
from mcp_nb.mistakes import one_line
from mcp_nb.records.listeners import Listeners
from mcp_nb.records.structured import check_results_locally
from mcp_nb.records.trace import CURRENT_TRACE, ServerLog, ServerTrace
from mcp_nb.registering.registry import Registration, reached_entry
from mcp_nb.views.cards import connection_html, connection_text

if TYPE_CHECKING:
    from mcp_types import CreateMessageRequestParams

    from mcp_nb.calling.sampling import Sampler, Sampling
    from mcp_nb.elicitation import Elicitation

METHODS = {"tool": "tools/call", "resource": "resources/read", "prompt": "prompts/get"}
LOG_LINES = 2000  # what a connection keeps of its server's stream
QUOTED = 200  # what a refusal quotes of the question refused
# What goes wrong where the user has nothing to do about it (a session left late, a pipe that
# would not close, lists that could not be re-read) is said here at debug level, on the
# `mcp_nb` logger's branch, never swallowed unsaid; the root logger is the user's.
log = logging.getLogger(__package__)

Answer = CallToolResult | ReadResourceResult | GetPromptResult  # what a call's request is answered with


class Sending(Protocol):
    """A call waiting for its answer on a connection (`call.Call`), as the connection sees it: its
    server's words go on its trace, and the requests the server makes during it are its own."""

    @property
    def id(self) -> int: ...

    @property
    def name(self) -> str: ...

    @property
    def t0(self) -> float | None: ...

    @property
    def trace(self) -> ServerTrace | None: ...

    async def elicited(self, message: str, schema: Mapping[str, object] | None, url: str | None = None) -> Elicitation: ...

    async def sampled(self, sampler: Sampler, params: CreateMessageRequestParams) -> Sampling: ...


class Watching(Protocol):
    """A resource watched on a connection's session (`watching.Watch`): told of its changes and of its end."""

    @property
    def uri(self) -> str: ...

    @property
    def era(self) -> str | None: ...

    def updated(self) -> None: ...

    def ended(self, reason: str) -> None: ...


class _Printer(Protocol):
    """IPython's pretty printer, as `_repr_pretty_` uses it."""

    def text(self, obj: str) -> None: ...


class Connection:
    """A client session to one server, opened on first use, and what that server offers."""

    transport = "in-kernel"
    timed_out = sdk_compat.TIMED_OUT  # the message of a deadline, as the SDK words it on this transport
    mode = ""  # the protocol era asked for ("auto", "2025-11-25", "2026-07-28"); "" is the SDK's own choice

    def __init__(self, name: str) -> None:
        self.name = name
        self.state = "new"  # new | connected | failed | lost | closed (and `authorizing`, remote)
        self.reason: str | None = None  # why it failed, was lost or closed
        self._client: Client | None = None
        self._opening: asyncio.Future[Client] | None = None
        self._closing: asyncio.Event | None = None
        self._owner: asyncio.Task[None] | None = None
        self.logs: collections.deque[ServerLog] = collections.deque(maxlen=LOG_LINES)
        self.unavailable: dict[str, str] = {}  # a kind whose listing failed -> why (`RemoteConnection._listed`)
        self._session_loop: asyncio.AbstractEventLoop | None = None  # the loop the session lives on, once opened
        self.protocol: str | None = None  # the version the open session speaks
        self.watches: list[Watching] = []  # the resources watched on this session, told when it ends
        self.sending: set[Sending] = set()  # the calls waiting for an answer on this connection now
        self._listeners = Listeners("connection listener")

    # -- the session ----------------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        """Whether the session is open now."""
        return self._client is not None

    @property
    def client(self) -> Client | None:
        """The open session, without waiting for one (None while it is not open)."""
        return self._client

    async def ready(self) -> Client:
        """The open session (opened now if need be)."""
        if self.state in ("lost", "closed"):
            raise ConnectionLost(self._gone())
        return self._client or await self._open()

    def open_session(self) -> Client | None:
        """The session when it is open and needs nothing done first (else None: await `ready()`).
        Every call asks: answered without a coroutine, the common case costs a call nothing."""
        return self._client if self.state == "connected" else None

    def _gone(self) -> str:
        return f"server {self.name!r} is not connected ({self.reason or self.state})"

    async def heard_all(self) -> None:
        """Hook: wait until what the server said alongside an answer is filed (a stdio server's stderr)."""

    async def send(
        self, client: Client, target: str, name: str, arguments: dict[str, object] | None, progress: ProgressFnT | None = None
    ) -> Answer:
        if target == "tool":
            return await client.call_tool(name, arguments, progress_callback=progress)
        if target == "resource":
            return await client.read_resource(name)
        # The SDK types a prompt's arguments as text; they go as given (a server that wants text refuses the rest).
        return await client.get_prompt(name, cast("dict[str, str] | None", arguments))

    def http_error(self, method: str, params: dict[str, object]) -> dict[str, object] | None:
        """The status and body of the HTTP error answer to this request, if it had one (HTTP only)."""
        return None

    def _client_for(self) -> Client:
        raise NotImplementedError

    async def _elicited(self, context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult | ErrorData:
        """The SDK's elicitation callback: the call the question belongs to answers it and
        records it (`asking_call`); a question no call can be named for is refused, with why."""
        current, why = self.asking_call()
        message = params.message or ""
        if current is None:
            return self._refused("elicitation", f"the question {one_line(message, QUOTED)}", why)
        schema = params.requested_schema if isinstance(params, ElicitRequestFormParams) else None
        url = params.url if isinstance(params, ElicitRequestURLParams) else None
        asked = await current.elicited(message, schema, url)
        if asked.action == "accept":
            return ElicitResult(action="accept", content=dict(asked.content) if asked.content is not None else None)
        return ElicitResult(action="decline" if asked.action == "decline" else "cancel")

    def asking_call(self) -> tuple[Sending | None, str]:
        """The call a server's request to the client belongs to, or None and why none can be named.

        A request that came in a call's own context is that call's: at 2026-07-28 it comes back
        inside the call's result and is answered in the call's task; over streamable HTTP it
        comes on the stream of the call's own POST, which the SDK's transport reads in the
        call's context; in-process the SDK carries the caller's context with each message.
        Otherwise (stdio at 2025-11-25, or HTTP's standalone stream) nothing says whose it is:
        it goes to the call waiting on this connection when only one waits; with several, none
        is guessed (a question answered with another call's answers, or a model run for the
        wrong call, is worse than a refusal whose reason the server is told).
        """
        current = CURRENT_CALL.get()
        if current is not None and current in self.sending:
            return current, ""
        waiting = sorted((c for c in self.sending if c.t0 is not None), key=_sent_at)
        if len(waiting) == 1:
            return waiting[0], ""
        if not waiting:
            return None, "it came during no call of mcp_nb's on this connection"
        calls = ", ".join(f"#{c.id} {c.name}" for c in waiting[:5]) + (", ..." if len(waiting) > 5 else "")
        return (
            None,
            f"{len(waiting)} calls were waiting on this connection ({calls}), and the request does not say which it belongs to",
        )

    def _refused(self, kind: str, what: str, why: str) -> ErrorData:
        """Refuse a server's request no call can answer: said on the connection (and on every call
        waiting on it), and to the server. No user code runs for it."""
        self.heard(ServerLog(level="WARNING", logger=f"mcp_nb.{kind}", message=f"refused {what}: {why}", at=time.time()))
        return ErrorData(code=REFUSED, message=f"{kind} refused: {why}")

    async def _open(self) -> Client:
        if self._opening is None:
            loop = self._session_loop = asyncio.get_running_loop()
            self._opening = loop.create_future()
            # A failed opening is raised to every caller waiting on it; when nobody waits any
            # more (a connect that timed out), asyncio must not report it as never retrieved.
            self._opening.add_done_callback(lambda f: f.cancelled() or f.exception())
            self._closing = asyncio.Event()
            self._owner = loop.create_task(self._own(self._opening, self._closing), context=_outside_calls())
        return await asyncio.shield(self._opening)

    async def _own(self, ready: asyncio.Future[Client], closing: asyncio.Event) -> None:
        # The one task that enters and leaves the client's context, as anyio requires.
        try:
            await self._prepare()
            async with self._client_for() as client:
                check_results_locally(client.session)  # spares the first call the import of jsonschema
                self.protocol = getattr(client.session, "protocol_version", None) or None
                await self._opened(client)
                self._client = client
                self.state = "connected"
                ready.set_result(client)
                await closing.wait()
        except asyncio.CancelledError:
            if not ready.done():
                ready.cancel()
                self._opening = None
            raise
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits for the session
            if not ready.done():
                ready.set_exception(exc)
                self._opening = None
            else:
                self.lost(f"the session ended: {reason(exc)}")
        finally:
            self._client = None
            self._end_watches(f"the session ended ({self.reason or self.state})")
            self._left()

    async def _prepare(self) -> None:
        """Hook: before the session is entered (an OAuth flow's provider is made here)."""

    async def _opened(self, client: Client) -> None:
        """Hook: the session is open (list what the server offers, for example)."""

    def _left(self) -> None:
        """Hook: the session was left."""

    async def close(self, timeout: float = 5.0) -> None:
        """Leave the session in its owner task (for a stdio server: end its process)."""
        if self.state != "lost":
            self.state, self.reason = "closed", self.reason or "disconnected"
        self._end_watches(f"the connection was closed ({self.reason})")
        if self._closing is not None:
            self._closing.set()
        if self._owner is not None:
            await left_by(self._owner, timeout, f"closing the connection {self.name!r}")

    def lost(self, reason: str) -> None:
        """The server went away under us (its process exited, the stream closed)."""
        if self.state == "connected":
            self.state, self.reason = "lost", reason
        self._end_watches(f"the connection was lost: {reason}")

    def _end_watches(self, reason: str) -> None:
        """No change can be said on this session any more: each watch on it is lost, and why."""
        for watch in list(self.watches):
            watch.ended(reason)

    # -- what the server said outside its answers -------------------------------------------------

    def heard(self, entry: ServerLog) -> None:
        """File a line of the server's own stream: on the connection, and on every call waiting on it."""
        self.logs.append(entry)
        for call in list(self.sending):
            trace = call.trace
            if trace is not None:
                trace.add(entry)

        if settings.show_server_logs:
            print(f"[{self.name}] {entry.level} {entry.message}", file=sys.stderr)

    # -- what the server offers ---------------------------------------------------------------

    def entries(self) -> list[Registration]:
        raise NotImplementedError

    def get(self, kind: str, key: str) -> Registration | None:
        for entry in self.entries():
            if entry.kind == kind and entry.key == key:
                return entry
        return None

    def input_schema(self, target: str, key: str) -> dict[str, object] | None:
        entry = self.get(target, key)
        return None if entry is None else entry.input_schema

    def annotations(self, name: str) -> ToolAnnotations | None:
        return None

    def observes(self, target: str, key: str) -> bool:
        """Whether mcp_nb's probe watches the handler a call reaches (only in the kernel)."""
        return False

    def reaches_request(self, name: str) -> bool:
        """Whether tool `name` may reach its request: send progress, ask questions (an outside
        server's always may)."""
        return True

    def reached(self, target: str, key: str) -> tuple[Registration, dict[str, str] | None] | None:
        """The entry a call to `key` reaches, and for a template read the variables of its URI."""
        return reached_entry(self.entries(), target, key)

    def subscribe(self, listener: Callable[[], None]) -> None:
        """Call `listener()` whenever what the server offers changes. A bound method is held
        weakly (a view that is gone stops listening by itself); a function until `unsubscribe`."""
        self._listeners.add(listener)

    def unsubscribe(self, listener: Callable[[], None]) -> None:
        self._listeners.remove(listener)

    def _changed(self) -> None:
        self._listeners()  # one that fails is logged: a broken view must not break the connection

    def counts(self) -> dict[str, int]:
        kinds = [e.kind if e.kind != "resource" or e.input_schema is None else "template" for e in self.entries()]
        return {kind: kinds.count(kind) for kind in ("tool", "resource", "template", "prompt")}

    def describe(self) -> dict[str, object]:
        """One row of `mcp_nb.servers()`."""
        client = self._client
        state = self.state if self.state != "new" else "ready"  # opened on first use
        info = client.server_info if client is not None else None
        return {
            "server": self.name,
            "transport": self.transport,
            "target": self.target_text(),
            "state": state,
            "reason": self.reason or "",
            "server_name": getattr(info, "name", "") or "",
            "server_version": getattr(info, "version", "") or "",
            "protocol": (client.session.protocol_version if client is not None else "") or "",
            "mode": self.mode,  # what the user asked for (`connect(mode=)`); the kernel's own is "" unless pinned
            **self.counts(),
            "unavailable": "; ".join(self.unavailable.values()),
            **self._authorizing(),
        }

    def _authorizing(self) -> dict[str, str]:
        """The link of an OAuth flow waiting for the person, and how its answer comes back."""
        return {}

    def target_text(self) -> str:
        return ""

    def _repr_html_(self) -> str:
        return connection_html(self.describe())

    def __repr__(self) -> str:
        return connection_text(self.describe())

    def _repr_pretty_(self, printer: _Printer, cycle: bool) -> None:
        printer.text(repr(self))


def _sent_at(call: Sending) -> float:
    return call.t0 if call.t0 is not None else 0.0


def _outside_calls() -> contextvars.Context:
    """A copy of this context in which no call runs. A session's owner task starts in it, and so
    do the tasks the SDK starts for the session (its reader, the stdio pipes, HTTP's standalone
    stream): a server's request that comes with no call's context of its own must not find the
    call that happened to open the session (`asking_call`), nor its trace."""
    context = contextvars.copy_context()
    context.run(CURRENT_CALL.set, None)
    context.run(CURRENT_TRACE.set, None)
    return context


async def left_by(owner: asyncio.Task[None], timeout: float, what: str) -> None:
    """Wait up to `timeout` seconds for a connection's owner task to leave its session.

    The owner is not cancelled when the time is up: it goes on leaving (the SDK's shielded
    shutdown, which ends a stdio server's process, must not be cut short, or the process
    outlives the connection and the wait does not end). What keeps it from leaving in time,
    or cleanly, changes nothing for the caller (the connection is closed either way), so it is
    said on the `mcp_nb` logger at debug level, not raised, and never swallowed unsaid. The
    caller's own cancellation goes through.
    """
    done, _ = await asyncio.wait({owner}, timeout=timeout)
    if not done:
        log.debug("%s: its session was not left within %g s; it goes on leaving", what, timeout)
    elif not owner.cancelled() and owner.exception() is not None:  # cancelled: abandoning does that
        log.debug("%s: leaving its session failed", what, exc_info=owner.exception())
