"""A server's surface: everything it offers its clients, written down as one JSON document.

A snapshot holds what a client can list and nothing of how it was reached: the server's name,
version, instructions and capabilities (and the protocol era the snapshot was taken at), then
its tools (input and output schemas, annotations, title, description), resources, resource
templates and prompts with their arguments, each as the server listed it. No URL, header or
token is ever part of it: a snapshot is committed to git and read in CI.

    {
      "mcp_nb_surface": 1,
      "server": {"name": "bookshop", "version": "1.2.0", "capabilities": {...}, "protocol": "2026-07-28"},
      "tools": {"get_book": {"description": "...", "inputSchema": {...}, "annotations": {...}}},
      "resources": {"books://catalog": {"name": "catalog", "mimeType": "text/plain"}},
      "templates": {"books://{title}": {"name": "book"}},
      "prompts": {"review": {"arguments": {"title": {"required": true}}}}
    }

Each entry is keyed by what identifies it to a client (a tool's or a prompt's name, a
resource's URI, a template's URI template), and a prompt's arguments by their names, so the
document has one place for each thing and a diff of two files reads entry by entry. Keys are
sorted at every level and the text is indented the same way every time: a snapshot taken
twice of an unchanged server is the same file, byte for byte, and `git diff` shows only what
changed. Lists keep the server's order (an `anyOf` or a `required` list means what it means
in any order, but a snapshot does not reorder what it did not write).

This module knows nothing of connections: it turns listings (the protocol's wire form, as
dicts) into a document, writes it and reads it back. Taking one from a live server is
`calling/surface.py`'s.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcp_nb.mistakes import BadJson, BadValue, read_json
from mcp_nb.records.files import read_text, write_whole
from mcp_nb.records.surrogates import escape_surrogates

FORMAT = 1  # the value of "mcp_nb_surface": a later format gets a new number, and this one stays readable
# kind -> (the document's section, the listing's field that names an entry)
SECTIONS = {
    "tool": ("tools", "name"),
    "resource": ("resources", "uri"),
    "template": ("templates", "uriTemplate"),
    "prompt": ("prompts", "name"),
}
KINDS = ("server", *SECTIONS)
SERVER_FIELDS = ("name", "title", "version", "description", "websiteUrl", "icons", "instructions", "capabilities", "protocol")
# How deep a snapshot may nest, in objects and lists, its own four levels included (the document,
# a section, an entry, its inputSchema). A listing's schemas nest a few levels (a model inside a
# model is a `$ref`, not a nesting); a schema a hundred levels deep is a generator's accident or
# an attack. The comparison of two snapshots (`schema_compat`) recurses about three frames a
# level, so this bound keeps any diff far inside Python's recursion limit, from any caller. It
# is checked wherever a document comes in, a snapshot taken (`document`) and one read (`load`),
# with the same words: every snapshot mcp_nb takes or reads is one it can diff.
MAX_DEPTH = 100


class SurfaceError(BadValue):
    """A snapshot that cannot be read or taken; the message says which and why, in one line."""


def counted(doc: dict[str, Any]) -> str:
    """What a snapshot holds, in words: "1 tool, 0 resources, 0 templates, 0 prompts"."""
    counts = ((kind, len(doc.get(section, {}))) for kind, (section, _) in SECTIONS.items())
    return ", ".join(f"{n} {kind}{'s' if n != 1 else ''}" for kind, n in counts)


# -- making a document -----------------------------------------------------------------------------


def entry(kind: str, listed: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """An entry of a listing (the protocol's wire form) as a snapshot keeps it: its key, and the
    entry without the key; a prompt's arguments by name (each without its name)."""
    _, key_field = SECTIONS[kind]
    key = listed.get(key_field)
    if not isinstance(key, str):
        raise SurfaceError(f"a listed {kind} has no {key_field}: {json.dumps(listed, default=str)[:120]}")
    kept = {field: value for field, value in listed.items() if field != key_field and value is not None}
    if kind == "prompt":
        arguments = kept.pop("arguments", None) or []
        kept["arguments"] = {
            str(argument.get("name")): {k: v for k, v in argument.items() if k != "name" and v is not None}
            for argument in arguments
            if isinstance(argument, dict)
        }
    return key, kept


def document(server: dict[str, Any], listed: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The snapshot of a server: `server` holds what it said of itself (see `SERVER_FIELDS`),
    `listed` its listings by kind ("tool", "resource", "template", "prompt")."""
    doc: dict[str, Any] = {"mcp_nb_surface": FORMAT, "server": {k: server[k] for k in SERVER_FIELDS if server.get(k) is not None}}
    for kind, (section, _) in SECTIONS.items():
        entries: dict[str, Any] = {}
        for item in listed.get(kind, ()):
            key, kept = entry(kind, item)
            entries[key] = kept  # a server that lists a name twice: the last one, as a client's lookup finds it
        doc[section] = entries
    doc = sorted_keys(doc)
    shallow_enough(doc, "the snapshot")
    return doc


def sorted_keys(value: Any) -> Any:
    """`value` with the keys of every object in sorted order (lists keep theirs): a copy made by
    the json module's C code, a tenth of the time a walk in Python takes on a thousand tools."""
    return json.loads(json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False))


def dump(doc: dict[str, Any]) -> str:
    """The file's text: the format's number first, then the server and the sections, each
    object's keys sorted, indented by two; the same document always gives the same text."""
    ordered = {"mcp_nb_surface": FORMAT, "server": doc.get("server", {})}
    ordered.update({section: doc.get(section, {}) for section, _ in SECTIONS.values()})
    # The sections in this order, everything inside them sorted as it is written: one pass of
    # the encoder, where sorting first would be a second one over a thousand tools.
    parts = [
        f"  {json.dumps(key)}: "
        + json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False).replace("\n", "\n  ")
        for key, value in ordered.items()
    ]
    # non-ASCII kept for reading, a lone surrogate a server sent (no UTF-8 file holds one) as its JSON escape
    return escape_surrogates("{\n" + ",\n".join(parts) + "\n}\n")


