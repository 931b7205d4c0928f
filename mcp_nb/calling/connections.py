"""Connections: one client session to one server each, owned by one task on mcp_nb's loop.

The SDK's `Client` is an anyio context manager whose cancel scopes must be entered and
left by the same task, so a connection keeps one long-lived owner task that enters the
session, parks until `close()`, and leaves it. Calls only borrow the session.

Three transports, one shape: the kernel's own server over the SDK's in-memory transport
(`KernelConnection`, named `kernel`), and outside servers over stdio (a process mcp_nb
starts and ends) or streamable HTTP (`RemoteConnection`). A connection also answers what
the server offers (its catalog: the kernel's registry, or the lists an outside server
sent) and keeps what the server said outside any answer (a stdio server's stderr lines,
its log notifications).
"""

from __future__ import annotations

import asyncio
import codecs
import collections
import contextlib
import contextvars
import logging
import os
import re
import shlex
import shutil
import socket
import ssl
import time
from typing import Any, Callable
from urllib.parse import urlsplit
import json
import sys

import httpx2
from mcp import Client, MCPError
from mcp_types import METHOD_NOT_FOUND
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError
from mcp.client.streamable_http import streamable_http_client
from mcp_types import ElicitResult, ErrorData, ListRootsResult, Root, RootsListChangedNotification, SamplingCapability, SamplingToolsCapability

from mcp_nb import sdk_compat
from mcp_nb.calling.current import CURRENT_CALL
from mcp_nb.calling.era import check_mode, sdk_mode
from mcp_nb.calling.oauth import Flow, OAuth, answer_text, find, flow_failure, step_of
from mcp_nb.calling.roots import asked as asked_roots
from mcp_nb.calling.roots import check_roots
from mcp_nb.calling.roots import current as current_roots
from mcp_nb.calling.sampling import REFUSED, Sampler, sdk_answer
from mcp_nb.calling.stdio import ServerProcess, StdioStreams
from mcp_nb.config import settings
from mcp_nb.records.listeners import Listeners
from mcp_nb.records.redact import REDACTED
from mcp_nb.records.structured import check_results_locally
from mcp_nb.records.trace import CURRENT_TRACE, ServerLog
from mcp_nb.registering.registry import (
    ANNOTATION_FLAGS,
    Registration,
    prompt_schema,
    reached_entry,
    template_schema,
)
from mcp_nb.views.cards import connection_html, connection_text
from mcp_nb.mistakes import LINE_LIMIT, BadValue, Failure, first_line, one_line

METHODS = {"tool": "tools/call", "resource": "resources/read", "prompt": "prompts/get"}
KERNEL = "kernel"  # the name of the kernel's own server among the connections
LOG_LINES = 2000  # what a connection keeps of its server's stream
# What goes wrong where the user has nothing to do about it (a session left late, a pipe that
# would not close, lists that could not be re-read) is said here at debug level, on the
# `mcp_nb` logger's branch, never swallowed unsaid; the root logger is the user's.
log = logging.getLogger(__name__)


# A URL may carry a secret: a password (or a token in place of a user), or a query parameter
# named like one. Shown or saved anywhere, the URL has them replaced; only the connection keeps them.
_SECRET_PARAMETER = re.compile(r"token|key|secret|pass|pwd|auth|sig|credential|session|code", re.I)


