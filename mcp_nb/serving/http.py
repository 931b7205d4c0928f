"""The kernel's server over streamable HTTP, on mcp_nb's own event loop, until it is stopped.

The SDK builds the transport (`MCPServer.streamable_http_app`: sessions, SSE streams,
both protocol eras, its own Host and Origin checks); uvicorn runs it, each connection
within `limits.Limits` (which takes connections from the socket while there is room, and
bounds how long each may keep the server waiting and how large a head may be);
`guard.Guard` stands in front of it. Everything runs as tasks on mcp_nb's loop
thread, where the kernel's own calls run: an async tool always runs on that one loop,
whoever called it, and the kernel's thread stays free for cells.

Stopping goes in this order, so it is quick and nothing is left behind: no new
connections, then the requests in flight end (their calls are cancelled and recorded as
such), then the SDK's sessions (SSE streams close), then uvicorn closes what is left.
`mcp_nb.reset()` stops it the same way, first thing (`Engine.on_closing`); were the loop
to stop under it instead, the serving task is cancelled and the same cleanup runs on its
way out.
"""

from __future__ import annotations

import asyncio
import math
import socket
import threading
import time
from typing import Any

import uvicorn
from mcp.server.transport_security import TransportSecuritySettings

from mcp_nb.registering.logs import unheard
from mcp_nb.serving.configs import client_configs
from mcp_nb.serving.events import RecentEvents
from mcp_nb.serving.guard import Guard, Refusals
from mcp_nb.serving.limits import DEFAULT_HEADER_TIMEOUT, Limits, check_limits
from mcp_nb.serving.policy import DEFAULT_MAX_BODY, Policy, check_address, decide
from mcp_nb.serving.served import Served
from mcp_nb.serving.view import serving_html, serving_text

PATH = "/mcp"
RETRY_MS = 1000  # how soon a client should come back after the server ended its SSE stream
STOP_GRACE_S = 2.0  # how long uvicorn waits for connections still open after the sessions ended
START_TIMEOUT_S = 30.0


