"""`mcp-nb serve NOTEBOOK.ipynb [--http [--port P] [--host H]]`: a notebook run as an MCP server.

The notebook's code cells run in order in a headless IPython shell (cells tagged
`mcp-skip` are left out), as a script runs: what they print is printed, their values are
not. What they registered is then served, over stdio by default (the line a user puts in
Claude Desktop's `command`), or over streamable HTTP with `--http`, with the same rules
as `%mcp_serve`: 127.0.0.1 unless told otherwise, a bearer token unless
`--dangerously-no-auth` on loopback.

The token is a secret, and what a server prints often lands in a log (a process
manager's, `2> file`, `| tee`): it is printed only to a terminal, on stderr. Anywhere
else it is written to a file only its user can read (`--token-file`, or one in a private
temporary folder), removed when the server stops, and the settings printed for each
client name that file where the token goes.

In stdio mode nothing but the protocol reaches stdout: from the start, what the cells
print goes to stderr. The exit status is 0 after a clean stop, 1 when the notebook
cannot be run (the message names the cell), 2 for bad options.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import sys
import tempfile
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
        "--dangerously-no-auth",
        action="store_true",
        help="with --http on 127.0.0.1: accept requests without the bearer token",
    )
    parser.add_argument(
        "--token-file",
        type=Path,
        metavar="PATH",
        help="with --http: write the token to PATH (readable by you alone; removed when the server stops) "
        "instead of printing it to the terminal",
    )
    parser.add_argument(
        "--max-connections",
        type=int,
        default=None,
        metavar="N",
        help="with --http: connections open at once; past them, a client waits its turn (default: half the descriptor limit, 1024 at most)",
    )
    parser.add_argument(
        "--header-timeout",
        type=float,
        default=DEFAULT_HEADER_TIMEOUT,
        metavar="S",
        help=f"with --http: seconds the server waits on a client for a request's head, its body, or to read its answer (default: {DEFAULT_HEADER_TIMEOUT:g})",
    )


def run(args: argparse.Namespace) -> int:
    if not args.http and (args.port or args.host != "127.0.0.1" or args.dangerously_no_auth or args.token_file):
        args.parser.error("--port, --host, --dangerously-no-auth and --token-file go with --http")
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
    summary = f"{args.notebook.name}: {ran} cells run, {_registered(engine.registry.entries())}"
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


def _registered(entries) -> str:
    """What the cells registered, in a few words: "2 registered (tool add, prompt review)"."""
    names = [f"{entry.kind} {entry.key}" for entry in entries]
    if not names:
        return "0 registered"
    shown = ", ".join(names[:SHOWN_NAMES]) + (f" and {len(names) - SHOWN_NAMES} more" if len(names) > SHOWN_NAMES else "")
    return f"{len(names)} registered ({shown})"


SHOWN_NAMES = 8


def _serve_http(args: argparse.Namespace, summary: str) -> int:
    try:
        handle = api.serve(
            port=args.port,
            host=args.host,
            dangerously_no_auth=args.dangerously_no_auth,
            max_connections=args.max_connections,
            header_timeout=args.header_timeout,
        )
    except (ValueError, OSError) as err:
        print(f"mcp-nb serve: {err}", file=sys.stderr)
        return 2
    written: list[Path] = []  # the token's file and the private folder made for it, removed at the end
    try:
        print(f"mcp-nb serve: {summary}; serving at {handle.url}", file=sys.stderr)
        configs = handle.configs(args.notebook.stem)
        if handle.token is not None:
            if args.token_file is None and sys.stderr.isatty():
                print(f"token: {handle.token}", file=sys.stderr)  # to its user's eyes, never to a log
            else:
                path = _write_token(handle.token, args.token_file, written)
                print(f"token file: {path} (readable by you alone; removed when the server stops)", file=sys.stderr)
                configs = {client: text.replace(handle.token, f"<the token in {path}>") for client, text in configs.items()}
        for client, text in configs.items():
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
    finally:
        handle.stop()
        for path in written:
            with contextlib.suppress(OSError):
                shutil.rmtree(path) if path.is_dir() else path.unlink()
    return 0


def _write_token(token: str, path: Path | None, written: list[Path]) -> Path:
    """Write `token` to `path` (None: a file in a new private folder), readable by its owner alone."""
    if path is None:
        folder = Path(tempfile.mkdtemp(prefix="mcp-nb-"))  # mode 0700
        written.append(folder)
        path = folder / "token"
    path = path.absolute()
    # Made 0600 before the token is in it, whatever was there: never readable by others, even for a moment.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, 0o600)
        os.write(fd, (token + "\n").encode())
    finally:
        os.close(fd)
    written.insert(0, path)
    return path