def _without_secrets(url: str) -> tuple[str, list[str]]:
    """`url` as it may be shown (`https://ann:***@host/mcp?api_key=***&team=data`), and the
    secrets taken out of it."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return REDACTED, []  # not a URL anyone can read safely
    secrets, netloc = [], parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, colon, password = userinfo.partition(":")
        secrets.append(password if colon else user)  # https://TOKEN@host: the user is the secret
        netloc = f"{user}:{REDACTED}@{host}" if colon else f"{REDACTED}@{host}"
    pairs = []
    for name, equals, value in (pair.partition("=") for pair in parts.query.split("&")) if parts.query else ():
        if equals and value and _SECRET_PARAMETER.search(name):
            secrets.append(value)
            value = REDACTED
        pairs.append(f"{name}{equals}{value}")
    return parts._replace(netloc=netloc, query="&".join(pairs)).geturl(), [secret for secret in secrets if secret]


def shown_url(url: str) -> str:
    """`url` without its secrets: `https://ann:***@host/mcp?api_key=***&team=data`."""
    return _without_secrets(url)[0]


# An HTTP header's name is a "token" (RFC 9110, 5.1): what httpx would refuse when it sends.
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


class ConnectError(Failure, RuntimeError):
    """A server could not be connected (`mcp_nb.connect`): the message is one line, and says
    why in the terms of the step that failed: the command that is not there, the HTTP status
    the server refused with, the OAuth step that gave up. Nothing was kept."""


class ConnectionLost(Failure, RuntimeError):
    """The connection is gone (the process exited, the stream closed); calls are recorded as `disconnected`."""


class Connection:
    """A client session to one server, opened on first use, and what that server offers."""

    transport = "in-kernel"
    timed_out = sdk_compat.TIMED_OUT  # the message of a deadline, as the SDK words it on this transport

    def __init__(self, name: str) -> None:
        self.name = name
        self.state = "new"  # new | connected | failed | lost | closed
        self.reason: str | None = None  # why it failed, was lost or closed
        self._client: Client | None = None
        self._opening: asyncio.Future[Client] | None = None
        self._closing: asyncio.Event | None = None
        self._owner: asyncio.Task[None] | None = None
        self.logs: collections.deque[ServerLog] = collections.deque(maxlen=LOG_LINES)
        self.unavailable: dict[str, str] = {}  # a kind whose listing failed -> why (`RemoteConnection._listed`)
        self._session_loop: asyncio.AbstractEventLoop | None = None  # the loop the session lives on, once opened
        self.protocol: str | None = None  # the version the open session speaks
        self.watches: list[Any] = []  # the resources watched on this session (`watching.Watch`), told when it ends
        self.sending: set[Any] = set()  # the calls waiting for an answer on this connection now
        self._listeners = Listeners("connection listener")

    # -- the session ----------------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        """Whether the session is open now."""
        return self._client is not None

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
        self, client: Client, target: str, name: str, arguments: dict[str, Any] | None, progress: Any = None
    ) -> Any:
        if target == "tool":
            return await client.call_tool(name, arguments, progress_callback=progress)
        if target == "resource":
            return await client.read_resource(name)
        return await client.get_prompt(name, arguments)

    def _client_for(self) -> Client:
        raise NotImplementedError

    async def _elicited(self, context: Any, params: Any) -> Any:
        """The SDK's elicitation callback: the call the question belongs to answers it and
        records it (`_asking_call`); a question no call can be named for is refused, with why."""
        current, why = self._asking_call()
        message = getattr(params, "message", "") or ""
        if current is None or not hasattr(current, "elicited"):
            return self._refused("elicitation", f"the question {message[:200]!r}", why)
        asked = await current.elicited(message, getattr(params, "requested_schema", None), getattr(params, "url", None))
        return ElicitResult(action=asked.action, content=dict(asked.content) if asked.action == "accept" else None)

    def _asking_call(self) -> tuple[Any, str]:
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
        waiting = sorted((c for c in self.sending if c.t0 is not None), key=lambda c: c.t0)
        if len(waiting) == 1:
            return waiting[0], ""
        if not waiting:
            return None, "it came during no call of mcp_nb's on this connection"
        calls = ", ".join(f"#{c.id} {c.name}" for c in waiting[:5]) + (", ..." if len(waiting) > 5 else "")
        return None, (
            f"{len(waiting)} calls were waiting on this connection ({calls}), and the request does not say which "
            "it belongs to"
        )  # fmt: skip

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
                self.lost(f"the session ended: {_reason(exc)}")
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
            await _left_by(self._owner, timeout, f"closing the connection {self.name!r}")

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

    def input_schema(self, target: str, key: str) -> dict[str, Any] | None:
        entry = self.get(target, key)
        return None if entry is None else entry.input_schema

    def annotations(self, name: str) -> Any:
        return None

    def observes(self, target: str, key: str) -> bool:
        """Whether mcp_nb's probe watches the handler a call reaches (only in the kernel)."""
        return False

    def reaches_request(self, name: str) -> bool:
        """Whether tool `name` may reach its request: send progress, ask questions (an outside
        server's always may)."""
        return True

    def reached(self, target: str, key: str) -> tuple[Registration, dict[str, Any] | None] | None:
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

    def describe(self) -> dict[str, Any]:
        """One row of `mcp_nb.servers()`."""
        client = self._client
        state = self.state if self.state != "new" else "ready"  # opened on first use
        info = getattr(client, "server_info", None) if client is not None else None
        session = client.session if client is not None else None
        return {
            "server": self.name,
            "transport": self.transport,
            "target": self.target_text(),
            "state": state,
            "reason": self.reason or "",
            "server_name": getattr(info, "name", "") or "",
            "server_version": getattr(info, "version", "") or "",
            "protocol": getattr(session, "protocol_version", "") or "",
            "mode": getattr(self, "mode", ""),  # what the user asked for (`connect(mode=)`); the kernel's has none
            **self.counts(),
            "unavailable": "; ".join(self.unavailable.values()),
            **self._authorizing(),
        }

    def _authorizing(self) -> dict[str, Any]:
        """The link of an OAuth flow waiting for the person, and how its answer comes back."""
        return {}

    def target_text(self) -> str:
        return ""

    def _repr_html_(self) -> str:
        return connection_html(self.describe())

    def __repr__(self) -> str:
        return connection_text(self.describe())

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(repr(self))


class KernelConnection(Connection):
    """The kernel's own server, in-process: what it offers is the registry.

    `mode` pins the protocol era, as `connect(mode=)` does for an outside server; left out, the
    SDK's in-process client goes straight to the current era (2026-07-28: each request handed to
    the server in the caller's task). At the handshake era ("2025-11-25") the SDK runs the server
    on its in-memory streams, JSON-RPC as over a wire, and carries the caller's context variables
    with each message: the probe and the log capture still find the call's trace."""

    mode = ""  # the era asked for; "" is the SDK's own choice

    def __init__(self, server: Any, registry: Any, mode: str | None = None) -> None:
        super().__init__(KERNEL)
        self.server = server
        self.registry = registry
        if mode is not None:
            self.mode = check_mode(mode)
        self._listed = -1
        registry.subscribe(self._changed)

    def _client_for(self) -> Client:
        era = {"mode": sdk_mode(self.mode)} if self.mode else {}
        return Client(self.server, cache=None, elicitation_callback=self._elicited, **era)

    async def _opened(self, client: Client) -> None:
        if self.protocol in MODERN_PROTOCOL_VERSIONS:
            # Each request carries the client's capabilities at 2026-07-28: a tool that cannot
            # reach its request cannot ask a question, so its calls go without the elicitation one.
            sdk_compat.lighten_tool_calls(client.session, self.registry.reaches_request, ("elicitation",))

    def open_session(self) -> Client | None:
        return self._client if self.state == "connected" and self.registry.version == self._listed else None

    async def ready(self) -> Client:
        """The open session, with the tools of the registry's current version listed."""
        client = self._client or await self._open()
        if self.registry.version != self._listed:
            await self._relist(client)
        return client

    async def _relist(self, client: Client) -> None:
        # A re-run cell may have changed a schema: re-list so this session validates
        # against the new one (only after a registration, so calls stay cheap). Should it
        # fail, the SDK still re-lists by itself when the server reports a stale schema.
        version = self.registry.version
        try:
            await client.list_tools()
        except Exception:  # noqa: BLE001 - the next call re-lists, or the SDK does
            log.debug("re-listing the kernel's tools failed", exc_info=True)
            return
        self._listed = version

    def entries(self) -> list[Registration]:
        return self.registry.entries()

    def get(self, kind: str, key: str) -> Registration | None:
        return self.registry.get(kind, key)

    def input_schema(self, target: str, key: str) -> dict[str, Any] | None:
        return self.registry.input_schema(target, key)

    def annotations(self, name: str) -> Any:
        return self.registry.annotations(name)

    def observes(self, target: str, key: str) -> bool:
        return self.registry.observes(target, key)

    def reaches_request(self, name: str) -> bool:
        return self.registry.reaches_request(name)

    def reached(self, target: str, key: str) -> tuple[Registration, dict[str, Any] | None] | None:
        return self.registry.reached(target, key)

    def target_text(self) -> str:
        return "the kernel's own MCPServer"


