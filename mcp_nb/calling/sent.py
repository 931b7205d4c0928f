"""A call's arguments as JSON will carry them: what is sent is what the history records.

A data scientist's arguments come from DataFrames and arrays as often as from literals:
`frame["x"].iloc[0]` is a `numpy.int64`, a date column gives `pandas.Timestamp`, a gap
gives `pandas.NA`. The SDK writes every request with pydantic, which knows Python's own
types (a `datetime` becomes its ISO 8601 text, a `Decimal` a string, a set a list) and
none of numpy's or pandas's. So each value is turned here into the JSON value it stands
for, the one pydantic then writes unchanged, and the record holds exactly that; a value
that has no JSON form is refused before anything is sent, in one line that names it.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from pydantic_core import PydanticSerializationError, to_jsonable_python

from mcp_nb.mistakes import BadType, BadValue
from mcp_nb.numbers import is_number

# How deep lists and dicts may nest in arguments. JSON parsers bound it (pydantic's, which the SDK
# reads and writes every message with, stops at about 200 levels, the envelope of a request
# included), and Python's recursion limit bounds copying it; data this deep is almost always a
# mistake (a structure that holds itself, a loop that wraps one level too many).
MAX_NESTING = 100

_KEPT = (str, int, bool, type(None))
_MISSING = ("NAType", "NaTType")  # pandas.NA and pandas.NaT: a missing value, JSON's null


def sent_arguments(arguments: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A copy of `arguments` as JSON will carry it, so the record keeps what was sent.

    Nested dicts and lists are copied (a record must not change when the caller edits
    their dict after the call); tuples become lists, as they are sent. NaN and
    infinities are refused: JSON has no such numbers, and they would reach the server as
    null while the record said otherwise. numpy and pandas scalars and arrays become the
    JSON values they stand for; a missing value (`pandas.NA`, `NaT`) becomes null.
    """
    if arguments is None:
        return None
    if type(arguments) is not dict and not isinstance(arguments, Mapping):  # a dict skips the ABC's check
        raise BadType(f"arguments must be a mapping (a dict of argument names to values), got {type(arguments).__name__}")
    inside = {id(arguments)}
    return {key: _sent(value, (key,), inside) for key, value in arguments.items()}


def _sent(value: Any, path: tuple, inside: set[int]) -> Any:
    """`value` as sent; `inside` holds the ids of the lists and dicts that contain it (a value
    that contains itself can never be sent)."""
    kind = type(value)
    if kind in _KEPT:
        return value
    if kind is float:
        return _finite(value, path)
    if isinstance(value, (Mapping, list, tuple)):
        return _container(value, path, inside)
    module = kind.__module__
    if module == "numpy" or module.startswith(("numpy.", "pandas")):
        return _sent(_from_numpy_or_pandas(value, path), path, inside)
    if isinstance(value, bool):  # a subclass of bool
        return bool(value)
    if isinstance(value, int):  # an IntEnum, say: pydantic sends its number
        return int(value)
    if isinstance(value, float):
        return _finite(float(value), path)
    try:
        sent = to_jsonable_python(value)  # as the SDK's pydantic will write it
    except (PydanticSerializationError, TypeError, ValueError, RecursionError):
        raise BadValue(
            f"argument {_where(path)} is a {kind.__name__}, which has no JSON form, so it cannot be sent; "
            "send a str, number, bool, None, list or dict"
        ) from None
    return _sent(sent, path, inside)


def _finite(value: float, path: tuple) -> float:
    # The same check as a result's (`records/structured.py`): what is refused on the way out is
    # refused on the way back, with the same words.
    if not is_number(value):
        raise BadValue(
            f"argument {_where(path)} is {value!r}: JSON has no NaN or infinity, so the server would receive "
            "null; send None, or the number as a string, if that is what you mean"
        )
    return value


def _container(value: Any, path: tuple, inside: set[int]) -> Any:
    if id(value) in inside:
        raise BadValue(f"argument {_where(path[:1])} contains itself at {_where(path)}: JSON cannot send a cycle")
    if len(path) > MAX_NESTING:
        raise BadValue(
            f"argument {_where(path[:1])} nests lists and dicts more than {MAX_NESTING} levels deep: JSON parsers "
            "refuse data that deep (the SDK's at about 200 levels); flatten it, or send it as a JSON string"
        )
    inside.add(id(value))
    try:
        if isinstance(value, Mapping):
            return {_key(key, path): _sent(item, (*path, key), inside) for key, item in value.items()}
        return [_sent(item, (*path, i), inside) for i, item in enumerate(value)]
    finally:
        inside.discard(id(value))


def _key(key: Any, path: tuple) -> str:
    # JSON's object keys are strings; pydantic would write 1 as "1", and the record must say so.
    if type(key) is str:
        return key
    if isinstance(key, (bool, int, float)) or type(key).__module__ == "numpy":
        sent = _sent(key, (*path, key), set())
        return "true" if sent is True else "false" if sent is False else str(sent)
    raise BadValue(f"argument {_where(path)} has the key {key!r} ({type(key).__name__}): JSON's keys are strings")


def _from_numpy_or_pandas(value: Any, path: tuple) -> Any:
    """The plain Python value a numpy or pandas value stands for (then sent as any other)."""
    name = type(value).__name__
    if name in _MISSING:
        return None
    if name == "DataFrame":
        raise BadValue(
            f"argument {_where(path)} is a DataFrame, which has many JSON forms: send frame.to_dict('records') "
            "(a list of rows) or frame.to_dict('list') (a list per column)"
        )
    if name in ("datetime64", "timedelta64"):
        np = sys.modules["numpy"]  # loaded: this value is one of its own

        if np.isnat(value):
            return None
        if name == "datetime64":
            return str(np.datetime_as_string(value))  # ISO 8601, to the value's own precision
        return value.astype("timedelta64[us]").item()  # a datetime.timedelta, written as ISO 8601
    if getattr(value, "ndim", 0) >= 1 and hasattr(value, "tolist"):  # an array, a Series, an Index
        # Dates and times one by one (as above): `tolist` gives nanoseconds as plain integers.
        dates = getattr(getattr(value, "dtype", None), "kind", None) in ("m", "M")
        return list(value) if dates else value.tolist()
    if hasattr(value, "item"):
        return value.item()  # a numpy scalar: int, float, bool, str, bytes
    return to_jsonable_python(value)  # a pandas Timestamp or Timedelta (datetime's own subclasses)


def _where(path: tuple) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return repr(out)
