"""A tool's input schema, read for a form: what kind of input each argument asks for, and what it allows.

The schemas are the ones the MCP SDK builds from a function's signature, which is pydantic's
JSON Schema (`X | None` is `anyOf [X, null]`, models are `$ref`s into `$defs`, tuples are
`prefixItems`, `object` is `{}`), and whatever else a server publishes. A server may publish
any JSON Schema, and nothing in one may break the form: a keyword of an unexpected shape
(`"minimum": null`, `"enum": "a"`, `"required": true`) is left out of what is read
(`readable`; the server still checks what is sent), a reference that leads nowhere reads as
"anything", and every walk down a schema stops at `MAX_DEPTH` levels, where the form takes a
JSON value instead of building further fields, so no schema or value reaches Python's
recursion limit.

`kind_of` names the input a (resolved) schema asks for: a text, a number, a choice, a
multi-select, a list, an object, or a JSON value for anything else. The form's fields
(`mcp_nb.widgets.form`) dispatch on it; this module knows no widget and imports no ipywidgets,
so what a schema allows is tested on its own (tests/test_form_schema.py).

It lives in `calling/`, next to `sent.py`: both say what a call's arguments may be, this one from
the tool's schema, that one as JSON carries them; any face (the panel, a server's question) may
read it. It needs only `mistakes` and `numbers` below it, and it is about any server's tools, not
the kernel's own registrations (`registering/`) nor the record of calls (`records/`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mcp_nb.calling.typed import show
from mcp_nb.mistakes import BadValue
from mcp_nb.numbers import is_number

# How many levels of a schema (and of a value) a form builds fields for: deeper than this (a
# recursive model, a list of lists of lists...) a value is one JSON field, and `readable`
# reads no further subschemas.
MAX_DEPTH = 12


class _Omit:
    """The value of an empty optional field: leave the key out of the arguments."""

    _instance: _Omit | None = None

    def __new__(cls) -> _Omit:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "OMIT"

    def __bool__(self) -> bool:
        return False


OMIT = _Omit()

# What a field returns as the value it cannot show (`Field.hole()`) when it can show every value.
NO_HOLE = type("NoHole", (), {"__repr__": lambda self: "NO_HOLE"})()

Path = tuple[str | int, ...]  # keys and item indices from the arguments object down to a value


class Invalid(BadValue):
    """What keeps the form from being sent: (path, message) pairs, every problem at once."""

    def __init__(self, problems: list[tuple[Path, str]]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{dotted(p)}: {m}" for p, m in problems))


def dotted(path: Path) -> str:
    """`address.city`, `tags[2]`: a path as a person reads it."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "arguments"


# -- reading a schema whatever its shape -----------------------------------------------------------


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# Each keyword the form reads, with the shape it expects.
_SHAPES: dict[str, Callable[[Any], bool]] = {
    "minimum": is_number,
    "maximum": is_number,
    "exclusiveMinimum": is_number,
    "exclusiveMaximum": is_number,
    "multipleOf": lambda v: is_number(v) and v > 0,
    "minLength": _count,
    "maxLength": _count,
    "minItems": _count,
    "maxItems": _count,
    "enum": lambda v: isinstance(v, list),
    "prefixItems": lambda v: isinstance(v, list),
    "properties": lambda v: isinstance(v, Mapping),
    "$ref": lambda v: isinstance(v, str),
    "format": lambda v: isinstance(v, str),
    "pattern": lambda v: isinstance(v, str),
    "description": lambda v: isinstance(v, str),
    "title": lambda v: isinstance(v, str),
}


