"""Tab completion on the magic lines: `%mcp_call <TAB>` offers the tools, `%mcp_call add <TAB>`
their arguments (`a=`, `b=`), `--server <TAB>` the connections, and a prompt's or a resource
template's argument value what the server's `completion/complete` suggests.

What is offered is read from the connection the line names (`--server NAME`, the kernel's
own server otherwise), as it was last listed: completing never changes anything, and a
value suggestion waits at most a moment for the server (a completer must not hang the
notebook's typing).
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass, field
from typing import Any

from mcp_nb.calling.suggestions import suggested
from mcp_nb.notebook.lines import LineError, split
from mcp_nb.notebook.options import END_OF_OPTIONS, takes_value

log = logging.getLogger("mcp_nb")

KINDS = {"mcp_call": "tool", "mcp_read": "resource", "mcp_get_prompt": "prompt"}


def install(ipython: Any, engine: Any, parsers: dict[str, argparse.ArgumentParser]) -> None:
    """Hook the completer into IPython for each calling magic; `parsers` are the magics' own."""
    for magic in KINDS:
        ipython.set_hook(
            "complete_command",
            lambda _shell, event, magic=magic: complete(engine(), magic, parsers[magic], event.line),
            str_key=f"%{magic}",
        )


def complete(engine: Any, magic: str, parser: argparse.ArgumentParser, line: str) -> list[str]:
    """What may come next on `line` (the magic's line up to the cursor)."""
    try:
        return _complete(engine, magic, parser, line)
    except Exception:  # noqa: BLE001 - a completer that fails offers nothing; typing goes on
        log.debug("completing %r failed", line, exc_info=True)
        return []


def _complete(engine: Any, magic: str, parser: argparse.ArgumentParser, line: str) -> list[str]:
    words = _words(line.split(None, 1)[1] if " " in line else "")
    ending = "" if line.endswith((" ", "\t")) else (words.pop() if words else "")
    typed = _read(parser, words)
    if typed.wanting == "--server":
        return _connections(engine, ending)
    if typed.wanting is not None:
        return []  # the value of another option (--timeout 5): nothing to offer
    if not typed.past_options and ending.startswith("-"):
        option, equals, value = ending.partition("=")
        if equals:
            return _connections(engine, value) if option == "--server" else []
        return [name for name in takes_value(parser) if name.startswith(ending)]
    connection = engine.connections.get(typed.server, engine.connection) if typed.server is not None else engine.connection
    kind = KINDS[magic]
    if not typed.positionals:  # the name comes first
        return sorted(key for key in _keys(connection, kind) if key.startswith(ending))
    entry = connection.get(kind, typed.positionals[0])
    if entry is None:
        return []
    field, equals, value = ending.partition("=")
    if equals:
        # IPython splits the word at "=": what is offered replaces what follows it.
        return _suggested(engine, connection, entry, field, value, typed.positionals[1:])
    given = {w.partition("=")[0] for w in typed.positionals[1:]}
    names = ((entry.input_schema or {}).get("properties") or {}).keys()
    return sorted(f"{name}=" for name in names if name not in given and name.startswith(ending))


@dataclass
class _Typed:
    """The words before the cursor as the magic's parser reads them, a line typed halfway included."""

    server: str | None = None
    positionals: list[str] = field(default_factory=list)
    wanting: str | None = None  # the option whose value comes next
    past_options: bool = False  # after `--`: every word is an argument


def _read(parser: argparse.ArgumentParser, words: list[str]) -> _Typed:
    options = takes_value(parser)
    typed = _Typed()
    for word in words:
        if typed.wanting is not None:
            if typed.wanting == "--server":
                typed.server = word
            typed.wanting = None
        elif typed.past_options:
            typed.positionals.append(word)
        elif word == END_OF_OPTIONS:
            typed.past_options = True
        elif word.partition("=")[0] in options:
            option, equals, value = word.partition("=")
            if equals and option == "--server":
                typed.server = value
            elif not equals and options[option]:
                typed.wanting = option
        else:
            typed.positionals.append(word)
    return typed


def _words(text: str) -> list[str]:
    try:
        return split(text, keep_json=True, loose=True)
    except LineError:  # an open quote: complete what is there
        return text.split()


def _connections(engine: Any, typed: str) -> list[str]:
    return sorted(name for name in engine.connections if name.startswith(typed))


def _keys(connection: Any, kind: str) -> list[str]:
    return [entry.uri if kind == "resource" and entry.uri else entry.name for entry in connection.entries() if entry.kind == kind]


def _suggested(engine: Any, connection: Any, entry: Any, field: str, typed: str, given: list[str]) -> list[str]:
    """The server's `completion/complete` suggestions for a prompt's or a template's argument."""
    context = {k: v for k, _, v in (w.partition("=") for w in given) if k}
    return engine.loop.run(suggested(connection, entry, field, typed, context))
