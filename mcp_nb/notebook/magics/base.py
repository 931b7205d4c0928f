"""What every mcp_nb magic shares: its line read by its parser, and a mistake said in one line.

A magic declares what it takes with IPython's `@magic_arguments` / `@argument`; `parse` reads
the line with that parser (`notebook/options.py`). Whatever a magic raises is either the
user's to fix, said as a one-line `UsageError` with nothing changed, or a bug, whose traceback
shows so that it can be reported. `said_in_one_line` is the one place that tells them apart.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from IPython.core.error import UsageError

from mcp_nb.mistakes import McpNbError, first_line
from mcp_nb.notebook.arguments import ArgumentsError
from mcp_nb.notebook.options import read


def said_in_one_line(err: BaseException) -> bool:
    """Whether a magic says `err` in one line: whatever mcp_nb raises on purpose (`McpNbError`:
    the user's mistakes, a server that cannot be connected, calls nested past the limit...; the
    tree is in `mcp_nb/mistakes.py`). Anything else is mcp_nb's own bug, or a library's, and
    keeps its traceback."""
    return isinstance(err, McpNbError)


@contextmanager
def usage_errors() -> Iterator[None]:
    """Report the user's mistakes as one line, without a traceback; let a bug through."""
    try:
        yield
    except Exception as err:
        if not said_in_one_line(err):
            raise
        raise UsageError(first_line(err)) from None


def parse(magic: Any, line: str) -> argparse.Namespace:
    """The magic's options from its line, read by its parser (`options.read`: shell quoting, JSON
    kept as typed, a trailing `# comment` dropped)."""
    with usage_errors():
        return read(magic.parser, line)


def variable(namespace: Mapping[str, Any], name: str, option: str, what: str) -> Any:
    """The value of the user's variable an option names (`--auth VAR`), or a one-line error."""
    if name not in namespace:
        raise ArgumentsError(f"{option} {name}: no variable of that name ({what})")
    return namespace[name]
