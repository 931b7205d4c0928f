"""Every rule that judges a change of a server's surface, and every change it must not call breaking.

Each change is made the way a notebook user makes it: a tool (resource, template, prompt)
registered in the kernel, then registered again changed; the surfaces are snapshots of the
kernel's server (`mcp_nb.snapshot()`), compared by `mcp_nb.diff`. What a kernel cannot be made
to change (a capability, the protocol era, a `_meta`) is changed in a snapshot document, which
`mcp_nb.diff` takes as well. The last tests hold the table: every rule has a test here, and
docs/cases.md lists every rule with its verdicts.
"""

import copy
import re
from pathlib import Path
from typing import Literal, TypedDict

import pytest
from pydantic import BaseModel

import mcp_nb
from mcp_nb.records.surface_diff import RULES, UNKNOWN

ROOT = Path(__file__).resolve().parent.parent
TESTED: set[str] = set()  # the rules a test below has shown


def tool_with(schema: dict | None = None, **options):
    """Register tool `t` (one parameter per property of `schema`) and return the kernel's snapshot."""
    names = list((schema or {}).get("properties", {}))
    source = f"def t({', '.join(f'{n}=None' for n in names)}):\n    return 'ok'"
    namespace: dict = {}
    exec(source, namespace)
    mcp_nb.tool("t", input_schema=schema, **options)(namespace["t"])
    return mcp_nb.snapshot()


def obj(properties: dict, required=(), **more) -> dict:
    return {"type": "object", "properties": properties, "required": list(required), **more}


def judged(old, new, rule: str, breaking, where: str | None = None, why: str | None = None, kind: str = "tool"):
    """The diff of two surfaces has a row of `rule` with this verdict (and where, and why)."""
    frame = mcp_nb.diff(old, new)
    rows = frame[(frame["rule"] == rule) & (frame["kind"] == kind) & ((frame["where"] == where) if where is not None else True)]
    assert len(rows) >= 1, f"no {rule} row:\n{frame[['kind', 'name', 'where', 'rule', 'breaking', 'why']].to_string()}"
    row = rows.iloc[0]
    assert row["breaking"] is breaking or row["breaking"] == breaking, (row["breaking"], breaking)
    if where is not None:
        assert row["where"] == where, row["where"]
    if why is not None:
        assert why in row["why"], row["why"]
    TESTED.add(rule)
    return frame


def no_breaking(frame):
    assert not frame["breaking"].map(lambda b: b is True or b == UNKNOWN).any(), frame[
        ["where", "rule", "breaking", "why"]
    ].to_string()


# -- entries added and removed ---------------------------------------------------------------------


def test_a_removed_tool_breaks_and_a_new_one_does_not():
    before = tool_with(obj({"a": {"type": "string"}}))

    @mcp_nb.tool()
    def other() -> str:
        return ""

    mcp_nb.remove("t")
    after = mcp_nb.snapshot()
    judged(before, after, "removed", True, "$", "tool `t` removed")
    frame = judged(before, after, "added", False, "$", "new tool `other`")
    assert frame.loc[frame["rule"] == "removed", "before"].iloc[0]["inputSchema"]["properties"] == {"a": {"type": "string"}}


def test_a_removed_resource_template_and_prompt_each_break():
    @mcp_nb.resource("books://catalog")
    def catalog() -> str:
        return ""

    @mcp_nb.resource("books://{title}")
    def book(title: str) -> str:
        return title

    @mcp_nb.prompt()
    def review(title: str) -> str:
        return title

    before = mcp_nb.snapshot()
    for key in ("books://catalog", "books://{title}", "review"):
        mcp_nb.remove(key)
    after = mcp_nb.snapshot()
    for kind in ("resource", "template", "prompt"):
        judged(before, after, "removed", True, "$", kind=kind)
    judged(after, before, "added", False, "$", kind="template")


# -- parameters ------------------------------------------------------------------------------------------


def test_a_new_required_parameter_breaks_and_an_optional_one_does_not():
    before = tool_with(obj({"title": {"type": "string"}}, ["title"]))
    after = tool_with(
        obj({"title": {"type": "string"}, "edition": {"type": "integer"}, "year": {"type": "integer"}}, ["title", "edition"])
    )
    judged(before, after, "required-property-added", True, "$.inputSchema.properties.edition", "new required parameter `edition`")
    judged(before, after, "property-added", False, "$.inputSchema.properties.year", "new optional parameter `year`")