def readable(schema: Any, depth: int = 0) -> dict[str, Any]:
    """A copy of `schema` holding only keywords of the shape the form reads.

    `true` and `false` are schemas too (anything, nothing). The subschemas a label
    describes (`items`, `anyOf`...) are made readable as well, to `MAX_DEPTH` levels;
    `properties` are made readable one at a time, when their fields are built.
    """
    if schema is False:
        return {"not": {}}
    if not isinstance(schema, Mapping):
        return {}  # `true`, or something that is no schema at all: anything goes
    out = dict(schema)
    # Draft 4 wrote an exclusive limit as a flag on `minimum`/`maximum`.
    for limit, exclusive in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        if isinstance(out.get(exclusive), bool):
            if out.pop(exclusive) and limit in out:
                out[exclusive] = out.pop(limit)
    for key, fits in _SHAPES.items():
        if key in out and not fits(out[key]):
            del out[key]
    kind = out.get("type")
    if "type" in out and not isinstance(kind, str):
        kinds = [k for k in kind if isinstance(k, str)] if isinstance(kind, list) else []
        if kinds:
            out["type"] = kinds
        else:
            del out["type"]
    if "required" in out:
        required = out["required"]
        out["required"] = [n for n in required if isinstance(n, str)] if isinstance(required, list) else []
    if "items" in out:
        items = out["items"]
        if isinstance(items, (Mapping, bool)) and depth < MAX_DEPTH:
            out["items"] = readable(items, depth + 1)
        else:
            del out["items"]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in out:
            members = out[key] if isinstance(out[key], list) and depth < MAX_DEPTH else []
            members = [readable(m, depth + 1) for m in members if isinstance(m, (Mapping, bool))]
            if members:
                out[key] = members
            else:
                del out[key]
    return out


