"""Registering: `%%mcp_tool`, `%%mcp_resource`, `%%mcp_prompt` run a cell and register its function
on the kernel's MCP server; `%mcp_list` shows what is registered, `%mcp_remove` takes it away."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from IPython.core.magic import Magics, cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments

from mcp_nb import api
from mcp_nb.mistakes import BadJson, read_json
from mcp_nb.notebook.arguments import ArgumentsError
from mcp_nb.notebook.cells import defined_function, function_name, restoring
from mcp_nb.notebook.magics.base import parse, usage_errors, variable
from mcp_nb.registering.faults import Faults
from mcp_nb.registering.registry import check_tool_name, check_uri

# The cell magics' --quiet: a dashboard (Voila) shows what a cell displays, and its readers
# have no use for a registration card.
QUIET = argument("--quiet", action="store_true", help="register without showing the card (for dashboards such as Voila)")


@magics_class
class RegisteringMagics(Magics):
    """Register tools, resources and prompts from notebook cells."""

    def _register(
        self, cell: str, register: Callable[[Callable[..., Any]], Any], validate_default_name: bool, quiet: bool = False
    ):
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
        "--input-schema",
        metavar="SCHEMA",
        help="the input JSON Schema clients see, where the signature cannot say it: a JSON object, or the name of a dict",
    )
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
        args = parse(self.mcp_tool, line)
        with usage_errors():
            if args.name is not None:
                check_tool_name(args.name)
            faults = Faults.parse(args.inject) if args.inject is not None else None
            schema = self._schema(args.input_schema) if args.input_schema is not None else None
        flags = {
            "read_only": args.read_only,
            "idempotent": args.idempotent,
            "destructive": args.destructive,
            "open_world": args.open_world,
        }
        registry = api.engine().registry
        return self._register(
            cell,
            lambda fn: registry.add_tool(
                fn,
                name=args.name,
                title=args.title,
                description=args.description,
                annotations=flags,
                inject=faults,
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
        return variable(self.shell.user_ns, text, "--input-schema", "give a JSON object or a dict's name")

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
        args = parse(self.mcp_resource, line)
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
        args = parse(self.mcp_prompt, line)
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
        args = parse(self.mcp_list, line)
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
        args = parse(self.mcp_remove, line)
        with usage_errors():
            entry = api.remove(args.key, args.kind)
        print(f"removed {entry.kind} {entry.key}")
