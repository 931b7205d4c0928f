"""The IPython face: thin magics that parse a line and hand plain values to the API.

The magics are split by domain, as IPython splits `core/magics/`, each domain a `Magics` class
of its own, and `McpMagics` joins them; `load_ipython_extension` registers it:

    registering.py   %%mcp_tool  %%mcp_resource  %%mcp_prompt  %mcp_list  %mcp_remove
    calling.py       %mcp_call  %mcp_read  %mcp_get_prompt  %mcp_panel
    connecting.py    %mcp_connect  %mcp_disconnect  %mcp_servers
    history.py       %mcp_history  %mcp_save_cases  %mcp_replay
    surfaces.py      %mcp_snapshot  %mcp_diff
    serving.py       %mcp_serve
    agents.py        %mcp_agent

Every magic gets its line as typed (`no_var_expand`: `{title}` in a URI template and `$` in
JSON are never IPython variables) and reads it by the same rules (`options.py`: shell quoting,
JSON kept whole, a trailing `# comment` dropped, then the magic's argparse parser). User
mistakes become one-line `UsageError`s and change nothing; a bug of mcp_nb's keeps its
traceback, to be reported (`base.said_in_one_line` tells them apart).

`McpMagics` is also the traitlets `Configurable` users know from JupySQL: `%config McpMagics`
lists the settings, `%config McpMagics.timeout = 10` sets one, and it is the same setting
`mcp_nb.configure(timeout=10)` changes.
"""

from __future__ import annotations

from IPython.core.magic import magics_class
from traitlets import link

from mcp_nb import api
from mcp_nb.config import CONFIGURABLE, SharedTraits, settings
from mcp_nb.notebook import completion
from mcp_nb.notebook.magics.agents import AgentMagics
from mcp_nb.notebook.magics.calling import CallingMagics
from mcp_nb.notebook.magics.connecting import ConnectingMagics
from mcp_nb.notebook.magics.history import HistoryMagics
from mcp_nb.notebook.magics.registering import RegisteringMagics
from mcp_nb.notebook.magics.serving import ServingMagics
from mcp_nb.notebook.magics.surfaces import SurfaceMagics
from mcp_nb.notebook.warmup import open_session_early

MAGICS = (RegisteringMagics, CallingMagics, ConnectingMagics, HistoryMagics, SurfaceMagics, ServingMagics, AgentMagics)
_config_applied = False  # whether a McpMagics of this process has applied the IPython config


def _joined(cls):
    """`magics_class` for a class whose magics are its bases': their tables, joined."""
    cls = magics_class(cls)
    cls.magics = {
        kind: {name: method for base in MAGICS for name, method in base.magics[kind].items()} for kind in ("line", "cell")
    }
    return cls


@_joined
class McpMagics(*MAGICS, SharedTraits):
    """Register and call MCP tools, resources and prompts from notebook cells; mcp_nb's settings."""

    def __init__(self, shell=None, **kwargs) -> None:
        super().__init__(shell=shell, **kwargs)
        # The magics' traits and the process settings are one setting seen from two places.
        # A link starts by copying the magics' value over the settings, so every value is
        # first taken from the settings (`configure()` made before `%load_ext` is kept), except
        # those the IPython config names at the first load; at a later one (`%reload_ext`)
        # the settings already hold them, and whatever was set since.
        global _config_applied
        configured = {} if _config_applied else (self.config.get(type(self).__name__) or {})
        _config_applied = True
        for name in CONFIGURABLE:
            if name not in configured:
                setattr(self, name, getattr(settings, name))
        self._links = [link((self, name), (settings, name)) for name in CONFIGURABLE]


def load_ipython_extension(ipython) -> None:
    """What `%load_ext mcp_nb` calls (through the package's name of the same name)."""
    magics = McpMagics(shell=ipython, config=ipython.config)
    ipython.register_magics(magics)
    if magics not in ipython.configurables:
        ipython.configurables.append(magics)
    open_session_early(api.engine())  # while the next cells run: the first call finds it open
    parsers = {name: getattr(McpMagics, name).parser for name in completion.KINDS}
    completion.install(ipython, api.engine, parsers)  # <TAB> on %mcp_call, %mcp_read, %mcp_get_prompt


def unload_ipython_extension(ipython) -> None:
    """What `%unload_ext mcp_nb` calls: the magics' links to the settings are undone."""
    for configurable in list(ipython.configurables):
        if isinstance(configurable, McpMagics):
            for each in configurable._links:
                each.unlink()
            ipython.configurables.remove(configurable)
