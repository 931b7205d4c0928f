"""The student version of notebook 02 (`python -m mcp_nb student-version`): its exercises' solutions
stripped, it runs in a kernel, every unanswered exercise's check fails with its helpful message,
and no other cell fails; and the same of every other notebook with exercises. The solution version
is the notebook itself, which nbval runs (tests/test_binder.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from mcp_nb.commands import student

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "notebooks" / "02-tool-errors.ipynb"
# Each exercise's check cell, and what its failure must say when the exercise is not answered.
CHECKS = {
    "ex-predict-check": ["not answered yet: replace the ... given as outcome with your answer, one of result, tool_error"],
    "ex-fix-string-check": [
        'the call of tool get_year {"title": "Solaris"} ended result / ok, not tool_error / raised or tool_error / returned',
        "it ended as result: the request succeeded and the result is not flagged isError: the model takes its content for the answer",
        "the model read: \"No book titled 'Solaris' in the catalog.\"",
        "hint: a returned string is a success to the model: raise ToolError",
    ],
}
SOLUTIONS = {"ex-predict", "ex-fix-string"}


def make_student_version(source: Path, target: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mcp_nb", "student-version", str(source), "-o", str(target)],
        cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    target = tmp_path_factory.mktemp("student") / "02-tool-errors.ipynb"
    done = make_student_version(SOURCE, target)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{target}: 2 solution cells stripped, outputs cleared"
    return target


def test_the_student_version_has_the_lesson_without_its_solutions_or_outputs(made):
    solution, stripped = nbformat.read(SOURCE, as_version=4), nbformat.read(made, as_version=4)
    nbformat.validate(stripped)
    assert [c.id for c in stripped.cells] == [c.id for c in solution.cells]  # docs/rules.md names cells by id
    for before, after in zip(solution.cells, stripped.cells):
        if before.id in SOLUTIONS:
            assert "BEGIN SOLUTION" in before.source and "SOLUTION" not in after.source
            assert "# YOUR CODE HERE" in after.source and after.metadata["nbgrader"]["solution"] is True
        else:
            assert after.source == before.source, before.id
        if after.cell_type == "code":
            assert after.outputs == [] and after.execution_count is None
    assert {c.id for c in solution.cells if c.get("metadata", {}).get("nbgrader", {}).get("solution")} == SOLUTIONS
    assert {c.id for c in solution.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade")} == set(CHECKS)
    # what the student starts from: a blank to fill in, the mistake to fix
    cells = {c.id: c.source for c in stripped.cells}
    assert cells["ex-predict"].startswith("predicted_outcome = ...") and "crash" not in cells["ex-predict"]
    assert "        # YOUR CODE HERE\n        return message" in cells["ex-fix-string"] and "raise" not in cells["ex-fix-string"]


def test_the_student_version_runs_and_only_the_unanswered_checks_fail(made):
    notebook = nbformat.read(made, as_version=4)
    client = NotebookClient(
        notebook, timeout=120, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(made.parent)}}
    )
    client.execute()
    failed = {}
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                failed[cell.id] = (output.ename, output.evalue)
    assert set(failed) == set(CHECKS), failed
    for cell_id, says in CHECKS.items():
        ename, evalue = failed[cell_id]
        assert ename == "AssertionError", (cell_id, ename, evalue)
        for words in says:
            assert words in evalue, (cell_id, words, evalue)
    # the lesson's own checks ran and held in the student version too
    printed = {c.id: "".join(o.get("text", "") for o in c.outputs) for c in notebook.cells if c.cell_type == "code"}
    assert printed["c48"] == "all 10 calls are as described\n"


def test_a_broken_markup_or_a_notebook_without_exercises_is_refused_in_one_line(tmp_path):
    def notebook(*cells):
        path = tmp_path / f"nb{len(list(tmp_path.iterdir()))}.ipynb"
        nb = nbformat.v4.new_notebook(cells=list(cells))
        nbformat.write(nb, path)
        return path

    solution = {"nbgrader": {"solution": True, "grade": False, "grade_id": "a", "schema_version": 3, "locked": False, "task": False}}
    cases = [
        (notebook(nbformat.v4.new_code_cell("x = 1")), "has no solution cell (nbgrader metadata solution: true): nothing to strip"),
        (notebook(nbformat.v4.new_code_cell("### BEGIN SOLUTION\nx = 1", metadata=solution)), "a BEGIN SOLUTION without its END SOLUTION"),
        (notebook(nbformat.v4.new_code_cell("x = 1\n### END SOLUTION", metadata=solution)), "an END SOLUTION without its BEGIN SOLUTION"),
        (notebook(nbformat.v4.new_code_cell("### BEGIN SOLUTION\nx = 1\n### END SOLUTION")), "a solution region in a cell not marked as a solution"),
    ]
    for path, says in cases:
        done = make_student_version(path, tmp_path / "out.ipynb")
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert says in done.stderr.strip().splitlines()[-1], done.stderr
    same = make_student_version(SOURCE, SOURCE)
    assert same.returncode == 2 and "would overwrite its source" in same.stderr
    assert not (tmp_path / "out.ipynb").exists()


def test_a_course_folder_becomes_its_student_version_with_everything_else_as_it_was(tmp_path):
    """`student-version FOLDER -o NEW`: what binder/postBuild makes of notebooks/."""
    solution = {"nbgrader": {"solution": True, "grade": False, "grade_id": "a", "schema_version": 3, "locked": False, "task": False}}
    course = tmp_path / "course"
    (course / "servers").mkdir(parents=True)
    (course / "servers" / "shop.py").write_text("print('a server a notebook reads')\n")
    lesson = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("### BEGIN SOLUTION\nanswer = 42\n### END SOLUTION", metadata=solution)])
    nbformat.write(lesson, course / "01-lesson.ipynb")
    shown = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1", outputs=[nbformat.v4.new_output("execute_result", {"text/plain": "2"}, execution_count=1)])])
    nbformat.write(shown, course / "00-demo.ipynb")

    done = make_student_version(course, tmp_path / "student")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{tmp_path / 'student' / '01-lesson.ipynb'}: 1 solution cells stripped, outputs cleared"
    assert [c.source for c in nbformat.read(tmp_path / "student" / "01-lesson.ipynb", as_version=4).cells] == ["# YOUR CODE HERE"]
    assert (tmp_path / "student" / "00-demo.ipynb").read_bytes() == (course / "00-demo.ipynb").read_bytes()  # outputs kept
    assert (tmp_path / "student" / "servers" / "shop.py").read_text() == "print('a server a notebook reads')\n"

    (tmp_path / "plain").mkdir()
    nbformat.write(shown, tmp_path / "plain" / "00-demo.ipynb")
    for source, target, says in [
        (course, tmp_path / "student", "exists already: give a folder that does not"),
        (course, course / "student", "is inside"),
        (tmp_path / "plain", tmp_path / "plain-student", "holds no notebook with a solution cell"),
    ]:
        refused = make_student_version(source, target)
        assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
        assert says in refused.stderr.strip().splitlines()[-1], refused.stderr
    assert not (course / "student").exists() and not (tmp_path / "plain-student").exists()
    # A notebook whose markup is broken: refused before anything is written.
    broken = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("### BEGIN SOLUTION\nanswer = 42", metadata=solution)])
    nbformat.write(broken, course / "02-broken.ipynb")
    refused = make_student_version(course, tmp_path / "half")
    said = refused.stderr.strip().splitlines()[-1]
    assert refused.returncode == 2 and "02-broken.ipynb: cell 0" in said and "a BEGIN SOLUTION without its END SOLUTION" in said
    assert not (tmp_path / "half").exists()


def test_a_solution_cell_without_a_region_is_replaced_whole(tmp_path):
    solution = {"nbgrader": {"solution": True, "grade": False, "grade_id": "a", "schema_version": 3, "locked": False, "task": False}}
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("answer = 42", metadata=solution), nbformat.v4.new_markdown_cell("Because.", metadata=solution)]
    )
    stripped, count = student.student_version(json.loads(nbformat.writes(nb)))
    assert count == 2 and [c["source"] for c in stripped["cells"]] == [["# YOUR CODE HERE"], ["YOUR ANSWER HERE"]]


def exercises(path: Path) -> tuple[set[str], set[str]]:
    """The ids of a notebook's solution cells and of its check cells (nbgrader's markup)."""
    cells = nbformat.read(path, as_version=4).cells
    marked = [(c.id, c.get("metadata", {}).get("nbgrader", {})) for c in cells]
    return {i for i, m in marked if m.get("solution")}, {i for i, m in marked if m.get("grade")}


OTHERS = [p for p in sorted((ROOT / "notebooks").glob("*.ipynb")) if p != SOURCE and exercises(p)[0]]
# What some of their checks must say when the exercise is not answered, beyond a hint (docs/course.md quotes 03's).
SAYS = {
    "03-choosing-the-error.ipynb": {
        "ex-reserve-check": [
            'the call of tool reserve {"title": "Solaris"} ended tool_error / crash, not tool_error / raised',
            "its cause, crash: the handler (or the server's middleware) raised another exception",
            "expected raised: the tool raised ToolError: its message is what the model reads",
            "the model read: 'Error executing tool reserve'",
            "raised an unexpected exception (KeyError: 'Solaris')",
            "hint: a title the model got wrong is a mistake a smarter model could have avoided: raise ToolError, naming the title",
        ],
        "ex-predict-check": ["not answered yet: replace the ... given as outcome with your answer, one of result, tool_error"],
    },
}


def test_other_notebooks_have_exercises_too():
    assert {p.name for p in OTHERS} >= {"03-choosing-the-error.ipynb", "05-resources-and-prompts.ipynb", "04-bad-arguments.ipynb"}
    assert set(SAYS) <= {p.name for p in OTHERS}


@pytest.mark.parametrize("path", [SOURCE, *OTHERS], ids=lambda p: p.stem)
def test_nbgraders_own_clear_solutions_makes_the_same_cells(path):
    # The markup is nbgrader's; its ClearSolutions, with the stub that does not raise, strips it the same way.
    preprocessors = pytest.importorskip("nbgrader.preprocessors")
    notebook = nbformat.read(path, as_version=4)
    theirs, _ = preprocessors.ClearSolutions(code_stub={"python": student.CODE_STUB}).preprocess(
        nbformat.read(path, as_version=4), {}
    )
    ours, count = student.student_version(json.loads(nbformat.writes(notebook)))
    assert count == len(exercises(path)[0])
    assert ["".join(c["source"]) for c in ours["cells"]] == [c.source for c in theirs.cells]


@pytest.mark.parametrize("path", OTHERS, ids=lambda p: p.stem)
def test_each_notebooks_student_version_runs_and_only_its_checks_fail_each_with_its_hint(path, tmp_path):
    solutions, checks = exercises(path)
    assert len(checks) == len(solutions), "one check per exercise"
    target = tmp_path / path.name
    done = make_student_version(path, target)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{target}: {len(solutions)} solution cells stripped, outputs cleared"
    notebook = nbformat.read(target, as_version=4)
    NotebookClient(
        notebook, timeout=120, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(tmp_path)}}
    ).execute()  # fmt: skip
    failed = {
        cell.id: (output.ename, output.evalue)
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if output.output_type == "error"
    }
    assert set(failed) == checks, failed  # the blanks run; only the unanswered checks fail
    for cell_id, (ename, evalue) in failed.items():
        assert ename == "AssertionError" and ("hint: " in evalue or "not answered yet" in evalue), (cell_id, evalue)
        for words in SAYS.get(path.name, {}).get(cell_id, []):
            assert words in evalue, (cell_id, words, evalue)
