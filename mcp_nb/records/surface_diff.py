"""What changed for clients between two snapshots of a server, each change judged by a written rule.

A change is one row: which entry (`kind`, `name`), where in it (`where`, a JSON path into the
entry: `$.inputSchema.properties.title`), whether something was `added`, `removed` or
`changed`, the values `before` and `after`, whether it is `breaking` (True, False, or
"unknown"), the `rule` that said so, and `why` in a sentence ("`title` became required").

The rules are the table `RULES`, one small function per kind of change below, and docs/cases.md
lists them. A schema is read from the side of who uses it:

- an **input** schema (a tool's parameters, a prompt's arguments) breaks a client when a call it
  could make before is refused now: a new required parameter, a parameter removed, a type, an
  enum or a bound narrowed. Widening it (a new optional parameter, a looser bound) breaks no one.
- an **output** schema breaks a client both ways: results recorded before (a case, a cache) must
  still fit it, and a client that listed the old schema checks new results against that one
  (the SDK's client does, for every structured result). So a narrowing breaks (old results no
  longer fit) and a widening breaks (new results may not fit what clients hold); only a new
  optional field and a better description leave both readers as they were.

A change no rule knows (a keyword the rules do not read, a pattern rewritten, `_meta`) is
`breaking="unknown"`: never taken silently as compatible.

Pure data work: no connection, no engine. `calling/surface.py` takes the snapshots.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Callable, Iterable

from mcp_nb import libraries as lib
from mcp_nb.records.structured import json_path as where
from mcp_nb.records.structured import json_equal
from mcp_nb.records.surface import SECTIONS
from mcp_nb.mistakes import BadValue

if TYPE_CHECKING:
    import pandas as pd

UNKNOWN = "unknown"  # the third value of `breaking`: no rule knows this change
KIND_ORDER = ("server", "tool", "resource", "template", "prompt")


@dataclass(frozen=True)
class Rule:
    """One rule of the table: what it recognises, and whether that breaks a client of an input
    schema (and everywhere outside schemas) or of an output schema."""

    says: str
    breaks: bool | str
    breaks_output: bool | str | None = None  # None: the rule is not about schemas

    def verdict(self, side: str) -> bool | str:
        return self.breaks_output if side == "output" and self.breaks_output is not None else self.breaks


# The table docs/cases.md shows; tests/test_surface_rules.py has a test for every row.
RULES: dict[str, Rule] = {
    "removed": Rule("a tool, resource, template or prompt is gone", True),
    "added": Rule("a new tool, resource, template or prompt", False),
    "described": Rule("a title, description, instructions, version, icon or example changed", False, False),
    "required-property-added": Rule("a new required parameter (an output: a new required field, which results recorded before lack)", True, True),
    "property-added": Rule("a new optional parameter (an output: a new optional field)", False, False),
    "property-removed": Rule("a parameter or a result's field removed, or renamed", True, True),
    "became-required": Rule("an optional parameter became required (an output: a field results recorded before may lack)", True, True),
    "became-optional": Rule("a required parameter became optional (an output: clients may no longer get the field)", False, True),
    "type-narrowed": Rule("a type narrowed: number to integer, a type of a list dropped", True, True),
    "type-widened": Rule("a type widened: integer to number, a type added", False, True),
    "type-changed": Rule("a type replaced by another (string to integer)", True, True),
    "union-member-removed": Rule("a union (anyOf, oneOf) lost a member", True, True),
    "union-member-added": Rule("a union (anyOf, oneOf) gained a member", False, True),
    "enum-value-removed": Rule("an enum value removed (a const changed)", True, True),
    "enum-value-added": Rule("an enum value added", False, True),
    "bound-tightened": Rule(
        "a tighter bound: a minimum raised or a maximum lowered (values, lengths, items), a multipleOf, a pattern, an enum, "
        "uniqueItems or additionalProperties: false added",
        True, True,
    ),  # fmt: skip
    "bound-loosened": Rule("a looser bound: the same, the other way", False, True),
    "default-changed": Rule("a parameter's default changed: calls that leave it out now mean something else", UNKNOWN, False),
    "output-schema-added": Rule("a tool now declares an output schema (its results gain structured content)", False),
    "output-schema-removed": Rule("a tool no longer declares an output schema", True),
    "definition-changed": Rule("a definition ($defs) added or removed; where a $ref uses one, that is compared", False, False),
    "towards-danger": Rule(
        "an annotation turned towards danger: readOnlyHint true to false, destructiveHint false to true, idempotentHint true "
        "to false, openWorldHint false to true (by the protocol's defaults when left out)",
        True,
    ),  # fmt: skip
    "towards-safety": Rule("the same annotations the other way", False),
    "template-changed": Rule("a resource template's URI changed (its variables, or the text around them)", True),
    "mime-type-changed": Rule("a resource's or a template's MIME type changed", True),
    "capability-removed": Rule("a server capability removed or turned off", True),
    "capability-added": Rule("a server capability added or turned on", False),
    "protocol-changed": Rule("the snapshots were taken at different protocol eras (other rows may come from that)", False),
    "unknown": Rule("anything the rules above do not read: a keyword, a changed pattern or format, _meta, execution", UNKNOWN, UNKNOWN),
}


@dataclass(frozen=True)
class Change:
    """One change a client would see."""

    kind: str  # server | tool | resource | template | prompt
    name: str  # the entry's key: a name, a URI, a URI template ("" for the server)
    where: str  # a JSON path into the entry ("$" is the entry itself)
    change: str  # added | removed | changed
    before: Any
    after: Any
    breaking: bool | str  # True, False or "unknown"
    rule: str  # a key of RULES
    why: str  # the change in a sentence


COLUMNS = [f.name for f in fields(Change)]
_ABSENT = object()  # a key that is not there (None is a JSON value)


def _shown(value: Any) -> str:
    if value is _ABSENT:
        return "nothing"
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


# -- one entry's changes -------------------------------------------------------------------------------


class _Entry:
    """The changes of one entry, collected in the order they are found."""

    def __init__(self, kind: str, name: str) -> None:
        self.kind, self.name = kind, name
        self.rows: list[Change] = []

    def row(self, rule: str, steps: list, change: str, before: Any, after: Any, why: str, side: str = "input") -> None:
        self.rows.append(
            Change(
                self.kind, self.name, where(steps), change, None if before is _ABSENT else before,
                None if after is _ABSENT else after, RULES[rule].verdict(side), rule, why,
            )
        )  # fmt: skip

    def unknown(self, steps: list, before: Any, after: Any, what: str, side: str = "input") -> None:
        self.row("unknown", steps, _change(before, after), before, after, f"{what}: the rules do not know this change", side)


def _change(before: Any, after: Any) -> str:
    if before is _ABSENT:
        return "added"
    return "removed" if after is _ABSENT else "changed"


def entry_changes(kind: str, name: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[Change]:
    """The changes between two versions of one entry (None: it is not there)."""
    entry = _Entry(kind, name)
    if old is None and new is None:
        return []
    if old is None:
        entry.row("added", [], "added", _ABSENT, new, f"new {kind} `{name}`")
    elif new is None:
        entry.row("removed", [], "removed", old, _ABSENT, f"{kind} `{name}` removed: clients that use it break")
    else:
        ENTRY_RULES[kind](entry, old, new)
    return entry.rows


def _each_key(entry: _Entry, old: dict, new: dict, handlers: dict[str, Callable], steps: list) -> None:
    for key in sorted(set(old) | set(new)):
        before, after = old.get(key, _ABSENT), new.get(key, _ABSENT)
        if before is not _ABSENT and after is not _ABSENT and json_equal(before, after):
            continue
        handler = handlers.get(key)
        if handler is None:
            entry.unknown([*steps, key], before, after, f"{key} {_change(before, after)}")
        else:
            handler(entry, [*steps, key], before, after)


def _described(entry: _Entry, steps: list, before: Any, after: Any) -> None:
    entry.row("described", steps, _change(before, after), before, after, f"{steps[-1]} {_change(before, after)}")


# -- tools -------------------------------------------------------------------------------------------

# An annotation's value when it is left out (the protocol's defaults), the dangerous value, and
# what turning to it means for a client.
HINTS = {
    "readOnlyHint": (False, False, "the tool may now change things"),
    "destructiveHint": (True, True, "the tool may now destroy data"),
    "idempotentHint": (False, False, "repeating a call is no longer safe: clients stop retrying it"),
    "openWorldHint": (True, True, "the tool now reaches outside systems"),
}


def _annotations(entry: _Entry, steps: list, before: Any, after: Any) -> None:
    old = before if isinstance(before, dict) else {}
    new = after if isinstance(after, dict) else {}
    if (before is not _ABSENT and not isinstance(before, dict)) or (after is not _ABSENT and not isinstance(after, dict)):
        entry.unknown(steps, before, after, "annotations are not an object")
        return
    handlers = {"title": _described, **{hint: _hint for hint in HINTS}}
    _each_key(entry, old, new, handlers, steps)


def _hint(entry: _Entry, steps: list, before: Any, after: Any) -> None:
    hint = steps[-1]
    default, danger, meaning = HINTS[hint]
    was = default if before is _ABSENT else before
    now = default if after is _ABSENT else after
    if not isinstance(was, bool) or not isinstance(now, bool):
        entry.unknown(steps, before, after, f"{hint} is not true or false")
        return
    by_default = f" (left out: {str(default).lower()} by default)" if _ABSENT in (before, after) else ""
    said = f"{hint} {str(was).lower()} → {str(now).lower()}"
    if was == now:
        entry.row("described", steps, _change(before, after), before, after, f"{hint} {'now said' if before is _ABSENT else 'now left to its default'}: {str(now).lower()}")
    elif now == danger:
        entry.row("towards-danger", steps, _change(before, after), before, after, f"{said}: {meaning}{by_default}")
    else:
        entry.row("towards-safety", steps, _change(before, after), before, after, said + by_default)


def _input_schema(entry: _Entry, steps: list, before: Any, after: Any) -> None:
    _Schema(entry, "input", before, after).compare(_or_any(before), _or_any(after), steps, [])


def _output_schema(entry: _Entry, steps: list, before: Any, after: Any) -> None:
    if before is _ABSENT:
        entry.row("output-schema-added", steps, "added", before, after, "the tool now declares an output schema: its results gain structured content")
    elif after is _ABSENT:
        entry.row("output-schema-removed", steps, "removed", before, after, "the tool no longer declares an output schema: clients reading its structured content lose it")
    else:
        _Schema(entry, "output", before, after).compare(before, after, steps, [])


def _or_any(schema: Any) -> Any:
    return {} if schema is _ABSENT else schema


def _tool(entry: _Entry, old: dict, new: dict) -> None:
    handlers = {
        "title": _described, "description": _described, "icons": _described, "annotations": _annotations,
        "inputSchema": _input_schema, "outputSchema": _output_schema,
    }  # fmt: skip
    _each_key(entry, old, new, handlers, [])


# -- resources and templates -------------------------------------------------------------------------


def _mime_type(entry: _Entry, steps: list, before: Any, after: Any) -> None:
    entry.row("mime-type-changed", steps, _change(before, after), before, after, f"MIME type {_shown(before)} → {_shown(after)}: clients read the content by it")


def _resource(entry: _Entry, old: dict, new: dict) -> None:
    handlers = {
        "name": _described, "title": _described, "description": _described, "icons": _described, "size": _described,
        "annotations": _described, "mimeType": _mime_type,
    }  # fmt: skip
    _each_key(entry, old, new, handlers, [])


# -- prompts -----------------------------------------------------------------------------------------


def _prompt(entry: _Entry, old: dict, new: dict) -> None:
    handlers = {"title": _described, "description": _described, "icons": _described, "arguments": _arguments}
    _each_key(entry, old, new, handlers, [])


def _arguments(entry: _Entry, steps: list, before: Any, after: Any) -> None:
    old = before if isinstance(before, dict) else {}
    new = after if isinstance(after, dict) else {}
    for name in sorted(set(old) | set(new)):
        at = [*steps, name]
        was, now = old.get(name), new.get(name)
        if was is None:
            required = bool(now.get("required"))
            rule = "required-property-added" if required else "property-added"
            entry.row(rule, at, "added", _ABSENT, now, f"new {'required' if required else 'optional'} argument `{name}`")
        elif now is None:
            entry.row("property-removed", at, "removed", was, _ABSENT, f"argument `{name}` removed{_renamed(name, was, old, new)}")
        elif not json_equal(was, now):
            _each_key(entry, was, now, {"description": _described, "title": _described, "required": _argument_required}, at)


def _argument_required(entry: _Entry, steps: list, before: Any, after: Any) -> None:
    name = steps[-2]
    if bool(after is not _ABSENT and after) == bool(before is not _ABSENT and before):
        entry.row("described", steps, _change(before, after), before, after, f"argument `{name}`: required now {'said' if before is _ABSENT else 'left out'}")
    elif after is not _ABSENT and after:
        entry.row("became-required", steps, _change(before, after), before, after, f"`{name}` became required")
    else:
        entry.row("became-optional", steps, _change(before, after), before, after, f"`{name}` became optional")


def _renamed(name: str, was: Any, old: dict, new: dict) -> str:
    """" (renamed to `x`?)" when a new key beside it has exactly its old value."""
    twins = [other for other, value in new.items() if other not in old and json_equal(value, was)]
    return f" (renamed to `{twins[0]}`?)" if len(twins) == 1 else ""


# -- the server ----------------------------------------------------------------------------------------


def _capabilities(entry: _Entry, steps: list, before: Any, after: Any) -> None:
    old = before if isinstance(before, dict) else {}
    new = after if isinstance(after, dict) else {}
    for key in sorted(set(old) | set(new)):
        at = [*steps, key]
        was, now = old.get(key, _ABSENT), new.get(key, _ABSENT)
        if was is not _ABSENT and now is not _ABSENT and json_equal(was, now):
            continue
        label = ".".join(str(s) for s in at[1:])
        if now is _ABSENT or now is False:
            entry.row("capability-removed", at, _change(was, now), was, now, f"capability {label} {'removed' if now is _ABSENT else 'turned off'}: clients that use it break")
        elif was is _ABSENT or was is False:
            entry.row("capability-added", at, _change(was, now), was, now, f"capability {label} {'added' if was is _ABSENT else 'turned on'}")
        elif isinstance(was, dict) and isinstance(now, dict):
            _capabilities(entry, at, was, now)
        else:
            entry.unknown(at, was, now, f"capability {label} changed")


def _protocol(entry: _Entry, steps: list, before: Any, after: Any) -> None:
    entry.row("protocol-changed", steps, _change(before, after), before, after, f"taken at protocol {_shown(before)}, then at {_shown(after)}: other rows may come from the era")


def _server(entry: _Entry, old: dict, new: dict) -> None:
    handlers = {
        "name": _described, "title": _described, "version": _described, "description": _described, "websiteUrl": _described,
        "icons": _described, "instructions": _described, "capabilities": _capabilities, "protocol": _protocol,
    }  # fmt: skip
    _each_key(entry, old, new, handlers, [])


ENTRY_RULES: dict[str, Callable[[_Entry, dict, dict], None]] = {
    "server": _server, "tool": _tool, "resource": _resource, "template": _resource, "prompt": _prompt,
}  # fmt: skip


# -- schemas -------------------------------------------------------------------------------------------

_DESCRIPTIVE = ("title", "description", "examples", "$comment", "deprecated", "readOnly", "writeOnly", "contentMediaType", "contentEncoding")
_LOWER_BOUNDS = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties", "minContains")
_UPPER_BOUNDS = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties", "maxContains")
_SIMPLE_TYPE = re.compile(r"array|boolean|integer|null|number|object|string")


class _Schema:
    """The walk of one schema's two versions; `side` is "input" or "output" (see the module doc)."""

    def __init__(self, entry: _Entry, side: str, old_root: Any, new_root: Any) -> None:
        self.entry, self.side = entry, side
        self.roots = (old_root if isinstance(old_root, dict) else {}, new_root if isinstance(new_root, dict) else {})
        self.refs_seen: set[tuple[str, str]] = set()
        # Properties whose being required changed: a default that came or went with that is said
        # by became-required / became-optional, not again as a default changed.
        self.required_changed: set[tuple] = set()

    # -- rows -----------------------------------------------------------------------------------------

    def row(self, rule: str, steps: list, before: Any, after: Any, why: str) -> None:
        self.entry.row(rule, steps, _change(before, after), before, after, why, self.side)

    def unknown(self, steps: list, before: Any, after: Any, what: str) -> None:
        self.entry.unknown(steps, before, after, what, self.side)

    def named(self, names: list[str]) -> str:
        """How a place in the schema is named in a sentence: `title`, `book.title`, `tags[]`."""
        if not names:
            return "the parameters" if self.side == "input" else "the result"
        return "`" + ".".join(names).replace(".[]", "[]") + "`"

    # -- the walk -------------------------------------------------------------------------------------

    def compare(self, old: Any, new: Any, steps: list, names: list[str]) -> None:
        if json_equal(old, new):
            return
        old, new = _boolean_schema(old), _boolean_schema(new)
        if not isinstance(old, dict) or not isinstance(new, dict):
            self.unknown(steps, old, new, f"{self.named(names)}: a schema that is not an object")
            return
        old, new = _folded(old), _folded(new)
        for key in _keywords(old, new):
            before, after = old.get(key, _ABSENT), new.get(key, _ABSENT)
            if key in ("enum", "const"):
                # One set of allowed values, whichever keyword says it (Literal["a"] is a const, Literal["a", "b"] an enum).
                if key == "const" and ("enum" in old or "enum" in new):
                    continue
                key = "enum" if "enum" in old or "enum" in new else "const"
                before, after = _allowed(old), _allowed(new)
            if before is not _ABSENT and after is not _ABSENT and json_equal(before, after):
                continue
            self.keyword(key, old, new, before, after, [*steps, key], names)

    def keyword(self, key: str, old: dict, new: dict, before: Any, after: Any, steps: list, names: list[str]) -> None:
        what = self.named(names)
        if key in _DESCRIPTIVE:
            self.row("described", steps, before, after, f"{what}: {key} {_change(before, after)}")
        elif key == "default":
            if (before is _ABSENT or after is _ABSENT) and tuple(steps[:-1]) in self.required_changed:
                return
            self.row("default-changed", steps, before, after, f"{what}: default {_shown(before)} → {_shown(after)}")
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
            self.unknown(steps, before, after, f"{what}: {key} {_change(before, after)}")

    # -- one function per kind of change ----------------------------------------------------------------

    def types(self, steps: list, before: Any, after: Any, what: str) -> None:
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

    def properties(self, old: dict, new: dict, steps: list, names: list[str]) -> None:
        was, now = old.get("properties", {}), new.get("properties", {})
        if not isinstance(was, dict) or not isinstance(now, dict):
            self.unknown(steps, old.get("properties", _ABSENT), new.get("properties", _ABSENT), f"{self.named(names)}: properties is not an object")
            return
        required = _names(new.get("required")) or []
        required_before = _names(old.get("required")) or []
        for name in sorted(set(was) | set(now)):
            if (name in required) != (name in required_before):
                self.required_changed.add((*steps, name))
            at, inner = [*steps, name], [*names, name]
            if name not in was:
                needed = name in required
                rule = "required-property-added" if needed else "property-added"
                self.row(rule, at, _ABSENT, now[name], self.added_why(inner, needed))
            elif name not in now:
                self.row("property-removed", at, was[name], _ABSENT, self.removed_why(inner) + _renamed(name, was[name], was, now))
            else:
                self.compare(was[name], now[name], at, inner)

    def added_why(self, names: list[str], required: bool) -> str:
        thing = self.named(names)
        if self.side == "input":
            return f"new {'required' if required else 'optional'} parameter {thing}" if len(names) == 1 else f"new {'required' if required else 'optional'} property {thing}"
        if required:
            return f"new required field {thing}: results recorded before lack it"
        return f"new optional field {thing}"

    def removed_why(self, names: list[str]) -> str:
        thing = self.named(names)
        if self.side == "input":
            return f"{'parameter' if len(names) == 1 else 'property'} {thing} removed: calls that send it break"
        return f"field {thing} removed: clients that read it break"

    def required(self, old: dict, new: dict, steps: list, names: list[str]) -> None:
        before, after = old.get("required", _ABSENT), new.get("required", _ABSENT)
        if any(value is not _ABSENT and _names(value) is None for value in (before, after)):
            self.unknown(steps, before, after, f"{self.named(names)}: required is not a list of names")
            return
        was, now = _names(before) or [], _names(after) or []
        old_properties, new_properties = old.get("properties"), new.get("properties")
        both = set(old_properties) & set(new_properties) if isinstance(old_properties, dict) and isinstance(new_properties, dict) else None
        changed = False
        for name in [n for n in now if n not in was]:
            if both is None or name in both:  # a property added or removed is said where properties are compared
                self.row("became-required", steps, before, after, f"{self.named([*names, name])} became required")
                changed = True
        for name in [n for n in was if n not in now]:
            if both is None or name in both:
                why = f"{self.named([*names, name])} became optional"
                self.row("became-optional", steps, before, after, why + ("" if self.side == "input" else ": clients may no longer get it"))
                changed = True
        if not changed and set(was) == set(now) and was != now:
            self.row("described", steps, before, after, f"{self.named(names)}: required listed in another order")

    def values(self, key: str, before: Any, after: Any, steps: list, what: str) -> None:
        old = _enum(before)
        new = _enum(after)
        if old is False or new is False:
            self.unknown(steps, before, after, f"{what}: {key} is not a list of values")
            return
        if old is None:
            self.row("bound-tightened", steps, before, after, f"{what}: limited to {_values_text(new)}")
            return
        if new is None:
            self.row("bound-loosened", steps, before, after, f"{what}: no longer limited to {_values_text(old)}")
            return
        lost = [v for v in old if not any(json_equal(v, w) for w in new)]
        gained = [v for v in new if not any(json_equal(v, w) for w in old)]
        if lost:
            self.row("enum-value-removed", steps, before, after, f"{what}: {_plural('value', lost)} {_values_text(lost)} removed")
        if gained:
            self.row("enum-value-added", steps, before, after, f"{what}: {_plural('value', gained)} {_values_text(gained)} added")
        if not lost and not gained:
            self.row("described", steps, before, after, f"{what}: {key} listed in another order")

    def bound(self, key: str, before: Any, after: Any, steps: list, what: str) -> None:
        if any(value is not _ABSENT and not _number(value) for value in (before, after)):
            self.unknown(steps, before, after, f"{what}: {key} is not a number")
            return
        lower = key in _LOWER_BOUNDS
        if before is _ABSENT:
            tighter, said = True, f"{key} {_shown(after)} added"
        elif after is _ABSENT:
            tighter, said = False, f"{key} {_shown(before)} removed"
        else:
            tighter = after > before if lower else after < before
            said = f"{key} {'raised' if after > before else 'lowered'}: {_shown(before)} → {_shown(after)}"
        self.row("bound-tightened" if tighter else "bound-loosened", steps, before, after, f"{what}: {said}")

    def multiple(self, before: Any, after: Any, steps: list, what: str) -> None:
        if any(value is not _ABSENT and (not _number(value) or value <= 0) for value in (before, after)):
            self.unknown(steps, before, after, f"{what}: multipleOf is not a positive number")
            return
        if before is _ABSENT:
            tighter = True
        elif after is _ABSENT:
            tighter = False
        else:
            quotient = before / after
            tighter = not (math.isfinite(quotient) and quotient == int(quotient))  # the old step is a multiple of the new one: looser
        said = f"multipleOf {_shown(before)} → {_shown(after)}"
        self.row("bound-tightened" if tighter else "bound-loosened", steps, before, after, f"{what}: {said}")

    def constraint(self, key: str, before: Any, after: Any, steps: list, names: list[str]) -> None:
        what = self.named(names)
        if key == "pattern":
            if before is _ABSENT or after is _ABSENT:
                tighter = before is _ABSENT
                self.row("bound-tightened" if tighter else "bound-loosened", steps, before, after, f"{what}: pattern {_shown(after if tighter else before)} {'added' if tighter else 'removed'}")
            else:
                self.unknown(steps, before, after, f"{what}: pattern {_shown(before)} → {_shown(after)}")
        elif key == "uniqueItems":
            was, now = before is True, after is True
            if {type(v) for v in (before, after) if v is not _ABSENT} - {bool}:
                self.unknown(steps, before, after, f"{what}: uniqueItems is not true or false")
            elif was != now:
                self.row("bound-tightened" if now else "bound-loosened", steps, before, after, f"{what}: items {'must now be' if now else 'need no longer be'} unique")
            else:
                self.row("described", steps, before, after, f"{what}: uniqueItems {_change(before, after)} (the same values)")
        else:  # additionalProperties: left out, true and {} allow any other property; false none; a schema some
            was, now = _extra(before), _extra(after)
            if isinstance(was, dict) and isinstance(now, dict) and was and now:
                self.compare(was, now, steps, [*names, "*"])
            elif was == now:
                self.row("described", steps, before, after, f"{what}: additionalProperties {_change(before, after)} (the same values)")
            else:
                tighter = now is False or (was == {} and now is not False)
                said = "other properties " + ("no longer allowed" if now is False else "limited" if tighter else "allowed again")
                self.row("bound-tightened" if tighter else "bound-loosened", steps, before, after, f"{what}: {said}")

    def union(self, key: str, before: Any, after: Any, steps: list, names: list[str]) -> None:
        what = self.named(names)
        if before is _ABSENT or after is _ABSENT:
            self.unknown(steps, before, after, f"{what}: {key} {_change(before, after)}")
            return
        if not isinstance(before, list) or not isinstance(after, list):
            self.unknown(steps, before, after, f"{what}: {key} is not a list of schemas")
            return
        lost = [m for m in before if not any(json_equal(m, n) for n in after)]
        gained = [m for m in after if not any(json_equal(m, n) for n in before)]
        # A member edited in place (Optional[int] to Optional[float]) is compared where it stands.
        while lost and gained:
            was, now = lost.pop(0), gained.pop(0)
            self.compare(was, now, [*steps, before.index(was)], names)
        if lost:
            self.row("union-member-removed", steps, before, after, f"{what}: {key} lost {_members(lost)}")
        if gained:
            self.row("union-member-added", steps, before, after, f"{what}: {key} gained {_members(gained)}")

    def ref(self, before: Any, after: Any, steps: list, names: list[str]) -> None:
        old, new = self.resolved(0, before), self.resolved(1, after)
        if old is None or new is None or (before, after) in self.refs_seen:
            self.unknown(steps, before, after, f"{self.named(names)}: $ref {_shown(before)} → {_shown(after)}")
            return
        self.refs_seen.add((before, after))
        self.compare(old, new, steps[:-1], names)  # another definition's name: what matters is what it holds, read where it is used

    def resolved(self, which: int, ref: Any) -> Any:
        if not isinstance(ref, str) or not ref.startswith("#/$defs/"):
            return None
        defs = self.roots[which].get("$defs")
        found = defs.get(ref[len("#/$defs/") :]) if isinstance(defs, dict) else None
        return found if isinstance(found, (dict, bool)) else None

    def definitions(self, before: Any, after: Any, steps: list) -> None:
        old = before if isinstance(before, dict) else {}
        new = after if isinstance(after, dict) else {}
        for name in sorted(set(old) | set(new)):
            at = [*steps, name]
            if name not in old or name not in new:
                was, now = old.get(name, _ABSENT), new.get(name, _ABSENT)
                self.row("definition-changed", at, was, now, f"definition {name} {_change(was, now)}")
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
    if value is _ABSENT or value is True:
        return {}
    return value


