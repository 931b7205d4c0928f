"""mcp_nb's commands: `python -m mcp_nb COMMAND ...`, or the `mcp-nb` console script.

A command lives in a module of its own, which has `arguments(parser)`, declaring its
options on its own argparse parser, and `run(args)`, which does the work and returns the
exit status. Only the module of the command being run is imported: a command may need
more than the others, and `--help` stays quick. A mistake in the arguments is reported
by argparse (`args.parser.error(...)`: usage, one line, exit status 2).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# name -> (module, one line of help)
COMMANDS = {
    "serve": ("mcp_nb.commands.serve", "serve a notebook's tools, resources and prompts to MCP clients"),
    "nbval-sanitize": ("mcp_nb.notebook.nbval", "write the nbval sanitizer that holds mcp_nb's outputs still"),
    "init-course": ("mcp_nb.commands.course", "make a folder to start a course of notebooks from (Binder, nbval, CI)"),
    "student-version": (
        "mcp_nb.commands.student",
        "write a notebook's (or a course folder's) student version: its exercises' solutions stripped",
    ),
    "course-links": ("mcp_nb.commands.links", "print the Binder (and JupyterHub) links that open this course's student versions"),
    "snapshot": (
        "mcp_nb.commands.snapshot",
        "write a snapshot of what a notebook's (or a server's) tools, resources and prompts offer clients",
    ),
    "diff": (
        "mcp_nb.commands.diff",
        "what changed for clients between two snapshots, each change breaking or not (exit 1 at --fail-on)",
    ),
}


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if prog is None:  # the console script, or a program that calls main() itself
        prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0].endswith("mcp-nb") else "mcp-nb"
    parser = argparse.ArgumentParser(prog=prog, description="mcp_nb's commands.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    chosen = next((word for word in argv if not word.startswith("-")), None)
    for name, (module, summary) in COMMANDS.items():
        sub = commands.add_parser(name, help=summary, description=summary[0].upper() + summary[1:] + ".")
        if name == chosen:
            command = importlib.import_module(module)
            command.arguments(sub)
            sub.set_defaults(run=command.run, parser=sub)
    args = parser.parse_args(argv)
    return args.run(args) or 0
