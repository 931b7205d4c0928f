"""mcp_nb: build, call and understand MCP tools from a notebook.

    import mcp_nb

    @mcp_nb.tool()
    def add(a: int, b: int) -> int:
        return a + b

    mcp_nb.call("add", {"a": 1, "b": 2})   # -> Outcome: result (ok)
    mcp_nb.history().to_frame()

In IPython or Jupyter, `%load_ext mcp_nb` adds the `%%mcp_tool`, `%%mcp_resource`
and `%%mcp_prompt` cell magics and the `%mcp_*` line magics over the same API.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Mapping

from mcp.server import MCPServer

from .config import configure, settings
from .engine import Engine
from .history import COLUMNS, History
from .outcome import CAUSE_DOC, CAUSES, OUTCOMES, Outcome
from .registry import Registration
from .trace import ServerLog, show_live_logs

__version__ = "0.1.0"
__all__ = [
    "CAUSES", "CAUSE_DOC", "COLUMNS", "OUTCOMES", "History", "Outcome", "Registration", "ServerLog",
    "acall", "aget_prompt", "aread", "call", "configure", "get_prompt", "history", "load_ipython_extension",
    "prompt", "read", "registered", "remove", "reset", "resource", "server", "settings", "tool",
]  # fmt: skip

_engine: Engine | None = None
_engine_lock = threading.Lock()


def engine() -> Engine:
    """The process-wide engine (server, client, history), created on first use."""
    global _engine
    if _engine is None:
        with _engine_lock:
            if _engine is None:
                _engine = Engine()
    return _engine


def reset() -> None:
    """Start over: a new empty server and an empty history (the settings stay)."""
    global _engine
    with _engine_lock:
        old, _engine = _engine, None
    if old is not None:
        old.close()


def server() -> MCPServer:
    """The in-kernel `MCPServer`, for whatever the SDK offers that mcp_nb does not wrap."""
    return engine().server


def history() -> History:
    """Every call made through mcp_nb in this kernel, whatever its outcome."""
    return engine().history


# -- registering --------------------------------------------------------------------------------


def tool(
    name: str | None = None,
    *,
    title: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    idempotent: bool = False,
    destructive: bool = False,
    open_world: bool = False,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register the function as a tool, replacing any tool of the same name."""
    flags = {"read_only": read_only, "idempotent": idempotent, "destructive": destructive, "open_world": open_world}

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        engine().registry.add_tool(fn, name=name, title=title, description=description, annotations=flags)
        return fn

    return register


def resource(
    uri: str, *, name: str | None = None, title: str | None = None, description: str | None = None, mime_type: str | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register the function as a resource (static URI) or resource template (`books://{title}`)."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        engine().registry.add_resource(fn, uri, name=name, title=title, description=description, mime_type=mime_type)
        return fn

    return register


def prompt(
    name: str | None = None, *, title: str | None = None, description: str | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register the function as a prompt, replacing any prompt of the same name."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        engine().registry.add_prompt(fn, name=name, title=title, description=description)
        return fn

    return register


def remove(key: str, kind: str | None = None) -> Registration:
    """Remove a tool or prompt (by name) or a resource (by URI); `kind` settles ambiguity."""
    return engine().registry.remove(key, kind)


def registered():
    """What mcp_nb registered, one row per tool, resource and prompt (a DataFrame)."""
    return engine().registry.to_frame()


# -- calling: one implementation, two faces ------------------------------------------------------


def call(name: str, arguments: Mapping[str, Any] | None = None, *, timeout: float | None = None) -> Outcome:
    """Call a tool and wait for its Outcome. Never raises for the four outcome types."""
    return engine().run("tool", name, arguments, timeout)


async def acall(name: str, arguments: Mapping[str, Any] | None = None, *, timeout: float | None = None) -> Outcome:
    """`await` form of `call`, usable from any event loop (top-level await in a cell too)."""
    return await engine().arun("tool", name, arguments, timeout)


def read(uri: str, *, timeout: float | None = None) -> Outcome:
    """Read a resource and wait for its Outcome."""
    return engine().run("resource", uri, None, timeout)


async def aread(uri: str, *, timeout: float | None = None) -> Outcome:
    return await engine().arun("resource", uri, None, timeout)


def get_prompt(name: str, arguments: Mapping[str, Any] | None = None, *, timeout: float | None = None) -> Outcome:
    """Get a prompt and wait for its Outcome."""
    return engine().run("prompt", name, arguments, timeout)


async def aget_prompt(name: str, arguments: Mapping[str, Any] | None = None, *, timeout: float | None = None) -> Outcome:
    return await engine().arun("prompt", name, arguments, timeout)


def load_ipython_extension(ipython) -> None:
    from .magics import load

    load(ipython)
    engine()  # create the server now: its one-time imports then run while the user writes cells


def unload_ipython_extension(ipython) -> None:
    from .magics import unload

    unload(ipython)


settings.observe(lambda change: show_live_logs(change["new"]), "show_server_logs")
