"""The kernel's server over stdin and stdout: what a client that starts its servers itself talks to.

Claude Desktop (and every client configured with a `command`) starts the server as a
child process and speaks JSON-RPC on its stdin and stdout. One stray byte on stdout
corrupts that stream, and a notebook's cells print. So the `Wire` takes the process's
stdin and stdout for the protocol before any cell runs, and points file descriptors 0
and 1 elsewhere (0 reads nothing, 1 writes to stderr): prints, a C library's output and
child processes all land on stderr, where clients show it as the server's log.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
from mcp.server.stdio import stdio_server

from mcp_nb import sdk_compat
from mcp_nb.serving.served import Served


class Wire:
    """The process's original stdin and stdout, kept for the protocol alone."""

    def __init__(self) -> None:
        sys.stdout.flush()
        self.input = os.dup(0)  # not inherited by child processes (os.dup's default)
        self.output = os.dup(1)
        nothing = os.open(os.devnull, os.O_RDONLY)
        os.dup2(nothing, 0)
        os.close(nothing)
        os.dup2(2, 1)
        sys.stdout = sys.stderr  # Python's prints too, in order with the rest of the log

    def streams(self):
        reader = open(self.input, encoding="utf-8", errors="replace", closefd=True)  # noqa: SIM115 - the transport owns it
        writer = open(self.output, "w", encoding="utf-8", newline="\n", closefd=True)  # noqa: SIM115
        return anyio.wrap_file(reader), anyio.wrap_file(writer)


async def serve_stdio(engine: Any, wire: Wire) -> None:
    """Serve `engine` on the wire until the client closes its end (runs on mcp_nb's loop)."""
    served = Served(engine, "stdio")
    served.attach()
    try:
        stdin, stdout = wire.streams()
        server = sdk_compat.lowlevel(engine.server)
        async with stdio_server(stdin, stdout) as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        served.detach()