class Serving:
    """A kernel served over streamable HTTP: where, with which token, who called, and `stop()`."""

    def __init__(
        self,
        engine: Any,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        dangerously_no_auth: bool = False,
        allowed_hosts: tuple[str, ...] = (),
        allowed_origins: tuple[str, ...] = (),
        max_body: int = DEFAULT_MAX_BODY,
        max_connections: int | None = None,
        header_timeout: float = DEFAULT_HEADER_TIMEOUT,
    ) -> None:
        check_address(host, port, dangerously_no_auth, max_body)
        check_limits(max_connections, header_timeout)
        # The engine served; None once stopped (`_release`): a stopped handle may live on (a
        # notebook's Out[] keeps it), and must not keep the old engine, its server and history.
        self.engine: Any = engine
        self._name = engine.server.name
        self._calls = 0  # what `calls` said when the handle let go of its engine
        self.refusals = Refusals()
        self.limits = Limits(max_connections, header_timeout, self.refusals.add)
        self.settings = (
            host,
            dangerously_no_auth,
            tuple(allowed_hosts),
            tuple(allowed_origins),
            max_body,
            max_connections,
            float(header_timeout),
        )  # (as asked: None, the default, is the same as None again)
        self._socket = _listen(host, port, self.limits.header_timeout)
        try:
            self.policy: Policy = decide(
                host,
                self._socket.getsockname()[1],
                dangerously_no_auth=dangerously_no_auth,
                allowed_hosts=tuple(allowed_hosts),
                allowed_origins=tuple(allowed_origins),
                max_body=max_body,
            )
        except BaseException:
            self._socket.close()
            raise
        if self.policy.token:
            engine.secrets.add(self.policy.token)  # never in a history file, even quoted by a call
        self.served: Served | None = Served(engine, "http", answers_seen=True)
        self._stopped = threading.Event()
        self._stopping: asyncio.Event | None = None
        self._uvicorn: Any = None
        self._task: Any = None  # the serving task's future, for the kernel's thread
        self._serving_task: asyncio.Task | None = None  # the same task, for the loop

    # -- what the user reads ----------------------------------------------------------------------

    @property
    def url(self) -> str:
        return self.policy.url

    @property
    def token(self) -> str | None:
        """The bearer token every request must carry (None when served with dangerously_no_auth)."""
        return self.policy.token

    @property
    def port(self) -> int:
        return self.policy.port

    @property
    def running(self) -> bool:
        return not self._stopped.is_set()

    @property
    def refused(self) -> dict[str, int]:
        """Requests refused at the door, by reason (host, origin, token, body), and connections let
        go for keeping the server waiting past `header_timeout` or a newcomer's place (slow), or
        for a head over 16 KiB (head); none reached a tool."""
        return self.refusals.counts()

    @property
    def calls(self) -> int:
        """How many calls outside clients made (each is a row of the history, `via` "http")."""
        served = self.served
        return served.calls if served is not None else self._calls

    @property
    def clients(self) -> int:
        """How many 2025-era client sessions are open (2026-07-28 clients keep none)."""
        served = self.served
        return len(served.clients) if served is not None and self.running else 0

    def configs(self, name: str | None = None) -> dict[str, str]:
        """Ready-to-paste settings for Claude Desktop, Cursor, VS Code and the MCP Inspector CLI,
        naming the server `name` there (default: the server's own name)."""
        return client_configs(name or self._name, self.url, self.token)

    def same(
        self,
        port: int,
        host: str,
        dangerously_no_auth: bool,
        allowed_hosts,
        allowed_origins,
        max_body,
        max_connections: int | None = None,
        header_timeout: float = DEFAULT_HEADER_TIMEOUT,
    ) -> bool:
        """Whether serving with these settings is what is already running (port 0: any port)."""
        asked = (
            host,
            dangerously_no_auth,
            tuple(allowed_hosts),
            tuple(allowed_origins),
            max_body,
            max_connections,
            float(header_timeout),
        )
        return asked == self.settings and port in (0, self.port)

    def __repr__(self) -> str:
        return serving_text(self)

    def _repr_html_(self) -> str:
        return serving_html(self)

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(repr(self))

    # -- starting and stopping --------------------------------------------------------------------

    def start(self) -> Serving:
        """Listen and serve on mcp_nb's loop; returns once requests are answered."""
        loop = self.engine.loop
        if loop.in_loop():
            self._socket.close()
            raise RuntimeError("serving cannot start from mcp_nb's own loop (a tool): it would wait on itself")
        ready = threading.Event()
        self.served.attach()
        try:
            self._task = loop.submit(self._serve(ready))
            deadline = time.monotonic() + START_TIMEOUT_S
            while not ready.wait(0.05):
                if self._task.done():
                    self._task.result()  # raises what stopped it
                    raise RuntimeError("serving ended before it started")
                if time.monotonic() > deadline:
                    self._task.cancel()
                    raise TimeoutError(f"serving did not start within {START_TIMEOUT_S:g} s")
        except BaseException:
            self.served.detach()
            self._socket.close()
            self._stopped.set()
            raise
        self.engine.on_closing(self._closing)
        self.engine.on_close(self._engine_closed)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving: connected clients are disconnected, calls in flight are cancelled (and recorded).

        Waits `timeout` seconds at most, less when an async handler holds mcp_nb's loop without
        awaiting (the serving then stops once it lets go, or when the engine closes)."""
        engine = self.engine
        if engine is None or self._stopped.is_set():
            self._release()
            return
        loop = engine.loop if not engine.closed else None
        if loop is not None and self._stopping is not None:
            try:
                loop.call_soon(self._stopping.set)
            except RuntimeError:
                pass
            if not loop.in_loop():
                loop.wait(self._stopped, timeout)
        if self._stopped.is_set():
            self._release()
        # Otherwise still stopping (asked from a tool on the loop, or the loop is held): the engine's
        # close finishes it, so its closer and listener stay.

    async def _closing(self) -> None:
        # The engine is closing (mcp_nb.reset()): stop as `stop()` does, while the loop still runs.
        if self._stopping is not None and self._serving_task is not None:
            self._stopping.set()
            await self._serving_task

    def _engine_closed(self) -> None:
        # By now the serving task has ended (cleaned up on its way out, however it ended), or the
        # loop was held and the close gave up on it: the task cleans up when it is let go.
        self._stopped.set()
        self._release()

    def _release(self) -> None:
        """Let go of the engine once stopped; what the handle shows stays."""
        engine, served = self.engine, self.served
        if engine is None:
            return
        if served is not None:
            self._calls = served.calls
        engine.on_closing(self._closing, remove=True)
        engine.on_close(self._engine_closed, remove=True)
        # uvicorn's server holds the SDK's app, which holds the engine's server and so the engine.
        self.engine = self.served = self._uvicorn = self._task = self._serving_task = None

    async def _serve(self, ready: threading.Event) -> None:
        # Its own references: the handle lets go of them once stopped, perhaps before this task
        # has finished (a held loop the engine's close gave up on).
        engine, served = self.engine, self.served
        self._stopping = asyncio.Event()
        self._serving_task = asyncio.current_task()
        policy = self.policy
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=sorted(policy.hosts), allowed_origins=sorted(policy.origins)
        )
        app = engine.server.streamable_http_app(
            streamable_http_path=PATH,
            event_store=RecentEvents(),
            retry_interval=RETRY_MS,
            max_request_body_size=policy.max_body,
            transport_security=security,
            host=policy.host,
        )
        sessions = engine.server.session_manager
        # The user's logging is theirs: no logging configuration, and access lines only where
        # their handlers would show uvicorn's records anyway. What uvicorn says of a client
        # ("Invalid HTTP request received." for one that speaks TLS or garbage, answered 400)
        # reaches their handlers, not the cell where nobody configured one.
        unheard("uvicorn.error", "uvicorn")
        door = Guard(app, policy, self.refusals, answered=engine.history.settle, body_timeout=self.limits.header_timeout)
        config = uvicorn.Config(
            door,
            http=self.limits.protocol(),
            lifespan="off",
            log_config=None,
            ws="none",
            server_header=False,
            proxy_headers=False,
            timeout_graceful_shutdown=STOP_GRACE_S,
        )
        server = self._uvicorn = uvicorn.Server(config)
        serving = taking = None
        try:
            async with sessions.run():
                try:
                    # uvicorn listens on nothing itself (sockets=[]): `Limits.take` takes each
                    # connection from the socket when there is room, and gives it uvicorn's protocol.
                    serving = asyncio.ensure_future(server.serve(sockets=[]))
                    while not server.started:
                        if serving.done():
                            serving.result()
                            return
                        await asyncio.sleep(0.005)

                    def make() -> asyncio.Protocol:  # what uvicorn's own listener would give a connection
                        return config.http_protocol_class(
                            config=config, server_state=server.server_state, app_state=server.lifespan.state
                        )

                    taking = asyncio.ensure_future(self.limits.take(self._socket, make))
                    ready.set()
                    stop = asyncio.ensure_future(self._stopping.wait())
                    await asyncio.wait([stop, serving, taking], return_when=asyncio.FIRST_COMPLETED)
                    stop.cancel()
                    if taking.done() and not taking.cancelled():
                        taking.result()  # raises what stopped it
                finally:
                    # First no new connections, then the requests in flight end (their calls are
                    # recorded as cancelled); leaving this block then ends every SDK session.
                    served.recorder.stopping = True
                    if taking is not None:
                        taking.cancel()
                    self._socket.close()
                    self.limits.cut_off_stalled()
                    door.end_requests()
            server.should_exit = True
            if serving is not None:
                await serving
        finally:
            server.should_exit = True
            if taking is not None:
                taking.cancel()
            for connection in list(server.server_state.connections):
                connection.shutdown()
            self._socket.close()
            served.detach()
            engine.history.settle()  # what was answered last is recorded before stop() returns
            self._stopped.set()


def _listen(host: str, port: int, header_timeout: float) -> socket.socket:
    """A socket bound to `host`:`port`, or a one-line error naming what is in the way.

    Made with the protocol named (IPPROTO_TCP), as asyncio's own listeners are: the
    connections accepted on it inherit it, and only then does asyncio turn Nagle's algorithm
    off on them. Without that, every answer after a keep-alive connection's first took about
    40 ms: its body waited for the client's delayed ACK of its headers.

    Where the system can (Linux: TCP_DEFER_ACCEPT), a connection is handed over only once its
    first bytes have come, or `header_timeout` has passed: until then it waits in the system,
    holding no descriptor and no place of the kernel's, and its head's deadline starts when
    its client begins. A client too busy to send at once (two hundred of them in one process)
    was otherwise timed out, or let go for a newcomer, before it had begun.
    """
    address = "127.0.0.1" if host == "localhost" else host.strip("[]")
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if hasattr(socket, "TCP_DEFER_ACCEPT"):
            listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_DEFER_ACCEPT, max(1, math.ceil(header_timeout)))
        listener.bind((address, port))
        listener.listen(socket.SOMAXCONN)
    except OSError as err:
        listener.close()
        raise OSError(err.errno, f"cannot listen on {host}:{port}: {err.strerror}") from None
    return listener
