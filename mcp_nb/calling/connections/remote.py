"""An outside server's connection: reached as its `ServerSpec` says, and what it offers and asks.

`RemoteConnection` opens its session over stdio (`stdio.StdioTransport`) or streamable HTTP
(`http.HttpTransport`), within the connect's timeout or not at all (a failure said in one line:
`failures`), through an OAuth flow when the spec asks for one (the person's step may outlast the
timeout: the connection is `authorizing` meanwhile). Once open it lists what the server offers,
and lists again when the server says that changed; it answers the server's requests of the
client (a question, a completion, the roots) through the call they belong to; and it hears
the server's log messages and the changes of the resources watched on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import time
from collections.abc import Awaitable, Callable

import httpx2
from mcp import Client
from mcp.client import ClientRequestContext, IncomingMessage
from mcp_types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    CreateMessageResultWithTools,
    ErrorData,
    ListRootsResult,
    LoggingMessageNotificationParams,
    PromptListChangedNotification,
    ResourceListChangedNotification,
    ResourceUpdatedNotification,
    Root,
    RootsListChangedNotification,
    SamplingCapability,
    SamplingToolsCapability,
    ToolAnnotations,
    ToolListChangedNotification,
)

from mcp_nb import sdk_compat
from mcp_nb.calling.connections import listing
from mcp_nb.calling.connections.base import Connection, left_by
from mcp_nb.calling.connections.errors import ConnectError
from mcp_nb.calling.connections.failures import http_reason, reason, refusal
from mcp_nb.calling.connections.http import HttpTransport
from mcp_nb.calling.connections.spec import ServerSpec, shown_url
from mcp_nb.calling.connections.stdio import StdioTransport
from mcp_nb.calling.era import MODERN_ERA, is_handshake, sdk_mode
from mcp_nb.calling.oauth import Flow, OAuth, flow_failure
from mcp_nb.calling.roots import RootsSource
from mcp_nb.calling.roots import asked as asked_roots
from mcp_nb.calling.roots import current as current_roots
from mcp_nb.calling.sampling import Sampler, sdk_answer
from mcp_nb.mistakes import BadValue, one_line
from mcp_nb.records.redact import REDACTED
from mcp_nb.records.trace import ServerLog
from mcp_nb.registering.registry import Registration

log = logging.getLogger(__package__)

# The notices that what a server offers changed, and the kind (`listing.KINDS`) each says to read again.
_LIST_CHANGED: dict[type[object], str] = {
    ToolListChangedNotification: "tools",
    ResourceListChangedNotification: "resources",
    PromptListChangedNotification: "prompts",
}


class RemoteConnection(Connection):
    """An outside server: a process over stdio, or a URL over streamable HTTP, as `spec` says."""

    timed_out = sdk_compat.TIMED_OUT_JSONRPC

    def __init__(self, spec: ServerSpec) -> None:
        super().__init__(spec.name)
        self.spec = spec  # what reaches this server; `set_roots` replaces it (a spec is never changed)
        self.transport = spec.transport
        self.mode = spec.mode
        self.sampler = Sampler(spec.sampling)  # who answers the server's sampling requests (none: each is refused)
        self._flow: Flow | None = None
        self._provider: httpx2.Auth | None = None  # the OAuth flow's, made as the session opens
        self._authorizing_open: asyncio.Future[Client] | None = None  # the opening an authorizing connection waits on
        self._catalog: list[Registration] = []
        self._annotations: dict[str, ToolAnnotations | None] = {}
        self._listed: dict[str, listing.Catalog] = {}  # each kind, as its last listing read it
        self._relisting: dict[str, asyncio.Task[None]] = {}  # a kind -> its listing in flight (one at a time)
        self._relist_again: set[str] = set()  # the kinds said changed while their listing ran
        self._stdio: StdioTransport | None = None
        self._http: HttpTransport | None = None

    @property
    def oauth(self) -> OAuth | None:
        """The notebook's OAuth flow this server is authorized with (`auth=mcp_nb.OAuth()`), if any."""
        return self.spec.oauth

    # What reaches this server, as its spec says (read-only: another is a new spec, and a new connection).

    @property
    def url(self) -> str:
        return self.spec.url

    @property
    def headers(self) -> dict[str, str]:
        return dict(self.spec.headers)

    @property
    def command(self) -> list[str]:
        return list(self.spec.command)

    @property
    def env(self) -> dict[str, str]:
        return dict(self.spec.env)

    @property
    def cwd(self) -> str | os.PathLike[str] | None:
        return self.spec.cwd

    @property
    def pid(self) -> int | None:
        """The process id of a stdio server, once started."""
        return self._stdio.pid if self._stdio is not None else None

    def target_text(self) -> str:
        """The server's URL or command as it may be shown or saved (`shown_url`)."""
        return self.spec.shown()

    def secret_values(self) -> list[str]:
        """What this connection holds that no record may: what its spec holds (`ServerSpec.secret_values`),
        and an OAuth provider's tokens and client secret once it has them."""
        return self.spec.secret_values() + _auth_secrets(self._provider or self.spec.auth)

    def redacted(self, text: str) -> str:
        """`text` (an error's, say) with this connection's URL as `shown_url` shows it, and every
        secret it holds (`secret_values`) left in it replaced: a server that echoes the request's
        credentials in its error, or a stdio server that prints its API key on stderr, puts none
        of them in a message. (Only what it holds: a pattern would take "bearer token" for one.)"""
        if self.spec.transport == "http":
            text = text.replace(self.spec.url, shown_url(self.spec.url))
        for secret in sorted(set(self.secret_values()), key=len, reverse=True):  # a secret inside another goes with it
            if len(secret) >= 4:  # a shorter one would mangle the text, and guards little
                text = text.replace(secret, REDACTED)
        return text

    def lost(self, reason: str) -> None:
        """The server went away; the reason (on the connection's card, which a saved notebook keeps)
        holds none of the secrets this connection holds: a stdio server's last stderr line may
        quote its API key, a transport's error its URL's password."""
        super().lost(self.redacted(reason))

    # -- opening ---------------------------------------------------------------------------------

    def _client_for(self) -> Client:
        spec = self.spec
        if spec.transport == "http":
            given = spec.auth if isinstance(spec.auth, httpx2.Auth) else None
            auth, step = (self._provider, self._oauth_step) if self.oauth is not None else (given, None)
            http = self._http = HttpTransport(spec.url, dict(spec.headers), auth, step, self._warned)
            transport: HttpTransport | StdioTransport = http
        else:
            transport = self._stdio = StdioTransport(spec, self)
        return Client(
            transport,
            cache=None,
            # A 2026-07-28 server sends a request's log messages only to a client that opted in on
            # it (SEP-2577); an older one sends them unless `logging/setLevel` said otherwise.
            log_level="debug",
            logging_callback=self._logged,
            message_handler=self._message,
            elicitation_callback=self._elicited,
            mode=sdk_mode(self.mode),
            # Always declared: a server that samples gets a reply or a refusal that says why, recorded on the call.
            sampling_callback=self._sampled,
            sampling_capabilities=SamplingCapability(tools=SamplingToolsCapability()) if spec.sampling_tools else None,
            list_roots_callback=self._roots_listed if spec.roots is not None else None,
        )

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
        oauth = self.oauth
        if oauth is None:
            await asyncio.wait_for(self._open(), timeout)
            return
        self._flow = flow = oauth.flow(self.spec.url, self._oauth_step)
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
        raise TimeoutError

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

    def _authorizing(self) -> dict[str, str]:
        link, oauth = self.authorization_link, self.oauth
        return {"authorize": link, "callback": oauth.callback} if link and oauth is not None else {}

    def _oauth_step(self, line: str) -> None:
        self.heard(ServerLog(level="INFO", logger="mcp_nb.oauth", message=line, at=time.time()))

    async def _watched(self, opening: Awaitable[object], timeout: float) -> None:
        try:
            await opening
        except asyncio.CancelledError:
            await self._abandon()
            raise
        except TimeoutError:
            waited_for_person = self._flow is not None and self.state == "authorizing"
            seen = await self._seen_meanwhile()
            await self._abandon()
            if waited_for_person:
                assert self._flow is not None
                raise ConnectError(
                    f"could not connect to {self.name!r}: nobody approved the authorization within {self._flow.oauth.timeout:g} s"
                ) from None
            raise ConnectError(f"server {self.name!r} did not answer initialize within {timeout:g} s{seen}") from None
        except (ConnectError, ValueError):
            await self._abandon()
            raise
        except BaseException as err:  # noqa: BLE001 - whatever went wrong, said in one line
            raise ConnectError(await self._failed(err)) from None

    async def _failed(self, err: BaseException) -> str:
        """Why opening failed, in one line without the connection's secrets (nothing is left open)."""
        # Not its traceback, nor the whole of what a peer sent (an 8 MB error page).
        log.debug("connecting to %r failed: %s", self.name, self.redacted(one_line(repr(err), 2000)))
        said = await self._stderr_tail()
        await self._abandon()
        why = reason(err) + said
        refused = flow_failure(err)
        http = self._http
        if refused is not None:  # the SDK's OAuth flow gave up: its reason, not the 401 that started it
            why = refused
        elif http is not None and http.errors:
            why = http_reason(self.spec, refusal(http.statuses, http.errors) or http.errors[-1])
        if self._flow is not None:
            self._oauth_step(f"failed: {why}")
        return f"could not connect to {self.name!r} ({self.target_text()}): {self.redacted(why)}"

    async def _stderr_tail(self) -> str:
        """Where a stdio server wrote on stderr, "; its stderr ended with: " and its last lines: "unknown
        time zone", "not a git repository", a traceback's last line are the reason, in the server's words."""
        with contextlib.suppress(Exception):
            await self.heard_all()  # a server that exits at once says why on stderr, first
        said = [entry.message for entry in self.logs if entry.source == "stderr" and entry.message.strip()]
        return "; its stderr ended with: " + " | ".join(one_line(line, 200) for line in said[-3:]) if said else ""

    async def _seen_meanwhile(self) -> str:
        """What a connect that ran out of time saw of a stdio server: whether its process still ran
        (a server still starting on a loaded machine, or one that never answers) and what it said."""
        if self._stdio is None or self._stdio.pid is None:
            return ""
        said = await self._stderr_tail()
        if not self._stdio.running():
            return self.redacted("; its process had exited" + said)
        # A server that is only slow to start (fetched by npx or uvx, loading a model) needs more time.
        hint = " (more time: timeout= on the connect, or the connect_timeout setting)"
        return self.redacted("; its process was still running" + (said or ", and it wrote nothing on stderr") + hint)

    async def _abandon(self) -> None:
        self.state = "failed"
        if self._flow is not None:
            self._flow.close()
        owner = self._owner
        if owner is not None and not owner.done():
            owner.cancel()
            await left_by(owner, 5, f"abandoning the connection {self.name!r}")

    async def _prepare(self) -> None:
        if self._flow is not None:
            self._provider = await self._flow.provider()

    async def _opened(self, client: Client) -> None:
        if self._flow is not None:
            self._oauth_step("connected: the token works")
        await self._list(client)

    # -- what it offers ------------------------------------------------------------------------

    async def _list(self, client: Client, kinds: tuple[str, ...] = listing.KINDS) -> None:
        """Read what the server offers of `kinds` (`listing.read`); a kind that cannot be listed is
        said in the connection's log and on its card, and the connection stays up. With the era
        pinned (`mode=MODERN_ERA`) the server was never asked what it offers: every kind is listed."""
        for kind in kinds:
            self._listed[kind] = await listing.read(client, self.mode == MODERN_ERA, self._unlisted, (kind,))
        listed = [self._listed[kind] for kind in listing.KINDS if kind in self._listed]
        self._catalog = [entry for catalog in listed for entry in catalog.entries]
        self._annotations = {name: hints for catalog in listed for name, hints in catalog.annotations.items()}
        self.unavailable = {field: why for catalog in listed for field, why in catalog.unavailable.items()}
        self._changed()

    def _unlisted(self, why: str) -> None:
        self._warned(why + "; none listed")

    def _warned(self, message: str) -> None:
        self.heard(ServerLog(level="WARNING", logger="mcp_nb.connection", message=message, at=time.time()))

    def entries(self) -> list[Registration]:
        return list(self._catalog)

    def annotations(self, name: str) -> ToolAnnotations | None:
        return self._annotations.get(name)

    # -- what the server asks of the client ----------------------------------------------------

    async def _sampled(
        self, context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult | CreateMessageResultWithTools | ErrorData:
        """The SDK's sampling callback: the call the request belongs to (found as a question's
        call is, `asking_call`) answers it and records it. One no call can be named for is
        refused, and the model is not asked: nobody would see its reply, and it may cost money."""
        current, why = self.asking_call()
        if current is None:
            return self._refused("sampling", "a sampling request", why)
        return sdk_answer(await current.sampled(self.sampler, params))

    async def _roots_listed(self, context: ClientRequestContext) -> ListRootsResult | ErrorData:
        try:
            roots = await asked_roots(self.spec.roots)
        except Exception as err:  # noqa: BLE001 - a broken roots function is the server's refusal, said
            why = str(err) if isinstance(err, TimeoutError) else f"the roots function failed: {type(err).__name__}: {err}"
            self.heard(ServerLog(level="WARNING", logger="mcp_nb.roots", message=why, at=time.time()))
            return ErrorData(code=-32603, message=f"the client's roots could not be listed: {why}")
        return ListRootsResult(roots=[Root.model_validate({"uri": uri, "name": name}) for uri, name in roots])

    @property
    def roots(self) -> list[tuple[str, str | None]]:
        """The roots the server is offered now, as (uri, name)."""
        return current_roots(self.spec.roots)

    def set_roots(self, roots: RootsSource) -> None:
        """Offer other roots; a server on the handshake era is told they changed (the 2026-07-28
        protocol has no such notice: the server asks again when it needs them)."""
        spec = dataclasses.replace(self.spec, roots=roots)  # checked as it is made: bad roots change nothing
        if self.spec.roots is None and roots is not None and self._client is not None:
            raise BadValue(f"{self.name!r} was connected without roots, so it declared none: reconnect with roots= to offer some")
        self.spec = spec
        self.roots_changed()

    def roots_changed(self) -> None:
        """Tell the server the roots changed (a roots function's answer, say), so one that keeps
        them reads them again. Only the handshake era has this notice: at 2026-07-28 a server
        asks for the roots whenever it needs them."""
        client, loop = self._client, self._session_loop
        if client is None or loop is None or not is_handshake(self.protocol):
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

    # -- what the server says outside the calls ----------------------------------------------------

    async def _message(self, message: IncomingMessage) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            uri = str(message.params.uri)
            for watch in list(self.watches):
                if watch.uri == uri and is_handshake(watch.era):  # at 2026-07-28 a watch hears its listen stream
                    watch.updated()
            return
        kind = _LIST_CHANGED.get(type(message))
        if kind is not None and self._client is not None:
            self._relist(kind)

    def _relist(self, kind: str) -> None:
        """The server says what it offers of `kind` changed: list it again (off the receive path),
        or again once the listing in flight ends (as a watch reads a resource, `watching`)."""
        if kind in self._relisting:
            self._relist_again.add(kind)
            return
        self._relisting[kind] = asyncio.get_running_loop().create_task(self._relist_while_changed(kind))

    async def _relist_while_changed(self, kind: str) -> None:
        try:
            while True:
                self._relist_again.discard(kind)
                client = self._client
                if client is None:
                    return
                try:
                    await self._list(client, (kind,))
                except Exception:  # noqa: BLE001 - the list stays as it was; the next change re-reads it
                    log.debug("re-reading the %s %r offers failed", kind, self.name, exc_info=True)
                if kind not in self._relist_again:
                    return
        finally:
            del self._relisting[kind]

    async def _logged(self, params: LoggingMessageNotificationParams) -> None:
        level = str(params.level).upper()
        self.heard(
            ServerLog(
                level=level, logger=params.logger or self.name, message=str(params.data), source="notification", at=time.time()
            )
        )

    async def heard_all(self) -> None:
        if self._stdio is not None:
            self._stdio.heard_all()

    def _left(self) -> None:
        for relisting in self._relisting.values():  # a session that is gone has nothing more to list
            relisting.cancel()
        if self._flow is not None:
            self._flow.close()  # the loopback listener goes with the session
        if self._stdio is not None:  # the process is gone: what it wrote last is filed, the pipe closed
            self._stdio.left()

    def http_error(self, method: str, params: dict[str, object]) -> dict[str, object] | None:
        """The status and body of the HTTP error answer to this request, if it had one."""
        found = self._http.error_for(method, params) if self._http is not None else None
        return {"status": found.status, "body": found.body} if found is not None else None


def _auth_secrets(auth: object) -> list[str]:
    """The secrets an OAuth provider holds once it has them (its tokens, its client's secret)."""
    context = getattr(auth, "context", None)  # the SDK's OAuthClientProvider keeps its state there
    tokens, client = getattr(context, "current_tokens", None), getattr(context, "client_info", None)
    found = [
        getattr(tokens, "access_token", None),
        getattr(tokens, "refresh_token", None),
        getattr(client, "client_secret", None),
    ]
    return [value for value in found if isinstance(value, str) and value]


def _on(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether this thread runs `loop`."""
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


async def _called(function: Callable[[str], None], value: str) -> None:
    function(value)
