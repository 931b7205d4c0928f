"""`python -m mcp_nb COMMAND ...`: see `mcp_nb.commands`."""

import sys

from mcp_nb.commands import COMMANDS, main  # noqa: F401 - COMMANDS: what the help lists

if __name__ == "__main__":
    sys.exit(main(prog="python -m mcp_nb"))
