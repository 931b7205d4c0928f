"""Two versions of one JSON Schema compared, each change named by the rule that judges it.

Nothing here is MCP's: a schema is read from the side of who uses it (`side`). An **input**
schema (what a caller sends) breaks its callers when a value it took before is refused now: a
new required property, a property removed, a type, an enum or a bound narrowed; a widening breaks
no one. An **output** schema (what a reader receives) breaks both ways: values written before
must still fit, and readers that hold the old schema check new values against it. Which verdict
each rule gives on each side is the rules table's (`surface_diff.RULES`); here each change is only
found, placed (a JSON path's steps), and said in a sentence, through `Rows`.

Every comparison of many values with many is linear: values are keyed by `canonical`, JSON's
equality made hashable (1 and 1.0 are one value, true is not 1, an object's key order does not
count), so an enum of ten thousand values that lost one is compared in one pass, not in a
hundred million comparisons. The walk recurses once per level of the schemas: the documents it
reads are bounded in depth where they are read (`records/surface.py`, `MAX_DEPTH`).
"""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction
from typing import Any, Literal, Protocol

from mcp_nb.numbers import is_number
from mcp_nb.records.structured import json_equal

ABSENT = object()  # a key that is not there (None is a JSON value)
Steps = list[str | int]  # where a value sits: the keys and item indices down to it


class Rows(Protocol):
    """Where a comparison's changes go: a row each (`surface_diff._Entry` is one)."""

    def row(self, rule: str, steps: Steps, change: str, before: Any, after: Any, why: str, side: str = "input") -> None: ...

    def unknown(self, steps: Steps, before: Any, after: Any, what: str, side: str = "input") -> None: ...


def shown(value: Any) -> str:
    """A value in a sentence: its JSON, keys sorted (`nothing` for an absent one)."""
    if value is ABSENT:
        return "nothing"
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def change_of(before: Any, after: Any) -> str:
    """added, removed or changed, by which side is absent."""
    if before is ABSENT:
        return "added"
    return "removed" if after is ABSENT else "changed"


def canonical(value: Any) -> Any:
    """A hashable stand-in for a JSON value, equal for two values exactly when `json_equal` says
    they are: numbers by value (1 == 1.0), a bool apart from the numbers, lists in order, objects
    by key whatever their order."""
    kind = type(value)
    if kind is str or kind is int or kind is float or value is None:
        return value
    if kind is bool:
        return (bool, value)
    if kind is list:
        return (list, tuple(canonical(item) for item in value))
    if kind is dict:
        return (dict, frozenset((key, canonical(item)) for key, item in value.items()))
    return (kind, id(value))  # not JSON: equal to itself alone, as json_equal has it


def twins_of(old: dict[str, Any], new: dict[str, Any]) -> dict[Any, list[str]]:
    """The keys only `new` has, by their value's `canonical` form: where a removed key went (`renamed`)."""
    found: dict[Any, list[str]] = {}
    for name, value in new.items():
        if name not in old:
            found.setdefault(canonical(value), []).append(name)
    return found


def renamed(was: Any, twins: dict[Any, list[str]]) -> str:
    """ " (renamed to `x`?)" when exactly one new key beside a removed one has its old value."""
    names = twins.get(canonical(was), ())
    return f" (renamed to `{names[0]}`?)" if len(names) == 1 else ""


_DESCRIPTIVE = (
    "title",
    "description",
    "examples",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
    "contentMediaType",
    "contentEncoding",
)
_LOWER_BOUNDS = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties", "minContains")
_UPPER_BOUNDS = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties", "maxContains")
_SIMPLE_TYPE = re.compile(r"array|boolean|integer|null|number|object|string")