def test_a_parameter_becoming_required_breaks_and_becoming_optional_does_not():
    before = tool_with(obj({"title": {"type": "string"}, "year": {"type": "integer"}}, ["year"]))
    after = tool_with(obj({"title": {"type": "string"}, "year": {"type": "integer"}}, ["title"]))
    judged(before, after, "became-required", True, "$.inputSchema.required", "`title` became required")
    judged(before, after, "became-optional", False, "$.inputSchema.required", "`year` became optional")


def test_the_signature_a_user_edits_gives_the_issue_s_own_words():
    @mcp_nb.tool()
    def find(title: str | None = None, author: str = "") -> str:
        return ""

    before = mcp_nb.snapshot()

    @mcp_nb.tool()
    def find(title: str, author: str = "") -> str:  # noqa: F811 - the cell, re-run
        return ""

    frame = mcp_nb.diff(before)
    assert "`title` became required" in set(frame["why"])
    assert frame.loc[frame["why"] == "`title` became required", "breaking"].iloc[0] is True


def test_a_removed_parameter_breaks_and_a_rename_is_named():
    before = tool_with(obj({"title": {"type": "string"}, "year": {"type": "integer"}}))
    after = tool_with(obj({"title": {"type": "string"}, "published": {"type": "integer"}}))
    judged(
        before,
        after,
        "property-removed",
        True,
        "$.inputSchema.properties.year",
        "parameter `year` removed: calls that send it break (renamed to `published`?)",
    )


def test_a_narrowed_type_breaks_a_widened_one_does_not_and_another_type_breaks():
    before = tool_with(obj({"n": {"type": "number"}, "m": {"type": "integer"}, "s": {"type": "string"}}))
    after = tool_with(obj({"n": {"type": "integer"}, "m": {"type": "number"}, "s": {"type": "integer"}}))
    judged(before, after, "type-narrowed", True, "$.inputSchema.properties.n.type", "`n`: type narrowed: number → integer")
    judged(before, after, "type-widened", False, "$.inputSchema.properties.m.type", "`m`: type widened: integer → number")
    judged(before, after, "type-changed", True, "$.inputSchema.properties.s.type", "`s`: type string → integer")


def test_an_optional_made_plain_is_a_type_narrowed_by_null():
    @mcp_nb.tool()
    def t(year: int | None) -> str:
        return ""

    before = mcp_nb.snapshot()

    @mcp_nb.tool()
    def t(year: int) -> str:  # noqa: F811
        return ""

    judged(before, mcp_nb.snapshot(), "type-narrowed", True, why="`year`: type narrowed: integer | null → integer")


def test_a_union_losing_a_member_breaks_and_gaining_one_does_not():
    member_a, member_b = {"type": "string", "maxLength": 5}, {"type": "array", "items": {"type": "string"}}
    before = tool_with(obj({"q": {"anyOf": [member_a, member_b]}, "r": {"oneOf": [member_a]}}))
    after = tool_with(obj({"q": {"anyOf": [member_a]}, "r": {"oneOf": [member_a, member_b]}}))
    judged(before, after, "union-member-removed", True, "$.inputSchema.properties.q.anyOf", "`q`: anyOf lost")
    judged(before, after, "union-member-added", False, "$.inputSchema.properties.r.oneOf", "`r`: oneOf gained")


def test_an_enum_value_removed_breaks_and_one_added_does_not():
    @mcp_nb.tool()
    def t(genre: Literal["sf", "fantasy"], tone: Literal["kind"]) -> str:
        return ""

    before = mcp_nb.snapshot()

    @mcp_nb.tool()
    def t(genre: Literal["sf"], tone: Literal["kind", "harsh"]) -> str:  # noqa: F811
        return ""

    after = mcp_nb.snapshot()
    judged(before, after, "enum-value-removed", True, "$.inputSchema.properties.genre.enum", '`genre`: value "fantasy" removed')
    judged(before, after, "enum-value-added", False, "$.inputSchema.properties.tone.enum", '`tone`: value "harsh" added')


