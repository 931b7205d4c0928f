"""Answers compared as JSON as deep as mcp_nb reads JSON (`mistakes.JSON_DEPTH`): a case's expected
content nested hundreds of levels deep is judged (as the same answer, or as where it differs), and
deeper content as text; never a RecursionError out of a replay."""

from __future__ import annotations

import json

import mcp_nb
from mcp_nb.mistakes import JSON_DEPTH
from mcp_nb.records.compare import content_differences, json_differences

LEVELS = JSON_DEPTH  # as deep as JSON is read, past what a recursive comparison (two frames a level) can walk


def deep_text(levels: int, leaf: str = "", spaced: bool = False) -> str:
    opening, closing = ("[ ", " ]") if spaced else ("[", "]")
    return opening * levels + leaf + closing * levels


def cases_file(tmp_path, expected: str):
    path = tmp_path / "cases.json"
    case = {
        "id": "deep-1",
        "target": "tool",
        "name": "deep",
        "server": "kernel",
        "timeout": 30.0,
        "expect": {"outcome": "result", "cause": "ok", "content": expected},
    }
    path.write_text(json.dumps({"mcp_nb_cases": 1, "cases": [case]}))
    return path


def test_a_replayed_case_whose_answer_is_json_nested_hundreds_of_levels_deep_is_judged(tmp_path):
    @mcp_nb.tool()
    def deep() -> str:
        return deep_text(LEVELS, "1")

    # the same JSON written otherwise (spaces): the same answer
    frame = mcp_nb.replay(cases_file(tmp_path, deep_text(LEVELS, "1", spaced=True)))
    assert frame["passed"].tolist() == [True], frame.to_dict("records")
    # another leaf at the bottom: not the same answer
    frame = mcp_nb.replay(cases_file(tmp_path, deep_text(LEVELS, "2", spaced=True)))
    assert frame["passed"].tolist() == [False]
    assert frame["reason"].iloc[0].startswith("content: expected")


def test_content_nested_deeper_than_json_is_read_is_judged_as_text(tmp_path):
    @mcp_nb.tool()
    def deep() -> str:
        return deep_text(JSON_DEPTH + 1, "1")

    assert mcp_nb.replay(cases_file(tmp_path, deep_text(JSON_DEPTH + 1, "1")))["passed"].tolist() == [True]
    frame = mcp_nb.replay(cases_file(tmp_path, deep_text(JSON_DEPTH + 1, "1", spaced=True)))  # other text
    assert frame["passed"].tolist() == [False] and frame["reason"].iloc[0].startswith("content: expected")


def test_the_places_two_deep_answers_differ_are_found_and_said():
    a, b = json.loads(deep_text(LEVELS, "1")), json.loads(deep_text(LEVELS, "2"))
    (difference,) = json_differences(a, b)
    assert difference.what == "$" + "[0]" * LEVELS and (difference.before, difference.after) == (1, 2)
    (said,) = content_differences(deep_text(LEVELS), deep_text(LEVELS - 1))
    assert said.what.startswith("content $[0]") and "\n" not in str(said)
