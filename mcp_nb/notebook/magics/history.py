"""History and cases: `%mcp_history` shows the calls (or a history file's), `%mcp_save_cases`
writes them as regression cases, `%mcp_replay` replays a cases file."""

from __future__ import annotations

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments

from mcp_nb import api
from mcp_nb.notebook.magics.base import parse, usage_errors
from mcp_nb.records.history import History
from mcp_nb.views.replay import ReplayReport


@magics_class
class HistoryMagics(Magics):
    """The history of calls, and the regression cases made from it."""

    @no_var_expand
    @line_magic
    @magic_arguments()
    @argument("--summary", action="store_true", help="counts per name and outcome, with totals")
    @argument(
        "--by", choices=["session"], help="with --summary: the sessions side by side (outcome counts and durations per tool)"
    )
    @argument("--file", metavar="PATH", help="a history file's calls, every session's (instead of this kernel's history)")
    @argument("--clear", action="store_true", help="forget every recorded call")
    def mcp_history(self, line: str):
        """Show the call history (the latest calls, outcomes coloured).

        %mcp_history             # the latest calls; all of them: mcp_nb.history().to_frame()
        %mcp_history --summary   # counts per name x outcome
        %mcp_history --file calls.mcpnb --summary --by session   # a history file's sessions side by side
        %mcp_history --clear
        """
        args = parse(self.mcp_history, line)
        if args.by is not None and not args.summary:
            raise UsageError("--by goes with --summary: %mcp_history --summary --by session")
        if args.file is not None:
            if args.clear:
                raise UsageError(
                    "--clear forgets this kernel's calls; a history file keeps its own (delete the folder to forget them)"
                )
            with usage_errors():
                history = History.open(args.file)
        else:
            history = api.history()
        if args.clear:
            forgotten = len(history)
            with usage_errors():
                history.clear()
            kept = f"; {history.file} keeps them" if history.file is not None else ""
            print(f"history cleared ({forgotten} calls forgotten{kept})")
            return None
        if args.summary:
            with usage_errors():
                return history.summary(by=args.by)
        return history

    @no_var_expand
    @line_magic
    @magic_arguments()
    @argument("path", help="the cases file to write (JSON)")
    @argument("--last", type=int, metavar="N", help="only the latest N calls")
    @argument("--name", metavar="PATTERN", help="only calls whose name (or URI) matches this glob, e.g. get_*")
    @argument("--server", metavar="NAME", help="only the calls made to this connection")
    @argument(
        "--replayed", action="store_true", help="also the calls a replay made (left out by default: they are the cases again)"
    )
    def mcp_save_cases(self, line: str):
        """Write the recorded calls as regression cases: one case per call, with its expected outcome.

            %mcp_save_cases cases.json
            %mcp_save_cases cases.json --last 5 --name "get_*"

        Replay them with %mcp_replay, mcp_nb.replay(), or pytest --mcp-cases (docs/cases.md).
        """
        args = parse(self.mcp_save_cases, line)
        left_out: list = []
        chosen = {"last": args.last, "name": args.name, "server": args.server, "replayed": args.replayed}
        with usage_errors():
            cases = api.history().to_cases(args.path, **chosen, left_out=left_out)
        print(f"saved {len(cases)} case{'s' if len(cases) != 1 else ''} to {args.path}")
        for call in left_out:
            print(f"left out {call}")

    @no_var_expand
    @line_magic
    @magic_arguments()
    @argument("path", help="the cases file (written by %%mcp_save_cases, or by hand)")
    @argument("--server", metavar="NAME", help="send every case to this connection (default: the server each case names)")
    @argument("--concurrency", type=int, default=8, metavar="N", help="calls at a time, where the tools allow it (default 8)")
    @argument(
        "--mode",
        action="append",
        metavar="ERA",
        help="replay every case at this protocol era (2025-11-25, 2026-07-28); repeat it for each era to compare",
    )
    def mcp_replay(self, line: str):
        """Replay a cases file and show expected against got, the failures first, with why.

            %mcp_replay cases.json
            %mcp_replay cases.json --server bookshop
            %mcp_replay cases.json --mode 2025-11-25 --mode 2026-07-28

        With --mode, every case runs at each era named, and a case answered otherwise at one era
        than at the first is called out. Returns the report; its `.frame` is the DataFrame
        `mcp_nb.replay()` returns.
        """

        args = parse(self.mcp_replay, line)
        with usage_errors():
            frame = api.replay(args.path, args.server, concurrency=args.concurrency, modes=args.mode)
        return ReplayReport(frame)