def save(doc: dict[str, Any], path: str | Path) -> Path:
    """Write the snapshot to `path`; a path that cannot be written is one line."""
    path = Path(path)
    text = dump(doc)
    try:
        write_whole(path, text)  # whole or not at all (records/files.py): a crash or a second writer leaves no half file
    except OSError as err:
        raise SurfaceError(f"cannot write {_shown(path)}: {err.strerror or err}") from None
    except ValueError as err:  # a NUL in the path
        raise SurfaceError(f"cannot write {_shown(path)}: {err}") from None
    return path


# -- reading one back ----------------------------------------------------------------------------


def load(source: str | Path | dict[str, Any]) -> dict[str, Any]:
    """The snapshot in a file (a path) or a document already read (a dict), checked: anything
    that is not one raises `SurfaceError`, one line saying where and why."""
    where = "the snapshot"
    if isinstance(source, (str, Path)):
        where = _shown(source)
        try:
            text = read_text(source)  # a FIFO or a device is refused, not waited on
        except FileNotFoundError:
            raise SurfaceError(f"no snapshot file at {where}") from None
        except (OSError, ValueError) as err:  # a directory, no permission, not UTF-8, a NUL in the path
            raise SurfaceError(f"cannot read {where}: {_reason(err)}") from None
        try:
            data = read_json(text)
        except BadJson as err:
            raise SurfaceError(f"{where} is not JSON: {err}") from None
    elif isinstance(source, dict):
        data = source
    else:
        raise SurfaceError(f"a snapshot is a file's path or its document (a dict), not {type(source).__name__}")
    try:
        # JSON has no NaN or infinity (Python's reader takes them), and a document given as a dict
        # may hold what JSON cannot: either way it was not written from a listing, and no
        # comparison of it could mean anything. The json module's C code checks it all at once.
        json.dumps(data, allow_nan=False)
    except ValueError:
        raise SurfaceError(f"{where} holds NaN or an infinity, which JSON has not") from None
    except TypeError as err:
        raise SurfaceError(f"{where} holds what is not JSON: {_reason(err)}") from None
    except RecursionError:
        raise SurfaceError(f"{where}: {_too_deep(None)}") from None
    shallow_enough(data, where)
    return checked(data, where)


