"""The argument part of `%mcp_call` lines: a JSON object sent verbatim, or key=value pairs.

key=value strings are coerced with the tool's input schema (`count=3` sends the
integer 3). A value that does not coerce is sent as the string it was, so the
server's own validation answers, and that answer is recorded like any other. A JSON
object is never touched: it is how a user sends wrong types on purpose.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from mcp_nb.notebook.lines import LineError, split
from mcp_nb.mistakes import BadJson, read_json

_OPTION = re.compile(r"--([a-z][a-z-]*)(?:=(\S+))?$")


class ArgumentsError(LineError):
    """A one-line description of what is wrong with the line."""


def parse_call_line(
    line: str, options: tuple[str, ...] = ("timeout",), takes_arguments: bool = True, flags: tuple[str, ...] = ()
) -> tuple[str, str | dict, dict[str, str]]:
    """Split `NAME [JSON | key=value ...] [--option VALUE ...] [--flag ...]` into its three parts.

    Returns the name, then either the decoded JSON object or the raw key=value text
    (a string), then the options (a flag that is present maps to ""). The words are split by `lines.split`: a trailing
    `# comment` is dropped, and JSON (the object, or a value after `key=`) is kept as typed.
    """
    try:
        words = split(line, keep_json=takes_arguments)
    except LineError as err:
        raise ArgumentsError(str(err)) from None
    if not words:
        raise ArgumentsError("missing the name to call")
    name, rest = words[0], words[1:]
    if name.startswith("-"):
        raise ArgumentsError(f"the name comes first, got option {name!r}")
    if name.startswith(("{", "[")):
        raise ArgumentsError("the name comes first, then the JSON arguments")
    payload: str | dict = ""
    if rest and rest[0].startswith("["):
        raise ArgumentsError("JSON arguments must be an object ({...}), not an array")
    if rest and rest[0].startswith("{"):
        try:
            decoded = read_json(rest[0])
        except BadJson as err:
            at = f" at column {err.colno}" if err.colno is not None else ""
            raise ArgumentsError(f"invalid JSON arguments: {err.msg}{at}") from None
        if not isinstance(decoded, dict):
            raise ArgumentsError("JSON arguments must be an object")
        payload, rest = decoded, rest[1:]
    found: dict[str, str] = {}
    pairs: list[str] = []
    i = 0
    while i < len(rest):
        token = rest[i]
        match = _OPTION.match(token)
        if match:
            key = match.group(1)
            if key in flags:
                if match.group(2) is not None:
                    raise ArgumentsError(f"--{key} takes no value")
                found[key] = ""
                i += 1
                continue
            if key not in options:
                known = ", ".join(f"--{o}" for o in (*options, *flags)) or "none"
                raise ArgumentsError(f"unknown option --{key} (known: {known})")
            value = match.group(2)
            if value is None:
                if i + 1 >= len(rest):
                    raise ArgumentsError(f"--{key} needs a value")
                value = rest[i + 1]
                i += 1
            found[key] = value
        elif isinstance(payload, dict):
            raise ArgumentsError(f"unexpected {token!r} after the JSON object")
        else:
            pairs.append(token)
        i += 1
    if pairs and not takes_arguments:
        raise ArgumentsError(f"unexpected {pairs[0]!r}: this magic takes no arguments")
    return name, payload if isinstance(payload, dict) else pairs_text(pairs), found


def pairs_text(pairs: list[str]) -> str:
    return "\x00".join(pairs)


def parse_pairs(raw: str, schema: dict[str, Any] | None, what: str) -> dict[str, Any]:
    """`key=value` tokens to arguments, each value coerced with its property's schema.

    The names are checked against the schema's `properties`; a schema whose `properties` is
    not an object (a server may publish anything) checks no names, and its values are guessed."""
    arguments: dict[str, Any] = {}
    checked = isinstance(schema, Mapping)
    properties = schema.get("properties") if checked else None
    if not isinstance(properties, Mapping):
        checked = checked and properties is None
        properties = {}
    for token in filter(None, raw.split("\x00")):
        key, sep, value = token.partition("=")
        if not sep or not key:
            raise ArgumentsError(f"expected key=value, got {token!r}")
        if checked and properties and key not in properties:
            raise ArgumentsError(f"{what} has no argument {key!r} (it takes: {', '.join(map(str, properties))})")
        if checked and not properties:
            raise ArgumentsError(f"{what} takes no arguments, got {key!r}")
        if key in arguments:
            raise ArgumentsError(f"argument {key!r} is given twice")
        prop = properties.get(key)
        arguments[key] = coerce(value, prop, schema if checked else None) if prop is not None else _guess(value)
    return arguments


def parse_seconds(value: str, option: str = "--timeout") -> float:
    try:
        return float(value)
    except ValueError:
        raise ArgumentsError(f"{option} takes seconds, got {value!r}") from None


def parse_count(value: str, option: str) -> int:
    try:
        return int(value, 10)
    except ValueError:
        raise ArgumentsError(f"{option} takes a whole number, got {value!r}") from None


_MISSING = object()
# `$ref`s and unions followed before giving up: a schema may refer to itself (`#`), forever.
_MOST_STEPS = 32


def coerce(value: str, prop: Any, root: Any = None) -> Any:
    """The value `prop` most plausibly means by the text `value`; the text itself if none fits.

    `prop` is whatever the server published: a keyword of an unexpected shape is passed over,
    `true` (or no schema at all) takes any value, `false` none."""
    result = _coerce(value, prop, root if isinstance(root, Mapping) else {}, 0)
    return value if result is _MISSING else result


def _coerce(value: str, prop: Any, root: Mapping[str, Any], steps: int) -> Any:
    if not isinstance(prop, Mapping):
        return _MISSING if prop is False else _guess(value)
    if steps > _MOST_STEPS:
        return _MISSING
    if isinstance(prop.get("$ref"), str):
        target = _resolve(prop["$ref"], root)
        return _coerce(value, target, root, steps + 1) if target is not None else _MISSING
    for key in ("anyOf", "oneOf"):
        if isinstance(prop.get(key), list):
            # Null first only for the literal spelling of null; otherwise the first type that fits.
            nulls_first = value in ("null", "None")
            for option in sorted(prop[key], key=lambda o: (_type_of(o) != "null") if nulls_first else (_type_of(o) == "null")):
                result = _coerce(value, option, root, steps + 1)
                if result is not _MISSING:
                    return result
            return _MISSING
    if isinstance(prop.get("enum"), list):
        for choice in prop["enum"]:
            if value in _spellings(choice):
                return choice
        return _MISSING
    if "const" in prop:
        return prop["const"] if value in _spellings(prop["const"]) else _MISSING
    kind = prop.get("type")
    if isinstance(kind, list):
        return _coerce(value, {"anyOf": [{**prop, "type": k} for k in kind]}, root, steps + 1)
    return _SCALARS.get(kind, _any)(value) if isinstance(kind, str) or kind is None else _any(value)


def _type_of(schema: Any) -> Any:
    return schema.get("type") if isinstance(schema, Mapping) else None


def _spellings(choice: Any) -> tuple[str, ...]:
    """How a user may type an enum's value: as Python prints it, or as JSON."""
    try:
        return (str(choice), json.dumps(choice))
    except (TypeError, ValueError, RecursionError):
        return (str(choice),)