@pytest.mark.parametrize(
    "keyword, old, new, rule",
    [
        ("maximum", 100, 10, "bound-tightened"),
        ("maximum", 10, 100, "bound-loosened"),
        ("minimum", 0, 1, "bound-tightened"),
        ("exclusiveMinimum", None, 0, "bound-tightened"),
        ("maxLength", 80, None, "bound-loosened"),
        ("multipleOf", 2, 4, "bound-tightened"),
        ("multipleOf", 4, 2, "bound-loosened"),
        ("pattern", None, "^[a-z]+$", "bound-tightened"),
        ("pattern", "^[a-z]+$", None, "bound-loosened"),
    ],
)
def test_a_tighter_bound_breaks_and_a_looser_one_does_not(keyword, old, new, rule):
    def schema(value):
        kind = "string" if keyword in ("maxLength", "pattern") else "integer"
        return obj({"n": {"type": kind, **({keyword: value} if value is not None else {})}})

    before, after = tool_with(schema(old)), tool_with(schema(new))
    judged(before, after, rule, rule == "bound-tightened", f"$.inputSchema.properties.n.{keyword}")


def test_closing_extra_properties_or_asking_unique_items_is_a_tighter_bound():
    before = tool_with(obj({"tags": {"type": "array", "items": {"type": "string"}}}))
    after = tool_with(
        obj({"tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}}, additionalProperties=False)
    )
    judged(before, after, "bound-tightened", True, "$.inputSchema.additionalProperties")
    frame = mcp_nb.diff(before, after)
    assert frame.loc[frame["where"] == "$.inputSchema.properties.tags.uniqueItems", "rule"].tolist() == ["bound-tightened"]
    judged(after, before, "bound-loosened", False, "$.inputSchema.additionalProperties")


def test_a_nested_model_s_field_is_compared_where_it_is_defined():
    class Address(BaseModel):
        city: str

    @mcp_nb.tool()
    def ship(to: Address) -> str:
        return ""

    before = mcp_nb.snapshot()

    class Address(BaseModel):  # noqa: F811 - the model, edited
        city: str
        zip: str

    @mcp_nb.tool()
    def ship(to: Address) -> str:  # noqa: F811
        return ""

    judged(
        before,
        mcp_nb.snapshot(),
        "required-property-added",
        True,
        "$.inputSchema['$defs'].Address.properties.zip",
        "`Address.zip`",
    )


def test_a_definition_renamed_is_compared_through_its_ref():
    before = tool_with({"type": "object", "properties": {"a": {"$ref": "#/$defs/Old"}}, "$defs": {"Old": {"type": "integer"}}})
    after = tool_with({"type": "object", "properties": {"a": {"$ref": "#/$defs/New"}}, "$defs": {"New": {"type": "number"}}})
    judged(before, after, "definition-changed", False, "$.inputSchema['$defs'].New")
    judged(before, after, "type-widened", False, "$.inputSchema.properties.a.type", "`a`: type widened: integer → number")


def test_a_changed_default_is_unknown_for_a_parameter():
    before = tool_with(obj({"n": {"type": "integer", "default": 10}}))
    after = tool_with(obj({"n": {"type": "integer", "default": 20}}))
    judged(before, after, "default-changed", UNKNOWN, "$.inputSchema.properties.n.default", "`n`: default 10 → 20")


def test_a_better_description_or_title_is_not_breaking():
    before = tool_with(obj({"n": {"type": "integer", "description": "how many"}}), description="Old words.")
    after = tool_with(
        obj({"n": {"type": "integer", "description": "how many books"}}), description="Better words.", title="Count"
    )
    frame = judged(before, after, "described", False, "$.description", "description changed")
    assert set(frame["where"]) == {"$.description", "$.title", "$.inputSchema.properties.n.description"}
    no_breaking(frame)


# -- output schemas -----------------------------------------------------------------------------------


class BookV1(TypedDict):
    title: str
    price: float
    stock: int


def test_an_output_schema_narrowed_widened_or_cut_breaks_and_a_new_optional_field_does_not():
    @mcp_nb.tool()
    def book() -> BookV1:
        return {"title": "", "price": 1.0, "stock": 1}

    before = mcp_nb.snapshot()

    class BookV2(BaseModel):
        title: str
        price: int  # old results' prices (9.99) no longer fit
        stock: float  # new results may not fit what clients hold
        isbn: str | None = None  # a field more

    @mcp_nb.tool()
    def book() -> BookV2:  # noqa: F811
        return BookV2(title="", price=1, stock=1.0)

    after = mcp_nb.snapshot()
    judged(before, after, "type-narrowed", True, "$.outputSchema.properties.price.type")
    judged(before, after, "type-widened", True, "$.outputSchema.properties.stock.type")
    judged(before, after, "property-added", False, "$.outputSchema.properties.isbn", "new optional field `isbn`")

    class BookV3(TypedDict):
        title: str
        price: int
        stock: float
        isbn: str | None
        pages: int

    @mcp_nb.tool()
    def book() -> BookV3:  # noqa: F811
        return {"title": "", "price": 1, "stock": 1.0, "isbn": None, "pages": 1}

    latest = mcp_nb.snapshot()
    judged(after, latest, "required-property-added", True, "$.outputSchema.properties.pages", "results recorded before lack it")
    judged(after, latest, "became-required", True, "$.outputSchema.required", "`isbn` became required")
    judged(latest, after, "became-optional", True, "$.outputSchema.required", "clients may no longer get it")
    judged(
        latest,
        before,
        "property-removed",
        True,
        "$.outputSchema.properties.isbn",
        "field `isbn` removed: clients that read it break",
    )


def test_an_output_schema_added_is_not_breaking_and_one_removed_is():
    @mcp_nb.tool()
    def plain(title: str):
        return title

    before = mcp_nb.snapshot()

    @mcp_nb.tool()
    def plain(title: str) -> BookV1:  # noqa: F811
        return {"title": title, "price": 1.0, "stock": 0}

    after = mcp_nb.snapshot()
    judged(before, after, "output-schema-added", False, "$.outputSchema")
    judged(after, before, "output-schema-removed", True, "$.outputSchema")


def test_an_enum_value_added_to_a_result_breaks_clients_that_hold_the_old_schema():
    @mcp_nb.tool()
    def status() -> Literal["open", "closed"]:
        return "open"

    before = mcp_nb.snapshot()

    @mcp_nb.tool()
    def status() -> Literal["open", "closed", "archived"]:  # noqa: F811
        return "open"

    judged(before, mcp_nb.snapshot(), "enum-value-added", True, "$.outputSchema.properties.result.enum")


# -- annotations ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "old, new, hint, rule",
    [
        ({"read_only": True}, {}, "readOnlyHint", "towards-danger"),
        ({}, {"read_only": True}, "readOnlyHint", "towards-safety"),
        ({}, {"destructive": True}, "destructiveHint", "described"),  # true is its default: nothing changed
        ({"idempotent": True}, {}, "idempotentHint", "towards-danger"),
    ],
)
def test_an_annotation_turned_towards_danger_breaks(old, new, hint, rule):
    before = tool_with(obj({}), **old)
    after = tool_with(obj({}), **new)
    judged(before, after, rule, rule == "towards-danger", f"$.annotations.{hint}")


def test_destructive_and_open_world_hints_said_false_then_left_to_their_default_break():
    # mcp_nb's flags only say true; an outside server says false too: a snapshot document as it lists it.
    before = tool_with(obj({}))
    said_false = copy.deepcopy(before)
    said_false["tools"]["t"]["annotations"] = {"destructiveHint": False, "openWorldHint": False}
    frame = judged(
        said_false,
        before,
        "towards-danger",
        True,
        "$.annotations.destructiveHint",
        "the tool may now destroy data (left out: true by default)",
    )
    assert frame.loc[frame["where"] == "$.annotations.openWorldHint", "rule"].tolist() == ["towards-danger"]
    judged(before, said_false, "towards-safety", False, "$.annotations.destructiveHint")


# -- resources, templates, prompts -----------------------------------------------------------------------


def test_a_template_whose_variables_changed_breaks():
    @mcp_nb.resource("books://{title}")
    def book(title: str) -> str:
        return title

    before = mcp_nb.snapshot()
    mcp_nb.remove("books://{title}")

    @mcp_nb.resource("books://{title}/{edition}")
    def book(title: str, edition: str) -> str:  # noqa: F811
        return title

    frame = judged(
        before,
        mcp_nb.snapshot(),
        "template-changed",
        True,
        "$.uriTemplate",
        "variables {title} → {title, edition}",
        kind="template",
    )
    assert "removed" not in set(frame["rule"])  # the same template, moved: not one removed and one new


def test_a_resource_s_mime_type_changed_breaks():
    @mcp_nb.resource("books://catalog", mime_type="text/plain")
    def catalog() -> str:
        return ""

    before = mcp_nb.snapshot()

    @mcp_nb.resource("books://catalog", mime_type="application/json")
    def catalog() -> str:  # noqa: F811
        return "{}"

    judged(before, mcp_nb.snapshot(), "mime-type-changed", True, "$.mimeType", kind="resource")


def test_a_prompt_s_arguments_follow_the_parameter_rules():
    @mcp_nb.prompt()
    def review(title: str, tone: str = "kind", length: str = "short") -> str:
        return title

    before = mcp_nb.snapshot()

    @mcp_nb.prompt()
    def review(title: str, tone: str, audience: str = "all") -> str:  # noqa: F811
        return title

    after = mcp_nb.snapshot()
    judged(before, after, "became-required", True, "$.arguments.tone.required", "`tone` became required", kind="prompt")
    judged(before, after, "property-removed", True, "$.arguments.length", "argument `length` removed", kind="prompt")
    judged(before, after, "property-added", False, "$.arguments.audience", "new optional argument `audience`", kind="prompt")
    judged(after, before, "became-optional", False, "$.arguments.tone.required", kind="prompt")


# -- the server --------------------------------------------------------------------------------------


def test_a_capability_removed_breaks_and_one_added_does_not():
    before = tool_with(obj({}))
    after = copy.deepcopy(before)
    del after["server"]["capabilities"]["tools"]
    after["server"]["capabilities"]["logging"] = {}
    judged(before, after, "capability-removed", True, "$.capabilities.tools", "capability tools removed", kind="server")
    judged(before, after, "capability-added", False, "$.capabilities.logging", kind="server")


def test_a_new_version_or_instructions_are_not_breaking_and_another_era_is_said():
    before = tool_with(obj({}))
    after = copy.deepcopy(before)
    after["server"].update(version="9.9.9", instructions="Ask for books by title.", protocol="2025-11-25")
    frame = judged(before, after, "protocol-changed", False, "$.protocol", "other rows may come from the era", kind="server")
    assert set(frame.loc[frame["rule"] == "described", "where"]) == {"$.version", "$.instructions"}
    no_breaking(frame[frame["kind"] == "server"])


# -- what no rule knows -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "edit, where",
    [
        (lambda t: t.update(_meta={"team": "data"}), "$._meta"),
        (lambda t: t.update(execution={"taskSupport": "required"}), "$.execution"),
        (lambda t: t["inputSchema"]["properties"]["s"].update(format="email"), "$.inputSchema.properties.s.format"),
        (lambda t: t["inputSchema"]["properties"]["s"].update(pattern="^b"), "$.inputSchema.properties.s.pattern"),
        (lambda t: t["inputSchema"]["properties"]["s"].update({"if": {"minLength": 1}}), "$.inputSchema.properties.s.if"),
    ],
)
def test_a_change_no_rule_knows_is_unknown_never_compatible(edit, where):
    before = tool_with(obj({"s": {"type": "string", "pattern": "^a"}}))
    after = copy.deepcopy(before)
    edit(after["tools"]["t"])
    judged(before, after, "unknown", UNKNOWN, where, "the rules do not know this change")


