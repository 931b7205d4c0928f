"""`mcp-nb snapshot (NOTEBOOK.ipynb | --server COMMAND | --url URL) -o SNAPSHOT.json`: a surface, written.

The notebook's code cells run headless first, as `mcp-nb serve` runs them (cells tagged
`mcp-skip` left out), and the snapshot is of what they registered; or the stdio server the
command starts, or the streamable HTTP server at the URL (`--header 'Name: value'`, repeatable:
a served notebook's token, say; never written into the snapshot). Then `mcp-nb diff` compares it
with the snapshot committed before.

Exit status: 0 when it was written, 1 when the server could not be run, reached or listed (the
line says which), 2 for a wrong command.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from mcp_nb import api
from mcp_nb.calling.connections import ConnectError
from mcp_nb.mistakes import Mistake
from mcp_nb.records.surface import SurfaceError, counted
from mcp_nb.serving.notebook import NotebookError, run_notebook

NAME = "snapshot"  # the connection's name for --server and --url


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("notebook", nargs="?", type=Path, help="the .ipynb file whose code cells define the tools")
    parser.add_argument("--server", metavar="COMMAND", help="instead: start this stdio MCP server and take its snapshot")
    parser.add_argument("--url", help="instead: the streamable HTTP MCP server at this URL")
    parser.add_argument(
        "--header", action="append", default=[], metavar="'NAME: VALUE'", help="an HTTP header for --url (repeatable)"
    )
    parser.add_argument("-o", "--output", required=True, type=Path, help="the snapshot file to write (JSON)")


def run(args: argparse.Namespace) -> int:
    given = [flag for flag, value in (("NOTEBOOK", args.notebook), ("--server", args.server), ("--url", args.url)) if value]
    if len(given) != 1:
        args.parser.error(
            "give one of NOTEBOOK, --server COMMAND and --url URL" + (f", not {' and '.join(given)}" if given else "")
        )
    if args.header and not args.url:
        args.parser.error("--header goes with --url")
    headers = {}
    for header in args.header:
        name, colon, value = header.partition(":")
        if not colon or not name.strip():
            args.parser.error(f"--header takes 'Name: value', got {header!r}")
        headers[name.strip()] = value.strip()
    try:
        if args.notebook is not None:
            run_notebook(args.notebook)
            server = None
        else:
            target = args.url if args.url else shlex.split(args.server)
            api.connect(NAME, target, headers=headers or None)
            server = NAME
        doc = api.snapshot(server, path=args.output)
    except (NotebookError, ConnectError, SurfaceError) as err:
        print(f"mcp-nb snapshot: {err}", file=sys.stderr)
        return 1
    except Mistake as err:  # a command or URL connect refuses before trying
        args.parser.error(str(err))
    finally:
        api.reset()
    print(f"mcp-nb snapshot: wrote {args.output}: {counted(doc)}", file=sys.stderr)
    return 0
