"""Answers compared as JSON, however deep Python's JSON reader took them: a case's expected content
nested hundreds of levels deep is judged (as the same answer, or as where it differs), never a
RecursionError out of a replay."""

from __future__ import annotations

import json

import mcp_nb
from mcp_nb.records.compare import content_differences, json_differences

LEVELS = 700  # well inside what Python's JSON reader takes, past what a recursive comparison can walk


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


def test_the_places_two_deep_answers_differ_are_found_and_said():
    a, b = json.loads(deep_text(LEVELS, "1")), json.loads(deep_text(LEVELS, "2"))
    (difference,) = json_differences(a, b)
    assert difference.what == "$" + "[0]" * LEVELS and (difference.before, difference.after) == (1, 2)
    (said,) = content_differences(deep_text(LEVELS), deep_text(LEVELS - 1))
    assert said.what.startswith("content $[0]") and "\n" not in str(said)