class RemoteConnection(Connection):
    """An outside server: a process over stdio, or a URL over streamable HTTP."""

    timed_out = sdk_compat.TIMED_OUT_JSONRPC

    def __init__(
        self,
        name: str,
        target: str | list[str],
        *,
        args: list[str] | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        headers: dict[str, str] | None = None,
        auth: Any = None,
        mode: str = "auto",
        sampling: Any = None,
        roots: Any = None,
        sampling_tools: bool = False,
    ) -> None:
        super().__init__(name)
        self.mode = check_mode(mode)
        self.oauth: OAuth | None = auth if isinstance(auth, OAuth) else None  # the notebook's flow, made per connection
        self.auth = None if self.oauth is not None else _checked_auth(auth)
        self._flow: Flow | None = None
        self._authorizing_open: asyncio.Future | None = None  # the opening an authorizing connection waits on
        self.sampler = Sampler(sampling)  # who answers the server's sampling requests (none: each is refused)
        if not isinstance(sampling_tools, bool):
            raise BadValue(f"sampling_tools is True or False, got {sampling_tools!r}")
        if sampling_tools and sampling is None:
            raise BadValue("sampling_tools=True says the client's model can use tools: give sampling= too")
        self.sampling_tools = sampling_tools
        check_roots(roots)
        self.roots_source = roots
        self._catalog: list[Registration] = []
        self._annotations: dict[str, Any] = {}
        self._stderr: _StderrReader | None = None
        self.pid: int | None = None
        # HTTP error answers, newest last: (method, params, status, body). The SDK keeps
        # only a stand-in message; these put the status and the body back on the call.
        self.http_errors: collections.deque[tuple[str, Any, int, str]] = collections.deque(maxlen=64)
        self.statuses: collections.deque[int] = collections.deque(maxlen=32)  # every answer's status, newest last
        if isinstance(target, str) and _scheme(target) in ("http", "https"):
            if args or env or cwd:
                raise BadValue("args, env and cwd are for a command (a stdio server), not a URL")
            for key, value in (headers or {}).items():
                if not isinstance(key, str) or not isinstance(value, str) or not key.strip() or "\n" in key + value:
                    raise BadValue(f"headers must map names to text on one line, got {key!r}: {value!r}")
                if not _HEADER_NAME.fullmatch(key) or "\r" in value or "\x00" in value:
                    raise BadValue(f"{key!r} is not a header an HTTP request can carry (a name is letters, digits and !#$%&'*+-.^_`|~; a value has no CR or NUL)")
                if not value.isascii():  # httpx sends a value as ASCII bytes, and raised on any other character
                    raise BadValue(f"the value of header {key!r} is not ASCII text, which an HTTP header carries (percent-encode or base64 the rest)")
            self.transport, self.url, self.headers = "http", target, dict(headers or {})
            self.command: list[str] = []
        else:
            if headers:
                raise BadValue("headers are for a URL (an HTTP server), not a command")
            if auth is not None:
                raise BadValue("auth is for a URL (an HTTP server); a stdio server gets its credentials from env=")
            command = shlex.split(target) if isinstance(target, str) else [str(part) for part in target]
            if not command or not command[0]:
                raise BadValue("the command to start is empty")
            self.transport, self.url, self.headers = "stdio", "", {}
            self.command = command + [str(a) for a in (args or [])]
            self.env = {str(k): str(v) for k, v in (env or {}).items()}
            # What the operating system would refuse when the process starts, refused now.
            if any("\x00" in part for part in self.command):
                raise BadValue("the command holds a NUL character, which no program's arguments can")
            for key, value in self.env.items():
                if not key or "=" in key or "\x00" in key + value:
                    raise BadValue(f"env names are non-empty, without '=' or NUL, and values have no NUL, got {key!r}")
            self.cwd = cwd

    def recipe(self) -> tuple[str | list[str], dict[str, Any]]:
        """What reaches this server again: its target, and the options it was connected with."""
        target = self.url if self.transport == "http" else list(self.command)
        extra = {"headers": self.headers, "auth": self.oauth or self.auth} if self.transport == "http" else {"env": self.env, "cwd": self.cwd}
        return target, {
            "mode": self.mode, "sampling": self.sampler.value, "roots": self.roots_source, "sampling_tools": self.sampling_tools, **extra,
        }  # fmt: skip

    def target_text(self) -> str:
        """The server's URL or command as it may be shown or saved (`shown_url`)."""
        return shown_url(self.url) if self.transport == "http" else shlex.join(self.command)

    def secret_values(self) -> list[str]:
        """What this connection holds that no record may: its headers' values (an Authorization
        header's token, an API key), its URL's password and secret query values, an OAuth
        provider's tokens and client secret once it has them, its stdio server's environment
        values named like secrets."""
        if self.transport == "http":
            values = [value for value in self.headers.values() if value]
            values += [part for value in values for part in value.split() if len(part) >= 8]  # "Bearer TOKEN": the token alone too
            return values + _without_secrets(self.url)[1] + _auth_secrets(self.auth, self.oauth)
        return [value for key, value in self.env.items() if value and _SECRET_PARAMETER.search(key)]

    def redacted(self, text: str) -> str:
        """`text` (an error's, say) with this connection's URL as `shown_url` shows it, and every
        secret it holds (`secret_values`) left in it replaced: a server that echoes the request's
        credentials in its error, or a stdio server that prints its API key on stderr, puts none
        of them in a message. (Only what it holds: a pattern would take "bearer token" for one.)"""
        if self.transport == "http":
            text = text.replace(self.url, shown_url(self.url))
        for secret in sorted(set(self.secret_values()), key=len, reverse=True):  # a secret inside another goes with it
            if len(secret) >= 4:  # a shorter one would mangle the text, and guards little
                text = text.replace(secret, REDACTED)
        return text

    # -- opening ---------------------------------------------------------------------------------

    def _client_for(self) -> Client:
        # `log_level`: a 2026-07-28 server sends a request's log messages only to a client that
        # opted in on it (SEP-2577); an older one sends them unless `logging/setLevel` said otherwise.
        options: dict[str, Any] = {
            "cache": None, "logging_callback": self._logged, "log_level": "debug", "message_handler": self._message,
            "elicitation_callback": self._elicited, "mode": sdk_mode(self.mode),
            # Always declared: a server that samples gets a reply or a refusal that says why, recorded on the call.
            "sampling_callback": self._sampled,
        }  # fmt: skip
        if self.sampling_tools:
            options["sampling_capabilities"] = SamplingCapability(tools=SamplingToolsCapability())
        if self.roots_source is not None:
            options["list_roots_callback"] = self._roots_listed
        if self.transport == "http":
            return Client(_HttpTransport(self.url, self.headers, self.http_errors, self.auth, self.statuses, self._oauth_step if self.oauth is not None else None), **options)
        return Client(_StdioTransport(self), **options)

    async def open(self, timeout: float) -> None:
        """Connect and initialize within `timeout` seconds, or raise `ConnectError` and leave nothing behind.

        An OAuth flow (`auth=mcp_nb.OAuth()`) that needs the person's approval returns when its
        link is ready, the connection "authorizing"; `finish` waits for the rest (the person's
        time is not counted against `timeout`)."""
        await self._watched(self._opened_within(timeout), timeout)

    async def finish(self, timeout: float) -> None:
        """Wait for an authorizing connection to be connected: the person's approval (up to the
        OAuth's own timeout), then the connect's `timeout`; or raise `ConnectError`."""
        flow, opening = self._flow, self._authorizing_open
        assert flow is not None and opening is not None
        # The future `_opening` was when the link came: a flow that failed meanwhile has already
        # cleared `_opening`, and its failure is on this one.
        await self._watched(asyncio.wait_for(asyncio.shield(opening), flow.oauth.timeout + timeout), timeout)

    async def _opened_within(self, timeout: float) -> None:
        if self.oauth is None:
            await asyncio.wait_for(self._open(), timeout)
            return
        self._flow = flow = self.oauth.flow(self.url, self._oauth_step)
        opening = asyncio.ensure_future(self._open())
        shown = asyncio.ensure_future(flow.shown.wait())
        try:
            done, _ = await asyncio.wait({opening, shown}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            shown.cancel()
        if opening in done:
            opening.result()
            return
        if shown in done:
            self.state = "authorizing"  # the face shows the link; the session goes on opening
            self._authorizing_open = self._opening
            opening.add_done_callback(lambda f: f.cancelled() or f.exception())  # `finish` hears how it ended
            return
        opening.cancel()
        raise asyncio.TimeoutError

    @property
    def authorization_link(self) -> str | None:
        """The link the person opens to approve, while a flow waits for it."""
        flow = self._flow
        return flow.link if flow is not None and flow.shown.is_set() else None

    def answered_by(self, url: str) -> bool:
        """Whether `url` answers the OAuth flow this connection waits on."""
        return self._flow is not None and self._flow.answers(url)

    def complete_auth(self, url: str) -> None:
        """Hand the address the person landed on to the waiting flow (from any thread)."""
        flow = self._flow
        if flow is None or self._session_loop is None:
            raise BadValue(f"{self.name!r} is not waiting for an authorization")
        if _on(self._session_loop):
            flow.complete(url)
        else:
            asyncio.run_coroutine_threadsafe(_called(flow.complete, url), self._session_loop).result(timeout=10)

    def _authorizing(self) -> dict[str, Any]:
        link = self.authorization_link
        return {"authorize": link, "callback": self.oauth.callback} if link else {}

    def _oauth_step(self, line: str) -> None:
        self.heard(ServerLog(level="INFO", logger="mcp_nb.oauth", message=line, at=time.time()))

    async def _watched(self, opening: Any, timeout: float) -> None:
        try:
            await opening
        except asyncio.CancelledError:
            await self._abandon()
            raise
        except asyncio.TimeoutError:
            await self._abandon()
            if self._flow is not None and self.state == "authorizing":
                raise ConnectError(f"could not connect to {self.name!r}: nobody approved the authorization within {self._flow.oauth.timeout:g} s") from None
            raise ConnectError(f"server {self.name!r} did not answer initialize within {timeout:g} s") from None
        except (ConnectError, ValueError):
            await self._abandon()
            raise
        except BaseException as err:  # noqa: BLE001 - whatever went wrong, said in one line
            # Not its traceback, nor the whole of what a peer sent (an 8 MB error page): one bounded
            # line, without the connection's secrets.
            log.debug("connecting to %r failed: %s", self.name, self.redacted(one_line(repr(err), 2000)))
            with contextlib.suppress(Exception):
                await self.heard_all()  # a server that exits at once says why on stderr, first
            said = [entry.message for entry in self.logs if entry.source == "stderr" and entry.message.strip()]
            await self._abandon()
            reason = _reason(err)
            if said:  # "unknown time zone", "not a git repository": the reason, in the server's words
                reason += "; its stderr ended with: " + " | ".join(one_line(line, 200) for line in said[-3:])
            refused = flow_failure(err)
            if refused is not None:  # the SDK's OAuth flow gave up: its reason, not the 401 that started it
                reason = refused
            elif self.http_errors:
                _, _, status, body = self._refusal() or self.http_errors[-1]
                reason = self._http_reason(status, body)
            if self._flow is not None:
                self._oauth_step(f"failed: {reason}")
            raise ConnectError(f"could not connect to {self.name!r} ({self.target_text()}): {self.redacted(reason)}") from None

    def _http_reason(self, status: int, body: str) -> str:
        """An HTTP error answer at connect, said as what it means here, then in the server's
        words (`answer_text`): `HTTP 401: the token was refused; the server said: ...`."""
        headers = {key.lower(): value for key, value in self.headers.items()}
        bearer = self.oauth is not None or headers.get("authorization", "").lower().startswith("bearer ")
        given = bearer or self.auth is not None or "authorization" in headers or bool(_without_secrets(self.url)[1])
        if status == 401:
            meaning = (
                ("the token was refused" if bearer else "the credentials were refused") if given else
                "the server asks for credentials and none were sent (connect with headers={'Authorization': "
                "'Bearer ...'} or auth=)"
            )  # fmt: skip
        elif status == 403:
            meaning = "the server refused the request" + (" with these credentials" if given else "")
        elif status == 404:
            meaning = "nothing answers at this path (a server's MCP endpoint is often .../mcp)"
        elif status == 405:
            meaning = "this URL does not take MCP's requests (is it the server's MCP endpoint?)"
        elif status >= 500:
            meaning = "the server failed"
        else:
            meaning = "the server refused the request"
        words = answer_text(body) if body else ""
        return f"HTTP {status}: {meaning}" + (f"; the server said: {words}" if words else "")

    def _refusal(self) -> tuple | None:
        """The last 401 or 403 answer, when nothing succeeded after it: the server refused the
        credentials, whatever the SDK tried next (at 2026-07-28 it falls back to the handshake,
        which a modern server answers with a 400 that says nothing of why)."""
        statuses = list(self.statuses)
        last = max((i for i, status in enumerate(statuses) if status in (401, 403)), default=None)
        if last is None or any(status < 300 for status in statuses[last + 1 :]):
            return None
        return next((e for e in reversed(self.http_errors) if e[2] in (401, 403)), None)

    async def _abandon(self) -> None:
        self.state = "failed"
        if self._flow is not None:
            self._flow.close()
        owner = self._owner
        if owner is not None and not owner.done():
            owner.cancel()
            await _left_by(owner, 5, f"abandoning the connection {self.name!r}")

    async def _prepare(self) -> None:
        if self._flow is not None:
            self.auth = await self._flow.provider()

    async def _opened(self, client: Client) -> None:
        if self._flow is not None:
            self._oauth_step("connected: the token works")
        await self._list(client)

    async def _list(self, client: Client) -> None:
        """Read what the server offers (what it lacks a capability for is simply empty).

        With the era pinned (`mode="2026-07-28"`) the server was never asked what it offers,
        so every kind is listed. A listing the server answers with an error or with something
        that is not a listing leaves that kind unavailable (said in the connection's log and
        on its card) and the connection up: one broken list must not hide the tools.
        """
        caps = None if self.mode == "2026-07-28" else getattr(client.session, "server_capabilities", None)
        entries: list[Registration] = []
        annotations: dict[str, Any] = {}
        self.unavailable = {}
        if caps is None or getattr(caps, "tools", None) is not None:
            for tool in await self._listed(client.list_tools, "tools"):
                hints = getattr(tool, "annotations", None)
                annotations[tool.name] = hints
                flags = {camel: True for flag, camel in ANNOTATION_FLAGS.items() if hints is not None and getattr(hints, f"{flag}_hint", None)}
                entries.append(
                    Registration(
                        # A title may live only in the annotations (an older habit servers keep).
                        kind="tool", name=tool.name, title=tool.title or getattr(hints, "title", None),
                        description=tool.description, annotations=flags,
                        input_schema=tool.input_schema, output_schema=tool.output_schema,
                        execution=_sent(tool.execution), meta=tool.meta,
                    )  # fmt: skip
                )
        if caps is None or getattr(caps, "resources", None) is not None:
            for resource in await self._listed(client.list_resources, "resources"):
                entries.append(
                    Registration(
                        kind="resource", name=resource.name, uri=str(resource.uri), title=resource.title,
                        description=resource.description, mime_type=resource.mime_type, meta=resource.meta,
                    )  # fmt: skip
                )
            for template in await self._listed(client.list_resource_templates, "resource_templates"):
                entries.append(
                    Registration(
                        kind="resource", name=template.name, uri=template.uri_template, title=template.title,
                        description=template.description, mime_type=template.mime_type,
                        input_schema=template_schema(template.uri_template), meta=template.meta,
                    )  # fmt: skip
                )
        if caps is None or getattr(caps, "prompts", None) is not None:
            for prompt in await self._listed(client.list_prompts, "prompts"):
                entries.append(
                    Registration(
                        kind="prompt", name=prompt.name, title=prompt.title, description=prompt.description,
                        input_schema=prompt_schema(prompt.arguments), meta=prompt.meta,
                    )  # fmt: skip
                )
        self._catalog, self._annotations = entries, annotations
        self._changed()

    async def _listed(self, read: Any, field: str) -> list:
        """What one listing holds. A server that does not offer the method ("Method not found",
        though its capabilities said otherwise) offers nothing of that kind, as the SDK's own
        client takes it. One that answers with an error, or with a listing that is not one,
        leaves the kind unavailable, and why is in the log. An HTTP error (a 401, a lost
        session) or a broken transport is the connection's failure, raised."""
        try:
            return list(getattr(await read(), field))
        except MCPError as err:
            if err.code == METHOD_NOT_FOUND:
                log.info("the server does not offer %s (%s): none listed", field, first_line(err))
                return []
            if err.error.message in sdk_compat.HTTP_STATUS_TEXTS:
                raise
            reason = f"the server answered {field.replace('_', ' ')}/list with error {err.code}: {first_line(err)}"
        except ValidationError as err:
            count = err.error_count()
            reason = (
                f"the server's {field.replace('_', ' ')} listing is not one the protocol allows "
                f"({count} problem{'s' if count != 1 else ''}; first: {_first_problem(err)})"
            )
        self.unavailable[field] = reason
        self.heard(ServerLog(level="WARNING", logger="mcp_nb.connection", message=reason + "; none listed", at=time.time()))
        return []

    async def _sampled(self, context: Any, params: Any) -> Any:
        """The SDK's sampling callback: the call the request belongs to (found as a question's
        call is, `_asking_call`) answers it and records it. One no call can be named for is
        refused, and the model is not asked: nobody would see its reply, and it may cost money."""
        current, why = self._asking_call()
        if current is None or not hasattr(current, "sampled"):
            return self._refused("sampling", "a sampling request", why)
        return sdk_answer(await current.sampled(self.sampler, params))

    async def _roots_listed(self, context: Any) -> Any:
        try:
            roots = await asked_roots(self.roots_source)
        except Exception as err:  # noqa: BLE001 - a broken roots function is the server's refusal, said
            why = str(err) if isinstance(err, TimeoutError) else f"the roots function failed: {type(err).__name__}: {err}"
            self.heard(ServerLog(level="WARNING", logger="mcp_nb.roots", message=why, at=time.time()))
            return ErrorData(code=-32603, message=f"the client's roots could not be listed: {why}")
        return ListRootsResult(roots=[Root(uri=uri, name=name) for uri, name in roots])

    @property
    def roots(self) -> list[tuple[str, str | None]]:
        """The roots the server is offered now, as (uri, name)."""
        return current_roots(self.roots_source)

    def set_roots(self, roots: Any) -> None:
        """Offer other roots; a server on the handshake era is told they changed (the 2026-07-28
        protocol has no such notice: the server asks again when it needs them)."""
        check_roots(roots)
        if self.roots_source is None and roots is not None and self._client is not None:
            raise BadValue(f"{self.name!r} was connected without roots, so it declared none: reconnect with roots= to offer some")
        self.roots_source = roots
        self.roots_changed()

    def roots_changed(self) -> None:
        """Tell the server the roots changed (a roots function's answer, say), so one that keeps
        them reads them again. Only the handshake era has this notice: at 2026-07-28 a server
        asks for the roots whenever it needs them."""
        client, loop = self._client, self._session_loop
        if client is None or loop is None or (self.protocol or "") >= "2026":
            return
        told = asyncio.run_coroutine_threadsafe(self._tell_roots_changed(client), loop)
        if not _on(loop):  # from the user's thread: the notice has left when this returns
            told.result(timeout=10)

    async def _tell_roots_changed(self, client: Client) -> None:
        try:
            # The notification itself, not the SDK's helper for it, which warns that roots are
            # deprecated at 2026-07-28: this is only sent on the handshake era, where they are not.
            await client.session.send_notification(RootsListChangedNotification())
        except Exception:  # noqa: BLE001 - a notice that cannot be sent changes nothing but the server's timing
            log.debug("telling %r its roots changed failed", self.name, exc_info=True)

    async def _message(self, message: Any) -> None:
        message = getattr(message, "root", message)
        method = getattr(message, "method", "") or ""
        if method == "notifications/resources/updated":
            uri = str(getattr(getattr(message, "params", None), "uri", ""))
            for watch in list(self.watches):
                if watch.uri == uri and watch.era < "2026":  # at 2026-07-28 a watch hears its listen stream
                    watch.updated()
            return
        # The server says what it offers changed: read it again (off the receive path).
        if method.endswith("/list_changed") and self._client is not None:
            asyncio.get_running_loop().create_task(self._relist_quietly())

    async def _relist_quietly(self) -> None:
        try:
            if self._client is not None:
                await self._list(self._client)
        except Exception:  # noqa: BLE001 - the lists stay as they were; the next change re-reads them
            log.debug("re-reading what %r offers failed", self.name, exc_info=True)

    async def _logged(self, params: Any) -> None:
        level = str(getattr(params, "level", "info")).upper()
        data = getattr(params, "data", "")
        self.heard(ServerLog(level=level, logger=getattr(params, "logger", None) or self.name, message=str(data), source="notification", at=time.time()))

    async def heard_all(self) -> None:
        if self._stderr is not None:
            self._stderr.drain()

    def _left(self) -> None:
        if self._flow is not None:
            self._flow.close()  # the loopback listener goes with the session
        if self._stderr is not None:  # the process is gone: what it wrote last is filed, the pipe closed
            self._stderr.close()

    def http_error(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """The status and body of the HTTP error answer to this request, if it had one."""
        for i in range(len(self.http_errors) - 1, -1, -1):
            sent_method, sent_params, status, body = self.http_errors[i]
            if sent_method == method and all(sent_params.get(k) == v for k, v in params.items()):
                del self.http_errors[i]
                return {"status": status, "body": body}
        return None

    # -- what it offers ------------------------------------------------------------------------

    def entries(self) -> list[Registration]:
        return list(self._catalog)

    def annotations(self, name: str) -> Any:
        return self._annotations.get(name)


def _sent(model: Any) -> dict[str, Any] | None:
    """A listed model as the server sent it (its wire names, what it left out left out)."""
    return None if model is None else model.model_dump(by_alias=True, exclude_none=True, mode="json")


def _auth_secrets(auth: Any, oauth: OAuth | None) -> list[str]:
    """The secrets an OAuth provider holds once it has them (its tokens, its client's secret),
    and the client secret an `OAuth` was given."""
    context = getattr(auth, "context", None)  # the SDK's OAuthClientProvider keeps its state there
    tokens, client = getattr(context, "current_tokens", None), getattr(context, "client_info", None)
    found = [getattr(tokens, "access_token", None), getattr(tokens, "refresh_token", None), getattr(client, "client_secret", None)]
    found.append(oauth._client_secret if oauth is not None else None)
    return [value for value in found if isinstance(value, str) and value]


def _checked_auth(auth: Any) -> Any:
    """`auth` when the SDK's HTTP transport can authenticate requests with it: an `httpx2.Auth`
    (the SDK's OAuth providers are ones; the SDK's transport is built on httpx2)."""
    if auth is None or isinstance(auth, (httpx2.Auth, OAuth)):
        return auth
    if type(auth).__module__.split(".")[0] == "httpx":
        raise BadValue(
            f"auth is an {type(auth).__name__} of the httpx package, but the SDK's transport is built on httpx2: "
            "make it with httpx2 (httpx2.BasicAuth, a subclass of httpx2.Auth)"
        )
    raise BadValue(
        f"auth must be an httpx2.Auth (one of the SDK's providers, such as mcp.client.auth.OAuthClientProvider), "
        f"got {type(auth).__name__}; a fixed token goes in headers={{'Authorization': 'Bearer ...'}}"
    )


def _outside_calls() -> contextvars.Context:
    """A copy of this context in which no call runs. A session's owner task starts in it, and so
    do the tasks the SDK starts for the session (its reader, the stdio pipes, HTTP's standalone
    stream): a server's request that comes with no call's context of its own must not find the
    call that happened to open the session (`_asking_call`), nor its trace."""
    context = contextvars.copy_context()
    context.run(CURRENT_CALL.set, None)
    context.run(CURRENT_TRACE.set, None)
    return context


def _on(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether this thread runs `loop`."""
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


async def _called(function: Callable[[str], None], value: str) -> None:
    function(value)


def _first_problem(err: ValidationError) -> str:
    problem = err.errors(include_url=False)[0]
    where = ".".join(str(part) for part in problem.get("loc", ())) or "the answer"
    return one_line(f"{where}: {problem.get('msg', '')}")  # the places are the server's keys: any text at all


def _scheme(target: str) -> str:
    try:
        return urlsplit(target).scheme
    except ValueError as err:  # "http://[::1": said as the user's mistake it is
        raise BadValue(f"invalid URL {target!r}: {err}") from None


async def _left_by(owner: asyncio.Task[None], timeout: float, what: str) -> None:
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


def _reason(err: BaseException) -> str:
    """The innermost useful message of an exception, in one bounded line: anyio's groups
    ("unhandled errors in a TaskGroup") opened, what the transport met said as what it means,
    and a peer's words (a server's error message) made safe (`one_line`)."""
    while isinstance(err, BaseExceptionGroup) and len(err.exceptions) == 1:
        err = err.exceptions[0]
    if isinstance(err, BaseExceptionGroup):
        return one_line("; ".join(_reason(e) for e in err.exceptions), 2 * LINE_LIMIT)
    met = _met(err)
    if met is not None:
        return met
    line = one_line(err)
    return f"{type(err).__name__}: {line}" if line else type(err).__name__


def _met(err: BaseException) -> str | None:
    """What the network said when nothing MCP could answer: nobody listening, a TLS handshake
    with a plain server, a name that does not resolve."""
    refused = find(err, lambda e: isinstance(e, ConnectionRefusedError))
    if refused is not None:
        return "nothing is listening there (connection refused)"
    tls = find(err, lambda e: isinstance(e, ssl.SSLError))
    if tls is not None:
        plain = any(words in str(tls) for words in ("WRONG_VERSION_NUMBER", "record layer failure", "http request"))
        return f"the TLS handshake failed ({one_line(tls)})" + ("; the server speaks plain HTTP: connect with http://" if plain else "")
    unknown = find(err, lambda e: isinstance(e, socket.gaierror))
    if unknown is not None:
        return f"the server's host name does not resolve ({one_line(unknown)})"
    return None


# -- the transports ---------------------------------------------------------------------------------


def _check_runnable(connection: RemoteConnection, command: str) -> None:
    """Say plainly that a command is not there, before the SDK tries to start it: the error of
    a failed start depends on the machine (a directory on PATH that cannot be searched turns
    "no such file" into "permission denied", which points the user the wrong way)."""
    if os.sep in command or (os.altsep and os.altsep in command):
        path = command if os.path.isabs(command) else os.path.join(connection.cwd or os.getcwd(), command)
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise ConnectError(f"could not start {connection.name!r}: no program at {command!r} that can be run")
        return
    # The SDK gives the process mcp_nb's environment with `env` on top: PATH is searched there.
    search = connection.env.get("PATH", os.environ.get("PATH", os.defpath))
    if shutil.which(command, path=search) is None:
        raise ConnectError(f"could not start {connection.name!r}: no command {command!r} on PATH")


class _StdioTransport:
    """A stdio server's process, started by mcp_nb (`stdio.ServerProcess`), its stdout and stdin
    the session's streams, its stderr read line by line into the connection.

    The server's stderr is not the kernel's: in Jupyter `sys.stderr` is not a file (the crash
    users of notebook clients report with the SDK's `errlog`), and a server's diagnostics would
    print into whatever cell runs. Here stderr is a pipe the loop reads: every line goes on the
    connection and on the calls waiting on it. The process's own exit is watched, whatever
    holds its pipes (a helper it started): the connection is lost at once, and its group ended.
    """

    def __init__(self, connection: RemoteConnection) -> None:
        self.connection = connection
        self._streams: StdioStreams | None = None

    async def __aenter__(self):
        c = self.connection
        _check_runnable(c, c.command[0])
        read_end, write_end = os.pipe()
        try:
            process = ServerProcess(c.command, c.env or None, c.cwd, stderr=write_end)
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)  # the process has its own copy: end-of-file comes when it is gone
        c.pid = process.pid
        c._stderr = _StderrReader(c, read_end)
        process.watch_exit(lambda: c.lost("the server's process exited"))
        self._streams = StdioStreams(process, self._not_a_message)
        try:
            return await self._streams.open()
        except BaseException:
            await self._streams.close()
            raise

    async def __aexit__(self, *exc: Any) -> bool | None:
        if self._streams is not None:
            await self._streams.close()
        return None

    def _not_a_message(self, line: str) -> None:
        """A line of the server's stdout that is no JSON-RPC message (a stray print): said on
        the connection, and on the calls waiting on it."""
        c = self.connection
        message = f"the server wrote a line on stdout that is no JSON-RPC message: {line[:500]!r}"
        c.heard(ServerLog(level="WARNING", logger="mcp_nb.connection", message=message, at=time.time()))


class _StderrReader:
    """Reads a stdio server's stderr line by line onto its connection, on mcp_nb's loop.

    The pipe is read without blocking whenever it has data (the loop watches it), and
    `drain()` reads whatever it holds at once: a server writes what it says about a call
    to stderr before it answers on stdout, so draining once the answer is in puts every
    such line on the call, with no thread to race.
    """

    def __init__(self, connection: RemoteConnection, fd: int) -> None:
        self.connection, self.fd = connection, fd
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._rest = ""
        self.done = False
        os.set_blocking(fd, False)
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(fd, self.drain)

    def drain(self) -> None:
        """File every complete line the pipe holds now; at its end, say the process is gone."""
        if self.done:
            return
        c = self.connection
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except BlockingIOError:
                return
            except OSError:  # read as the pipe's end: the process can say no more
                log.debug("reading the stderr of %r failed", c.name, exc_info=True)
                chunk = b""
            if not chunk:
                self._finish()
                return
            *lines, self._rest = (self._rest + self._decoder.decode(chunk)).split("\n")
            now = time.time()
            for line in lines:
                c.heard(ServerLog(level="STDERR", logger=f"{c.name} stderr", message=line.rstrip("\r"), source="stderr", at=now))

    def _finish(self) -> None:
        c = self.connection
        self.done = True
        if self._rest:
            c.heard(ServerLog(level="STDERR", logger=f"{c.name} stderr", message=self._rest, source="stderr", at=time.time()))
        self._release()
        last = c.logs[-1].message if c.logs else ""
        c.lost("its process exited" + (f" (its last line: {last!r})" if last else ""))

    def close(self) -> None:
        if not self.done:
            self.drain()
        if not self.done:
            self.done = True
            self._release()

    def _release(self) -> None:
        """Stop watching the pipe and close it (once the process is gone, or the connection closed)."""
        try:
            self._loop.remove_reader(self.fd)
        except Exception:  # noqa: BLE001 - a loop already closed watches nothing
            log.debug("could not stop watching the stderr of %r", self.connection.name, exc_info=True)
        try:
            os.close(self.fd)
        except OSError:
            log.debug("could not close the stderr pipe of %r", self.connection.name, exc_info=True)


class _HttpTransport:
    """The SDK's streamable HTTP transport, with the user's headers on every request, and
    each error answer's status and body noted (the SDK keeps only a stand-in message)."""

    def __init__(
        self, url: str, headers: dict[str, str], errors: collections.deque, auth: Any = None,
        statuses: collections.deque | None = None, step: Callable[[str], None] | None = None,
    ) -> None:  # fmt: skip
        self.url, self.headers, self.errors, self.auth = url, headers, errors, auth
        self.statuses = statuses if statuses is not None else collections.deque(maxlen=32)
        self.step = step  # files each OAuth step in the connection's log
        self._stack: contextlib.AsyncExitStack | None = None

    async def _answered(self, response: Any) -> None:
        self.statuses.append(response.status_code)
        if self.step is not None:
            try:
                step = step_of(response.request)
            except Exception:  # noqa: BLE001 - a request whose body cannot be read is no step of the flow
                step = None
            if step is not None:  # where it went and what came back; never a body, a token or a query
                url = response.request.url
                self.step(f"{step}: {response.request.method} {url.scheme}://{url.netloc.decode()}{url.path} -> {response.status_code}")
        if response.status_code < 400:
            return
        try:
            body = (await response.aread()).decode("utf-8", errors="replace")[:2000]
        except Exception:  # noqa: BLE001 - the status alone still says what happened
            log.debug("could not read the body of an HTTP %s answer", response.status_code, exc_info=True)
            body = ""
        try:
            sent = json.loads(response.request.content or b"{}")
        except ValueError:
            sent = {}
        sent = sent if isinstance(sent, dict) else {}
        self.errors.append((sent.get("method", ""), sent.get("params") or {}, response.status_code, body))

    async def __aenter__(self):
        self._stack = contextlib.AsyncExitStack()
        try:
            http = sdk_compat.http_client(self.headers, self.auth)
            http.event_hooks["response"].append(self._answered)
            http = await self._stack.enter_async_context(http)
            return await self._stack.enter_async_context(streamable_http_client(self.url, http_client=http))
        except BaseException:
            await self._stack.aclose()
            raise

    async def __aexit__(self, *exc: Any) -> bool | None:
        if self._stack is not None:
            return await self._stack.__aexit__(*exc)
        return None

