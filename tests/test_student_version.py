"""The student version of a notebook or of a course's folder (`python -m mcp_nb student-version`): its exercises'
solutions and hidden tests stripped, its outputs cleared, as nbgrader's own preprocessors do; a learner's work never
overwritten. How the student versions run, answered right and wrong, is tests/test_course_answers.py's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from mcp_nb.commands import student

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "notebooks" / "02-tool-errors.ipynb"
CHECKS = {"ex-predict-check", "ex-fix-string-check"}
SOLUTIONS = {"ex-predict", "ex-fix-string"}


def make_student_version(source: Path, target: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mcp_nb", "student-version", str(source), "-o", str(target)],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=120,
    )


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
        elif before.id in CHECKS:  # a check keeps what it shows, and loses its hidden tests
            assert "### BEGIN HIDDEN TESTS" in before.source and "HIDDEN" not in after.source
            assert before.source.startswith(after.source.rstrip("\n")), before.id
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


def test_a_broken_markup_or_a_notebook_without_exercises_is_refused_in_one_line(tmp_path):
    def notebook(*cells):
        path = tmp_path / f"nb{len(list(tmp_path.iterdir()))}.ipynb"
        nb = nbformat.v4.new_notebook(cells=list(cells))
        nbformat.write(nb, path)
        return path

    solution = {
        "nbgrader": {"solution": True, "grade": False, "grade_id": "a", "schema_version": 3, "locked": False, "task": False}
    }
    check = {
        "nbgrader": {
            "solution": False,
            "grade": True,
            "grade_id": "b",
            "points": 1,
            "schema_version": 3,
            "locked": True,
            "task": False,
        }
    }
    cases = [
        (
            notebook(nbformat.v4.new_code_cell("x = 1")),
            "has no solution cell (nbgrader metadata solution: true): nothing to strip",
        ),
        (
            notebook(nbformat.v4.new_code_cell("### BEGIN SOLUTION\nx = 1", metadata=solution)),
            "a BEGIN SOLUTION without its END SOLUTION",
        ),
        (
            notebook(nbformat.v4.new_code_cell("x = 1\n### END SOLUTION", metadata=solution)),
            "an END SOLUTION without its BEGIN SOLUTION",
        ),
        (
            notebook(nbformat.v4.new_code_cell("### BEGIN SOLUTION\nx = 1\n### END SOLUTION")),
            "a solution region in a cell not marked as a solution",
        ),
        (
            notebook(
                nbformat.v4.new_code_cell("### BEGIN SOLUTION\nx = 1\n### END SOLUTION", metadata=solution),
                nbformat.v4.new_code_cell("### BEGIN HIDDEN TESTS\nassert x\n### END HIDDEN TESTS"),
            ),
            "hidden tests in a cell not marked as a check",
        ),
        (
            notebook(
                nbformat.v4.new_code_cell("### BEGIN SOLUTION\nx = 1\n### END SOLUTION", metadata=solution),
                nbformat.v4.new_code_cell("assert x\n### BEGIN HIDDEN TESTS\nassert x == 1", metadata=check),
            ),
            "a BEGIN HIDDEN TESTS without its END HIDDEN TESTS",
        ),
    ]
    for path, says in cases:
        done = make_student_version(path, tmp_path / "out.ipynb")
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert says in done.stderr.strip().splitlines()[-1], done.stderr
    same = make_student_version(SOURCE, SOURCE)
    assert same.returncode == 2 and "would overwrite its source" in same.stderr
    assert not (tmp_path / "out.ipynb").exists()


def test_a_course_folder_becomes_its_student_version_with_everything_else_as_it_was(tmp_path):
    """`student-version FOLDER -o NEW`: what binder/postBuild and the README's first command make of notebooks/."""
    solution = {
        "nbgrader": {"solution": True, "grade": False, "grade_id": "a", "schema_version": 3, "locked": False, "task": False}
    }
    course = tmp_path / "course"
    (course / "servers").mkdir(parents=True)
    (course / "servers" / "shop.py").write_text("print('a server a notebook reads')\n")
    lesson = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("### BEGIN SOLUTION\nanswer = 42\n### END SOLUTION", metadata=solution)]
    )
    nbformat.write(lesson, course / "01-lesson.ipynb")
    shown = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(
                "1 + 1", outputs=[nbformat.v4.new_output("execute_result", {"text/plain": "2"}, execution_count=1)]
            )
        ]
    )
    nbformat.write(shown, course / "00-demo.ipynb")

    done = make_student_version(course, tmp_path / "student")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines() == [
        f"{tmp_path / 'student' / '01-lesson.ipynb'}: 1 solution cells stripped, outputs cleared",
        f"{tmp_path / 'student' / 'mine'}/: a folder for your own notebooks",
    ]
    assert [c.source for c in nbformat.read(tmp_path / "student" / "01-lesson.ipynb", as_version=4).cells] == ["# YOUR CODE HERE"]
    assert (tmp_path / "student" / "00-demo.ipynb").read_bytes() == (course / "00-demo.ipynb").read_bytes()  # outputs kept
    assert (tmp_path / "student" / "servers" / "shop.py").read_text() == "print('a server a notebook reads')\n"
    assert (tmp_path / "student" / "mine").is_dir() and not any((tmp_path / "student" / "mine").iterdir())

    (tmp_path / "plain").mkdir()
    nbformat.write(shown, tmp_path / "plain" / "00-demo.ipynb")
    for source, target, says in [
        (course, course / "student", "is inside"),
        (tmp_path / "plain", tmp_path / "plain-student", "holds no notebook with a solution cell"),
        (course, course / "01-lesson.ipynb", "exists and is not a folder"),
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


def test_a_learners_work_is_never_overwritten_and_what_is_new_in_the_course_is_added(tmp_path):
    """The README's first command, run again after the course changed: `student-version notebooks -o learn`."""
    solution = {
        "nbgrader": {"solution": True, "grade": False, "grade_id": "a", "schema_version": 3, "locked": False, "task": False}
    }
    course, learn = tmp_path / "notebooks", tmp_path / "learn"
    course.mkdir()
    (course / "lesson_tools.py").write_text("HINT = 'first'\n")
    exercise = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("### BEGIN SOLUTION\nanswer = 42\n### END SOLUTION", metadata=solution)]
    )
    nbformat.write(exercise, course / "01-lesson.ipynb")
    assert make_student_version(course, learn).returncode == 0

    # The learner answers, keeps a notebook of their own, and the course gets a new lesson and a new helper.
    answered = nbformat.read(learn / "01-lesson.ipynb", as_version=4)
    answered.cells[0].source = "answer = 41  # my answer"
    nbformat.write(answered, learn / "01-lesson.ipynb")
    mine = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('mine')")])
    nbformat.write(mine, learn / "mine" / "my-tool.ipynb")
    kept = {
        path: path.read_bytes()
        for path in (learn / "01-lesson.ipynb", learn / "mine" / "my-tool.ipynb", learn / "lesson_tools.py")
    }
    nbformat.write(exercise, course / "02-next.ipynb")
    (course / "lesson_tools.py").write_text("HINT = 'second'\n")
    (course / "servers").mkdir()
    (course / "servers" / "shop.py").write_text("SHOP = 1\n")

    again = make_student_version(course, learn)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip().splitlines() == [
        f"{learn / '02-next.ipynb'}: 1 solution cells stripped, outputs cleared",
        f"{learn / '01-lesson.ipynb'}: exists already, left as it is (your work is never overwritten; delete it to start it again)",
        f"{learn}: 1 other files there already, left as they are",
        f"{learn / 'mine'}/: a folder for your own notebooks",
    ]
    assert {path: path.read_bytes() for path in kept} == kept  # the learner's answers and notebooks, byte for byte
    assert [c.source for c in nbformat.read(learn / "02-next.ipynb", as_version=4).cells] == ["# YOUR CODE HERE"]
    assert (learn / "servers" / "shop.py").read_text() == "SHOP = 1\n"
    # One notebook, to a file that exists: left as it is too.
    single = make_student_version(course / "02-next.ipynb", learn / "01-lesson.ipynb")
    assert single.returncode == 0 and "exists already, left as it is" in single.stdout
    assert (learn / "01-lesson.ipynb").read_bytes() == kept[learn / "01-lesson.ipynb"]


