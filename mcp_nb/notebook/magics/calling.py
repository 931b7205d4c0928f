"""Calling: `%mcp_call`, `%mcp_read` and `%mcp_get_prompt` make one call each and return its
Outcome; `%mcp_panel` shows the client panel that makes them from forms.

Their options are argparse's; what is left after the name, a call's arguments, is read by
`notebook/arguments.py` (a JSON object sent verbatim, or key=value pairs coerced with the schema).
"""

from __future__ import annotations

from typing import Any

from IPython.core.magic import Magics, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments

from mcp_nb import api
from mcp_nb.calling.retry import Retry
from mcp_nb.notebook.arguments import ArgumentsError, parse_count, parse_pairs, parse_seconds, read_call_line
from mcp_nb.notebook.magics.base import parse, usage_errors, variable
from mcp_nb.records.history import History
from mcp_nb.views.live import watch

# The options every calling magic takes (a tool's call takes two more of its own).
TIMEOUT = argument("--timeout", metavar="S", help="seconds the answer may take (default: %%config McpMagics.timeout)")
RETRIES = argument(
    "--retries", metavar="N", help="retry a timeout up to N times; only tools annotated --idempotent or --read-only"
)
BACKOFF = argument("--backoff", metavar="S", help="with --retries: wait S, 2S, 4S... between attempts (default: 0.1)")
SERVER = argument("--server", metavar="NAME", help="a connected server (default: the kernel's own)")
ELICIT = argument(
    "--elicit",
    metavar="VAR",
    help="answers to the server's questions while the call runs: decline, cancel, or a variable holding a function (message, schema) -> answer or a list of answers",
)


@magics_class
class CallingMagics(Magics):
    """Call tools, read resources and get prompts, from a line or from the panel."""

    def _call(self, target: str, magic: Any, line: str):
        engine = api.engine()
        tool, takes_arguments = target == "tool", target != "resource"
        with usage_errors():
            name, payload, args = read_call_line(magic.parser, line, takes_arguments)
            if isinstance(payload, dict):
                arguments = payload  # verbatim: wrong types can be sent on purpose
            elif payload:
                schema = engine.connection_for(args.server).input_schema(target, name)
                arguments = parse_pairs(payload, schema, f"{target} {name!r}")
            else:
                arguments = None
            timeout = parse_seconds(args.timeout) if args.timeout is not None else None
            retry = None
            if args.retries is not None or args.backoff is not None:
                retries = parse_count(args.retries if args.retries is not None else "3", "--retries")
                backoff = parse_seconds(args.backoff, "--backoff") if args.backoff is not None else 0.1
                retry = Retry(retries=retries, backoff=backoff)
            limits: dict[str, Any] = {}
            if tool:
                limits["reset_on_progress"] = args.reset_on_progress
                if args.max_timeout is not None:
                    limits["max_timeout"] = parse_seconds(args.max_timeout, "--max-timeout")
            if args.elicit is not None:
                limits["elicit"] = self._answers(args.elicit)
            # Engine.run, the sync face's one path: its checks raise Mistakes (said in one line
            # here), and a call's outcome, whatever it is, is returned, never raised.
            return engine.run(target, name, arguments, timeout, retry, args.server, watch if tool else None, **limits)

    def _answers(self, text: str):
        """`--elicit`: decline or cancel, or the name of a variable holding a function or a list of answers."""
        if text in ("decline", "cancel"):
            return text
        if not text.isidentifier():
            raise ArgumentsError(f"--elicit {text}: give decline, cancel, or the name of a variable holding answers")
        return variable(self.shell.user_ns, text, "--elicit", "a function or a list of answers")

    @no_var_expand
    @line_magic
    @magic_arguments()
    @argument("name", metavar="NAME", help="the tool's name")
    @argument(
        "arguments",
        nargs="*",
        metavar="ARGUMENT",
        help="a JSON object, sent verbatim; or key=value pairs, coerced with the tool's input schema",
    )
    @TIMEOUT
    @RETRIES
    @BACKOFF
    @SERVER
    @argument("--reset-on-progress", action="store_true", help="restart the deadline at each progress event the tool sends")
    @argument(
        "--max-timeout", metavar="S", help="with --reset-on-progress: the deadline is never past S seconds (default: 10 timeouts)"
    )
    @ELICIT
    def mcp_call(self, line: str):
        """Call a tool; returns its Outcome.

        key=value strings are coerced with the tool's input schema (count=3 sends 3); a JSON
        object is sent verbatim, so wrong types can be sent on purpose. Words after `--` are
        arguments whatever they look like. The progress a tool reports shows live as a bar.

            %mcp_call get_author title=Dune
            %mcp_call get_author {"title": 42} --timeout 5
            %mcp_call lookup isbn=978-0441013593 --retries 3 --backoff 0.1
        """
        return self._call("tool", self.mcp_call, line)

    @no_var_expand
    @line_magic
    @magic_arguments()
    @argument("name", metavar="URI", help="the resource's URI")
    @TIMEOUT
    @RETRIES
    @BACKOFF
    @SERVER
    @ELICIT
    def mcp_read(self, line: str):
        """Read a resource; returns its Outcome.

        %mcp_read books://catalog
        %mcp_read books://Dune --server bookshop
        """
        return self._call("resource", self.mcp_read, line)

    @no_var_expand
    @line_magic
    @magic_arguments()
    @argument("name", metavar="NAME", help="the prompt's name")
    @argument("arguments", nargs="*", metavar="ARGUMENT", help="a JSON object, sent verbatim; or key=value pairs")
    @TIMEOUT
    @RETRIES
    @BACKOFF
    @SERVER
    @ELICIT
    def mcp_get_prompt(self, line: str):
        """Get a prompt; returns its Outcome.

        %mcp_get_prompt review title=Dune
        """
        return self._call("prompt", self.mcp_get_prompt, line)

    @no_var_expand
    @line_magic
    @magic_arguments()
    @argument("--server", metavar="NAME", help="the connection shown first (default: the kernel's own)")
    @argument("--history", metavar="PATH", help="a history file whose calls (every session's) the History tab shows")
    def mcp_panel(self, line: str):
        """Show the client panel: pick a server, then fill in and call its tools, resources and
        prompts from forms built from their schemas, and watch outcomes and the history.

            %mcp_panel
            %mcp_panel --server everything
            %mcp_panel --history calls.mcpnb
        """
        args = parse(self.mcp_panel, line)
        with usage_errors():
            history = History.open(args.history) if args.history is not None else None
            return api.panel(server=args.server, history=history)
