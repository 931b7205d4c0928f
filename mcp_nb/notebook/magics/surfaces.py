"""Surfaces: `%mcp_snapshot` writes what a server offers its clients to a file, `%mcp_diff`
shows what changed between two surfaces and whether it breaks a client."""

from __future__ import annotations

from IPython.core.magic import Magics, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments

from mcp_nb import api
from mcp_nb.notebook.magics.base import parse, usage_errors
from mcp_nb.records.surface import counted
from mcp_nb.views.surface import DiffReport


@magics_class
class SurfaceMagics(Magics):
    """Snapshots of a server's surface, and their differences."""

    @no_var_expand
    @line_magic
    @magic_arguments()
    @argument("path", help="the snapshot file to write (JSON)")
    @argument("--server", metavar="NAME", help="a connected server (default: the kernel's own)")
    def mcp_snapshot(self, line: str):
        """Write everything a server offers its clients to a JSON file: a snapshot to diff later.

            %mcp_snapshot surface.json
            %mcp_snapshot everything.json --server everything

        Tools with their schemas and annotations, resources, templates, prompts, and the server's
        name, version, instructions and capabilities; keys sorted, so it diffs well in git.
        Compare it with %mcp_diff, mcp_nb.diff() or `mcp-nb diff` (docs/cases.md).
        """
        args = parse(self.mcp_snapshot, line)
        with usage_errors():
            doc = api.snapshot(args.server, path=args.path)
        print(f"wrote {args.path}: {counted(doc)}")

    @no_var_expand
    @line_magic
    @magic_arguments()
    @argument("old", help="a snapshot file, or a connected server's name")
    @argument("new", nargs="?", help="a snapshot file, or a connected server's name (default: the kernel's own server, now)")
    def mcp_diff(self, line: str):
        """Show what changed for clients between two surfaces, each change breaking or not, and why.

            %mcp_diff surface.json              # the snapshot against the kernel's server now
            %mcp_diff before.json after.json
            %mcp_diff surface.json everything   # against a connected server

        A change the rules do not know is shown as unknown. Returns the report; its `.frame` is
        the DataFrame `mcp_nb.diff()` returns.
        """
        args = parse(self.mcp_diff, line)
        with usage_errors():
            frame = api.diff(args.old, args.new)
        return DiffReport(frame)
