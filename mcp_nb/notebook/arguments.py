"""The argument part of `%mcp_call` lines: a JSON object sent verbatim, or key=value pairs.

key=value strings are coerced with the tool's input schema (`count=3` sends the
integer 3). A value that does not coerce is sent as the string it was, so the
server's own validation answers, and that answer is recorded like any other. A JSON
object is never touched: it is how a user sends wrong types on purpose.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mcp_nb.notebook.lines import LineError, split

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
            decoded = json.loads(rest[0])
        except json.JSONDecodeError as err:
            raise ArgumentsError(f"invalid JSON arguments: {err.msg} at column {err.colno}") from None
        except RecursionError:
            raise ArgumentsError("invalid JSON arguments: nested too deeply") from None
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
    """`key=value` tokens to arguments, each value coerced with its property's schema."""
    arguments: dict[str, Any] = {}
    properties = (schema or {}).get("properties") or {}
    for token in filter(None, raw.split("\x00")):
        key, sep, value = token.partition("=")
        if not sep or not key:
            raise ArgumentsError(f"expected key=value, got {token!r}")
        if schema is not None and properties and key not in properties:
            raise ArgumentsError(f"{what} has no argument {key!r} (it takes: {', '.join(properties)})")
        if schema is not None and not properties:
            raise ArgumentsError(f"{what} takes no arguments, got {key!r}")
        if key in arguments:
            raise ArgumentsError(f"argument {key!r} is given twice")
        prop = properties.get(key)
        arguments[key] = coerce(value, prop, schema) if prop is not None else _guess(value)
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


def coerce(value: str, prop: dict[str, Any], root: dict[str, Any] | None = None) -> Any:
    """The value `prop` most plausibly means by the text `value`; the text itself if none fits."""
    result = _coerce(value, prop, root or {})
    return value if result is _MISSING else result


def _coerce(value: str, prop: dict[str, Any], root: dict[str, Any]) -> Any:
    if "$ref" in prop:
        target = _resolve(prop["$ref"], root)
        return _coerce(value, target, root) if target is not None else _MISSING
    for key in ("anyOf", "oneOf"):
        if key in prop:
            # Null first only for the literal spelling of null; otherwise the first type that fits.
            options = prop[key]
            for option in sorted(options, key=lambda o: o.get("type") != "null" if value in ("null", "None") else o.get("type") == "null"):
                result = _coerce(value, option, root)
                if result is not _MISSING:
                    return result
            return _MISSING
    if "enum" in prop:
        for choice in prop["enum"]:
            if value == str(choice) or value == json.dumps(choice):
                return choice
        return _MISSING
    if "const" in prop:
        return prop["const"] if value in (str(prop["const"]), json.dumps(prop["const"])) else _MISSING
    kind = prop.get("type")
    if isinstance(kind, list):
        return _coerce(value, {"anyOf": [{**prop, "type": k} for k in kind]}, root)
    return _SCALARS.get(kind, _any)(value)


def _resolve(ref: str, root: dict[str, Any]) -> dict[str, Any] | None:
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, dict) else None


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
            decoded = json.loads(value)
        except json.JSONDecodeError:
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
        return json.loads(value)
    except json.JSONDecodeError:
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
