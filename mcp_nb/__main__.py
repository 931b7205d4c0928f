"""`python -m mcp_nb COMMAND ...`: see `mcp_nb.commands`."""

import sys

from mcp_nb.commands import main

sys.exit(main())