class SchemaDiff:
    """The walk of one schema's two versions, each change a row of `entry`; `side` is "input" or
    "output" (see the module doc). `compare(old, new, steps, names)` walks them: `steps` is the
    path to them in whatever holds them, `names` how the place is said in a sentence."""

    def __init__(self, entry: Rows, side: str, old_root: Any, new_root: Any) -> None:
        self.entry, self.side = entry, side
        self.roots = (old_root if isinstance(old_root, dict) else {}, new_root if isinstance(new_root, dict) else {})
        self.refs_seen: set[tuple[str, str]] = set()
        # Properties whose being required changed: a default that came or went with that is said
        # by became-required / became-optional, not again as a default changed.
        self.required_changed: set[tuple[str | int, ...]] = set()

    # -- rows -----------------------------------------------------------------------------------------

    def row(self, rule: str, steps: Steps, before: Any, after: Any, why: str) -> None:
        self.entry.row(rule, steps, change_of(before, after), before, after, why, self.side)

    def unknown(self, steps: Steps, before: Any, after: Any, what: str) -> None:
        self.entry.unknown(steps, before, after, what, self.side)

    def named(self, names: list[str]) -> str:
        """How a place in the schema is named in a sentence: `title`, `book.title`, `tags[]`."""
        if not names:
            return "the parameters" if self.side == "input" else "the result"
        return "`" + ".".join(names).replace(".[]", "[]") + "`"

    # -- the walk -------------------------------------------------------------------------------------

    def compare(self, old: Any, new: Any, steps: Steps, names: list[str]) -> None:
        if json_equal(old, new):
            return
        old, new = _boolean_schema(old), _boolean_schema(new)
        if not isinstance(old, dict) or not isinstance(new, dict):
            self.unknown(steps, old, new, f"{self.named(names)}: a schema that is not an object")
            return
        old, new = _folded(old), _folded(new)
        for key in _keywords(old, new):
            before, after = old.get(key, ABSENT), new.get(key, ABSENT)
            if key in ("enum", "const"):
                # One set of allowed values, whichever keyword says it (Literal["a"] is a const, Literal["a", "b"] an enum).
                if key == "const" and ("enum" in old or "enum" in new):
                    continue
                key = "enum" if "enum" in old or "enum" in new else "const"
                before, after = _allowed(old), _allowed(new)
            if before is not ABSENT and after is not ABSENT and json_equal(before, after):
                continue
            self.keyword(key, old, new, before, after, [*steps, key], names)

    def keyword(
        self, key: str, old: dict[str, Any], new: dict[str, Any], before: Any, after: Any, steps: Steps, names: list[str]
    ) -> None:
        what = self.named(names)
        if key in _DESCRIPTIVE:
            self.row("described", steps, before, after, f"{what}: {key} {change_of(before, after)}")
        elif key == "default":
            if (before is ABSENT or after is ABSENT) and tuple(steps[:-1]) in self.required_changed:
                return
            self.row("default-changed", steps, before, after, f"{what}: default {shown(before)} → {shown(after)}")
        elif key == "type":
            self.types(steps, before, after, what)
        elif key == "properties":
            self.properties(old, new, steps, names)
        elif key == "required":
            self.required(old, new, steps, names)
        elif key in ("enum", "const"):
            self.values(key, before, after, steps, what)
        elif key in _LOWER_BOUNDS or key in _UPPER_BOUNDS:
            self.bound(key, before, after, steps, what)
        elif key == "multipleOf":
            self.multiple(before, after, steps, what)
        elif key in ("pattern", "uniqueItems", "additionalProperties"):
            self.constraint(key, before, after, steps, names)
        elif key in ("anyOf", "oneOf"):
            self.union(key, before, after, steps, names)
        elif key == "items" and isinstance(_or_any_absent(before), dict) and isinstance(_or_any_absent(after), dict):
            self.compare(_or_any_absent(before), _or_any_absent(after), steps, [*names, "[]"])
        elif key == "$ref":
            self.ref(before, after, steps, names)
        elif key == "$defs":
            self.definitions(before, after, steps)
        else:
            self.unknown(steps, before, after, f"{what}: {key} {change_of(before, after)}")

    # -- one function per kind of change ----------------------------------------------------------------

    def types(self, steps: Steps, before: Any, after: Any, what: str) -> None:
        old, new = _types(before), _types(after)
        if old is False or new is False:
            self.unknown(steps, before, after, f"{what}: type is not a JSON Schema type")
            return
        said = f"{what}: type {_type_text(old)} → {_type_text(new)}"
        lost = sorted(t for t in (old or _ANY) if not _covers(new, t))
        gained = sorted(t for t in (new or _ANY) if not _covers(old, t))
        if lost and gained:
            self.row("type-changed", steps, before, after, said)
        elif lost:
            self.row("type-narrowed", steps, before, after, said.replace(": type", ": type narrowed:", 1))
        elif gained:
            self.row("type-widened", steps, before, after, said.replace(": type", ": type widened:", 1))
        else:
            self.row("described", steps, before, after, said + " (the same values)")

    def properties(self, old: dict[str, Any], new: dict[str, Any], steps: Steps, names: list[str]) -> None:
        was, now = old.get("properties", {}), new.get("properties", {})
        if not isinstance(was, dict) or not isinstance(now, dict):
            self.unknown(
                steps,
                old.get("properties", ABSENT),
                new.get("properties", ABSENT),
                f"{self.named(names)}: properties is not an object",
            )
            return
        required = set(_names(new.get("required")) or ())
        required_before = set(_names(old.get("required")) or ())
        twins = twins_of(was, now)
        for name in sorted(set(was) | set(now)):
            if (name in required) != (name in required_before):
                self.required_changed.add((*steps, name))
            at, inner = [*steps, name], [*names, name]
            if name not in was:
                needed = name in required
                rule = "required-property-added" if needed else "property-added"
                self.row(rule, at, ABSENT, now[name], self.added_why(inner, needed))
            elif name not in now:
                self.row("property-removed", at, was[name], ABSENT, self.removed_why(inner) + renamed(was[name], twins))
            else:
                self.compare(was[name], now[name], at, inner)

    def added_why(self, names: list[str], required: bool) -> str:
        thing = self.named(names)
        if self.side == "input":
            return (
                f"new {'required' if required else 'optional'} parameter {thing}"
                if len(names) == 1
                else f"new {'required' if required else 'optional'} property {thing}"
            )
        if required:
            return f"new required field {thing}: results recorded before lack it"
        return f"new optional field {thing}"

    def removed_why(self, names: list[str]) -> str:
        thing = self.named(names)
        if self.side == "input":
            return f"{'parameter' if len(names) == 1 else 'property'} {thing} removed: calls that send it break"
        return f"field {thing} removed: clients that read it break"

    def required(self, old: dict[str, Any], new: dict[str, Any], steps: Steps, names: list[str]) -> None:
        before, after = old.get("required", ABSENT), new.get("required", ABSENT)
        if any(value is not ABSENT and _names(value) is None for value in (before, after)):
            self.unknown(steps, before, after, f"{self.named(names)}: required is not a list of names")
            return
        was, now = _names(before) or [], _names(after) or []
        old_properties, new_properties = old.get("properties"), new.get("properties")
        both = (
            set(old_properties) & set(new_properties)
            if isinstance(old_properties, dict) and isinstance(new_properties, dict)
            else None
        )
        changed = False
        was_set, now_set = set(was), set(now)
        for name in [n for n in now if n not in was_set]:
            if both is None or name in both:  # a property added or removed is said where properties are compared
                self.row("became-required", steps, before, after, f"{self.named([*names, name])} became required")
                changed = True
        for name in [n for n in was if n not in now_set]:
            if both is None or name in both:
                why = f"{self.named([*names, name])} became optional"
                self.row(
                    "became-optional",
                    steps,
                    before,
                    after,
                    why + ("" if self.side == "input" else ": clients may no longer get it"),
                )
                changed = True
        if not changed and was_set == now_set and was != now:
            self.row("described", steps, before, after, f"{self.named(names)}: required listed in another order")

    def values(self, key: str, before: Any, after: Any, steps: Steps, what: str) -> None:
        old = _enum(before)
        new = _enum(after)
        if old is False or new is False:
            self.unknown(steps, before, after, f"{what}: {key} is not a list of values")
            return
        if old is None:
            assert new is not None  # the keyword is on one side at least
            self.row("bound-tightened", steps, before, after, f"{what}: limited to {_values_text(new)}")
            return
        if new is None:
            self.row("bound-loosened", steps, before, after, f"{what}: no longer limited to {_values_text(old)}")
            return
        old_keys, new_keys = {canonical(v) for v in old}, {canonical(v) for v in new}
        lost = [v for v in old if canonical(v) not in new_keys]
        gained = [v for v in new if canonical(v) not in old_keys]
        if lost:
            self.row("enum-value-removed", steps, before, after, f"{what}: {_plural('value', lost)} {_values_text(lost)} removed")
        if gained:
            self.row("enum-value-added", steps, before, after, f"{what}: {_plural('value', gained)} {_values_text(gained)} added")
        if not lost and not gained:
            self.row("described", steps, before, after, f"{what}: {key} listed in another order")

    def bound(self, key: str, before: Any, after: Any, steps: Steps, what: str) -> None:
        if any(value is not ABSENT and not is_number(value) for value in (before, after)):
            self.unknown(steps, before, after, f"{what}: {key} is not a number")
            return
        lower = key in _LOWER_BOUNDS
        if before is ABSENT:
            tighter, said = True, f"{key} {shown(after)} added"
        elif after is ABSENT:
            tighter, said = False, f"{key} {shown(before)} removed"
        else:
            tighter = after > before if lower else after < before
            said = f"{key} {'raised' if after > before else 'lowered'}: {shown(before)} → {shown(after)}"
        self.row("bound-tightened" if tighter else "bound-loosened", steps, before, after, f"{what}: {said}")

    def multiple(self, before: Any, after: Any, steps: Steps, what: str) -> None:
        if any(value is not ABSENT and (not is_number(value) or value <= 0) for value in (before, after)):
            self.unknown(steps, before, after, f"{what}: multipleOf is not a positive number")
            return
        if before is ABSENT:
            tighter = True
        elif after is ABSENT:
            tighter = False
        else:
            tighter = not _multiple(before, after)  # the old step is a multiple of the new one: looser
        said = f"multipleOf {shown(before)} → {shown(after)}"
        self.row("bound-tightened" if tighter else "bound-loosened", steps, before, after, f"{what}: {said}")

    def constraint(self, key: str, before: Any, after: Any, steps: Steps, names: list[str]) -> None:
        what = self.named(names)
        if key == "pattern":
            if before is ABSENT or after is ABSENT:
                tighter = before is ABSENT
                self.row(
                    "bound-tightened" if tighter else "bound-loosened",
                    steps,
                    before,
                    after,
                    f"{what}: pattern {shown(after if tighter else before)} {'added' if tighter else 'removed'}",
                )
            else:
                self.unknown(steps, before, after, f"{what}: pattern {shown(before)} → {shown(after)}")
        elif key == "uniqueItems":
            was, now = before is True, after is True
            if {type(v) for v in (before, after) if v is not ABSENT} - {bool}:
                self.unknown(steps, before, after, f"{what}: uniqueItems is not true or false")
            elif was != now:
                self.row(
                    "bound-tightened" if now else "bound-loosened",
                    steps,
                    before,
                    after,
                    f"{what}: items {'must now be' if now else 'need no longer be'} unique",
                )
            else:
                self.row("described", steps, before, after, f"{what}: uniqueItems {change_of(before, after)} (the same values)")
        else:  # additionalProperties: left out, true and {} allow any other property; false none; a schema some
            was, now = _extra(before), _extra(after)
            if isinstance(was, dict) and isinstance(now, dict) and was and now:
                self.compare(was, now, steps, [*names, "*"])
            elif was == now:
                self.row(
                    "described",
                    steps,
                    before,
                    after,
                    f"{what}: additionalProperties {change_of(before, after)} (the same values)",
                )
            else:
                tighter = now is False or (was == {} and now is not False)
                said = "other properties " + ("no longer allowed" if now is False else "limited" if tighter else "allowed again")
                self.row("bound-tightened" if tighter else "bound-loosened", steps, before, after, f"{what}: {said}")

    def union(self, key: str, before: Any, after: Any, steps: Steps, names: list[str]) -> None:
        what = self.named(names)
        if before is ABSENT or after is ABSENT:
            self.unknown(steps, before, after, f"{what}: {key} {change_of(before, after)}")
            return
        if not isinstance(before, list) or not isinstance(after, list):
            self.unknown(steps, before, after, f"{what}: {key} is not a list of schemas")
            return
        old_keys, new_keys = {canonical(m) for m in before}, {canonical(m) for m in after}
        lost = [(at, m) for at, m in enumerate(before) if canonical(m) not in new_keys]
        gained = [m for m in after if canonical(m) not in old_keys]
        # A member edited in place (Optional[int] to Optional[float]) is compared where it stands.
        edited = min(len(lost), len(gained))
        for (at, was), now in zip(lost[:edited], gained[:edited]):
            self.compare(was, now, [*steps, at], names)
        lost, gained = [m for _, m in lost[edited:]], gained[edited:]
        if lost:
            self.row("union-member-removed", steps, before, after, f"{what}: {key} lost {_members(lost)}")
        if gained:
            self.row("union-member-added", steps, before, after, f"{what}: {key} gained {_members(gained)}")

    def ref(self, before: Any, after: Any, steps: Steps, names: list[str]) -> None:
        old, new = self.resolved(0, before), self.resolved(1, after)
        if old is None or new is None or (before, after) in self.refs_seen:
            self.unknown(steps, before, after, f"{self.named(names)}: $ref {shown(before)} → {shown(after)}")
            return
        self.refs_seen.add((before, after))
        self.compare(
            old, new, steps[:-1], names
        )  # another definition's name: what matters is what it holds, read where it is used

    def resolved(self, which: int, ref: Any) -> Any:
        if not isinstance(ref, str) or not ref.startswith("#/$defs/"):
            return None
        defs = self.roots[which].get("$defs")
        found = defs.get(ref[len("#/$defs/") :]) if isinstance(defs, dict) else None
        return found if isinstance(found, (dict, bool)) else None

    def definitions(self, before: Any, after: Any, steps: Steps) -> None:
        old = before if isinstance(before, dict) else {}
        new = after if isinstance(after, dict) else {}
        for name in sorted(set(old) | set(new)):
            at = [*steps, name]
            if name not in old or name not in new:
                was, now = old.get(name, ABSENT), new.get(name, ABSENT)
                self.row("definition-changed", at, was, now, f"definition {name} {change_of(was, now)}")
            else:
                self.compare(old[name], new[name], at, [name])


