"""What a handler says through its request's `Context`, filed under the call it belongs to.

`await ctx.info("...")` (and `debug`, `warning`, `error`, `log`) sends an MCP log
notification: the logging capability, which the 2026-07-28 specification deprecates
(SEP-2577). The SDK then warns three times per message, at the user's line and twice
inside its own `Context`, and a 2026-07-28 client gets the message only if it opted in
(`log_level`), so in a notebook the message itself showed nowhere while the warnings
filled the cell.

mcp_nb's probe hands such a handler a copy of its `Context` whose log methods file the
message on the call's trace (source `context`, with level and time) and then send it
as the SDK would, to a client that opted in, through the SDK's public notification path
(`sdk_compat.send_context_log`), so no deprecated method runs. The deprecation is said
once per process, by mcp_nb, as a `ContextLogWarning`: a subclass of the SDK's
`MCPDeprecationWarning`, so a filter the user set on that category applies to it too.
The user's warnings filters are never touched (docs/design.md, "Context logs").
"""

from __future__ import annotations

import copy
import json
import linecache
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import Context
from mcp.shared.exceptions import MCPDeprecationWarning
from pydantic import PrivateAttr

from mcp_nb import sdk_compat
from mcp_nb.config import settings
from mcp_nb.records.trace import CURRENT_TRACE, ServerLog

EXPLAINED = (
    "ctx.debug/info/warning/error send MCP log notifications, a capability the 2026-07-28 "
    "specification deprecates (SEP-2577): a client on that protocol receives them only if it opts "
    "in. mcp_nb files every one under its call (the card's \"log says\", source 'context'); "
    "Python's logging (logging.getLogger(__name__)) is the lasting way for a server to log. "
    "Said once per kernel."
)


class ContextLogWarning(MCPDeprecationWarning):
    """A handler logged through its `Context` (said once per process)."""


_explained = False
_explain_lock = threading.Lock()
_filed: type | None = None


def explain_once(stacklevel: int) -> None:
    """Warn once per process, at the frame `stacklevel` above the caller (the user's `await ctx.info`)."""
    global _explained
    if _explained:
        return
    with _explain_lock:
        if _explained:
            return
        _explained = True
    frame = sys._getframe(stacklevel)  # the frame `warnings.warn(stacklevel=stacklevel + 1)` would name
    cell = _cell_name(frame.f_code.co_filename)
    if cell is None:
        warnings.warn(EXPLAINED, ContextLogWarning, stacklevel=stacklevel + 1)
        return
    # A kernel's cell, whose file is a temporary one named after the kernel's process: named
    # `<cell>`, as Python names code that has no file (`<stdin>`), with its source line under
    # it, so the warning a saved notebook keeps holds no path of this machine. Not `Cell In[5]`:
    # the number changes with how the notebook is run (nbval numbers its cells otherwise).
    lines = linecache.getlines(frame.f_code.co_filename)
    if lines:
        linecache.cache[cell] = (len("".join(lines)), None, lines, cell)
    known = frame.f_globals
    warnings.warn_explicit(
        EXPLAINED,
        ContextLogWarning,
        cell,
        frame.f_lineno,
        module=known.get("__name__", "<string>"),
        registry=known.setdefault("__warningregistry__", {}),
    )


def _cell_name(filename: str) -> str | None:
    """`<cell>` for the temporary file of a kernel's cell; None for any other file."""
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    named = getattr(getattr(shell, "compile", None), "format_code_name", lambda _: None)(filename)
    return "<cell>" if named and os.path.isabs(filename) else None


def _text(data: Any) -> str:
    if isinstance(data, str):
        return data
    try:
        return json.dumps(data, default=str)
    except (TypeError, ValueError):
        return repr(data)


def _show_live(entry: ServerLog) -> None:
    if settings.show_server_logs:  # as the server's other log records are, when asked for
        print(f"[mcp server] {entry}", file=sys.stderr)


def _filed_class() -> type:
    global _filed
    if _filed is None:

        class FiledContext(Context):  # type: ignore[misc, valid-type]
            """The SDK's `Context`, whose log messages are filed under the call before they are sent."""

            _mcp_nb_handler: str = PrivateAttr(default="")  # the logger a message names when it names none

            async def log(self, level: Any, data: Any, *, logger_name: str | None = None, _depth: int = 2) -> None:
                entry = ServerLog(
                    level=str(level).upper(),
                    logger=logger_name or self._mcp_nb_handler,
                    message=_text(data),
                    source="context",
                    at=time.time(),
                )
                trace = CURRENT_TRACE.get()
                if trace is not None:
                    trace.add(entry)
                _show_live(entry)
                explain_once(_depth)
                await sdk_compat.send_context_log(self, level, data, logger_name)

            async def debug(self, data: Any, *, logger_name: str | None = None) -> None:
                await self.log("debug", data, logger_name=logger_name, _depth=3)

            async def info(self, data: Any, *, logger_name: str | None = None) -> None:
                await self.log("info", data, logger_name=logger_name, _depth=3)

            async def warning(self, data: Any, *, logger_name: str | None = None) -> None:
                await self.log("warning", data, logger_name=logger_name, _depth=3)

            async def error(self, data: Any, *, logger_name: str | None = None) -> None:
                await self.log("error", data, logger_name=logger_name, _depth=3)

        _filed = FiledContext
    return _filed


def filed(ctx: Any, handler: str) -> Any:
    """A copy of the SDK's `Context` whose log methods file their message under the call, under
    the logger name `handler` (the tool's name) when the message names none.

    Anything that is not exactly the SDK's `Context` (a subclass of the user's, None) is
    passed on unchanged."""
    if type(ctx) is not Context:
        return ctx
    twin = copy.copy(ctx)
    twin.__class__ = _filed_class()
    twin.__pydantic_private__ = {**(twin.__pydantic_private__ or {}), "_mcp_nb_handler": handler}
    return twin


def context_parameter(fn: Callable[..., Any]) -> str | None:
    """The name of `fn`'s parameter the SDK fills with the request's `Context`, if it has one."""
    return sdk_compat.context_parameter(fn)
