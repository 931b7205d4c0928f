"""`python -m mcp_nb COMMAND ...` (also the `mcp-nb` console script): one subcommand per module.

Each module in `COMMANDS` gives `describe(parser)`, which declares its options on its own
subparser, and `run(args) -> int`, the exit status. A command imports what it needs in
`run`, so `mcp-nb --help` stays quick.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS = {
    "serve": ("mcp_nb.commands.serve", "serve a notebook's tools, resources and prompts to MCP clients"),
}


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="mcp-nb", description="mcp_nb from the command line.")
    commands = top.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module, summary) in COMMANDS.items():
        sub = commands.add_parser(name, help=summary, description=summary)
        importlib.import_module(module).describe(sub)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    module = importlib.import_module(COMMANDS[args.command][0])
    return module.run(args)
