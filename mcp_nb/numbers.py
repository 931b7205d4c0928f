"""Numbers as JSON carries them: the one check of what a number may be, for every layer.

JSON's numbers are finite. It has no NaN and no infinity: Python's `json` module writes and reads
them as `NaN` and `Infinity`, an extension, and pydantic writes them so in text; JavaScript's
`JSON.parse`, Go's `encoding/json` and every strict reader refuse the whole message that holds
one. A bool is no number in JSON (true is not 1). An int is finite however long, though
`math.isfinite` of one beyond a float's range raises OverflowError instead of answering.

So the checks of arguments (`calling/sent.py`), of results (`records/structured.py`, the probe
around a kernel handler), of schemas (`records/schema_compat.py`, the panel's form), of retry
policies and of case files ask here. A leaf module: it imports nothing of mcp_nb.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any

# What a value can hold without being a number, or holding one (checked first: most are these).
_NOT_NUMBERS = frozenset({str, int, bool, type(None), bytes})


def is_number(value: Any) -> bool:
    """Whether `value` is a number JSON can carry: an int or a float (or another real type, numpy's
    among them), not a bool, neither NaN nor an infinity."""
    kind = type(value)
    if kind is int:
        return True
    if kind is float:
        return math.isfinite(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    if isinstance(value, numbers.Integral):
        return True
    try:
        return math.isfinite(value)
    except OverflowError:  # a Fraction beyond a float's range: finite all the same
        return True
    except (TypeError, ValueError):  # a real type that will not turn into a float
        return False


def is_non_finite(value: Any) -> bool:
    """Whether `value` is a number JSON cannot carry: NaN, an infinity (a float, numpy's, any real)."""
    if type(value) is float:
        return not math.isfinite(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or isinstance(value, numbers.Integral):
        return False
    try:
        return not math.isfinite(value)
    except (OverflowError, TypeError, ValueError):
        return False


def spelled(value: Any) -> str:
    """How a number JSON cannot carry is written where it is written at all: NaN, Infinity, -Infinity."""
    number = float(value)
    if math.isnan(number):
        return "NaN"
    return "Infinity" if number > 0 else "-Infinity"


def non_finite_at(value: Any) -> tuple[tuple[str | int, ...], Any] | None:
    """Where the first number JSON cannot carry is inside `value`, and that number; None when
    there is none.

    `value` is what a JSON writer (pydantic's, the SDK's) would write: dicts, lists, tuples and
    sets, pydantic models and dataclasses (by their fields), and numbers. Anything else is written
    as its text and holds no number. The place is a path of keys and indexes from `value` (empty:
    `value` itself). A loop, not recursion: a value may nest as deep as Python allows; a value that
    holds itself is walked once.
    """
    kind = type(value)
    if kind in _NOT_NUMBERS:
        return None  # the common case, in a few tens of nanoseconds
    if (kind is dict or kind is list) and _flat_and_finite(value.values() if kind is dict else value):
        return None  # the next most common: `{"result": 5}`, a row of plain values
    if not _holds_non_finite(value):
        return None
    return _first(value)


def _flat_and_finite(items: Any) -> bool:
    for item in items:
        kind = type(item)
        if kind in _NOT_NUMBERS or (kind is float and math.isfinite(item)):
            continue
        return False  # a container, or a number of another kind: the whole walk decides
    return True


def _fields(item: Any) -> list[tuple[str, Any]] | None:
    """The named values a JSON writer writes of a pydantic model or a dataclass (None: neither)."""
    fields = getattr(type(item), "__pydantic_fields__", None)
    if isinstance(fields, dict) and hasattr(item, "__dict__"):  # a pydantic model: its fields, then its extras
        extra = getattr(item, "__pydantic_extra__", None) or {}
        # by the names the wire carries (`structuredContent`), as the SDK writes a model
        named = ((getattr(info, "alias", None) or name, getattr(item, name, None)) for name, info in fields.items())
        return [*named, *extra.items()]
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        return [(f.name, getattr(item, f.name, None)) for f in dataclasses.fields(item)]
    return None


def _holds_non_finite(value: Any) -> bool:
    stack = [value]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind in _NOT_NUMBERS:
            continue
        if kind is float:
            if not math.isfinite(item):
                return True
            continue
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple, set, frozenset)):
            children = item
        else:
            named = _fields(item)
            if named is None:
                if is_non_finite(item):
                    return True
                continue
            children = [child for _, child in named]
        if id(item) in seen:
            continue
        seen.add(id(item))
        stack.extend(children)
    return False


def _first(value: Any) -> tuple[tuple[str | int, ...], Any] | None:
    """The same walk in the order a writer writes, keeping the path (once one is known to be there)."""
    stack: list[tuple[Any, tuple]] = [(value, ())]
    seen: set[int] = set()
    while stack:
        item, path = stack.pop()
        if type(item) in _NOT_NUMBERS:
            continue
        if isinstance(item, dict):
            pairs: Any = item.items()
        elif isinstance(item, (list, tuple, set, frozenset)):
            pairs = enumerate(item)
        else:
            pairs = _fields(item)
            if pairs is None:
                if is_non_finite(item):
                    return path, item
                continue
        if id(item) in seen:
            continue
        seen.add(id(item))
        stack.extend(reversed([(child, (*path, key)) for key, child in pairs]))
    return None
