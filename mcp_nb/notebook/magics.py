"""The IPython face: thin magics that parse a line and hand plain values to the API.

Every magic gets its line as typed (`no_var_expand`: `{title}` in a URI template and
`$` in JSON are never IPython variables) and splits it by the same rules (`lines.py`:
shell quoting, JSON kept whole, a trailing `# comment` dropped). User mistakes become
one-line `UsageError`s and change nothing; a bug of mcp_nb's keeps its traceback, to be
reported (`mcp_nb.mistakes` tells them apart). The magics class is
also the traitlets `Configurable` users know from JupySQL: `%config McpMagics` lists
the settings, `%config McpMagics.timeout = 10` sets one, and it is the same setting
`mcp_nb.configure(timeout=10)` changes.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from IPython.core.error import UsageError
from IPython.core.magic import (
    Magics,
    cell_magic,
    line_magic,
    magics_class,
    no_var_expand,
)
from IPython.core.magic_arguments import argument, magic_arguments
from traitlets import link

from mcp_nb import api
from mcp_nb.calling.call import CallDepthError
from mcp_nb.calling.connections import ConnectError
from mcp_nb.calling.retry import Retry
from mcp_nb.config import CONFIGURABLE, SharedTraits, settings
from mcp_nb.notebook.arguments import (
    ArgumentsError,
    parse_call_line,
    parse_count,
    parse_pairs,
    parse_seconds,
)
from mcp_nb.notebook import completion
from mcp_nb.notebook.cells import defined_function, function_name, restoring
from mcp_nb.notebook.lines import split
from mcp_nb.notebook.warmup import open_session_early
from mcp_nb.records.history import History
from mcp_nb.registering.faults import Faults
from mcp_nb.registering.registry import check_tool_name, check_uri
from mcp_nb.views.live import watch
from mcp_nb.records.surface import counted
from mcp_nb.views.replay import ReplayReport
from mcp_nb.views.surface import DiffReport
from mcp_nb.mistakes import BadJson, BadValue, Mistake, first_line, read_json

CALL_OPTIONS = ("timeout", "retries", "backoff", "server", "elicit")
TOOL_OPTIONS = (*CALL_OPTIONS, "max-timeout")
TOOL_FLAGS = ("reset-on-progress",)
# The cell magics' --quiet: a dashboard (Voila) shows what a cell displays, and its readers
# have no use for a registration card.
QUIET = argument("--quiet", action="store_true", help="register without showing the card (for dashboards such as Voila)")
_config_applied = False  # whether a McpMagics of this process has applied the IPython config
# Besides every `Mistake` (what mcp_nb's checks raise for bad input: a cell that defines no
# function, a line that does not split, a cases file that cannot be read are Mistakes too), errors
# that are always the user's at a magic: a server that cannot be connected, calls nested past the limit.
MISTAKES = (Mistake, ConnectError, CallDepthError)


@contextmanager
def usage_errors() -> Iterator[None]:
    """Report the user's mistakes as one line, without a traceback; let a bug through."""
    try:
        yield
    except MISTAKES as err:  # anything else is mcp_nb's own bug (or a library's): its traceback shows
        raise UsageError(first_line(err)) from None


def _parse(magic, line: str):
    """The magic's options from its line, split by the rules every mcp_nb magic shares
    (`lines.split`: shell quoting, a trailing `# comment` dropped)."""
    with usage_errors():
        words = split(line)
    return magic.parser.parse_args(words)  # its errors are UsageErrors already


def _no_arguments(magic: str, line: str) -> None:
    with usage_errors():
        words = split(line)
    if words:
        raise UsageError(f"%{magic} takes no arguments")


