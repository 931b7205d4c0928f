"""The IPython face: thin magics that parse a line and hand plain values to the API.

Every magic gets its line as typed (`no_var_expand`: `{title}` in a URI template and
`$` in JSON are never IPython variables) and splits it by the same rules (`lines.py`:
shell quoting, JSON kept whole, a trailing `# comment` dropped). User mistakes become
one-line `UsageError`s and change nothing. The magics class is
also the traitlets `Configurable` users know from JupySQL: `%config McpMagics` lists
the settings, `%config McpMagics.timeout = 10` sets one, and it is the same setting
`mcp_nb.configure(timeout=10)` changes.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Iterator

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments
from traitlets import link

import mcp_nb

from .arguments import ArgumentsError, parse_call_line, parse_count, parse_pairs, parse_seconds
from .cells import CellError, defined_function, function_name, restoring
from .config import CONFIGURABLE, SharedTraits, settings
from .faults import Faults
from .history import summarize
from .lines import split
from .registry import check_tool_name, check_uri
from .retry import Retry

CALL_OPTIONS = ("timeout", "retries", "backoff")


@contextmanager
def usage_errors() -> Iterator[None]:
    """Report the user's mistakes as one line, without a traceback."""
    try:
        yield
    except (CellError, ArgumentsError, ValueError, TypeError) as err:
        raise UsageError(str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__) from None


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
        self._links = [link((self, name), (settings, name)) for name in CONFIGURABLE]

    # -- registering ----------------------------------------------------------------------------

    def _register(self, cell: str, register, validate_default_name: bool):
        """Check the cell, run it in the user's namespace, register its function.

        Checks that need no execution come first; if registering still fails, the name the
        cell bound is put back as it was, so a bad cell changes nothing.
        """
        source = self.shell.transform_cell(cell)
        with usage_errors():
            fname = function_name(source)
            if validate_default_name:
                check_tool_name(fname)
        namespace = self.shell.user_ns
        with restoring(namespace, fname):
            # Compiled as IPython compiles a cell: under a cached file name (tracebacks show the
            # cell's lines), with the user's __future__ imports and not this module's.
            compiler = self.shell.compile
            filename = compiler.cache(source)
            exec(compiler(compiler.ast_parse(source, filename), filename, "exec"), namespace)
            with usage_errors():
                return register(defined_function(namespace, fname))

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
        registry = mcp_nb.engine().registry
        return self._register(
            cell,
            lambda fn: registry.add_tool(
                fn, name=args.name, title=args.title, description=args.description, annotations=flags, inject=faults,
                input_schema=schema,
            ),
            validate_default_name=args.name is None,
        )

    def _schema(self, text: str):
        """`--input-schema`: a JSON object as typed, or the name of a variable holding one."""
        if text.lstrip().startswith("{"):
            try:
                return json.loads(text)
            except json.JSONDecodeError as err:
                raise ValueError(f"--input-schema is not valid JSON: {err}") from None
        if text not in self.shell.user_ns:
            raise ValueError(f"--input-schema {text}: no variable of that name (give a JSON object or a dict's name)")
        return self.shell.user_ns[text]

    @no_var_expand
    @cell_magic
    @magic_arguments()
    @argument("uri", help="a URI (books://catalog) or a URI template (books://{title})")
    @argument("--name", help="resource name (default: the function's name)")
    @argument("--title", help="human-readable title")
    @argument("--description", help="description (default: the docstring)")
    @argument("--mime-type", help="MIME type of the content (default: text/plain)")
    def mcp_resource(self, line: str, cell: str):
        """Register the cell's function as a resource, or a resource template when the URI has {variables}.

            %%mcp_resource books://{title}
            def book(title: str) -> str:
                return f"{title} by {CATALOG[title]}"
        """
        args = _parse(self.mcp_resource, line)
        with usage_errors():
            check_uri(args.uri)
        registry = mcp_nb.engine().registry
        return self._register(
            cell,
            lambda fn: registry.add_resource(
                fn, args.uri, name=args.name, title=args.title, description=args.description, mime_type=args.mime_type
            ),
            validate_default_name=False,
        )

    @no_var_expand
    @cell_magic
    @magic_arguments()
    @argument("--name", help="prompt name (default: the function's name)")
    @argument("--title", help="human-readable title")
    @argument("--description", help="description (default: the docstring)")
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
        registry = mcp_nb.engine().registry
        return self._register(
            cell,
            lambda fn: registry.add_prompt(fn, name=args.name, title=args.title, description=args.description),
            validate_default_name=args.name is None,
        )

    @no_var_expand
    @line_magic
    def mcp_list(self, line: str):
        """Show what is registered: one row per tool, resource and prompt.

            %mcp_list
        """
        _no_arguments("mcp_list", line)
        return mcp_nb.registered()

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
            entry = mcp_nb.remove(args.key, args.kind)
        print(f"removed {entry.kind} {entry.key}")

    # -- calling --------------------------------------------------------------------------------

    def _call(self, target: str, line: str, takes_arguments: bool = True):
        engine = mcp_nb.engine()
        with usage_errors():
            name, payload, options = parse_call_line(line, CALL_OPTIONS, takes_arguments=takes_arguments)
            if isinstance(payload, dict):
                arguments = payload  # verbatim: wrong types can be sent on purpose
            elif payload:
                schema = engine.registry.input_schema(target, name)
                arguments = parse_pairs(payload, schema, f"{target} {name!r}")
            else:
                arguments = None
            timeout = parse_seconds(options["timeout"]) if "timeout" in options else None
            retry = None
            if "retries" in options or "backoff" in options:
                retries = parse_count(options.get("retries", "3"), "--retries")
                backoff = parse_seconds(options["backoff"], "--backoff") if "backoff" in options else 0.1
                retry = Retry(retries=retries, backoff=backoff)
            call = engine.prepare(target, name, arguments, timeout, retry)
        return call.start().wait()

    @no_var_expand
    @line_magic
    def mcp_call(self, line: str):
        """Call a tool; returns its Outcome.

            %mcp_call NAME [JSON-object | key=value ...] [--timeout S] [--retries N [--backoff S]]

        --retries N retries a timeout up to N times, waiting S, 2S, 4S... (default 0.1 s); only
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

            %mcp_read URI [--timeout S] [--retries N [--backoff S]]
        """
        return self._call("resource", line, takes_arguments=False)

    @no_var_expand
    @line_magic
    def mcp_get_prompt(self, line: str):
        """Get a prompt; returns its Outcome.

            %mcp_get_prompt NAME [JSON-object | key=value ...] [--timeout S] [--retries N [--backoff S]]
        """
        return self._call("prompt", line)

    @no_var_expand
    @line_magic
    def mcp_panel(self, line: str):
        """Show the client panel: pick, fill in and call the server's tools, resources and
        prompts from forms built from their schemas, and watch outcomes and the history.

            %mcp_panel
        """
        _no_arguments("mcp_panel", line)
        return mcp_nb.panel()

    @no_var_expand
    @line_magic
    @magic_arguments()
    @argument("--port", type=int, default=0, help="port to listen on (default: 0, a free one)")
    @argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, this machine only)")
    @argument(
        "--dangerously-no-auth", action="store_true",
        help="accept requests without the bearer token (127.0.0.1 only; for clients that cannot send a header)",
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
            from .serving import stop

            stopped = stop(mcp_nb.engine())
            print(f"stopped serving at {stopped.url}" if stopped is not None else "not serving")
            return None
        with usage_errors():
            try:
                return mcp_nb.serve(port=args.port, host=args.host, dangerously_no_auth=args.dangerously_no_auth)
            except OSError as err:  # the port is taken, the address is not this machine's...
                raise ValueError(err.strerror or str(err)) from None

    @no_var_expand
    @line_magic
    @magic_arguments()
    @argument("--summary", action="store_true", help="counts per name and outcome, with totals")
    @argument("--clear", action="store_true", help="forget every recorded call")
    def mcp_history(self, line: str):
        """Show the call history (the latest calls, outcomes coloured).

            %mcp_history             # the latest calls; all of them: mcp_nb.history().to_frame()
            %mcp_history --summary   # counts per name x outcome
            %mcp_history --clear
        """
        args = _parse(self.mcp_history, line)
        history = mcp_nb.history()
        if args.clear:
            forgotten = len(history)
            history.clear()
            print(f"history cleared ({forgotten} calls forgotten)")
            return None
        if args.summary:
            return summarize(history.to_frame())
        return history


def load(ipython) -> None:
    magics = McpMagics(shell=ipython, config=ipython.config)
    ipython.register_magics(magics)
    if magics not in ipython.configurables:
        ipython.configurables.append(magics)


def unload(ipython) -> None:
    for configurable in list(ipython.configurables):
        if isinstance(configurable, McpMagics):
            for each in configurable._links:
                each.unlink()
            ipython.configurables.remove(configurable)
