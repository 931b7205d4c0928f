"""Serving: `%mcp_serve` offers the kernel's tools, resources and prompts to outside clients over
streamable HTTP, on this machine and behind a token."""

from __future__ import annotations

from IPython.core.magic import Magics, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments

from mcp_nb import api
from mcp_nb.mistakes import BadValue
from mcp_nb.notebook.magics.base import parse, usage_errors


@magics_class
class ServingMagics(Magics):
    """Serve the kernel to outside MCP clients."""

    @no_var_expand
    @line_magic
    @magic_arguments()
    @argument("--port", type=int, default=0, help="port to listen on (default: 0, a free one)")
    @argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, this machine only)")
    @argument(
        "--dangerously-no-auth",
        action="store_true",
        help="accept requests without the bearer token (127.0.0.1 only; for clients that cannot send a header)",
    )
    @argument(
        "--max-connections",
        type=int,
        default=None,
        metavar="N",
        help="connections open at once; past them, a client waits its turn (default: half the descriptor limit, 1024 at most)",
    )
    @argument(
        "--header-timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="seconds the server waits on a client for a request's head, its body, or to read its answer (default: 10)",
    )
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
        args = parse(self.mcp_serve, line)
        if args.stop:
            from mcp_nb.serving import stop  # starlette and uvicorn: loaded when the kernel first serves

            with usage_errors():
                stopped = stop(api.engine())
            print(f"stopped serving at {stopped.url}" if stopped is not None else "not serving")
            return None
        with usage_errors():
            try:
                return api.serve(
                    port=args.port,
                    host=args.host,
                    dangerously_no_auth=args.dangerously_no_auth,
                    max_connections=args.max_connections,
                    header_timeout=args.header_timeout,
                )
            except OSError as err:  # the port is taken, the address is not this machine's...
                raise BadValue(err.strerror or str(err)) from None