def _or_any_absent(schema: Any) -> Any:
    return {} if schema is _ABSENT else _boolean_schema(schema)


def _folded(node: dict) -> dict:
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


def _keywords(old: dict, new: dict) -> list[str]:
    # The type first, then the rest in order: a row about a type reads before rows about its bounds.
    keys = sorted(set(old) | set(new))
    return sorted(keys, key=lambda k: (k != "type", k))


def _types(value: Any) -> frozenset[str] | None | bool:
    """The types a `type` keyword allows (None: left out, any; False: not a type keyword)."""
    if value is _ABSENT:
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
    if value is _ABSENT:
        return []
    if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
        return None
    return value


def _allowed(node: dict) -> Any:
    """The values a schema node allows by `const` or `enum` (a const as a list of one), or absent."""
    if "const" in node and "enum" in node:
        return node["enum"] if not isinstance(node["enum"], list) else [v for v in node["enum"] if json_equal(v, node["const"])]
    if "const" in node:
        return [node["const"]]
    return node.get("enum", _ABSENT)


def _enum(value: Any) -> list | None | bool:
    if value is _ABSENT:
        return None
    return value if isinstance(value, list) else False


def _number(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def _values_text(values: list) -> str:
    return ", ".join(_shown(v) for v in values)


def _members(members: list) -> str:
    return ", ".join(_shown(m) for m in members)


def _plural(word: str, items: list) -> str:
    return word if len(items) == 1 else word + "s"


# -- two whole snapshots -----------------------------------------------------------------------------


def changes(old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    """Every change from snapshot `old` to snapshot `new` (both checked documents), in a stable
    order: the server, then tools, resources, templates and prompts, each by name."""
    rows = entry_changes("server", "", old.get("server", {}), new.get("server", {}))
    for kind, (section, _) in SECTIONS.items():
        before, after = old.get(section, {}), new.get(section, {})
        paired = _moved_templates(before, after) if kind == "template" else {}
        for key in sorted(set(before) | set(after)):
            if key in paired:
                rows.extend(_template_moved(key, paired[key], before[key], after[paired[key]]))
            elif key in paired.values():
                continue
            else:
                rows.extend(entry_changes(kind, key, before.get(key), after.get(key)))
    return rows


def _moved_templates(before: dict, after: dict) -> dict[str, str]:
    """Templates whose URI changed, found by their unchanged name: old URI -> new URI."""
    gone = {value.get("name"): key for key, value in before.items() if key not in after}
    came = {value.get("name"): key for key, value in after.items() if key not in before}
    return {gone[name]: came[name] for name in gone if name is not None and name in came}


def _template_moved(old_key: str, new_key: str, old: dict, new: dict) -> list[Change]:
    entry = _Entry("template", old_key)
    was, now = _variables(old_key), _variables(new_key)
    how = f"variables {{{', '.join(was)}}} → {{{', '.join(now)}}}" if was != now else "the text around its variables changed"
    entry.row("template-changed", ["uriTemplate"], "changed", old_key, new_key, f"URI template {old_key} → {new_key} ({how}): URIs clients made from it may no longer resolve")
    rest = entry_changes("template", new_key, old, new)
    return entry.rows + rest


def _variables(template: str) -> list[str]:
    names = []
    for expression in re.findall(r"\{([^}]*)\}", template):
        for name in expression.lstrip("+#./;?&").split(","):
            name = name.rstrip("*").split(":")[0]
            if name and name not in names:
                names.append(name)
    return names


def frame(rows: list[Change]) -> pd.DataFrame:
    """The changes as a DataFrame, one row each, columns `COLUMNS`; attrs count them."""
    pd = lib.pandas
    # Object columns: a value before or after is any JSON (None stays None, never NaN), and
    # `breaking` is True, False or "unknown".
    table = pd.DataFrame({column: pd.Series([getattr(row, column) for row in rows], dtype=object) for column in COLUMNS})
    table.attrs.update(counts(rows))
    return table


def counts(rows: Iterable[Change]) -> dict[str, int]:
    rows = list(rows)
    breaking = sum(1 for r in rows if r.breaking is True)
    unknown = sum(1 for r in rows if r.breaking == UNKNOWN)
    return {"changes": len(rows), "breaking": breaking, "unknown": unknown, "compatible": len(rows) - breaking - unknown}


FAIL_ON = ("breaking", "unknown", "any", "never")


def failing(rows: Iterable[Change], fail_on: str) -> list[Change]:
    """The changes that fail a check at level `fail_on`: "breaking" (breaking ones), "unknown"
    (those and the ones no rule knows), "any" (every change), "never" (none)."""
    if fail_on not in FAIL_ON:
        raise BadValue(f"fail_on must be one of {', '.join(FAIL_ON)}, got {fail_on!r}")
    if fail_on == "never":
        return []
    return [r for r in rows if fail_on == "any" or r.breaking is True or (fail_on == "unknown" and r.breaking == UNKNOWN)]


class BreakingChanges(AssertionError):
    """A diff that reached the level it was told to fail on (`mcp_nb.diff(..., fail_on=)`); `.frame`
    is the diff, and the message names each failing change."""

    def __init__(self, table: pd.DataFrame, fail_on: str) -> None:
        self.frame = table
        rows = [Change(*row) for row in table[COLUMNS].itertuples(index=False)]
        bad = failing(rows, fail_on)
        said = "; ".join(f"{r.kind} {r.name}: {r.why}".replace("server : ", "server: ") for r in bad[:5])
        more = f" (and {len(bad) - 5} more)" if len(bad) > 5 else ""
        super().__init__(f"{len(bad)} change{'s' if len(bad) != 1 else ''} at fail_on={fail_on!r}: {said}{more}")