def shallow_enough(data: Any, where: str) -> None:
    """A `SurfaceError` unless `data` nests at most `MAX_DEPTH` levels of objects and lists."""
    path = too_deep(data)
    if path is not None:
        raise SurfaceError(f"{where}: {_too_deep(path)}")


def too_deep(data: Any, limit: int = MAX_DEPTH) -> list[str | int] | None:
    """The path to the first object or list deeper than `limit` levels in `data`, or None.

    Level by level, a loop (not recursion: the data may nest as deep as a reader took it); the
    path is looked for only once the answer is known to be yes."""
    level, depth = ([data] if type(data) is dict or type(data) is list else []), 0
    while level:
        depth += 1
        if depth > limit:
            return _path_below(data, limit)
        below: list[Any] = []
        keep = below.append
        for node in level:
            for value in node.values() if type(node) is dict else node:
                if type(value) is dict or type(value) is list:
                    keep(value)
        level = below
    return None


def _path_below(data: Any, limit: int) -> list[str | int]:
    stack: list[tuple[Any, list[str | int]]] = [(data, [])]
    while stack:
        node, path = stack.pop()
        if len(path) >= limit:
            return path
        pairs = node.items() if type(node) is dict else enumerate(node)
        stack.extend((value, [*path, key]) for key, value in pairs if type(value) is dict or type(value) is list)
    return []


def _too_deep(path: list[str | int] | None) -> str:
    at = "" if not path else " (at " + ".".join(str(step) for step in path[:6]) + (".…" if len(path) > 6 else "") + ")"
    return f"nested more than {MAX_DEPTH} levels deep{at}: mcp_nb takes, reads and compares snapshots up to {MAX_DEPTH} levels"


def checked(data: Any, where: str) -> dict[str, Any]:
    """`data` if it is a snapshot document of this format, else a `SurfaceError`."""
    if not isinstance(data, dict) or "mcp_nb_surface" not in data:
        raise SurfaceError(
            f'{where} is not a surface snapshot (it has no "mcp_nb_surface": {FORMAT}; mcp_nb.snapshot() writes one)'
        )
    if data["mcp_nb_surface"] != FORMAT or isinstance(data["mcp_nb_surface"], bool):
        raise SurfaceError(
            f'{where}: "mcp_nb_surface" is {json.dumps(data["mcp_nb_surface"])[:40]}; this mcp_nb reads format {FORMAT}'
        )
    known = {"mcp_nb_surface", "server", *(section for section, _ in SECTIONS.values())}
    unknown = sorted(set(data) - known)
    if unknown:
        raise SurfaceError(f"{where}: unknown field {_name(unknown[0])} (a snapshot has {', '.join(sorted(known))})")
    server = data.get("server", {})
    if not isinstance(server, dict):
        raise SurfaceError(f"{where}: server is {_kind(server)}, not an object")
    for field in ("capabilities",):
        if field in server and not isinstance(server[field], dict):
            raise SurfaceError(f"{where}: server.{field} is {_kind(server[field])}, not an object")
    for kind, (section, _) in SECTIONS.items():
        entries = data.get(section, {})
        if not isinstance(entries, dict):
            raise SurfaceError(f"{where}: {section} is {_kind(entries)}, not an object of {kind}s by name")
        for key, value in entries.items():
            if not isinstance(value, dict):
                raise SurfaceError(f"{where}: {section}.{_name(key)} is {_kind(value)}, not an object")
            if kind == "prompt":
                arguments = value.get("arguments", {})
                if not isinstance(arguments, dict) or not all(isinstance(a, dict) for a in arguments.values()):
                    raise SurfaceError(f"{where}: {section}.{_name(key)}.arguments is not an object of arguments by name")
    return {"mcp_nb_surface": FORMAT, "server": server, **{section: data.get(section, {}) for section, _ in SECTIONS.values()}}


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _name(key: str) -> str:
    return key if key.isidentifier() else json.dumps(key, ensure_ascii=False)


def _shown(path: str | Path) -> str:
    text = str(path)
    return text if text.isprintable() else repr(text)


def _reason(err: BaseException) -> str:
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__
