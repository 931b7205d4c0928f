"""The arguments of a call as typed on a magic's line: a JSON object sent verbatim, or key=value pairs.

The options around them are the magic's parser's (`options.py`); what is left, the words after
the name, is read here, because neither argparse nor a shell knows it. key=value strings are
coerced with the tool's input schema (`count=3` sends the integer 3). A value that does not
coerce is sent as the string it was, so the server's own validation answers, and that answer is
recorded like any other. A JSON object is never touched: it is how a user sends wrong types on
purpose.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from typing import Any

from mcp_nb.mistakes import BadJson, read_json
from mcp_nb.notebook.lines import LineError
from mcp_nb.notebook.options import read_with_tail


class ArgumentsError(LineError):
    """A one-line description of what is wrong with the line."""


def read_call_line(
    parser: argparse.ArgumentParser, line: str, takes_arguments: bool = True
) -> tuple[str, dict[str, Any] | list[str], argparse.Namespace]:
    """A calling magic's line: the name, the arguments (the decoded JSON object, or the
    key=value words for `parse_pairs`), and the options `parser` read.

    The arguments are the words the parser takes for ARGUMENT and those after `--`, which are
    arguments whatever they look like (`-- -x=1`)."""
    options, tail = read_with_tail(parser, line, arguments=takes_arguments)
    if tail and not takes_arguments:
        raise ArgumentsError(f"unrecognized arguments: {' '.join(tail)} (%{parser.prog} takes no arguments)")
    if options.name.startswith(("{", "[")):
        raise ArgumentsError("the name comes first, then the JSON arguments")
    return options.name, read_payload([*getattr(options, "arguments", ()), *(tail or ())]), options


def read_payload(words: Sequence[str]) -> dict[str, Any] | list[str]:
    """The words after the name: the decoded JSON object, or the key=value words (for `parse_pairs`)."""
    if not words:
        return []
    first = words[0]
    if first.startswith("["):
        raise ArgumentsError("JSON arguments must be an object ({...}), not an array")
    if not first.startswith("{"):
        return list(words)
    try:
        decoded = read_json(first)
    except BadJson as err:
        at = f" at column {err.colno}" if err.colno is not None else ""
        raise ArgumentsError(f"invalid JSON arguments: {err.msg}{at}") from None
    if len(words) > 1:
        raise ArgumentsError(f"unexpected {words[1]!r} after the JSON object")
    return decoded


def parse_pairs(pairs: Sequence[str], schema: dict[str, Any] | None, what: str) -> dict[str, Any]:
    """`key=value` words to arguments, each value coerced with its property's schema.

    The names are checked against the schema's `properties`; a schema whose `properties` is
    not an object (a server may publish anything) checks no names, and its values are guessed."""
    arguments: dict[str, Any] = {}
    checked = isinstance(schema, Mapping)
    properties = schema.get("properties") if checked else None
    if not isinstance(properties, Mapping):
        checked = checked and properties is None
        properties = {}
    for token in pairs:
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
