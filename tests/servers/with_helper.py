"""An outside stdio server that starts a helper process, as servers that drive a language server, a
browser or a shell do. The helper inherits the server's stdin, stdout and stderr, so while it lives
the pipes stay open even after the server itself is gone. Its id is written to the file named by
the HELPER_PID_FILE environment variable, for the test to look for it afterwards."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

from mcp.server import MCPServer

helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])  # holds our pipes
with open(os.environ["HELPER_PID_FILE"], "w") as written:
    written.write(str(helper.pid))

server = MCPServer("with-helper")


@server.tool()
def ping() -> str:
    return "pong"


@server.tool()
async def die() -> str:
    await asyncio.sleep(0.2)  # the answer is awaited when the process goes
    os._exit(3)


if __name__ == "__main__":
    server.run("stdio")
