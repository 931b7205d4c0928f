"""The widgets: the MCP panel, one widget to pick, fill in, call and understand the in-kernel server's tools.

    from mcp_nb.widgets import show
    show()            # or %mcp_panel, or mcp_nb.panel()

`show(engine=None)` returns a `Panel` (an ipywidgets VBox) for the kernel's engine;
IPython displays it. The form generator is `mcp_nb.widgets.form` (schema in, fields
out), usable on its own. Needs ipywidgets 8 (`pip install 'mcp-notebook[lab]'`); nothing
here is imported by `import mcp_nb`.
"""

from __future__ import annotations

from mcp_nb.widgets.form import OMIT, Form, Invalid, build_form
from mcp_nb.widgets.panel import Panel, parse_raw, show

__all__ = ["OMIT", "Form", "Invalid", "Panel", "build_form", "parse_raw", "show"]