@magics_class
class McpMagics(Magics, SharedTraits):
    """Register and call MCP tools, resources and prompts from notebook cells."""

    def __init__(self, shell=None, **kwargs) -> None:
        super().__init__(shell=shell, **kwargs)
        # The magics' traits and the process settings are one setting seen from two places.
        # A link starts by copying the magics' value over the settings, so every value is
        # first taken from the settings (`configure()` made before `%load_ext` is kept), except
        # those the IPython config names at the first load; at a later one (`%reload_ext`)
        # the settings already hold them, and whatever was set since.
        global _config_applied
        configured = {} if _config_applied else (self.config.get(type(self).__name__) or {})
        _config_applied = True
        for name in CONFIGURABLE:
            if name not in configured:
                setattr(self, name, getattr(settings, name))
        self._links = [link((self, name), (settings, name)) for name in CONFIGURABLE]

    # -- registering ----------------------------------------------------------------------------

    def _register(self, cell: str, register, validate_default_name: bool, quiet: bool = False):
        """Check the cell, run it in the user's namespace, register its function.

        Checks that need no execution come first; if registering still fails, the name the
        cell bound is put back as it was, so a bad cell changes nothing. The Registration is
        returned for IPython to show as a card, unless `quiet` (`--quiet`: a dashboard's cells).
        """
        source = self.shell.transform_cell(cell)
        with usage_errors():
            fname = function_name(source)
            if validate_default_name:
                check_tool_name(fname)
        namespace = self.shell.user_ns
        with restoring(namespace, fname):
            # Compiled as IPython compiles a cell: under a cached file name (tracebacks show the
            # cell's lines), with the user's __future__ imports and not this module's. Cached
            # under the cell's number, with the magic's line in front left blank, so a traceback
            # names the cell (`Cell In[5]`) and the line of the cell, as IPython's own do.
            compiler = self.shell.compile
            source = "\n" + source
            filename = compiler.cache(source, self.shell.execution_count)
            exec(compiler(compiler.ast_parse(source, filename), filename, "exec"), namespace)
            with usage_errors():
                registration = register(defined_function(namespace, fname))
        return None if quiet else registration

    @no_var_expand
    @cell_magic
    @magic_arguments()
    @argument("--name", help="tool name (default: the function's name)")
    @argument("--title", help="human-readable title")
    @argument("--description", help="description for the model (default: the docstring)")
    @argument("--read-only", action="store_true", help="annotation readOnlyHint: the tool changes nothing")
    @argument("--idempotent", action="store_true", help="annotation idempotentHint: repeating a call is safe")
    @argument("--destructive", action="store_true", help="annotation destructiveHint: the tool may destroy data")
    @argument("--open-world", action="store_true", help="annotation openWorldHint: the tool reaches outside systems")
    @QUIET
    @argument(
        "--inject",
        metavar="FAULTS",
        help='inject faults on purpose, e.g. "latency=0.5,tool_error=0.1,crash=0.05,protocol_error=0.05,seed=1"',
    )
    @argument(
        "--input-schema", metavar="SCHEMA",
        help="the input JSON Schema clients see, where the signature cannot say it: a JSON object, or the name of a dict",
    )  # fmt: skip
    def mcp_tool(self, line: str, cell: str):
        """Register the cell's function as a tool on the in-kernel MCP server.

        The cell is ordinary Python run in your namespace; it must define exactly one
        top-level function (sync or async). Re-running the cell replaces the earlier
        version, also for clients already connected.

            %%mcp_tool --read-only
            def get_author(title: str) -> str:
                '''Look up the author of a book in the catalog.'''
                return CATALOG[title]
        """
        args = _parse(self.mcp_tool, line)
        with usage_errors():
            if args.name is not None:
                check_tool_name(args.name)
            faults = Faults.parse(args.inject) if args.inject is not None else None
            schema = self._schema(args.input_schema) if args.input_schema is not None else None
        flags = {"read_only": args.read_only, "idempotent": args.idempotent, "destructive": args.destructive, "open_world": args.open_world}
        registry = api.engine().registry
        return self._register(
            cell,
            lambda fn: registry.add_tool(
                fn, name=args.name, title=args.title, description=args.description, annotations=flags, inject=faults,
                input_schema=schema,
            ),
            validate_default_name=args.name is None,
            quiet=args.quiet,
        )

    def _schema(self, text: str):
        """`--input-schema`: a JSON object as typed, or the name of a variable holding one."""
        if text.lstrip().startswith("{"):
            try:
                return read_json(text)
            except BadJson as err:
                raise ArgumentsError(f"--input-schema is not valid JSON: {err}") from None
        if text not in self.shell.user_ns:
            raise ArgumentsError(f"--input-schema {text}: no variable of that name (give a JSON object or a dict's name)")
        return self.shell.user_ns[text]

    @no_var_expand
    @cell_magic
    @magic_arguments()
    @argument("uri", help="a URI (books://catalog) or a URI template (books://{title})")
    @argument("--name", help="resource name (default: the function's name)")
    @argument("--title", help="human-readable title")
    @argument("--description", help="description (default: the docstring)")
    @argument("--mime-type", help="MIME type of the content (default: text/plain)")
    @QUIET
    def mcp_resource(self, line: str, cell: str):
        """Register the cell's function as a resource, or a resource template when the URI has {variables}.

            %%mcp_resource books://{title}
            def book(title: str) -> str:
                return f"{title} by {CATALOG[title]}"
        """
        args = _parse(self.mcp_resource, line)
        with usage_errors():
            check_uri(args.uri)
        registry = api.engine().registry
        return self._register(
            cell,
            lambda fn: registry.add_resource(
                fn, args.uri, name=args.name, title=args.title, description=args.description, mime_type=args.mime_type
            ),
            validate_default_name=False,
            quiet=args.quiet,
        )

    @no_var_expand
    @cell_magic
    @magic_arguments()
    @argument("--name", help="prompt name (default: the function's name)")
    @argument("--title", help="human-readable title")
    @argument("--description", help="description (default: the docstring)")
    @QUIET
    def mcp_prompt(self, line: str, cell: str):
        """Register the cell's function as a prompt; its parameters become the prompt's arguments.

            %%mcp_prompt
            def review(title: str) -> str:
                return f"Write a short review of {title}."
        """
        args = _parse(self.mcp_prompt, line)
        with usage_errors():
            if args.name is not None:
                check_tool_name(args.name)
        registry = api.engine().registry
        return self._register(
            cell,
            lambda fn: registry.add_prompt(fn, name=args.name, title=args.title, description=args.description),
            validate_default_name=args.name is None,
            quiet=args.quiet,
        )

    @no_var_expand
    @line_magic
    @magic_arguments()
    @argument("--server", metavar="NAME", help="what a connected server offers (default: the kernel's own)")
    def mcp_list(self, line: str):
        """Show what is registered: one row per tool, resource and prompt.

            %mcp_list
            %mcp_list --server everything
        """
        args = _parse(self.mcp_list, line)
        with usage_errors():
            return api.registered(args.server)

    @no_var_expand
    @line_magic
    @magic_arguments()
    @argument("key", help="tool or prompt name, or resource URI")
    @argument("--kind", choices=["tool", "resource", "prompt"], help="which kind, when a name is ambiguous")
    def mcp_remove(self, line: str):
        """Remove a registered tool, resource or prompt from the server.

            %mcp_remove get_author
        """
        args = _parse(self.mcp_remove, line)
        with usage_errors():
            entry = api.remove(args.key, args.kind)
        print(f"removed {entry.kind} {entry.key}")

    # -- calling --------------------------------------------------------------------------------

    def _call(self, target: str, line: str, takes_arguments: bool = True):
        engine = api.engine()
        with usage_errors():
            tool = target == "tool"
            name, payload, options = parse_call_line(
                line, TOOL_OPTIONS if tool else CALL_OPTIONS, takes_arguments=takes_arguments, flags=TOOL_FLAGS if tool else ()
            )
            if isinstance(payload, dict):
                arguments = payload  # verbatim: wrong types can be sent on purpose
            elif payload:
                schema = engine.connection_for(options.get("server")).input_schema(target, name)
                arguments = parse_pairs(payload, schema, f"{target} {name!r}")
            else:
                arguments = None
            timeout = parse_seconds(options["timeout"]) if "timeout" in options else None
            retry = None
            if "retries" in options or "backoff" in options:
                retries = parse_count(options.get("retries", "3"), "--retries")
                backoff = parse_seconds(options["backoff"], "--backoff") if "backoff" in options else 0.1
                retry = Retry(retries=retries, backoff=backoff)
            limits = {}
            if tool:
                limits["reset_on_progress"] = "reset-on-progress" in options
                if "max-timeout" in options:
                    limits["max_timeout"] = parse_seconds(options["max-timeout"], "--max-timeout")
            if "elicit" in options:
                limits["elicit"] = self._answers(options["elicit"])
            # Engine.run, the sync face's one path: its checks raise Mistakes (said in one line
            # here), and a call's outcome, whatever it is, is returned, never raised.
            return engine.run(target, name, arguments, timeout, retry, options.get("server"), watch if tool else None, **limits)

    def _answers(self, text: str):
        """`--elicit`: decline or cancel, or the name of a variable holding a function or a list of answers."""
        if text in ("decline", "cancel"):
            return text
        if not text.isidentifier():
            raise ArgumentsError(f"--elicit {text}: give decline, cancel, or the name of a variable holding answers")
        if text not in self.shell.user_ns:
            raise ArgumentsError(f"--elicit {text}: no variable of that name (a function or a list of answers)")
        return self.shell.user_ns[text]

    @no_var_expand
    @line_magic
    def mcp_call(self, line: str):
        """Call a tool; returns its Outcome.

            %mcp_call NAME [JSON-object | key=value ...] [--timeout S] [--retries N [--backoff S]] [--server NAME]
                      [--reset-on-progress [--max-timeout S]] [--elicit VAR]

        --reset-on-progress restarts the deadline at each progress event the tool sends, never
        past --max-timeout seconds (default: 10 timeouts); the progress shows live as a bar.
        --elicit VAR answers the questions the tool asks while it runs from the variable VAR (a
        function (message, schema) -> answer, or a list of answers used in order), or with
        decline / cancel. --retries N retries a timeout up to N times, waiting S, 2S, 4S... (default 0.1 s); only
        for tools annotated --idempotent or --read-only. key=value strings are coerced with the tool's input schema (count=3 sends 3);
        a JSON object is sent verbatim, so wrong types can be sent on purpose:

            %mcp_call get_author title=Dune
            %mcp_call get_author {"title": 42} --timeout 5
        """
        return self._call("tool", line)

    @no_var_expand
    @line_magic
    def mcp_read(self, line: str):
        """Read a resource; returns its Outcome.

            %mcp_read URI [--timeout S] [--retries N [--backoff S]] [--server NAME] [--elicit VAR]
        """
        return self._call("resource", line, takes_arguments=False)

    @no_var_expand
    @line_magic
    def mcp_get_prompt(self, line: str):
        """Get a prompt; returns its Outcome.

            %mcp_get_prompt NAME [JSON-object | key=value ...] [--timeout S] [--retries N [--backoff S]] [--server NAME] [--elicit VAR]
        """
        return self._call("prompt", line)

    # -- other servers --------------------------------------------------------------------------

    @no_var_expand
    @line_magic
    def mcp_connect(self, line: str):
        """Connect to an outside MCP server, over streamable HTTP or as a stdio process.

            %mcp_connect NAME URL [--header 'Name: value' ...] [--auth VAR] [--mode M] [--sampling VAR] [--root R ...] [--timeout S]
            %mcp_connect NAME [--env KEY=VALUE ...] [--cwd DIR] [--mode M] [--sampling VAR] [--root R ...] [--timeout S] -- COMMAND ARGS...

        Everything after `--` is the command, as typed. `--auth VAR` names a variable holding an
        httpx2 Auth (the SDK's OAuth providers); `--mode` is the protocol era: auto (the default),
        2025-11-25 or 2026-07-28; `--sampling VAR` answers the server's sampling requests (a
        function or a list of replies); each `--root PATH` (or URI) is offered as a root. Connecting again under a name replaces
        that connection once the new one is up. Then `--server NAME` on %mcp_call, %mcp_read,
        %mcp_get_prompt and %mcp_list (or `server=NAME` in Python) talks to it:

            %mcp_connect everything -- npx -y @modelcontextprotocol/server-everything
            %mcp_connect weather https://example.com/mcp --header "Authorization: Bearer ..."
        """
        with usage_errors():  # said in one line: nothing was connected
            name, target, options = _connect_line(line)
            for option, what in (("auth", "an httpx2 Auth"), ("sampling", "a function or a list of replies")):
                if option in options:
                    var = options[option]
                    if var not in self.shell.user_ns:
                        raise ArgumentsError(f"--{option} {var}: no variable of that name ({what})")
                    options[option] = self.shell.user_ns[var]
            return api.connect(name, target, **options)

    @no_var_expand
    @line_magic
    def mcp_disconnect(self, line: str):
        """Close a connection (a stdio server's process ends).

            %mcp_disconnect NAME
        """
        with usage_errors():
            words = split(line)
            if len(words) != 1:
                raise ArgumentsError("%mcp_disconnect takes one server name")
            connection = api.disconnect(words[0])
        print(f"disconnected {connection.name}")

    @no_var_expand
    @line_magic
    def mcp_servers(self, line: str):
        """Show the connections: transport, state, the server's name and version, what it offers.

            %mcp_servers
        """
        _no_arguments("mcp_servers", line)
        return api.servers()

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
        args = _parse(self.mcp_panel, line)
        with usage_errors():
            history = History.open(args.history) if args.history is not None else None
            return api.panel(server=args.server, history=history)

    @no_var_expand
    @line_magic
    @magic_arguments()
    @argument("--port", type=int, default=0, help="port to listen on (default: 0, a free one)")
    @argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, this machine only)")
    @argument(
        "--dangerously-no-auth", action="store_true",
        help="accept requests without the bearer token (127.0.0.1 only; for clients that cannot send a header)",
    )  # fmt: skip
    @argument(
        "--max-connections", type=int, default=None, metavar="N",
        help="connections open at once; past them, a client waits its turn (default: half the descriptor limit, 1024 at most)",
    )  # fmt: skip
    @argument(
        "--header-timeout", type=float, default=10.0, metavar="S",
        help="seconds the server waits on a client for a request's head, its body, or to read its answer (default: 10)",
    )  # fmt: skip
    @argument("--stop", action="store_true", help="stop serving")
    def mcp_serve(self, line: str):
        """Serve this kernel's tools, resources and prompts to outside clients over streamable HTTP.

            %mcp_serve                 # http://127.0.0.1:PORT/mcp, with a random bearer token
            %mcp_serve --port 8765
            %mcp_serve --stop

        Returns the handle (`.url`, `.token`, `.configs()` for Claude Desktop, Cursor, VS Code
        and the Inspector, `.stop()`); the kernel stays free. Outside clients' calls land in
        the history (`via` http). Running it again with the same options returns the server
        already running (same URL and token); other options while serving are refused until
        `%mcp_serve --stop`.
        """
        args = _parse(self.mcp_serve, line)
        if args.stop:
            from mcp_nb.serving import stop  # starlette and uvicorn: loaded when the kernel first serves

            stopped = stop(api.engine())
            print(f"stopped serving at {stopped.url}" if stopped is not None else "not serving")
            return None
        with usage_errors():
            try:
                return api.serve(
                    port=args.port, host=args.host, dangerously_no_auth=args.dangerously_no_auth,
                    max_connections=args.max_connections, header_timeout=args.header_timeout,
                )  # fmt: skip
            except OSError as err:  # the port is taken, the address is not this machine's...
                raise BadValue(err.strerror or str(err)) from None

    @no_var_expand
    @line_magic
    @magic_arguments()
    @argument("--summary", action="store_true", help="counts per name and outcome, with totals")
    @argument("--by", choices=["session"], help="with --summary: the sessions side by side (outcome counts and durations per tool)")
    @argument("--file", metavar="PATH", help="a history file's calls, every session's (instead of this kernel's history)")
    @argument("--clear", action="store_true", help="forget every recorded call")
    def mcp_history(self, line: str):
        """Show the call history (the latest calls, outcomes coloured).

            %mcp_history             # the latest calls; all of them: mcp_nb.history().to_frame()
            %mcp_history --summary   # counts per name x outcome
            %mcp_history --file calls.mcpnb --summary --by session   # a history file's sessions side by side
            %mcp_history --clear
        """
        args = _parse(self.mcp_history, line)
        if args.by is not None and not args.summary:
            raise UsageError("--by goes with --summary: %mcp_history --summary --by session")
        if args.file is not None:
            if args.clear:
                raise UsageError("--clear forgets this kernel's calls; a history file keeps its own (delete the folder to forget them)")
            with usage_errors():
                history = History.open(args.file)
        else:
            history = api.history()
        if args.clear:
            forgotten = len(history)
            history.clear()
            kept = f"; {history.file} keeps them" if history.file is not None else ""
            print(f"history cleared ({forgotten} calls forgotten{kept})")
            return None
        if args.summary:
            with usage_errors():
                return history.summary(by=args.by)
        return history

    # -- regression cases -----------------------------------------------------------------------

    @no_var_expand
    @line_magic
    @magic_arguments()
    @argument("path", help="the cases file to write (JSON)")
    @argument("--last", type=int, metavar="N", help="only the latest N calls")
    @argument("--name", metavar="PATTERN", help="only calls whose name (or URI) matches this glob, e.g. get_*")
    @argument("--server", metavar="NAME", help="only the calls made to this connection")
    @argument("--replayed", action="store_true", help="also the calls a replay made (left out by default: they are the cases again)")
    def mcp_save_cases(self, line: str):
        """Write the recorded calls as regression cases: one case per call, with its expected outcome.

            %mcp_save_cases cases.json
            %mcp_save_cases cases.json --last 5 --name "get_*"

        Replay them with %mcp_replay, mcp_nb.replay(), or pytest --mcp-cases (docs/cases.md).
        """
        args = _parse(self.mcp_save_cases, line)
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
        "--mode", action="append", metavar="ERA",
        help="replay every case at this protocol era (2025-11-25, 2026-07-28); repeat it for each era to compare",
    )  # fmt: skip
    def mcp_replay(self, line: str):
        """Replay a cases file and show expected against got, the failures first, with why.

            %mcp_replay cases.json
            %mcp_replay cases.json --server bookshop
            %mcp_replay cases.json --mode 2025-11-25 --mode 2026-07-28

        With --mode, every case runs at each era named, and a case answered otherwise at one era
        than at the first is called out. Returns the report; its `.frame` is the DataFrame
        `mcp_nb.replay()` returns.
        """

        args = _parse(self.mcp_replay, line)
        with usage_errors():
            frame = api.replay(args.path, args.server, concurrency=args.concurrency, modes=args.mode)
        return ReplayReport(frame)

    # -- surfaces -------------------------------------------------------------------------------

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
        args = _parse(self.mcp_snapshot, line)
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
        args = _parse(self.mcp_diff, line)
        with usage_errors():
            frame = api.diff(args.old, args.new)
        return DiffReport(frame)


