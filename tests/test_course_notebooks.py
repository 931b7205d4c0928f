"""The course's notebooks as a learner reads them (issue 42): every assert says what failed, the walls of asserts are
folded away, no check cell holds its hints, every notebook starts afresh when run from the top, and each says that a
Binder session is temporary."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from IPython.core.inputtransformer2 import TransformerManager

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
CORE = [path for path in NOTEBOOKS if int(path.name[:2]) <= 11]


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def source(cell: dict) -> str:
    return "".join(cell["source"])


def python(cell: dict) -> ast.Module:
    text = source(cell)
    if text.lstrip().startswith("%%"):  # a cell magic: its body is Python
        text = text.split("\n", 1)[1] if "\n" in text else ""
    code = TransformerManager().transform_cell(text)
    return compile(code, "<cell>", "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_assert_says_what_failed(path):
    bare = [
        f"{cell['id']}:{node.lineno}"
        for cell in cells(path)
        if cell["cell_type"] == "code"
        for node in ast.walk(python(cell))
        if isinstance(node, ast.Assert) and node.msg is None
    ]
    assert not bare, f"{path.name}: asserts without a message: {bare}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_walls_of_asserts_are_folded_away(path):
    """A cell that is mostly asserts (the notebook's own checks of its facts) is the tests', not the reading's."""
    shown = []
    for cell in cells(path):
        if cell["cell_type"] != "code" or cell.get("metadata", {}).get("nbgrader", {}).get("grade"):
            continue
        lines = [line for line in source(cell).splitlines() if line.strip()]
        asserts = sum(line.lstrip().startswith("assert ") for line in lines)
        if asserts >= 2 and asserts / len(lines) >= 0.3 and not cell["metadata"].get("jupyter", {}).get("source_hidden"):
            shown.append(cell["id"])
    assert not shown, f"{path.name}: cells of asserts in the reading path: {shown}"


@pytest.mark.parametrize(
    "path", [p for p in NOTEBOOKS if any(c.get("metadata", {}).get("nbgrader") for c in cells(p))], ids=lambda p: p.stem
)
def test_no_check_cell_holds_its_hints(path):
    """A learner reads a check cell before answering: its hints live in lesson_tools/hints.py, picked by how the call ended."""
    for cell in cells(path):
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade"):
            assert "hint:" not in source(cell) and 'hint="' not in source(cell), f"{path.name}:{cell['id']} holds a hint's text"


@pytest.mark.parametrize("path", CORE[1:], ids=lambda p: p.stem)
def test_a_notebook_run_from_the_top_starts_afresh(path):
    """Run All gives every check the verdict it would have in a fresh kernel: the first code cell makes a new server
    and an empty history (the primer, which uses no mcp_nb server, has nothing to reset)."""
    first = next(cell for cell in cells(path) if cell["cell_type"] == "code")
    assert "mcp_nb.reset()" in source(first) or "%load_ext" not in source(first), path.name


@pytest.mark.parametrize("path", CORE, ids=lambda p: p.stem)
def test_every_notebook_of_the_core_path_says_a_binder_session_is_temporary(path):
    opening = source(cells(path)[0])
    assert "session is temporary" in opening and "*File > Download*" in opening, path.name
