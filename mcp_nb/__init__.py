"""mcp_nb: build, call and understand MCP tools from a notebook.

    import mcp_nb

    @mcp_nb.tool()
    def add(a: int, b: int) -> int:
        return a + b

    mcp_nb.call("add", {"a": 1, "b": 2})   # -> Outcome: result (ok)
    mcp_nb.history().to_frame()

In IPython or Jupyter, `%load_ext mcp_nb` adds the `%%mcp_tool`, `%%mcp_resource`
and `%%mcp_prompt` cell magics and the `%mcp_*` line magics over the same API.

This module and its stub `__init__.pyi` only name the public API; the bodies live in `mcp_nb.api`, and the folders
below follow a call's flow (docs/design.md): `registering/`, `calling/`, `records/`,
`batch/`, `views/`, and the faces `notebook/`, `widgets/`, `serving/`, `commands/`.
"""

import lazy_loader as _lazy

from mcp_nb._version import __version__

# Each public name is imported from its module at its first use: `__init__.pyi` names them and
# their modules, once, for type checkers and for this line. So what needs no MCP (`python -m
# mcp_nb diff`, `student-version`, `nbval-sanitize`, `--help`) does not pay for importing the
# SDK, about a second of building its pydantic models in every such process. IPython's extension
# hooks (`%load_ext mcp_nb`) are two of those names: they live with the magics they load.
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