def test_the_same_surface_has_no_changes():
    before = tool_with(obj({"a": {"type": "string"}}, ["a"]))
    assert mcp_nb.diff(before, mcp_nb.snapshot()).empty
    assert mcp_nb.diff(before).empty  # the kernel now, by default


# -- the table ---------------------------------------------------------------------------------------


def test_every_rule_has_a_test_here():
    # Each rule is named as a string in a test of this file that checks its verdict with `judged`
    # (which also notes, in TESTED, the rules the tests run so far have shown).
    source = Path(__file__).read_text(encoding="utf-8").split("# -- the table", 1)[0]
    untested = sorted(rule for rule in RULES if f'"{rule}"' not in source)
    assert not untested, f"rules with no test in this file: {untested}"
    assert TESTED <= set(RULES)


def test_the_docs_table_lists_every_rule_with_its_verdicts():
    page = (ROOT / "docs" / "cases.md").read_text(encoding="utf-8")
    section = page.split("### The rules", 1)[1].split("\n### ", 1)[0]
    table = [line for line in section.splitlines() if line.startswith("|")]
    rows = [[cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip("|"))] for line in table[2:]]
    listed = {re.sub(r"`", "", row[0]): (row[2], row[3]) for row in rows}
    assert set(listed) == set(RULES)
    words = {True: "breaking", False: "no", UNKNOWN: "unknown", None: "—"}
    for name, rule in RULES.items():
        assert listed[name] == (words[rule.breaks], words[rule.breaks_output]), name
