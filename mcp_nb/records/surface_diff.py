"""What changed for clients between two snapshots of a server, each change judged by a written rule.

A change is one row: which entry (`kind`, `name`), where in it (`where`, a JSON path into the
entry: `$.inputSchema.properties.title`), whether something was `added`, `removed` or
`changed`, the values `before` and `after`, whether it is `breaking` (True, False, or
"unknown"), the `rule` that said so, and `why` in a sentence ("`title` became required").

The rules are the table `RULES`, one small function per kind of change below (the walk of a
schema's two versions is `schema_compat.SchemaDiff`'s, which knows nothing of MCP), and
docs/cases.md lists them. A schema is read from the side of who uses it:

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

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from mcp_nb import libraries as lib
from mcp_nb.mistakes import BadValue, Failure
from mcp_nb.records.schema_compat import ABSENT as _ABSENT
from mcp_nb.records.schema_compat import SchemaDiff, Steps, renamed, twins_of
from mcp_nb.records.schema_compat import change_of as _change
from mcp_nb.records.schema_compat import shown as _shown
from mcp_nb.records.structured import json_equal
from mcp_nb.records.structured import json_path as where
from mcp_nb.records.surface import MAX_DEPTH, SECTIONS, too_deep

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
    "required-property-added": Rule(
        "a new required parameter (an output: a new required field, which results recorded before lack)", True, True
    ),
    "property-added": Rule("a new optional parameter (an output: a new optional field)", False, False),
    "property-removed": Rule("a parameter or a result's field removed, or renamed", True, True),
    "became-required": Rule(
        "an optional parameter became required (an output: a field results recorded before may lack)", True, True
    ),
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
        True,
        True,
    ),
    "bound-loosened": Rule("a looser bound: the same, the other way", False, True),
    "default-changed": Rule("a parameter's default changed: calls that leave it out now mean something else", UNKNOWN, False),
    "output-schema-added": Rule("a tool now declares an output schema (its results gain structured content)", False),
    "output-schema-removed": Rule("a tool no longer declares an output schema", True),
    "definition-changed": Rule("a definition ($defs) added or removed; where a $ref uses one, that is compared", False, False),
    "towards-danger": Rule(
        "an annotation turned towards danger: readOnlyHint true to false, destructiveHint false to true, idempotentHint true "
        "to false, openWorldHint false to true (by the protocol's defaults when left out)",
        True,
    ),
    "towards-safety": Rule("the same annotations the other way", False),
    "template-changed": Rule("a resource template's URI changed (its variables, or the text around them)", True),
    "mime-type-changed": Rule("a resource's or a template's MIME type changed", True),
    "capability-removed": Rule("a server capability removed or turned off", True),
    "capability-added": Rule("a server capability added or turned on", False),
    "protocol-changed": Rule("the snapshots were taken at different protocol eras (other rows may come from that)", False),
    "unknown": Rule(
        "anything the rules above do not read: a keyword, a changed pattern or format, _meta, execution", UNKNOWN, UNKNOWN
    ),
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


# -- one entry's changes -------------------------------------------------------------------------------


class _Entry:
    """The changes of one entry, collected in the order they are found."""

    def __init__(self, kind: str, name: str) -> None:
        self.kind, self.name = kind, name
        self.rows: list[Change] = []

    def row(self, rule: str, steps: Steps, change: str, before: Any, after: Any, why: str, side: str = "input") -> None:
        self.rows.append(
            Change(
                self.kind,
                self.name,
                where(steps),
                change,
                None if before is _ABSENT else before,
                None if after is _ABSENT else after,
                RULES[rule].verdict(side),
                rule,
                why,
            )
        )

    def unknown(self, steps: Steps, before: Any, after: Any, what: str, side: str = "input") -> None:
        self.row("unknown", steps, _change(before, after), before, after, f"{what}: the rules do not know this change", side)


def entry_changes(kind: str, name: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[Change]:
    """The changes between two versions of one entry (None: it is not there)."""
    entry = _Entry(kind, name)
    if old is None and new is None:
        return []
    if old is None:
        entry.row("added", [], "added", _ABSENT, new, f"new {kind} `{name}`")
    elif new is None:
        entry.row("removed", [], "removed", old, _ABSENT, f"{kind} `{name}` removed: clients that use it break")
    elif too_deep(old, MAX_DEPTH - 2) is not None or too_deep(new, MAX_DEPTH - 2) is not None:
        # Deeper than any snapshot's entry (two levels into its document) can be: not from a
        # snapshot, which is bounded where it is read, but two registrations of the kernel's,
        # say. Said as a change no rule could read, not compared level by level.
        entry.unknown([], old, new, f"nested more than {MAX_DEPTH} levels deep, so not compared")
    else:
        ENTRY_RULES[kind](entry, old, new)
    return entry.rows


Handler = Callable[[_Entry, Steps, Any, Any], None]  # what one key's change says


def _each_key(entry: _Entry, old: dict[str, Any], new: dict[str, Any], handlers: Mapping[str, Handler], steps: Steps) -> None:
    for key in sorted(set(old) | set(new)):
        before, after = old.get(key, _ABSENT), new.get(key, _ABSENT)
        if before is not _ABSENT and after is not _ABSENT and json_equal(before, after):
            continue
        handler = handlers.get(key)
        if handler is None:
            entry.unknown([*steps, key], before, after, f"{key} {_change(before, after)}")
        else:
            handler(entry, [*steps, key], before, after)


def _described(entry: _Entry, steps: Steps, before: Any, after: Any) -> None:
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


def _annotations(entry: _Entry, steps: Steps, before: Any, after: Any) -> None:
    old = before if isinstance(before, dict) else {}
    new = after if isinstance(after, dict) else {}
    if (before is not _ABSENT and not isinstance(before, dict)) or (after is not _ABSENT and not isinstance(after, dict)):
        entry.unknown(steps, before, after, "annotations are not an object")
        return
    handlers = {"title": _described, **{hint: _hint for hint in HINTS}}
    _each_key(entry, old, new, handlers, steps)


def _hint(entry: _Entry, steps: Steps, before: Any, after: Any) -> None:
    hint = str(steps[-1])  # the annotation's key
    default, danger, meaning = HINTS[hint]
    was = default if before is _ABSENT else before
    now = default if after is _ABSENT else after
    if not isinstance(was, bool) or not isinstance(now, bool):
        entry.unknown(steps, before, after, f"{hint} is not true or false")
        return
    by_default = f" (left out: {str(default).lower()} by default)" if _ABSENT in (before, after) else ""
    said = f"{hint} {str(was).lower()} → {str(now).lower()}"
    if was == now:
        entry.row(
            "described",
            steps,
            _change(before, after),
            before,
            after,
            f"{hint} {'now said' if before is _ABSENT else 'now left to its default'}: {str(now).lower()}",
        )
    elif now == danger:
        entry.row("towards-danger", steps, _change(before, after), before, after, f"{said}: {meaning}{by_default}")
    else:
        entry.row("towards-safety", steps, _change(before, after), before, after, said + by_default)


def _input_schema(entry: _Entry, steps: Steps, before: Any, after: Any) -> None:
    SchemaDiff(entry, "input", before, after).compare(_or_any(before), _or_any(after), steps, [])


def _output_schema(entry: _Entry, steps: Steps, before: Any, after: Any) -> None:
    if before is _ABSENT:
        entry.row(
            "output-schema-added",
            steps,
            "added",
            before,
            after,
            "the tool now declares an output schema: its results gain structured content",
        )
    elif after is _ABSENT:
        entry.row(
            "output-schema-removed",
            steps,
            "removed",
            before,
            after,
            "the tool no longer declares an output schema: clients reading its structured content lose it",
        )
    else:
        SchemaDiff(entry, "output", before, after).compare(before, after, steps, [])


def _or_any(schema: Any) -> Any:
    return {} if schema is _ABSENT else schema


def _tool(entry: _Entry, old: dict[str, Any], new: dict[str, Any]) -> None:
    handlers = {
        "title": _described,
        "description": _described,
        "icons": _described,
        "annotations": _annotations,
        "inputSchema": _input_schema,
        "outputSchema": _output_schema,
    }
    _each_key(entry, old, new, handlers, [])


# -- resources and templates -------------------------------------------------------------------------


def _mime_type(entry: _Entry, steps: Steps, before: Any, after: Any) -> None:
    entry.row(
        "mime-type-changed",
        steps,
        _change(before, after),
        before,
        after,
        f"MIME type {_shown(before)} → {_shown(after)}: clients read the content by it",
    )


def _resource(entry: _Entry, old: dict[str, Any], new: dict[str, Any]) -> None:
    handlers = {
        "name": _described,
        "title": _described,
        "description": _described,
        "icons": _described,
        "size": _described,
        "annotations": _described,
        "mimeType": _mime_type,
    }
    _each_key(entry, old, new, handlers, [])


# -- prompts -----------------------------------------------------------------------------------------


def _prompt(entry: _Entry, old: dict[str, Any], new: dict[str, Any]) -> None:
    handlers = {"title": _described, "description": _described, "icons": _described, "arguments": _arguments}
    _each_key(entry, old, new, handlers, [])


def _arguments(entry: _Entry, steps: Steps, before: Any, after: Any) -> None:
    # a snapshot's arguments are objects by name (surface.py checks it): one side at least has each name
    old: dict[str, dict[str, Any]] = before if isinstance(before, dict) else {}
    new: dict[str, dict[str, Any]] = after if isinstance(after, dict) else {}
    twins = twins_of(old, new)
    for name in sorted(set(old) | set(new)):
        at: Steps = [*steps, name]
        was, now = old.get(name), new.get(name)
        if now is None:
            entry.row("property-removed", at, "removed", was, _ABSENT, f"argument `{name}` removed{renamed(was, twins)}")
        elif was is None:
            required = bool(now.get("required"))
            rule = "required-property-added" if required else "property-added"
            entry.row(rule, at, "added", _ABSENT, now, f"new {'required' if required else 'optional'} argument `{name}`")
        elif not json_equal(was, now):
            _each_key(entry, was, now, {"description": _described, "title": _described, "required": _argument_required}, at)


def _argument_required(entry: _Entry, steps: Steps, before: Any, after: Any) -> None:
    name = steps[-2]
    if bool(after is not _ABSENT and after) == bool(before is not _ABSENT and before):
        entry.row(
            "described",
            steps,
            _change(before, after),
            before,
            after,
            f"argument `{name}`: required now {'said' if before is _ABSENT else 'left out'}",
        )
    elif after is not _ABSENT and after:
        entry.row("became-required", steps, _change(before, after), before, after, f"`{name}` became required")
    else:
        entry.row("became-optional", steps, _change(before, after), before, after, f"`{name}` became optional")


# -- the server ----------------------------------------------------------------------------------------


def _capabilities(entry: _Entry, steps: Steps, before: Any, after: Any) -> None:
    old = before if isinstance(before, dict) else {}
    new = after if isinstance(after, dict) else {}
    for key in sorted(set(old) | set(new)):
        at = [*steps, key]
        was, now = old.get(key, _ABSENT), new.get(key, _ABSENT)
        if was is not _ABSENT and now is not _ABSENT and json_equal(was, now):
            continue
        label = ".".join(str(s) for s in at[1:])
        if now is _ABSENT or now is False:
            entry.row(
                "capability-removed",
                at,
                _change(was, now),
                was,
                now,
                f"capability {label} {'removed' if now is _ABSENT else 'turned off'}: clients that use it break",
            )
        elif was is _ABSENT or was is False:
            entry.row(
                "capability-added",
                at,
                _change(was, now),
                was,
                now,
                f"capability {label} {'added' if was is _ABSENT else 'turned on'}",
            )
        elif isinstance(was, dict) and isinstance(now, dict):
            _capabilities(entry, at, was, now)
        else:
            entry.unknown(at, was, now, f"capability {label} changed")


def _protocol(entry: _Entry, steps: Steps, before: Any, after: Any) -> None:
    entry.row(
        "protocol-changed",
        steps,
        _change(before, after),
        before,
        after,
        f"taken at protocol {_shown(before)}, then at {_shown(after)}: other rows may come from the era",
    )


def _server(entry: _Entry, old: dict[str, Any], new: dict[str, Any]) -> None:
    handlers = {
        "name": _described,
        "title": _described,
        "version": _described,
        "description": _described,
        "websiteUrl": _described,
        "icons": _described,
        "instructions": _described,
        "capabilities": _capabilities,
        "protocol": _protocol,
    }
    _each_key(entry, old, new, handlers, [])


ENTRY_RULES: dict[str, Callable[[_Entry, dict[str, Any], dict[str, Any]], None]] = {
    "server": _server,
    "tool": _tool,
    "resource": _resource,
    "template": _resource,
    "prompt": _prompt,
}


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


def _moved_templates(before: dict[str, Any], after: dict[str, Any]) -> dict[str, str]:
    """Templates whose URI changed, found by their unchanged name: old URI -> new URI."""
    gone = {value.get("name"): key for key, value in before.items() if key not in after}
    came = {value.get("name"): key for key, value in after.items() if key not in before}
    return {gone[name]: came[name] for name in gone if name is not None and name in came}


def _template_moved(old_key: str, new_key: str, old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    entry = _Entry("template", old_key)
    was, now = _variables(old_key), _variables(new_key)
    how = f"variables {{{', '.join(was)}}} → {{{', '.join(now)}}}" if was != now else "the text around its variables changed"
    entry.row(
        "template-changed",
        ["uriTemplate"],
        "changed",
        old_key,
        new_key,
        f"URI template {old_key} → {new_key} ({how}): URIs clients made from it may no longer resolve",
    )
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


class BreakingChanges(Failure, AssertionError):
    """A diff that reached the level it was told to fail on (`mcp_nb.diff(..., fail_on=)`); `.frame`
    is the diff, and the message names each failing change."""

    def __init__(self, table: pd.DataFrame, fail_on: str) -> None:
        self.frame = table
        rows = [Change(*row) for row in table[COLUMNS].itertuples(index=False)]
        bad = failing(rows, fail_on)
        said = "; ".join(f"{r.kind} {r.name}: {r.why}".replace("server : ", "server: ") for r in bad[:5])
        more = f" (and {len(bad) - 5} more)" if len(bad) > 5 else ""
        super().__init__(f"{len(bad)} change{'s' if len(bad) != 1 else ''} at fail_on={fail_on!r}: {said}{more}")
