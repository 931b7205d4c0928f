"""`mcp-nb serve NOTEBOOK.ipynb [--http [--port P] [--host H]]`: a notebook run as an MCP server.

The notebook's code cells run in order in a headless IPython shell (cells tagged
`mcp-skip` are left out); what they registered is then served, over stdio by default
(the line a user puts in Claude Desktop's `command`), or over streamable HTTP with
`--http`, with the same rules as `%mcp_serve`: 127.0.0.1 unless told otherwise, a
bearer token (printed on stderr) unless `--dangerously-no-auth` on loopback.

In stdio mode nothing but the protocol reaches stdout: from the start, what the cells
print goes to stderr. The exit status is 0 after a clean stop, 1 when the notebook
cannot be run (the message names the cell), 2 for bad options.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from mcp_nb import api
from mcp_nb.serving.limits import DEFAULT_HEADER_TIMEOUT, check_limits
from mcp_nb.serving.notebook import NotebookError, run_notebook
from mcp_nb.serving.policy import DEFAULT_MAX_BODY, check_address
from mcp_nb.serving.stdio import Wire, serve_stdio


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("notebook", type=Path, help="the .ipynb file whose code cells define the tools")
    parser.add_argument("--http", action="store_true", help="serve over streamable HTTP instead of stdio")
    parser.add_argument("--port", type=int, default=0, help="with --http: port to listen on (default: a free one)")
    parser.add_argument("--host", default="127.0.0.1", help="with --http: address to listen on (default: 127.0.0.1)")
    parser.add_argument(
        "--dangerously-no-auth", action="store_true",
        help="with --http on 127.0.0.1: accept requests without the bearer token",
    )  # fmt: skip
    parser.add_argument(
        "--max-connections", type=int, default=None, metavar="N",
        help="with --http: connections open at once; past them, a client waits its turn (default: half the descriptor limit, 1024 at most)",
    )  # fmt: skip
    parser.add_argument(
        "--header-timeout", type=float, default=DEFAULT_HEADER_TIMEOUT, metavar="S",
        help=f"with --http: seconds the server waits on a client for a request's head, its body, or to read its answer (default: {DEFAULT_HEADER_TIMEOUT:g})",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    if not args.http and (args.port or args.host != "127.0.0.1" or args.dangerously_no_auth):
        args.parser.error("--port, --host and --dangerously-no-auth go with --http")
    limited = (args.max_connections, args.header_timeout) != (None, DEFAULT_HEADER_TIMEOUT)
    if not args.http and limited:
        args.parser.error("--max-connections and --header-timeout go with --http")
    if args.http:
        # Refused before any cell runs (a notebook may take minutes, or have side effects).
        try:
            check_address(args.host, args.port, args.dangerously_no_auth, DEFAULT_MAX_BODY)
            check_limits(args.max_connections, args.header_timeout)
        except ValueError as err:
            args.parser.error(str(err))
    wire = None
    if not args.http:
        wire = Wire()  # before any cell runs: nothing a cell prints may reach the protocol's stdout
    try:
        ran = run_notebook(args.notebook)
    except NotebookError as err:
        print(f"mcp-nb serve: {err}", file=sys.stderr)
        return 1
    engine = api.engine()
    summary = f"{args.notebook.name}: {ran} cells run, {len(engine.registry.entries())} registered"
    try:
        if wire is not None:
            print(f"mcp-nb serve: {summary}; serving over stdio", file=sys.stderr, flush=True)
            return _serve_stdio(engine, wire)
        return _serve_http(args, summary)
    finally:
        api.reset()


def _serve_stdio(engine, wire) -> int:
    try:
        engine.loop.run(serve_stdio(engine, wire))
    except KeyboardInterrupt:
        pass
    return 0


def _serve_http(args: argparse.Namespace, summary: str) -> int:
    try:
        handle = api.serve(
            port=args.port, host=args.host, dangerously_no_auth=args.dangerously_no_auth,
            max_connections=args.max_connections, header_timeout=args.header_timeout,
        )  # fmt: skip
    except (ValueError, OSError) as err:
        print(f"mcp-nb serve: {err}", file=sys.stderr)
        return 2
    print(f"mcp-nb serve: {summary}; serving at {handle.url}", file=sys.stderr)
    if handle.token is not None:
        print(f"token: {handle.token}", file=sys.stderr)
    for client, text in handle.configs(args.notebook.stem).items():
        print(f"\n{client}:\n{text}", file=sys.stderr)
    print("\nCtrl-C stops it.", file=sys.stderr, flush=True)
    done = threading.Event()
    # This process is the server's own: a terminate from a process manager stops it cleanly.
    signal.signal(signal.SIGTERM, lambda signum, frame: done.set())
    try:
        while not done.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    handle.stop()
    return 0
