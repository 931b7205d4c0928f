"""Surface diffs at the edges: long enums, unions, property lists and required lists are compared
in one pass (counted in calls, never timed here: benchmarks/bench_surface.py times them), a
snapshot too deep to compare is refused in one line wherever it comes in, and numbers beyond a
float's range are bounds like any other."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys

import pytest
import warm
from hypothesis import given, settings
from hypothesis import strategies as st

import mcp_nb
from mcp_nb.records.schema_compat import canonical
from mcp_nb.records.structured import json_equal
from mcp_nb.records.surface import MAX_DEPTH, SurfaceError, load


def snapshot(schema: dict, side: str = "inputSchema") -> dict:
    return {
        "mcp_nb_surface": 1,
        "server": {"name": "shelf"},
        "tools": {"find": {side: schema}},
        "resources": {},
        "templates": {},
        "prompts": {},
    }


def genre(values: list) -> dict:
    return {"type": "object", "properties": {"genre": {"type": "string", "enum": values}}, "required": ["genre"]}


class TooManyCalls(Exception):
    pass


@contextlib.contextmanager
def at_most_calls(budget: int):
    """Fail as soon as the code inside makes more than `budget` function calls (Python's and C's):
    the work a comparison does, counted, where a timing would depend on the machine."""
    made = 0

    def count(frame, event, arg):
        nonlocal made
        if event in ("call", "c_call"):
            made += 1
            if made > budget:
                sys.setprofile(None)
                raise TooManyCalls(f"more than {budget} calls")

    mcp_nb.diff(snapshot(genre(["a"])), snapshot(genre(["b"])))  # what a first diff loads (pandas) is not counted
    before = sys.getprofile()
    sys.setprofile(count)
    try:
        yield
    finally:
        sys.setprofile(before)


VALUES = 10_000


def test_an_enum_of_ten_thousand_values_that_lost_one_is_compared_in_one_pass():
    names = [f"genre-{i:05d}" for i in range(VALUES)]
    old, new = snapshot(genre(names)), snapshot(genre(names[:5000] + names[5001:] + ["new-genre"]))
    with at_most_calls(40 * VALUES):  # comparing every pair makes 50 million
        frame = mcp_nb.diff(old, new)
    assert frame["rule"].tolist() == ["enum-value-removed", "enum-value-added"]
    assert frame["why"].tolist() == ['`genre`: value "genre-05000" removed', '`genre`: value "new-genre" added']
    assert frame["breaking"].tolist() == [True, False]


def test_a_union_of_thousands_of_members_a_long_required_list_and_renamed_properties_are_linear_too():
    count = 5000
    members = [{"const": f"m{i}"} for i in range(count)]
    properties = {f"p{i}": {"type": "string", "description": f"field {i}"} for i in range(count)}
    old = {"type": "object", "properties": properties, "required": list(properties), "anyOf": members}
    # half the properties renamed (the same schema under a new name), every other one optional now,
    # one member of the union gone
    renamed = {(f"q{i}" if i % 2 else f"p{i}"): value for i, value in enumerate(properties.values())}
    new = {"type": "object", "properties": renamed, "required": [n for i, n in enumerate(renamed) if i % 4], "anyOf": members[1:]}
    with at_most_calls(200 * count):  # by pairs, tens of millions
        frame = mcp_nb.diff(snapshot(old), snapshot(new))
    removed = frame[frame["rule"] == "property-removed"]
    assert len(removed) == count // 2
    assert removed["why"].str.contains(r"\(renamed to `q\d+`\?\)").all()  # each removal names its twin
    assert (frame["rule"] == "union-member-removed").sum() == 1
    assert frame.loc[frame["rule"] == "union-member-removed", "why"].iloc[0].endswith('lost {"const": "m0"}')


@settings(deadline=None, max_examples=300)
@given(
    *[
        st.recursive(
            st.none()
            | st.booleans()
            | st.integers(-3, 3)
            | st.floats(-3, 3, allow_nan=False).map(lambda f: round(f))
            | st.sampled_from(["a", "1"]),
            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2),
            max_leaves=6,
        )
    ]
    * 2
)
def test_canonical_forms_are_equal_exactly_when_json_says_the_values_are(a, b):
    assert (canonical(a) == canonical(b)) is json_equal(a, b)
    if json_equal(a, b):
        assert hash(canonical(a)) == hash(canonical(b))


def test_enum_values_are_compared_as_json_compares_them():
    frame = mcp_nb.diff(snapshot(genre([1, "a", True, {"k": [1, 2]}])), snapshot(genre([1.0, "a", True, {"k": [1.0, 2]}])))
    assert frame.empty  # the same values, the numbers written otherwise
    frame = mcp_nb.diff(snapshot(genre([1, "x"])), snapshot(genre([True, "x"])))
    assert frame["rule"].tolist() == ["enum-value-removed", "enum-value-added"]  # true is not 1


# -- depth ------------------------------------------------------------------------------------------


def nested(levels: int, leaf: str, how: str = "additionalProperties") -> dict:
    """A schema `levels` objects deep, each holding the next as `how` says."""
    schema: dict = {"type": leaf}
    for _ in range(levels):
        schema = (
            {"type": "object", how: schema} if how == "additionalProperties" else {"type": "object", "properties": {"a": schema}}
        )
    return schema


def depth_of(document) -> int:
    level, depth = [document], 0
    while level:
        depth += 1
        level = [v for node in level for v in (node.values() if isinstance(node, dict) else node) if isinstance(v, (dict, list))]
    return depth


def test_a_snapshot_too_deep_to_compare_is_refused_in_one_line_by_load_diff_and_the_command(tmp_path):
    old, new = snapshot(nested(300, "string")), snapshot(nested(300, "integer"))
    (tmp_path / "old.json").write_text(json.dumps(old))
    (tmp_path / "new.json").write_text(json.dumps(new))
    said = set()
    for source in (tmp_path / "old.json", old):
        with pytest.raises(SurfaceError) as refused:
            load(source)
        said.add(str(refused.value).split(": ", 1)[1])
    for pair in ((tmp_path / "old.json", tmp_path / "new.json"), (old, new)):
        with pytest.raises(SurfaceError) as refused:  # was a bare RecursionError, though load took the file
            mcp_nb.diff(*pair)
        said.add(str(refused.value).split(": ", 1)[1])
    assert len(said) == 1, said  # one sentence, wherever the document came in
    (sentence,) = said
    assert "\n" not in sentence and f"nested more than {MAX_DEPTH} levels deep (at tools.find.inputSchema." in sentence
    command = subprocess.run(
        warm.python("-m", "mcp_nb", "diff", tmp_path / "old.json", tmp_path / "new.json"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert command.returncode != 0 and sentence in command.stderr + command.stdout
    assert "Traceback" not in command.stderr


@pytest.mark.parametrize("how", ["additionalProperties", "properties"])
def test_the_deepest_snapshot_load_takes_is_one_diff_compares_even_from_deep_in_a_stack(how):
    # The deepest: MAX_DEPTH levels, the document's own included; additionalProperties is the
    # walk's costliest level (three frames each).
    levels = next(n for n in range(MAX_DEPTH, 0, -1) if depth_of(snapshot(nested(n, "string", how))) <= MAX_DEPTH)
    old, new = snapshot(nested(levels, "string", how)), snapshot(nested(levels, "integer", how))
    assert depth_of(old) == MAX_DEPTH or depth_of(snapshot(nested(levels + 1, "string", how))) > MAX_DEPTH
    load(old)
    with pytest.raises(SurfaceError):
        load(snapshot(nested(levels + 2, "string", how)))

    def from_depth(frames: int):
        # A notebook's cell runs some tens of frames deep; a diff called from a tool, or a test, more.
        return from_depth(frames - 1) if frames else mcp_nb.diff(old, new)

    frame = from_depth(250)
    assert frame["rule"].tolist() == ["type-changed"] and frame["where"].iloc[0].count(".") > levels


def test_a_re_registered_tool_whose_schema_is_too_deep_to_compare_says_so_in_one_row():
    def deep(x=None):
        return "ok"

    mcp_nb.tool("deep", input_schema={"type": "object", "properties": {"x": nested(60, "string", "properties")}})(deep)
    mcp_nb.tool("deep", input_schema={"type": "object", "properties": {"x": nested(60, "integer", "properties")}})(deep)
    (change,) = mcp_nb.engine().registry.changes_since_first("tool", "deep")
    assert (change.rule, change.breaking) == ("unknown", "unknown") and "levels deep, so not compared" in change.why


# -- numbers beyond a float's range --------------------------------------------------------------


@pytest.mark.parametrize(
    "keyword, before, after, rule",
    [
        ("minimum", 10**400, 10**401, "bound-tightened"),
        ("maximum", 10**400, 10**401, "bound-loosened"),
        ("multipleOf", 10**400, 3 * 10**400, "bound-tightened"),
        ("multipleOf", 3 * 10**400, 10**400, "bound-loosened"),
        ("multipleOf", 0.5, 10**400, "bound-tightened"),
    ],
)
def test_a_bound_beyond_a_float_s_range_is_compared_as_any_bound(keyword, before, after, rule):
    old = {"type": "object", "properties": {"n": {"type": "integer", keyword: before}}}
    new = {"type": "object", "properties": {"n": {"type": "integer", keyword: after}}}
    frame = mcp_nb.diff(snapshot(old), snapshot(new))  # was OverflowError: int too large to convert to float
    assert frame["rule"].tolist() == [rule]
