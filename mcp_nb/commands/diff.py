"""`mcp-nb diff OLD.json NEW.json [--fail-on LEVEL] [--json]`: what changed for clients, for scripts and CI.

Two snapshot files (written by `mcp-nb snapshot`, `%mcp_snapshot` or `mcp_nb.snapshot(path=)`)
are compared by the rules of docs/cases.md, and every change is printed with its verdict
(breaking, unknown, compatible), the worst first. `--json` prints the changes as a JSON list
instead, one object per change with the frame's columns.

Exit status: 0 when no change reaches `--fail-on` (`never`, the default, never fails; `breaking`
fails on a breaking change; `unknown` on a breaking change or one no rule knows; `any` on any
change), 1 when one does, 2 when the command is wrong (an option, a file that is missing or
not a snapshot), with one line saying why.
"""

from __future__ import annotations

import argparse
import json
import sys

from mcp_nb.records.surface import SurfaceError, load
from mcp_nb.records.surface_diff import COLUMNS, FAIL_ON, changes, failing, frame
from mcp_nb.views.surface import diff_text

FAILED = 1


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("old", help="the snapshot before (JSON)")
    parser.add_argument("new", help="the snapshot after (JSON)")
    parser.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        default="never",
        help="exit 1 when a change reaches this level: breaking; unknown (breaking, or no rule knows it); any; never (the default)",
    )
    parser.add_argument("--json", action="store_true", help="print the changes as a JSON list instead of the report")


def run(args: argparse.Namespace) -> int:
    try:
        old, new = load(args.old), load(args.new)
    except SurfaceError as err:
        args.parser.error(str(err))
    rows = changes(old, new)
    if args.json:
        print(json.dumps([dict(zip(COLUMNS, (getattr(r, c) for c in COLUMNS))) for r in rows], indent=2, ensure_ascii=False))
    else:
        table = frame(rows)
        table.attrs.update(old=args.old, new=args.new)
        print(diff_text(table))
    bad = failing(rows, args.fail_on)
    if bad:
        print(f"mcp-nb diff: {len(bad)} change{'s' if len(bad) != 1 else ''} at --fail-on {args.fail_on}", file=sys.stderr)
        return FAILED
    return 0