_ANY = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})


def _boolean_schema(schema: Any) -> Any:
    """`true` is the schema that takes anything, as `{}` is; `false` takes nothing."""
    if schema is True:
        return {}
    if schema is False:
        return {"not": {}}
    return schema


def _extra(value: Any) -> Any:
    """additionalProperties as {} (any other property), False (none) or the schema they must fit."""
    if value is ABSENT or value is True:
        return {}
    return value


def _or_any_absent(schema: Any) -> Any:
    return {} if schema is ABSENT else _boolean_schema(schema)


def _folded(node: dict[str, Any]) -> dict[str, Any]:
    """`anyOf` of bare types (pydantic's `int | None`) read as the list of types it is."""
    members = node.get("anyOf")
    if "type" in node or not isinstance(members, list) or not members:
        return node
    kinds = [m.get("type") for m in members if isinstance(m, dict) and set(m) == {"type"}]
    if len(kinds) != len(members) or not all(isinstance(k, str) and _SIMPLE_TYPE.fullmatch(k) for k in kinds):
        return node
    folded = {k: v for k, v in node.items() if k != "anyOf"}
    folded["type"] = kinds if len(kinds) > 1 else kinds[0]
    return folded


def _keywords(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    # The type first, then the rest in order: a row about a type reads before rows about its bounds.
    keys = sorted(set(old) | set(new))
    return sorted(keys, key=lambda k: (k != "type", k))


def _types(value: Any) -> frozenset[str] | None | Literal[False]:
    """The types a `type` keyword allows (None: left out, any; False: not a type keyword)."""
    if value is ABSENT:
        return None
    kinds = [value] if isinstance(value, str) else value
    if not isinstance(kinds, list) or not kinds or not all(isinstance(k, str) and k in _ANY for k in kinds):
        return False
    return frozenset(kinds)


def _covers(kinds: frozenset[str] | None, kind: str) -> bool:
    if kinds is None:
        return True
    return kind in kinds or (kind == "integer" and "number" in kinds)


def _type_text(kinds: frozenset[str] | None) -> str:
    return "any" if kinds is None else " | ".join(sorted(kinds))


def _names(value: Any) -> list[str] | None:
    if value is ABSENT:
        return []
    if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
        return None
    return value


def _allowed(node: dict[str, Any]) -> Any:
    """The values a schema node allows by `const` or `enum` (a const as a list of one), or absent."""
    if "const" in node and "enum" in node:
        return node["enum"] if not isinstance(node["enum"], list) else [v for v in node["enum"] if json_equal(v, node["const"])]
    if "const" in node:
        return [node["const"]]
    return node.get("enum", ABSENT)


def _enum(value: Any) -> list[Any] | None | Literal[False]:
    if value is ABSENT:
        return None
    return value if isinstance(value, list) else False


def _multiple(step: int | float, of: int | float) -> bool:
    """Whether `step` is a whole multiple of `of` (both positive numbers)."""
    try:
        quotient = step / of
    except OverflowError:  # an int beyond a float's range: decided exactly
        return (Fraction(step) / Fraction(of)).denominator == 1
    return math.isfinite(quotient) and quotient == int(quotient)


def _values_text(values: list[Any]) -> str:
    return ", ".join(shown(v) for v in values)


def _members(members: list[Any]) -> str:
    return ", ".join(shown(m) for m in members)


def _plural(word: str, items: list[Any]) -> str:
    return word if len(items) == 1 else word + "s"
