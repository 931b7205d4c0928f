"""mcp_nb: build, call and understand MCP tools from a notebook.

    import mcp_nb

    @mcp_nb.tool()
    def add(a: int, b: int) -> int:
        return a + b

    mcp_nb.call("add", {"a": 1, "b": 2})   # -> Outcome: result (ok)
    mcp_nb.history().to_frame()

In IPython or Jupyter, `%load_ext mcp_nb` adds the `%%mcp_tool`, `%%mcp_resource`
and `%%mcp_prompt` cell magics and the `%mcp_*` line magics over the same API.

This module only names the public API; the bodies live in `mcp_nb.api`, and the folders
below follow a call's flow (docs/design.md): `registering/`, `calling/`, `records/`,
`batch/`, `views/`, and the faces `notebook/`, `widgets/`, `serving/`, `commands/`.
"""

from typing import TYPE_CHECKING

from mcp_nb._version import __version__

# Where each public name lives: its module is imported when the name is first used (PEP 562).
# `import mcp_nb` alone imports nothing else, so what needs no MCP (`python -m mcp_nb diff`,
# `student-version`, `nbval-sanitize`, `--help`) does not pay for importing the SDK, about a
# second of building its pydantic models in every such process.
_WHERE = {
    **dict.fromkeys(("acall", "aget_prompt", "aread", "asweep", "call", "complete_auth", "connect", "connect_config", "diff", "disconnect", "engine", "get_prompt", "history", "inject", "panel", "prompt", "read", "reconnect", "registered", "remove", "replay", "reset", "resource", "serve", "server", "servers", "snapshot", "sweep", "tool", "watch"), "mcp_nb.api"),
    **dict.fromkeys(("ConnectError",), "mcp_nb.calling.connections"),
    **dict.fromkeys(("OAuth", "TokenFile"), "mcp_nb.calling.oauth"),
    **dict.fromkeys(("Retry",), "mcp_nb.calling.retry"),
    **dict.fromkeys(("Sampling",), "mcp_nb.calling.sampling"),
    **dict.fromkeys(("configure", "settings"), "mcp_nb.config"),
    **dict.fromkeys(("Answer", "Elicitation"), "mcp_nb.elicitation"),
    **dict.fromkeys(("expect",), "mcp_nb.records.expect"),
    **dict.fromkeys(("HistoryFileError",), "mcp_nb.history_file"),
    **dict.fromkeys(("COLUMNS", "History", "HistoryFileWarning"), "mcp_nb.records.history"),
    **dict.fromkeys(("CAUSE_DOC", "CAUSES", "OUTCOMES", "Outcome"), "mcp_nb.records.outcome"),
    **dict.fromkeys(("BreakingChanges",), "mcp_nb.records.surface_diff"),
    **dict.fromkeys(("ServerLog",), "mcp_nb.records.trace"),
    **dict.fromkeys(("Faults",), "mcp_nb.registering.faults"),
    **dict.fromkeys(("Registration",), "mcp_nb.registering.registry"),
}

if TYPE_CHECKING:  # the same names, for type checkers and editors
    from mcp_nb.api import (
        acall,
        aget_prompt,
        aread,
        asweep,
        call,
        complete_auth,
        connect,
        connect_config,
        diff,
        disconnect,
        engine,
        get_prompt,
        history,
        inject,
        panel,
        prompt,
        read,
        reconnect,
        registered,
        remove,
        replay,
        reset,
        resource,
        serve,
        server,
        servers,
        snapshot,
        sweep,
        tool,
        watch,
    )
    from mcp_nb.calling.connections import ConnectError
    from mcp_nb.calling.oauth import OAuth, TokenFile
    from mcp_nb.calling.retry import Retry
    from mcp_nb.calling.sampling import Sampling
    from mcp_nb.config import configure, settings
    from mcp_nb.elicitation import Answer, Elicitation
    from mcp_nb.records.expect import expect
    from mcp_nb.history_file import HistoryFileError
    from mcp_nb.records.history import COLUMNS, History, HistoryFileWarning
    from mcp_nb.records.outcome import CAUSE_DOC, CAUSES, OUTCOMES, Outcome
    from mcp_nb.records.surface_diff import BreakingChanges
    from mcp_nb.records.trace import ServerLog
    from mcp_nb.registering.faults import Faults
    from mcp_nb.registering.registry import Registration


__all__ = [
    "Answer", "HistoryFileError", "HistoryFileWarning", "CAUSES", "CAUSE_DOC", "COLUMNS", "ConnectError", "Elicitation", "OAuth", "TokenFile", "complete_auth", "OUTCOMES", "Faults", "History", "Outcome", "Registration", "Retry", "Sampling",
    "ServerLog", "acall", "aget_prompt", "aread", "asweep", "call", "configure", "engine", "expect", "get_prompt", "history",
    "inject", "load_ipython_extension", "panel", "prompt", "read", "registered", "remove", "reset", "resource",
    "replay", "serve", "server", "settings", "sweep", "tool", "watch", "connect", "connect_config", "disconnect", "reconnect", "servers",
    "snapshot", "diff", "BreakingChanges",
]  # fmt: skip


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'mcp_nb' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # found once: later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})


def load_ipython_extension(ipython) -> None:
    from mcp_nb.notebook.magics import load  # IPython's extension hook: the magics come with it

    load(ipython)


def unload_ipython_extension(ipython) -> None:
    from mcp_nb.notebook.magics import unload  # IPython's extension hook

    unload(ipython)
