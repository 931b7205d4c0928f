"""Connecting: `%mcp_connect` reaches an outside MCP server (a URL, or a command after `--`),
`%mcp_disconnect` closes it, `%mcp_servers` shows every connection."""

from __future__ import annotations

import argparse

from IPython.core.magic import Magics, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, kwds, magic_arguments

from mcp_nb import api
from mcp_nb.notebook.arguments import ArgumentsError, parse_seconds
from mcp_nb.notebook.magics.base import parse, usage_errors, variable
from mcp_nb.notebook.options import read_with_tail

# What --auth and --sampling name: a variable holding...
HOLDING = {"auth": "an httpx2 Auth (mcp_nb.OAuth(...))", "sampling": "a function or a list of replies"}


@magics_class
class ConnectingMagics(Magics):
    """Connect to outside MCP servers, list the connections, close them."""

    @no_var_expand
    @line_magic
    @magic_arguments()
    @kwds(usage="%(prog)s NAME URL [options]\n  %%%(prog)s NAME [options] -- COMMAND [ARGUMENT ...]")
    @argument("name", nargs="?", metavar="NAME", help="the connection's name; then --server NAME on the other magics talks to it")
    @argument("url", nargs="?", metavar="URL", help="a streamable HTTP server's address")
    @argument(
        "command",
        nargs="*",
        metavar="-- COMMAND",
        help="a stdio server: after --, the command that starts it, with its arguments, as typed",
    )
    @argument(
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="an HTTP header sent with every request (repeat it for each)",
    )
    @argument(
        "--auth", metavar="VAR", help="a variable holding an httpx2 Auth, such as mcp_nb.OAuth(...) or the SDK's OAuth providers"
    )
    @argument("--mode", metavar="M", help="the protocol era: auto (the default), 2025-11-25 or 2026-07-28")
    @argument(
        "--sampling",
        metavar="VAR",
        help="a variable holding what answers the server's sampling requests: a function or a list of replies",
    )
    @argument(
        "--root",
        action="append",
        dest="roots",
        metavar="R",
        help="a folder (a path or a URI) offered to the server as a root (repeat it for each)",
    )
    @argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a stdio server's environment variable (repeat it for each)",
    )
    @argument("--cwd", metavar="DIR", help="the folder a stdio server starts in")
    @argument(
        "--timeout",
        metavar="S",
        help="seconds the server has to start and answer (default: %%config McpMagics.connect_timeout, else McpMagics.timeout)",
    )
    def mcp_connect(self, line: str):
        """Connect to an outside MCP server, over streamable HTTP or as a stdio process.

        Everything after `--` is the command, as typed. Connecting again under a name replaces
        that connection once the new one is up. Then `--server NAME` on %mcp_call, %mcp_read,
        %mcp_get_prompt and %mcp_list (or `server=NAME` in Python) talks to it:

            %mcp_connect everything -- npx -y @modelcontextprotocol/server-everything
            %mcp_connect weather https://example.com/mcp --header "Authorization: Bearer ..."
        """
        with usage_errors():  # said in one line: nothing was connected
            args, command = read_with_tail(self.mcp_connect.parser, line)
            target, options = connect_options(args, command)
            for option in ("auth", "sampling"):
                if option in options:
                    options[option] = variable(self.shell.user_ns, options[option], f"--{option}", HOLDING[option])
            return api.connect(args.name, target, **options)

    @no_var_expand
    @line_magic
    @magic_arguments()
    @kwds(usage="%(prog)s NAME")
    @argument("name", nargs="?", metavar="NAME", help="the connection to close")
    def mcp_disconnect(self, line: str):
        """Close a connection (a stdio server's process ends).

        %mcp_disconnect everything
        """
        args = parse(self.mcp_disconnect, line)
        with usage_errors():
            if args.name is None:
                raise ArgumentsError("%mcp_disconnect takes one server name")
            connection = api.disconnect(args.name)
        print(f"disconnected {connection.name}")

    @no_var_expand
    @line_magic
    @magic_arguments()
    def mcp_servers(self, line: str):
        """Show the connections: transport, state, the server's name and version, what it offers.

        %mcp_servers
        """
        parse(self.mcp_servers, line)
        with usage_errors():
            return api.servers()


def connect_options(args: argparse.Namespace, command: list[str] | None) -> tuple[str | list[str], dict]:
    """`%mcp_connect`'s server (its URL, or the command after `--`) and the options for `connect`;
    `auth` and `sampling` are the names of the user's variables."""
    if args.name is None:
        raise ArgumentsError("the connection's name comes first: %mcp_connect NAME URL, or %mcp_connect NAME -- COMMAND")
    if args.command:
        raise ArgumentsError(f"unexpected {args.command[0]!r}: a command and its arguments go after --")
    if args.url is not None and command:
        raise ArgumentsError("give a URL or a command after --, not both")
    if command == []:
        raise ArgumentsError("nothing after --: give the command that starts the server")
    if args.url is None and command is None:
        raise ArgumentsError("missing the server: a URL, or -- and the command that starts it")
    options: dict = {}
    headers, env = {}, {}
    for value in args.header:
        field, colon, text = value.partition(":")
        if not colon or not field.strip():
            raise ArgumentsError(f"--header takes 'Name: value', got {value!r}")
        headers[field.strip()] = text.strip()
    for value in args.env:
        var, equals, text = value.partition("=")
        if not equals or not var:
            raise ArgumentsError(f"--env takes KEY=VALUE, got {value!r}")
        env[var] = text
    for option in ("auth", "sampling"):
        var = getattr(args, option)
        if var is not None:
            if not var.isidentifier():
                raise ArgumentsError(f"--{option} takes the name of a variable holding {HOLDING[option]}, got {var!r}")
            options[option] = var
    if args.timeout is not None:
        options["timeout"] = parse_seconds(args.timeout)
    given = {"headers": headers or None, "env": env or None, "cwd": args.cwd, "mode": args.mode, "roots": args.roots}
    options.update((name, value) for name, value in given.items() if value is not None)
    return args.url if args.url is not None else command, options
