"""An outside stdio server that says how it was started: its arguments, its GREETING environment
variable and its folder, for tests of what reaches a server from a `%mcp_connect` line."""

from __future__ import annotations

import os
import sys

from mcp.server import MCPServer

server = MCPServer("started-with")


@server.tool()
def started_with() -> dict[str, object]:
    return {"argv": sys.argv[1:], "greeting": os.environ.get("GREETING"), "cwd": os.getcwd()}


if __name__ == "__main__":
    server.run("stdio")
