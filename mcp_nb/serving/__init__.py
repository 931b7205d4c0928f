"""Serving the kernel's tools, resources and prompts to outside clients.

`serve(engine, ...)` serves an engine's server over streamable HTTP on mcp_nb's loop
(`http.Serving`, the handle); `stdio.serve_stdio` serves it over stdin/stdout for the
`python -m mcp_nb serve NOTEBOOK` command. Either way every call an outside client
makes lands in the engine's history beside the kernel's own (`record`), and connected
clients hear of a re-run cell (`clients`). Who may connect is decided in `policy` and
enforced in `guard`.

One engine is served at most once at a time. Serving stops with `handle.stop()`, when
the engine closes (`mcp_nb.reset()`), and at interpreter exit (a kernel shutting down).
"""

from __future__ import annotations

import atexit
import threading
import weakref
from typing import Any

from mcp_nb.mistakes import BadValue
from mcp_nb.serving.http import Serving
from mcp_nb.serving.limits import DEFAULT_HEADER_TIMEOUT, check_limits
from mcp_nb.serving.policy import DEFAULT_MAX_BODY, check_address

__all__ = ["Serving", "current", "serve", "stop"]

# id(engine) -> its running handle. Weak: what keeps a running handle is its engine (which closes
# it) and its task on the loop; held here, a handle (and through it its engine, server and
# history) outlived `mcp_nb.reset()`, one more with every serve.
_handles: weakref.WeakValueDictionary[int, Serving] = weakref.WeakValueDictionary()
_lock = threading.Lock()
_exit_hook = False


def current(engine: Any) -> Serving | None:
    """The handle serving `engine` now, if any."""
    handle = _handles.get(id(engine))
    return handle if handle is not None and handle.running and handle.engine is engine else None


def serve(
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
) -> Serving:
    """Serve `engine` over streamable HTTP; returns the running handle.

    `max_connections` None: half the process's descriptor limit, 1024 at most (`limits`).

    Serving again with the same settings returns the handle already running (same URL,
    same token, clients stay connected); other settings while serving raise ValueError.
    """
    global _exit_hook
    check_address(host, port, dangerously_no_auth, max_body)  # bad input is refused whatever is running
    check_limits(max_connections, header_timeout)
    settings = (
        port,
        host,
        dangerously_no_auth,
        tuple(allowed_hosts),
        tuple(allowed_origins),
        max_body,
        max_connections,
        header_timeout,
    )
    with _lock:
        running = current(engine)
        if running is not None:
            if running.same(*settings):
                return running
            raise BadValue(
                f"already serving at {running.url} with other settings: stop it first "
                "(%mcp_serve --stop, or handle.stop()), then serve again"
            )
        handle = Serving(
            engine,
            port=port,
            host=host,
            dangerously_no_auth=dangerously_no_auth,
            allowed_hosts=tuple(allowed_hosts),
            allowed_origins=tuple(allowed_origins),
            max_body=max_body,
            max_connections=max_connections,
            header_timeout=header_timeout,
        ).start()
        _handles[id(engine)] = handle
        if not _exit_hook:
            atexit.register(stop_all)
            _exit_hook = True
    return handle


def stop(engine: Any) -> Serving | None:
    """Stop serving `engine`; returns the handle that was running (None when none was)."""
    with _lock:
        handle = current(engine)
        _handles.pop(id(engine), None)
    if handle is not None:
        handle.stop()
    return handle


def stop_all() -> None:
    """Stop every server (at interpreter exit: no client is left talking to a dying process)."""
    with _lock:
        handles = list(_handles.values())
        _handles.clear()
    for handle in handles:
        handle.stop(timeout=5.0)
