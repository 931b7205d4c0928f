"""Tab completion on the magic lines: `%mcp_call <TAB>` offers the tools, `%mcp_call add <TAB>`
their arguments (`a=`, `b=`), `--server <TAB>` the connections, and a prompt's or a resource
template's argument value what the server's `completion/complete` suggests.

What is offered is read from the connection the line names (`--server NAME`, the kernel's
own server otherwise), as it was last listed: completing never changes anything, and a
value suggestion waits at most a moment for the server (a completer must not hang the
notebook's typing).
"""

from __future__ import annotations

import logging
import shlex
from typing import Any

from mcp_nb.calling.suggestions import suggested

log = logging.getLogger("mcp_nb")

KINDS = {"mcp_call": "tool", "mcp_read": "resource", "mcp_get_prompt": "prompt"}
OPTIONS = ("--server", "--timeout", "--retry", "--elicit", "--quiet")


def install(ipython: Any, engine: Any) -> None:
    """Hook the completer into IPython for each calling magic."""
    for magic in KINDS:
        ipython.set_hook("complete_command", lambda _shell, event, magic=magic: complete(engine(), magic, event.line), str_key=f"%{magic}")


def complete(engine: Any, magic: str, line: str) -> list[str]:
    """What may come next on `line` (the magic's line up to the cursor)."""
    try:
        return _complete(engine, magic, line)
    except Exception:  # noqa: BLE001 - a completer that fails offers nothing; typing goes on
        log.debug("completing %r failed", line, exc_info=True)
        return []


def _complete(engine: Any, magic: str, line: str) -> list[str]:
    words = _words(line.split(None, 1)[1] if " " in line else "")
    ending = "" if line.endswith(" ") else (words.pop() if words else "")
    if words and words[-1] == "--server":
        return sorted(name for name in engine.connections if name.startswith(ending))
    if ending.startswith("-"):
        return [option for option in OPTIONS if option.startswith(ending)]
    connection = _connection(engine, words)
    kind = KINDS[magic]
    positional = [w for i, w in enumerate(words) if not w.startswith("-") and (i == 0 or words[i - 1] != "--server")]
    if not positional:  # the name comes first
        return sorted(key for key in _keys(connection, kind) if key.startswith(ending))
    entry = connection.get(kind, positional[0])
    if entry is None:
        return []
    field, equals, typed = ending.partition("=")
    if equals:
        # IPython splits the word at "=": what is offered replaces what follows it.
        return _suggested(engine, connection, entry, field, typed, positional[1:])
    given = {w.partition("=")[0] for w in positional[1:]}
    names = ((entry.input_schema or {}).get("properties") or {}).keys()
    return sorted(f"{name}=" for name in names if name not in given and name.startswith(ending))


def _words(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:  # an open quote: complete what is there
        return text.split()


def _connection(engine: Any, words: list[str]) -> Any:
    if "--server" in words:
        at = words.index("--server")
        if at + 1 < len(words) and words[at + 1] in engine.connections:
            return engine.connections[words[at + 1]]
    return engine.connection


def _keys(connection: Any, kind: str) -> list[str]:
    return [entry.uri if kind == "resource" and entry.uri else entry.name for entry in connection.entries() if entry.kind == kind]


def _suggested(engine: Any, connection: Any, entry: Any, field: str, typed: str, given: list[str]) -> list[str]:
    """The server's `completion/complete` suggestions for a prompt's or a template's argument."""
    context = {k: v for k, _, v in (w.partition("=") for w in given) if k}
    return engine.loop.run(suggested(connection, entry, field, typed, context))
