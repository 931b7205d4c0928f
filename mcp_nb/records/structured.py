"""A tool's structured result, checked against its output schema without importing jsonschema.

The SDK's client checks every structured tool result against the tool's output schema
with `jsonschema`, imported on the first such result. Importing `jsonschema` imports
its format checkers, and in a Jupyter environment one of them, `rfc3987_syntax`, builds
a URI grammar at import: about a second, which every kernel's first call used to pay
(and its outcome card showed).

The schemas that tools' return annotations produce use a small part of JSON Schema
(types, properties, items, `anyOf`, local `$ref`s, bounds, enums). For a schema made only
of that part, `conforms` decides the way the SDK's validator (JSON Schema 2020-12, no
format assertions) does, and mcp_nb's own session accepts a result it proves valid
without the SDK's check. Anything else goes to the SDK's check, which decides as
before, with its own message: a schema with another keyword, a value of a non-JSON
type, and every result that does not conform. So an invalid result is rejected exactly
as before (a `protocol_error` / `client_error` with the SDK's text), and only then is
`jsonschema` imported. Sessions that users open with the SDK themselves keep the SDK's
check; nothing global changes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeGuard

from mcp_nb import sdk_compat
from mcp_nb.mistakes import BadValue, Failure
from mcp_nb.numbers import is_number, non_finite_at, spelled

TYPES = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})
JSON_VALUES = frozenset({type(None), bool, int, float, str, list, dict})
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
_DEF_REF = re.compile(r"#/\$defs/([A-Za-z0-9_.-]+)")
_ANNOTATIONS = {
    # keyword -> the type the 2020-12 meta-schema requires of its value; none of them
    # constrains a result (formats are not asserted by the SDK's validator)
    "title": str,
    "description": str,
    "$comment": str,
    "format": str,
    "contentMediaType": str,
    "contentEncoding": str,
    "deprecated": bool,
    "readOnly": bool,
    "writeOnly": bool,
    "examples": list,
    "default": object,
}
_COUNTS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")
_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_SCHEMA_LISTS = ("anyOf", "allOf", "prefixItems")


# -- which schemas: the part of JSON Schema decided here ------------------------------------------


def supported(schema: Any) -> bool:
    """True if every keyword of `schema` is one `conforms` decides, with a well-formed value.

    Well-formed as the 2020-12 meta-schema asks: the SDK rejects a schema that is not
    (as an invalid schema, on every call), and so must we, by leaving it to the SDK.
    """
    if not isinstance(schema, dict):
        return False
    root_only = {"$defs", "$schema"}
    defs = schema.get("$defs", {})
    if not isinstance(defs, dict) or schema.get("$schema", DRAFT_2020_12) != DRAFT_2020_12:
        return False
    body = {key: value for key, value in schema.items() if key not in root_only}
    return _supported(body, defs) and all(isinstance(name, str) and _supported(sub, defs) for name, sub in defs.items())


def _supported(node: Any, defs: dict[str, Any]) -> bool:
    if node is True or node is False:
        return True
    if not isinstance(node, dict):
        return False
    for key, value in node.items():
        if key in _ANNOTATIONS:
            if not isinstance(value, _ANNOTATIONS[key]):
                return False
        elif key == "type":
            kinds = [value] if isinstance(value, str) else value
            if not isinstance(kinds, list) or not kinds or not all(isinstance(kind, str) and kind in TYPES for kind in kinds):
                return False
            if len(set(kinds)) != len(kinds):
                return False
        elif key == "properties":
            if not isinstance(value, dict) or not all(_supported(sub, defs) for sub in value.values()):
                return False
        elif key in ("additionalProperties", "items"):
            if not _supported(value, defs):
                return False
        elif key in _SCHEMA_LISTS:
            if not isinstance(value, list) or not value or not all(_supported(sub, defs) for sub in value):
                return False
        elif key == "required":
            if not isinstance(value, list) or not all(isinstance(name, str) for name in value) or len(set(value)) != len(value):
                return False
        elif key in _COUNTS:
            if type(value) is not int or value < 0:
                return False
        elif key in _BOUNDS:
            if type(value) not in (int, float) or not is_number(value):  # an int beyond a float's range is one too
                return False
        elif key == "multipleOf":
            if type(value) not in (int, float) or not is_number(value) or value <= 0:
                return False
        elif key == "uniqueItems":
            if not isinstance(value, bool):
                return False
        elif key == "pattern":
            if not isinstance(value, str):
                return False
            try:
                re.compile(value)
            except re.error:
                return False
        elif key == "$ref":
            found = _DEF_REF.fullmatch(value) if isinstance(value, str) else None
            if found is None or found.group(1) not in defs:
                return False
        elif key not in ("enum", "const"):
            return False  # a keyword outside the part decided here: the SDK decides
        elif key == "enum" and not isinstance(value, list):
            return False
    return True


# -- the check: True only when the SDK's validator would find no error ---------------------------
#
# A schema is turned once into a tree of small functions, one per schema node, each taking a
# value and answering True or False: every structured result of mcp_nb's session is checked
# on the path of its call, and walking the schema's keywords for each result cost most of
# what mcp_nb adds to a trivial call's check. `LocalCheck` keeps each tool's compiled check.

Check = Callable[[Any], bool]
_SKIPPED = frozenset(_ANNOTATIONS) | {"$defs", "$schema"}  # keywords that never constrain a value here


def conforms(schema: dict[str, Any], value: Any) -> bool:
    """True if `value` is valid against `schema` (which must be `supported`).

    False means "not shown valid here", not "invalid": the caller then asks the SDK.
    """
    return checker(schema)(value)


def checker(schema: dict[str, Any]) -> Check:
    """`conforms` for one schema (which must be `supported`), compiled once."""
    refs: dict[str, Check] = {}
    for name, sub in schema.get("$defs", {}).items():
        refs[name] = _compiled(sub, refs)
    check = _compiled(schema, refs)

    def conforming(value: Any) -> bool:
        try:
            return check(value)
        except (RecursionError, TypeError, ValueError, OverflowError):
            return False

    return conforming


def _always(value: Any) -> bool:
    return True


def _never(value: Any) -> bool:
    return False


# The Python types each JSON Schema type admits (an integral float is an "integer" too; a
# bool is never a number), as jsonschema's 2020-12 type checks decide.
_KINDS = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "object": (dict,),
    "array": (list,),
    "boolean": (bool,),
    "null": (type(None),),
}


def _compiled(node: Any, refs: dict[str, Check]) -> Check:
    if node is True:
        return _always
    if node is False:
        return _never
    kinds = JSON_VALUES
    integral_floats = False  # "integer" without "number": a float passes only if it is integral
    checks: list[Check] = []
    for key, arg in node.items():
        if key in _SKIPPED:
            continue
        if key == "type":
            names = [arg] if type(arg) is str else arg
            kinds = frozenset(kind for name in names for kind in _KINDS[name])
            integral_floats = "integer" in names and "number" not in names
        else:
            checks.append(_keyword(key, arg, node, refs))
    return _node(kinds, integral_floats, tuple(checks))


def _node(kinds: frozenset[type], integral_floats: bool, checks: tuple[Check, ...]) -> Check:
    def check(value: Any) -> bool:
        kind = type(value)
        if kind not in kinds:
            # A value of a type that is not JSON's (a tuple, a Decimal) may pass keywords
            # skipped here for it; only the SDK can say.
            if not (integral_floats and kind is float and value.is_integer()):
                return False
        elif kind is dict:
            for key in value:
                if type(key) is not str:
                    return False
        for each in checks:
            if not each(value):
                return False
        return True

    return check


def _keyword(key: str, arg: Any, node: dict[str, Any], refs: dict[str, Check]) -> Check:
    """The check of one keyword; a keyword for another type of value passes that value."""
    if key == "$ref":
        name = arg[len("#/$defs/") :]
        return lambda value: refs[name](value)  # looked up when used: a definition may refer to itself
    if key == "anyOf":
        subs = tuple(_compiled(sub, refs) for sub in arg)
        return lambda value: any(sub(value) for sub in subs)
    if key == "allOf":
        subs = tuple(_compiled(sub, refs) for sub in arg)
        return lambda value: all(sub(value) for sub in subs)
    if key == "enum":
        return lambda value: any(json_equal(member, value) for member in arg)
    if key == "const":
        return lambda value: json_equal(arg, value)
    if key in ("properties", "required", "additionalProperties", "minProperties", "maxProperties"):
        return _for(dict, _object_keyword(key, arg, node, refs))
    if key in ("prefixItems", "items", "minItems", "maxItems", "uniqueItems"):
        return _for(list, _array_keyword(key, arg, node, refs))
    if key in ("minLength", "maxLength", "pattern"):
        return _for(str, _string_keyword(key, arg))
    return _for(int, _number_keyword(key, arg), float)


def _for(kind: type, check: Check, other: type | None = None) -> Check:
    def only(value: Any) -> bool:
        t = type(value)
        return check(value) if t is kind or t is other else True

    return only


def _object_keyword(key: str, arg: Any, node: dict[str, Any], refs: dict[str, Check]) -> Check:
    if key == "properties":
        props = tuple((name, _compiled(sub, refs)) for name, sub in arg.items())

        def properties(value: dict[str, Any]) -> bool:
            for name, sub in props:
                if name in value and not sub(value[name]):
                    return False
            return True

        return properties
    if key == "required":
        names = tuple(arg)

        def required(value: dict[str, Any]) -> bool:
            for name in names:
                if name not in value:
                    return False
            return True

        return required
    if key == "additionalProperties":
        declared = frozenset(node.get("properties", {}))
        extra = _compiled(arg, refs)
        return lambda value: all(extra(item) for name, item in value.items() if name not in declared)
    if key == "minProperties":
        return lambda value: len(value) >= arg
    return lambda value: len(value) <= arg  # maxProperties


def _array_keyword(key: str, arg: Any, node: dict[str, Any], refs: dict[str, Check]) -> Check:
    if key == "prefixItems":
        subs = tuple(_compiled(sub, refs) for sub in arg)
        return lambda value: all(sub(item) for item, sub in zip(value, subs))
    if key == "items":
        skip = len(node.get("prefixItems", ()))
        sub = _compiled(arg, refs)

        def items(value: list[Any]) -> bool:
            for item in value[skip:] if skip else value:
                if not sub(item):
                    return False
            return True

        return items
    if key == "minItems":
        return lambda value: len(value) >= arg
    if key == "maxItems":
        return lambda value: len(value) <= arg
    return lambda value: not arg or _distinct(value)  # uniqueItems


def _string_keyword(key: str, arg: Any) -> Check:
    if key == "minLength":
        return lambda value: len(value) >= arg  # code points, as jsonschema counts them
    if key == "maxLength":
        return lambda value: len(value) <= arg
    pattern = re.compile(arg)
    return lambda value: pattern.search(value) is not None


def _number_keyword(key: str, arg: Any) -> Check:
    # The comparisons are jsonschema's own, so NaN and the infinities come out as they do there.
    if key == "minimum":
        return lambda value: not value < arg
    if key == "maximum":
        return lambda value: not value > arg
    if key == "exclusiveMinimum":
        return lambda value: not value <= arg
    if key == "exclusiveMaximum":
        return lambda value: not value >= arg
    if type(arg) is float:  # multipleOf

        def multiple(value: int | float) -> bool:
            quotient = value / arg
            return int(quotient) == quotient  # overflow or NaN raises: `conforms` leaves it to the SDK

        return multiple
    return lambda value: not value % arg


def json_equal(a: Any, b: Any) -> bool:
    """JSON's equality (jsonschema's): 1 == 1.0, but true is neither 1 nor 1.0, and false is not 0."""
    if a is b:
        return True
    ta, tb = type(a), type(b)  # exact types: a bool is never taken for an int here
    if ta in _NUMBERS and tb in _NUMBERS:
        same: bool = a == b
        return same
    if (ta is list and tb is list) or (ta is dict and tb is dict):
        return _containers_equal(a, b)
    return ta is str and tb is str and a == b


_NUMBERS = (int, float)


def _containers_equal(a: list[Any] | dict[str, Any], b: list[Any] | dict[str, Any]) -> bool:
    # A loop, not recursion: the values may come from a file or a peer nested as deep as a JSON
    # reader takes (Python's, to its recursion limit), and a comparison must not fail where the
    # reading did not.
    stack: list[tuple[Any, Any]] = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x is y:
            continue
        tx, ty = type(x), type(y)
        if tx in _NUMBERS and ty in _NUMBERS:
            if x != y:
                return False
        elif tx is list and ty is list:
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y))
        elif tx is dict and ty is dict:
            if len(x) != len(y):
                return False
            for key, item in x.items():
                if key not in y:
                    return False
                stack.append((item, y[key]))
        elif not (tx is str and ty is str and x == y):
            return False
    return True


def _distinct(items: list[Any]) -> bool:
    # Shown only for lists of strings alone or integers alone; anything else goes to the SDK.
    if len(items) < 2:
        return True
    kinds = {type(item) for item in items}
    return (kinds == {str} or kinds == {int}) and len(set(items)) == len(items)


# -- mcp_nb's own session -----------------------------------------------------------------------


class LocalCheck:
    """The check of one session's structured results: proved here when possible, else the SDK's.

    It reads the schema the SDK itself would check against (the session's last listing
    of the tool), so both checks always judge the same schema. First of all, a result whose
    structured content holds a number JSON cannot carry is refused (`NonJsonNumber`), whatever
    the schema: see `refused_answer`.
    """

    def __init__(self, session: Any, sdk_check: Any) -> None:
        self._session = session
        self._sdk_check = sdk_check
        self._checks: dict[str, tuple[Any, Check | None]] = {}  # tool -> (schema object, its check)

    async def __call__(self, name: str, result: Any) -> None:
        structured = result.structured_content
        if structured is not None and type(structured) is not str:
            refusal = refused_answer(structured)
            if refusal is not None:
                raise NonJsonNumber(refusal)
        schemas = sdk_compat.output_schemas(self._session)  # absent: the SDK checks
        schema = schemas.get(name) if schemas is not None else None
        if schema is not None and structured is not None:
            check = self._check(name, schema)
            if check is not None and check(result.structured_content):
                return
        await self._sdk_check(name, result)

    def _check(self, name: str, schema: Any) -> Check | None:
        """The tool's compiled check, or None when its schema is the SDK's to judge."""
        known = self._checks.get(name)
        if known is None or known[0] is not schema:  # a new listing brings a new schema object
            known = self._checks[name] = (schema, checker(schema) if supported(schema) else None)
        return known[1]


def check_results_locally(session: Any) -> None:
    """Give this session (mcp_nb's own) the check above, in place of the SDK's first step."""
    sdk_compat.replace_result_check(session, lambda sdk_check: LocalCheck(session, sdk_check))


# -- numbers JSON cannot carry ---------------------------------------------------------------------
#
# JSON has no NaN and no infinity (`mcp_nb.numbers`). A handler of the kernel's server that returns
# one is refused by the server (`registering/probe.py`): the result becomes a `tool_error` (a
# `protocol_error` for a resource or a prompt, which have no isError) with the cause
# `non_json_number`, whose text says which number and where. Not null, which pydantic writes in
# its place in a message: a silent null is a different answer, and it breaks a `-> float` tool's
# own output schema. Not the literal, which pydantic writes into a result's text: the model then
# reads a "NaN" that strict readers of the text refuse. An outside server that sends one (a
# `NaN` literal in its JSON, which the SDK's reader takes) is refused by mcp_nb's client: the
# answer is no JSON a strict client could read, a `protocol_error` with the same cause.

NOT_JSON_TEXT = re.compile(
    r"the (?:result|answer) (?:is|holds) (?:NaN|Infinity|-Infinity)(?: at \$.*)?, a number JSON cannot carry "
    r"\(JSON has no NaN or infinity\).*",
    re.S,
)
# What the kernel's server says after that sentence, to whoever wrote the handler.
RETURN_INSTEAD = ": return None, or the number as a string, where that is what it means"


class NonJsonNumber(Failure, ValueError):
    """An answer that holds a number JSON cannot carry: NaN, Infinity, -Infinity (a strict
    client cannot read it; mcp_nb's client refuses it, as its classification says)."""


def not_json(value: Any, what: str = "the result", root: tuple[str | int, ...] = ()) -> str | None:
    """What is wrong with `value` as JSON's numbers go, in a sentence (`NOT_JSON_TEXT`), or None when
    every number in it is one JSON can carry. `root`: the path `value` sits at, for the sentence."""
    found = non_finite_at(value)
    if found is None:
        return None
    path, number = found
    where = (*root, *path)
    said = f"{what} holds {spelled(number)} at {json_path(where)}" if where else f"{what} is {spelled(number)}"
    return f"{said}, a number JSON cannot carry (JSON has no NaN or infinity)"


def refused_answer(structured: Any) -> str | None:
    """Why mcp_nb's client refuses an answer's structured content, or None when it does not."""
    return not_json(structured, "the answer", ("structuredContent",))


def says_not_json(text: str | None) -> bool:
    """Whether `text` is the sentence `not_json` makes."""
    return text is not None and NOT_JSON_TEXT.fullmatch(text) is not None


_PLAIN_KEY = re.compile(r"[A-Za-z_][\w-]*")


def json_path(steps: Any) -> str:
    """A JSON path of the simple kind the cases' checks read (`$.a.b`, `$.items[0]`, `$['$defs']`)."""
    out = "$"
    for step in steps:
        if isinstance(step, int):
            out += f"[{step}]"
        elif not isinstance(step, str):
            out += f"[{step!r}]"
        elif _PLAIN_KEY.fullmatch(step):
            out += f".{step}"
        elif "'" not in step:
            out += f"['{step}']"
        else:
            out += f'["{step}"]'
    return out


# -- a structured result as a table ----------------------------------------------------------------


class NotTabular(BadValue):
    """A structured result that is not a list of records, said in one line."""


def records(structured: Any, key: str | None = None) -> list[dict[str, Any]]:
    """The list of records in a structured result: the list itself, or the one list of records
    among its fields (`{"result": [...]}`, the SDK's wrapper of a `-> list[Book]`), or the field
    named `key`. Anything else raises `NotTabular`, saying what the result holds."""
    if structured is None:
        raise NotTabular("the call has no structured result (the tool declares no output schema, or the call failed)")
    value = structured
    if key is not None:
        if not isinstance(structured, dict) or key not in structured:
            fields = ", ".join(map(str, structured)) if isinstance(structured, dict) else type(structured).__name__
            raise NotTabular(f"the structured result has no field {key!r} (it has: {fields})")
        value = structured[key]
    elif isinstance(structured, dict):
        tables = [name for name, field in structured.items() if _is_records(field)]
        if len(tables) == 1:
            value = structured[tables[0]]
        elif len(tables) > 1:
            raise NotTabular(
                f"the structured result holds {len(tables)} lists of records ({', '.join(tables)}): pick one with key="
            )
        else:
            raise NotTabular(
                f"the structured result is not a list of records: an object with fields {', '.join(map(str, structured)) or 'none'}"
            )
    if not _is_records(value):
        if isinstance(value, list):
            kind = "a list of " + ", ".join(sorted({type(item).__name__ for item in value}))
        else:
            kind = type(value).__name__
        raise NotTabular(f"the structured result is not a list of records (objects): it is {kind}")
    return value


def _is_records(value: Any) -> TypeGuard[list[dict[str, Any]]]:
    return isinstance(value, list) and all(isinstance(item, dict) for item in value)
