"""docs/rules.md against the notebooks: every rule of both guides is shown in a cell and checked by an assert.

The map names cells as `NN:id` (the notebook's number, the cell's id). A check is an assert under a
comment carrying the rule's tag (`# [C07]`), in a cell the map names. nbval runs the asserts; this
test makes sure the map and the notebooks point at each other.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
MAP = ROOT / "docs" / "rules.md"
NOTEBOOKS = {path.name[:2]: path for path in sorted((ROOT / "notebooks").glob("*.ipynb"))}

ROW = re.compile(r"^\| (?P<rule>[CP]\d\d) \| (?P<says>[^|]+) \| (?P<differs>[^|]+) \| (?P<shown>[^|]+) \| (?P<checked>[^|]+) \|$")
CELL = re.compile(r"`(\d\d):([A-Za-z0-9_-]+)`")
TAG = re.compile(r"\[([CP]\d\d)\]")


def rules() -> dict[str, dict[str, str]]:
    found = {}
    for line in MAP.read_text(encoding="utf-8").splitlines():
        match = ROW.match(line)
        if match:
            assert match["rule"] not in found, f"{match['rule']} is in the map twice"
            found[match["rule"]] = {key: value.strip() for key, value in match.groupdict().items()}
    return found


def cells_named(text: str) -> list[tuple[str, str]]:
    named = CELL.findall(text)
    # Nothing else in the column: a cell written any other way would be silently skipped.
    assert CELL.sub("", text).replace(",", "").strip() == "", f"not a list of `NN:id` cells: {text!r}"
    return named


def cell(number: str, cell_id: str):
    assert number in NOTEBOOKS, f"no notebook numbered {number} in notebooks/"
    for each in nbformat.read(NOTEBOOKS[number], as_version=4).cells:
        if each.get("id") == cell_id:
            return each
    raise AssertionError(f"{NOTEBOOKS[number].name} has no cell {cell_id!r}")


def checks(source: str, rule: str) -> list[str]:
    """The blocks of a cell that check `rule`: the lines after a comment tagged with it, to the next blank line."""
    blocks, lines = [], source.splitlines()
    for i, line in enumerate(lines):
        if line.lstrip().startswith("#") and rule in TAG.findall(line):
            block = []
            for following in lines[i + 1 :]:
                if not following.strip():
                    break
                block.append(following)
            blocks.append("\n".join(block))
    return blocks


MAPPED = rules()


def test_the_map_has_every_rule_of_both_guides_once_in_order():
    for guide, count in (("C", 37), ("P", 25)):
        ids = [rule for rule in MAPPED if rule.startswith(guide)]
        assert ids == [f"{guide}{n:02d}" for n in range(1, count + 1)], f"the {guide} rules are not numbered 1..{count} in order"


@pytest.mark.parametrize("rule", sorted(MAPPED))
def test_every_rule_is_shown_in_a_cell_that_ran_and_checked_by_a_tagged_assert(rule):
    row = MAPPED[rule]
    assert row["says"] and row["differs"], f"{rule}: say what the guide says and what the SDK and mcp_nb do"
    shown = cells_named(row["shown"])
    checked = cells_named(row["checked"])
    assert shown and checked, f"{rule} needs a cell that shows it and one that checks it"
    for number, cell_id in shown:
        showing = cell(number, cell_id)
        assert showing.cell_type == "code" and showing.execution_count, f"{rule}: {number}:{cell_id} is not a code cell that ran"
    for number, cell_id in checked:
        checking = cell(number, cell_id)
        assert checking.cell_type == "code", f"{rule}: {number}:{cell_id} is not a code cell"
        blocks = checks(checking.source, rule)
        assert blocks, f"{rule}: {number}:{cell_id} has no comment tagged [{rule}]"
        for block in blocks:
            assert re.search(r"^\s*assert\b", block, re.M), f"{rule}: no assert follows its tag in {number}:{cell_id}"


def test_every_tag_in_the_notebooks_is_a_rule_of_the_map_checked_where_the_map_says():
    named = {rule: set(cells_named(row["checked"])) for rule, row in MAPPED.items()}
    for number, path in NOTEBOOKS.items():
        for each in nbformat.read(path, as_version=4).cells:
            if each.cell_type != "code":
                continue
            for line in each.source.splitlines():
                if not line.lstrip().startswith("#"):
                    continue
                for rule in TAG.findall(line):
                    assert rule in MAPPED, f"{path.name}:{each.id} checks {rule}, which is not in docs/rules.md"
                    assert (number, each.id) in named[rule], (
                        f"{path.name}:{each.id} checks {rule}, but docs/rules.md does not name that cell"
                    )