def _resolve(ref: str, root: Mapping[str, Any]) -> Mapping[str, Any] | bool | None:
    """The schema a local JSON pointer (`#/$defs/Book`, `#`) names, or None."""
    if ref != "#" and not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/") if ref != "#" else ():
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, (Mapping, bool)) else None


def _int(value: str) -> Any:
    try:
        return int(value, 10)
    except ValueError:
        return _MISSING


def _number(value: str) -> Any:
    as_int = _int(value)
    if as_int is not _MISSING:
        return as_int
    try:
        return float(value)
    except ValueError:
        return _MISSING


def _bool(value: str) -> Any:
    lowered = value.lower()
    if lowered in ("true", "yes", "1", "on"):
        return True
    if lowered in ("false", "no", "0", "off"):
        return False
    return _MISSING


def _json_of(kind: type) -> Any:
    def parse(value: str) -> Any:
        try:
            decoded = read_json(value)
        except BadJson:
            return _MISSING
        return decoded if isinstance(decoded, kind) else _MISSING

    return parse


def _null(value: str) -> Any:
    return None if value in ("null", "None") else _MISSING


def _any(value: str) -> Any:
    return _guess(value)


def _guess(value: str) -> Any:
    """No schema to go by: JSON if it reads as JSON, else the text."""
    try:
        return read_json(value)
    except BadJson:
        return value


_SCALARS = {
    "string": lambda v: v,
    "integer": _int,
    "number": _number,
    "boolean": _bool,
    "array": _json_of(list),
    "object": _json_of(dict),
    "null": _null,
}
