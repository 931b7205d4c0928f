"""A model in the loop: `%mcp_agent` gives a task to a model with the server's tools and shows the episode."""

from __future__ import annotations

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments

from mcp_nb.episodes import faces
from mcp_nb.models.standin import StandIn
from mcp_nb.notebook.magics.base import parse, usage_errors, variable


@magics_class
class AgentMagics(Magics):
    """One episode of a model with the server's tools."""

    @no_var_expand
    @line_magic
    @magic_arguments()
    @argument(
        "task",
        nargs="+",
        help="what the model is asked to do; quote it (\"Who wrote 'Dun'?\"): a line ending in ? asks IPython for help",
    )
    @argument(
        "--model",
        metavar="VAR",
        help="the variable that holds the model: a function, mcp_nb.OpenAICompatible(...), mcp_nb.Anthropic(...)",
    )
    @argument(
        "--stand-in", action="store_true", help="the scripted stand-in (written rules, not a language model): no key, no network"
    )
    @argument("--server", metavar="NAME", help="the connection whose tools are offered (the kernel's own by default)")
    @argument("--tools", metavar="NAMES", help="only these tools, comma-separated")
    @argument("--max-turns", type=int, default=8, metavar="N", help="the model's replies at most (default 8)")
    @argument(
        "--policy", choices=["guides", "transparent"], help="what the host tells the model of each outcome (default: guides)"
    )
    @argument("--timeout", type=float, metavar="SECONDS", help="each tool call's deadline")
    @argument("--system", metavar="TEXT", help="a system prompt")
    def mcp_agent(self, line: str):
        """Give a task to a model with the server's tools; show the episode (each call's card inline).

            %mcp_agent --stand-in "Who wrote 'Dun'?"
            %mcp_agent --model smol --max-turns 4 "Who wrote 'Dun'?"
            %mcp_agent --model gpt --tools get_author --policy transparent "Who wrote 'Dun'?"

        Every tool call the model makes is an ordinary call in the history, with its episode and
        turn. Returns the `Episode`; in Python, `mcp_nb.agent(task, model, ...)`.
        """
        args = parse(self.mcp_agent, line)
        if args.stand_in == (args.model is not None):
            raise UsageError("name the model: --model VARIABLE, or --stand-in for the scripted stand-in")
        with usage_errors():
            model = (
                StandIn()
                if args.stand_in
                else variable(self.shell.user_ns, args.model, "--model", "a model: a function or an adapter")
            )
            tools = [name.strip() for name in args.tools.split(",") if name.strip()] if args.tools is not None else None
            return faces.agent(
                " ".join(args.task),
                model,
                server=args.server,
                tools=tools,
                max_turns=args.max_turns,
                policy=args.policy,
                timeout=args.timeout,
                system=args.system,
            )