class Resolver:
    """The root of one input schema, against which `$ref`s (into `$defs`, or the older
    `definitions`) are followed."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root

    def resolve(self, schema: Any, followed: set[str] | None = None) -> dict[str, Any]:
        """Follow `$ref`s and single-member `allOf`s; keywords next to them win (a default, a description).

        The result is `readable`: every keyword the builders read has the shape they expect.
        `followed` collects the references followed. A chain of more than `MAX_DEPTH` steps
        (a reference to itself) stops where it is, which reads as a JSON value.
        """
        resolved = readable(schema)
        for _ in range(MAX_DEPTH):
            if "$ref" in resolved:
                ref = resolved.pop("$ref")
                if followed is not None:
                    followed.add(ref)
                target = self._pointer(ref)
                resolved = readable({**target, **resolved})
            elif len(resolved.get("allOf", ())) == 1:
                (only,) = resolved.pop("allOf")
                resolved = readable({**only, **resolved})
            else:
                break
        return resolved

    def _pointer(self, ref: str) -> dict[str, Any]:
        if not ref.startswith("#/"):
            return {}  # a remote reference: nothing to resolve it against, so a JSON field
        node: Any = self.root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, Mapping) or part not in node:
                return {}
            node = node[part]
        return dict(node) if isinstance(node, Mapping) else {}


_ANNOTATIONS = ("default", "description", "title", "examples")


def split_nullable(schema: dict[str, Any], schemas: Resolver, followed: set[str] | None = None) -> tuple[dict[str, Any], bool]:
    """`anyOf [X, null]` and `type: [X, "null"]` to (X, True); anything else to (schema, False).

    The annotations of the outer schema (default, description) are kept on X. A default
    of null is dropped: in a signature `= None` means "not given", so the field starts
    empty and the null toggle stays off. `followed` collects the references followed to X.
    """
    variants = schema.get("anyOf") or schema.get("oneOf")
    inner: dict[str, Any] | None = None
    if isinstance(variants, list):
        rest = [v for v in variants if schemas.resolve(v).get("type") != "null"]
        if len(rest) < len(variants):
            if len(rest) == 1:
                inner = schemas.resolve(rest[0], followed)
            else:  # X | Y | None: the value is a JSON field, null still a toggle
                inner = {"anyOf": rest}
    elif isinstance(schema.get("type"), list) and "null" in schema["type"]:
        types = [t for t in schema["type"] if t != "null"]
        inner = {k: v for k, v in schema.items() if k != "type"}
        if types:
            inner["type"] = types[0] if len(types) == 1 else types
    elif "enum" in schema and None in schema["enum"]:
        inner = {**schema, "enum": [v for v in schema["enum"] if v is not None]}
    if inner is None:
        return schema, False
    for key in _ANNOTATIONS:
        if key in schema and key not in inner:
            inner[key] = schema[key]
    if inner.get("default", 0) is None:
        inner.pop("default")
    return inner, True


def titled(schema: Mapping[str, Any]) -> list[tuple[Any, str]] | None:
    """The (value, title) choices of a titled enum, or None: `oneOf` / `anyOf` of `const`s, each
    with its `title` (MCP's titled single and multi select), or `enum` with `enumNames` (the
    legacy form)."""
    variants = schema.get("oneOf") or schema.get("anyOf")
    if isinstance(variants, list) and variants and all(isinstance(v, Mapping) and "const" in v for v in variants):
        return [(v["const"], str(v.get("title") or show(v["const"]))) for v in variants]
    names = schema.get("enumNames")
    values = schema.get("enum")
    if isinstance(values, list) and isinstance(names, list) and len(names) == len(values):
        return [(value, str(name)) for value, name in zip(values, names)]
    return None


def choices(schema: Mapping[str, Any]) -> list[Any]:
    """The fixed values a schema allows: its titled choices, its enum, its const, or true and false."""
    named = titled(schema)
    if named:
        return [value for value, _ in named]
    if "enum" in schema:
        return list(schema["enum"])
    if "const" in schema:
        return [schema["const"]]
    return [True, False] if schema.get("type") == "boolean" else []


def choice_labels(schema: Mapping[str, Any], values: list[Any]) -> list[str]:
    """What each choice is shown as: its title where the schema gives one, else its value."""
    named = titled(schema)
    return [title for _, title in named] if named else [show(v) for v in values]


# The kinds of input `kind_of` names; the form has one builder for each (and "object").
KINDS = ("string", "number", "boolean", "enum", "multiselect", "array", "json", "object")


def kind_of(schema: Mapping[str, Any], schemas: Resolver) -> str:
    """The kind of input a (resolved, non-null) schema asks for; "json" for anything else."""
    if "enum" in schema or "const" in schema or titled(schema):
        return "enum"
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = kind[0] if len(kind) == 1 else None
    if kind is None and "properties" in schema:
        kind = "object"
    if kind == "string":
        return "string"
    if kind in ("integer", "number"):
        return "number"
    if kind == "boolean":
        return "boolean"
    if kind == "array":
        items = schema.get("items")
        if "prefixItems" in schema or not isinstance(items, Mapping):
            return "json"  # tuples and item lists: one JSON value is clearer than a grid
        items = schemas.resolve(items)
        if titled(items):
            return "multiselect"
        return "multiselect" if "enum" in items and None not in items["enum"] else "array"
    if kind == "object" and isinstance(schema.get("properties"), Mapping) and schema["properties"]:
        return "object"
    return "json"  # {} (any), unions, dict[str, X], null alone, unknown keywords


def same_value(a: Any, b: Any) -> bool:
    """`a` is `b` as a value to send: OMIT is OMIT, `""` is not `[]`, `0` is not `false`."""
    if a is OMIT or b is OMIT or a is NO_HOLE or b is NO_HOLE:
        return a is b
    return type(a) is type(b) and a == b


def in_order(values: list[Any], value: Any) -> bool:
    """Whether a multi-select of `values` shows the list `value`: each choice once, in the order
    listed. False only for a list of those choices in another order or repeated (rows show it)."""
    if not isinstance(value, list):
        return True
    indices = []
    for item in value:
        match = [i for i, v in enumerate(values) if same_value(v, item)]
        if not match:
            return True  # not a choice: not a list the schema allows, so nothing shows it
        indices.append(match[0])
    return indices == sorted(set(indices))
