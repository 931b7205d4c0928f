"""What a person types for one argument, as the JSON value to send, and a value back as text.

A form shows every argument as text a person can edit, and sends what the text says, exactly:
`3` is the integer 3 and `3.0` the number 3.0; an integer field refuses `1.5` and `1e3` rather
than rounding them; a value outside its schema's limits is refused, not clamped; NaN and the
infinities, which JSON has no text for, are refused (the one check of what a number may be is
`mcp_nb.numbers`). Going back, a value is written as the text that reads as that same value,
so a call from the history shows in the form as it was sent.

No widget here: the fields of `mcp_nb.widgets.form` hold the text, this reads and writes it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from mcp_nb.mistakes import JSON_DEPTH, BadJson, BadValue, one_line, read_json, value_nested_past
from mcp_nb.numbers import is_number, non_finite_at

_INTEGER = re.compile(r"[+-]?\d+")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")

# A number's limits: the keyword, how a person reads it, and whether a number keeps it.
LIMITS: tuple[tuple[str, str, Callable[[Any, Any], bool]], ...] = (
    ("minimum", "≥", lambda n, limit: n >= limit),
    ("exclusiveMinimum", ">", lambda n, limit: n > limit),
    ("maximum", "≤", lambda n, limit: n <= limit),
    ("exclusiveMaximum", "<", lambda n, limit: n < limit),
)


def show(value: Any) -> str:
    """A value as JSON text, for a label or a message; what JSON cannot say is named instead."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return _unshown(value)


def _unshown(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):  # more digits than Python writes out
        return format(Decimal(value), ".6e")
    return "a nested value" if isinstance(value, (list, dict)) else type(value).__name__


def dumps(value: Any) -> str:
    """`value` as JSON text to edit, or BadValue when JSON cannot say it (or the text would be
    refused when read back)."""
    if value_nested_past(value):
        raise BadValue(f"cannot be shown as JSON: nested too deeply (more than {JSON_DEPTH} levels)")
    try:
        return json.dumps(value, ensure_ascii=False)
    except RecursionError:
        raise BadValue("cannot be shown as JSON: nested too deeply") from None
    except (TypeError, ValueError) as err:
        raise BadValue(f"cannot be shown as JSON: {one_line(err) or type(err).__name__}") from None


def typed(text: str, limit: int = 40) -> str:
    """What was typed, quoted, cut short when it is long."""
    return repr(text) if len(text) <= limit else repr(text[: limit - 1]) + "…"


def number_limits(schema: Mapping[str, Any]) -> list[str]:
    """A number's limits as a person reads them: `≥ 1`, `< 5`, `multiple of 0.5`."""
    limits = [f"{says} {show(schema[key])}" for key, says, _ in LIMITS if key in schema]
    if "multipleOf" in schema:
        limits.append(f"multiple of {show(schema['multipleOf'])}")
    return limits


def read_number(text: str, schema: Mapping[str, Any], integer: bool) -> int | float:
    """The number typed (stripped, not empty), as JSON reads it, within the (readable) schema's
    limits; BadValue saying why not."""
    if integer:
        if not _INTEGER.fullmatch(text):
            raise BadValue(f"{typed(text)} is not an integer" + (" (no decimals)" if _NUMBER.fullmatch(text) else ""))
        number: int | float = _integer(text)
    else:
        if not _NUMBER.fullmatch(text):
            raise BadValue(f"{typed(text)} is not a number")
        number = _integer(text) if _INTEGER.fullmatch(text) else float(text)
        if not is_number(number):  # 1e999 reads as an infinity
            raise BadValue(f"{typed(text)} is too large for JSON")
    for key, says, holds in LIMITS:
        if key in schema and not holds(number, schema[key]):
            raise BadValue(f"must be {says} {show(schema[key])}")
    step = schema.get("multipleOf")
    if step is not None and not _multiple(text, step):
        raise BadValue(f"must be a multiple of {show(step)}")
    return number


def _multiple(text: str, step: Any) -> bool:
    """Whether the number typed is a multiple of `step`, in decimal: 0.3 is a multiple of 0.1
    to a person and to pydantic (which allows for float error), though not in binary."""
    try:
        return Decimal(text) % Decimal(repr(step)) == 0
    except (InvalidOperation, ValueError):  # beyond Decimal's precision: let the server judge
        return True


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:  # more digits than Python reads (sys.get_int_max_str_digits())
        raise BadValue(f"{typed(text)} has more digits than an integer can have here ({len(text.lstrip('+-'))})") from None


def number_text(value: Any) -> str:
    """A number as it is typed, or BadValue when JSON has no text for it (NaN, an integer of 5000 digits)."""
    if not is_number(value):
        raise BadValue(f"{show(value)} is not a JSON number")
    return dumps(value)


def read_json_value(text: str) -> Any:
    """The JSON value typed (not blank), or BadValue saying why it cannot be sent."""
    try:
        value = read_json(text)
    except BadJson as err:
        if err.lineno is None:  # JSON, but not for Python: nested too deeply, an integer too long
            raise BadValue(f"not JSON the form can read: {err.msg}") from None
        raise BadValue(f"not valid JSON: {err.msg} (line {err.lineno}, column {err.colno})") from None
    if non_finite_at(value) is not None:
        raise BadValue("not valid JSON: NaN, Infinity and numbers beyond the float range (1e999) are not JSON numbers")
    return value


def check_length(schema: Mapping[str, Any], n: int) -> None:
    """BadValue unless a list of `n` items keeps the (readable) schema's minItems and maxItems."""
    if "minItems" in schema and n < schema["minItems"]:
        raise BadValue(f"needs at least {schema['minItems']} item(s)")
    if "maxItems" in schema and n > schema["maxItems"]:
        raise BadValue(f"takes at most {schema['maxItems']} item(s)")