def test_a_solution_cell_without_a_region_is_replaced_whole(tmp_path):
    solution = {
        "nbgrader": {"solution": True, "grade": False, "grade_id": "a", "schema_version": 3, "locked": False, "task": False}
    }
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("answer = 42", metadata=solution),
            nbformat.v4.new_markdown_cell("Because.", metadata=solution),
        ]
    )
    stripped, count = student.student_version(json.loads(nbformat.writes(nb)))
    assert count == 2 and [c["source"] for c in stripped["cells"]] == [["# YOUR CODE HERE"], ["YOUR ANSWER HERE"]]


def exercises(path: Path) -> tuple[set[str], set[str]]:
    """The ids of a notebook's solution cells and of its check cells (nbgrader's markup)."""
    cells = nbformat.read(path, as_version=4).cells
    marked = [(c.id, c.get("metadata", {}).get("nbgrader", {})) for c in cells]
    return {i for i, m in marked if m.get("solution")}, {i for i, m in marked if m.get("grade")}


OTHERS = [p for p in sorted((ROOT / "notebooks").glob("*.ipynb")) if p != SOURCE and exercises(p)[0]]


def test_other_notebooks_have_exercises_too():
    assert {p.name for p in OTHERS} >= {"03-choosing-the-error.ipynb", "05-resources-and-prompts.ipynb", "04-bad-arguments.ipynb"}


@pytest.mark.parametrize("path", [SOURCE, *OTHERS], ids=lambda p: p.stem)
def test_nbgraders_own_preprocessors_make_the_same_cells(path):
    # The markup is nbgrader's; its ClearSolutions (with the stub that does not raise) and ClearHiddenTests strip it the same way.
    preprocessors = pytest.importorskip("nbgrader.preprocessors")
    notebook = nbformat.read(path, as_version=4)
    theirs, _ = preprocessors.ClearSolutions(code_stub={"python": student.CODE_STUB}).preprocess(
        nbformat.read(path, as_version=4), {}
    )
    theirs, _ = preprocessors.ClearHiddenTests().preprocess(theirs, {})
    ours, count = student.student_version(json.loads(nbformat.writes(notebook)))
    assert count == len(exercises(path)[0])
    assert ["".join(c["source"]) for c in ours["cells"]] == [c.source for c in theirs.cells]
    solutions, checks = exercises(path)
    assert len(checks) == len(solutions), "one check per exercise"
    hidden = [c.id for c in notebook.cells if c.id in checks and "### BEGIN HIDDEN TESTS" in c.source]
    assert hidden == [c.id for c in notebook.cells if c.id in checks], "every check has hidden tests beside it"