class _Named(str):
    """A variable's name given on a magic line, to be looked up in the user's namespace."""


def _connect_line(line: str) -> tuple[str, str | list[str], dict]:
    """`NAME URL [--header H]... [--auth VAR] [--mode M] [--sampling VAR] [--root R]... [--timeout S]` or
    `NAME [--env K=V]... [--cwd D] [--mode M] [--sampling VAR] [--root R]... [--timeout S] -- COMMAND...`."""
    head, sep, command = line.partition(" -- ")
    if not sep and line.rstrip().endswith(" --"):
        head, sep, command = line.rstrip()[:-3], " -- ", ""
    words = split(head)
    if not words or words[0].startswith("-"):
        raise ArgumentsError("the connection's name comes first: %mcp_connect NAME URL, or %mcp_connect NAME -- COMMAND")
    name, rest = words[0], words[1:]
    options: dict = {}
    target: str | list[str] | None = None
    headers: dict[str, str] = {}
    env: dict[str, str] = {}
    i = 0
    while i < len(rest):
        word = rest[i]
        key, eq, inline = word.partition("=") if word.startswith("--") else (word, "", "")
        if key in ("--header", "--env", "--cwd", "--timeout", "--mode", "--auth", "--sampling", "--root"):
            if eq:
                value = inline
            elif i + 1 < len(rest):
                value, i = rest[i + 1], i + 1
            else:
                raise ArgumentsError(f"{key} needs a value")
            if key == "--header":
                field, colon, text = value.partition(":")
                if not colon or not field.strip():
                    raise ArgumentsError(f"--header takes 'Name: value', got {value!r}")
                headers[field.strip()] = text.strip()
            elif key == "--env":
                var, equals, text = value.partition("=")
                if not equals or not var:
                    raise ArgumentsError(f"--env takes KEY=VALUE, got {value!r}")
                env[var] = text
            elif key == "--cwd":
                options["cwd"] = value
            elif key == "--mode":
                options["mode"] = value  # checked by connect, which says which modes there are
            elif key == "--auth":
                if not value.isidentifier():
                    raise ArgumentsError(f"--auth takes the name of a variable holding an httpx Auth (mcp_nb.OAuth(...)), got {value!r}")
                options["auth"] = _Named(value)
            elif key == "--sampling":
                if not value.isidentifier():
                    raise ArgumentsError(f"--sampling takes the name of a variable holding a function or a list of replies, got {value!r}")
                options["sampling"] = _Named(value)
            elif key == "--root":
                options.setdefault("roots", []).append(value)
            else:
                options["timeout"] = parse_seconds(value)
        elif word.startswith("-"):
            raise ArgumentsError(f"unknown option {word} (known: --header, --auth, --mode, --sampling, --root, --env, --cwd, --timeout; the command goes after --)")
        elif target is None:
            target = word
        else:
            raise ArgumentsError(f"unexpected {word!r}: a command with arguments goes after --")
        i += 1
    if sep:
        if target is not None:
            raise ArgumentsError("give a URL or a command after --, not both")
        command_words = split(command)
        if not command_words:
            raise ArgumentsError("nothing after --: give the command that starts the server")
        target = command_words
    if target is None:
        raise ArgumentsError("missing the server: a URL, or -- and the command that starts it")
    if headers:
        options["headers"] = headers
    if env:
        options["env"] = env
    return name, target, options


def load_ipython_extension(ipython) -> None:
    """What `%load_ext mcp_nb` calls (through the package's name of the same name)."""
    magics = McpMagics(shell=ipython, config=ipython.config)
    ipython.register_magics(magics)
    if magics not in ipython.configurables:
        ipython.configurables.append(magics)
    open_session_early(api.engine())  # while the next cells run: the first call finds it open
    completion.install(ipython, api.engine)  # <TAB> on %mcp_call, %mcp_read, %mcp_get_prompt


def unload_ipython_extension(ipython) -> None:
    """What `%unload_ext mcp_nb` calls: the magics' links to the settings are undone."""
    for configurable in list(ipython.configurables):
        if isinstance(configurable, McpMagics):
            for each in configurable._links:
                each.unlink()
            ipython.configurables.remove(configurable)
