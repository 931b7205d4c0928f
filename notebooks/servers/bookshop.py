"""A Python MCP server on the official SDK, run as a separate process: `bookshop.py stdio` or `bookshop.py http PORT`.

The error model's cases, raised the way a server a user writes would raise them. Notebook 13
and the tests connect to it as mcp_nb connects to any outside server. Its log goes to stderr,
as a stdio server's must.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
import warnings

from mcp import MCPError
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.shared.exceptions import MCPDeprecationWarning

# This server is a process of its own, and its author knows `ctx.info` is deprecated (SEP-2577):
# the warning would otherwise reach its clients as stderr lines on every call that logs.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

CATALOG = {"Dune": "Frank Herbert", "Neuromancer": "William Gibson"}

# The SDK's own logging set-up draws the log with `rich` where rich is installed (boxed
# tracebacks, lines wrapped at 80 columns). This server logs the plain way the SDK does without
# it, so its stderr, which notebook 13 reads, says the same wherever it runs. (The SDK's set-up
# then finds the root logger configured and leaves it.)
logging.basicConfig(level="INFO", format="%(message)s", handlers=[logging.StreamHandler()])

server = MCPServer("bookshop", version="1.0.0")
log = logging.getLogger("bookshop")


@server.tool()
def get_author(title: str) -> str:
    """Look up the author of a book in the catalog."""
    if title == "tool-error":
        raise ToolError(f"No book titled {title!r} in the catalog.")
    if title == "mcp-error":
        raise MCPError(code=-32050, message="catalog offline", data={"title": title})
    return CATALOG[title]  # a KeyError for anything else: a crash


@server.tool()
def count_books(limit: int) -> int:
    return min(limit, len(CATALOG))


@server.tool()
async def slow(seconds: float) -> str:
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        # Said on stderr, so a client can see that its cancellation reached the handler.
        print("slow: cancelled by the client", file=sys.stderr, flush=True)
        raise
    return f"slept {seconds}"


@server.tool()
def slow_sync(seconds: float) -> str:
    time.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def chatty(n: int) -> str:
    """Writes to stderr, as a server's own diagnostics do."""
    for i in range(n):
        print(f"chatty line {i}", file=sys.stderr, flush=True)
    return f"wrote {n} lines"


@server.tool()
async def restock(count: int, ctx: Context) -> str:
    """Logs through its Context and reports progress, as a long job does."""
    await ctx.info(f"restocking {count} books")
    try:
        for i in range(count):
            await asyncio.sleep(0.05)
            await ctx.report_progress(i + 1, count, f"book {i + 1} of {count}")
    except asyncio.CancelledError:
        print(f"restock: cancelled by the client after {i} books", file=sys.stderr, flush=True)
        raise
    await ctx.warning("shelf 3 is full")
    return f"restocked {count}"


@server.tool()
def die() -> str:
    """The process exits in the middle of the call."""
    print("about to exit", file=sys.stderr, flush=True)
    os._exit(3)


@server.resource("books://{title}")
def book(title: str) -> str:
    if title == "missing":
        raise ResourceNotFoundError(f"No book titled {title!r}.")
    if title == "broken":
        raise ResourceError("The catalog is being rebuilt.")
    return f"{title} by {CATALOG[title]}"


@server.resource("books://catalog")
def catalog() -> str:
    return ", ".join(CATALOG)


@server.prompt()
def review(title: str) -> str:
    if title == "crash":
        raise KeyError(title)
    return f"Write a short review of {title}."


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "stdio":
        server.run("stdio")
    elif mode == "stdio-stubborn":
        # Stays alive after its client is gone (stdin closed): only the client ending it stops it.
        server.run("stdio")
        time.sleep(120)
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
