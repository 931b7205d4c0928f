"""What an exercise's check needs beyond `mcp_nb.expect` and `mcp_nb.check_prediction`.

Every failure is an `mcp_nb.CheckFailed`: the notebook shows its explanation alone, without the
frames of this module, and nbgrader's autograde counts it as a failed test.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from mcp_nb import CheckFailed

# What a message says when a title is not in the catalog, in the words a learner would use.
NOT_FOUND = re.compile(
    r"not (?:in|on|part of) (?:the|our|this)? ?(?:shop's )?(?:catalog|catalogue|shop)|no (?:such )?book|not found|"
    r"unknown|does ?n[o']t exist|isn't (?:in|on)|is not (?:in|on)|not (?:listed|stocked|carried)|no such|no title|no entry",
    re.IGNORECASE,
)


def require(condition: Any, message: str, hint: str | None = None) -> None:
    """Fail with `message` (and the hint, on a line of its own) unless `condition` holds."""
    if not condition:
        raise CheckFailed(message + (f"\n  hint: {hint}" if hint else ""))


def names_and_says_not_found(text: str | None, title: str) -> bool:
    """Whether `text` names `title` and says the book is not in the catalog (a message a model can act on)."""
    return bool(text) and title in text and NOT_FOUND.search(text) is not None


class Broken(Mapping):
    """A table that fails at every use, as a corrupt index would: a bug that no caller could have avoided."""

    def __init__(self, why: str) -> None:
        self.why = why

    def _fail(self, *_: Any) -> Any:
        raise RuntimeError(self.why)

    __getitem__ = __contains__ = get = _fail

    def __iter__(self) -> Iterator[Any]:
        raise RuntimeError(self.why)

    def __len__(self) -> int:
        raise RuntimeError(self.why)

    def __repr__(self) -> str:
        return f"<a broken table: {self.why}>"


@contextmanager
def planted_bug(namespace: dict, name: str, why: str = "the index is corrupt (a bug the check planted)") -> Iterator[None]:
    """Within the block, the table `name` of the notebook (`globals()`) fails at every use, then is put back.

    A check plants it to see whether a tool keeps a bug a crash: a tool that turns every exception
    into a tool error would hand the model a message for a bug that no model can fix.
    """
    kept = namespace[name]
    namespace[name] = Broken(why)
    try:
        yield
    finally:
        namespace[name] = kept


def integer_bounds(schema: Mapping[str, Any]) -> tuple[int | None, int | None] | None:
    """The whole numbers an input schema's property allows, as (lowest, highest), None where unbounded;
    None when the property is not a whole number (or holds other values than whole numbers)."""
    values = schema.get("enum", [schema["const"]] if "const" in schema else None)
    if values is not None:
        if not values or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            return None
        if sorted(values) != list(range(min(values), max(values) + 1)):
            return None
        return min(values), max(values)
    if schema.get("type") != "integer":
        return None
    low = schema.get("minimum")
    if "exclusiveMinimum" in schema:
        low = int(schema["exclusiveMinimum"]) + 1 if low is None else max(low, int(schema["exclusiveMinimum"]) + 1)
    high = schema.get("maximum")
    if "exclusiveMaximum" in schema:
        high = int(schema["exclusiveMaximum"]) - 1 if high is None else min(high, int(schema["exclusiveMaximum"]) - 1)
    return low, high


def answered(value: Any, what: str, kind: type | tuple[type, ...], example: str, choices: Iterable[Any] | None = None) -> None:
    """Fail as *not answered yet* unless `value` is one answer of `kind` (a set, when `kind` is set, of `choices`).

    For predictions that are not about an Outcome (an HTTP status, whether a test raised, which
    cases fail); `mcp_nb.check_prediction` checks the ones that are.
    """
    if value is Ellipsis or value is None:
        raise CheckFailed(f"not answered yet: {what} is still {'...' if value is Ellipsis else 'None'}: write {example}")
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if bool not in kinds and isinstance(value, bool):
        raise CheckFailed(f"not answered yet: {what} is {value}, a bool: write {example}")
    if not isinstance(value, kinds):
        several = isinstance(value, (list, tuple, set, frozenset)) and set not in kinds
        said = "name one: " if several else ""
        raise CheckFailed(f"not answered yet: {said}{what} is a {type(value).__name__}: write {example}")
    if choices is not None and isinstance(value, (set, frozenset)):
        allowed = set(choices)
        unknown = sorted(map(repr, set(value) - allowed))
        if unknown:
            raise CheckFailed(
                f"not answered yet: {', '.join(unknown)} in {what} is not one of {', '.join(sorted(map(str, allowed)))}"
            )


def prediction_hints(hints: Mapping[str, str], **wrong: Any) -> str | None:
    """The advice for the predictions that were wrong, as `mcp_nb.check_prediction` picks it: "code=-32700", else "code",
    else "*"; one line for each."""
    said = [hints.get(f"{name}={value}", hints.get(name)) for name, value in wrong.items()]
    said = [line for line in said if line] or ([hints["*"]] if "*" in hints else [])
    return "\n  hint: ".join(dict.fromkeys(said)) or None


def put_middleware(server, gate) -> None:
    """Add `gate` to the server's middleware, in place of one of the same name put there before (a cell run again)."""
    server.middleware[:] = [kept for kept in server.middleware if getattr(kept, "__name__", None) != gate.__name__]
    server.middleware.append(gate)


def hint_lines(lines) -> str:
    """Several hints, one a line, for `require`'s `hint`."""
    return "\n  hint: ".join(dict.fromkeys(line for line in lines if line))
