"""The course graded with nbgrader, end to end (docs/teaching.md, *Grading*): the course's notebooks as an assignment's
source, released, fetched and submitted by three students through nbgrader's exchange, collected, autograded with the
hidden tests put back, and given feedback. The right answers get every point; wrong answers lose theirs, and so do
answers fitted to the visible checks, which pass in the student's own notebook and fail the hidden tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import warm
from course_answers import ANSWERS
from course_runs import ANSI, NOTEBOOKS, LearnerKernel, exercises, solution_source

GRADED = ["02-tool-errors.ipynb", "04-bad-arguments.ipynb"]  # two of the course's notebooks, quick to run
CONFIG = """c = get_config()
c.CourseDirectory.course_id = "mcp-errors"
c.CourseDirectory.root = {root!r}
c.Exchange.root = {exchange!r}
c.ClearSolutions.code_stub = {{"python": "# YOUR CODE HERE"}}
c.ExecutePreprocessor.timeout = 240
"""


def nbgrader(*args: str, cwd: Path, user: str = "teacher") -> subprocess.CompletedProcess:
    """An nbgrader command, as `user` (nbgrader's exchange takes a student's id from the login name)."""
    env = dict(
        os.environ,
        USER=user,
        LOGNAME=user,
        HOME=str(cwd),
        JUPYTER_CONFIG_DIR=str(cwd / ".jupyter"),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    )  # nbgrader runs alembic, beside it
    done = subprocess.run(
        warm.python("-m", "nbgrader", *args, preload="nbgrader"), cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def answered(released: Path, answers: dict[str, str]) -> None:
    """Write answers into a student's copy of a released notebook, as a student types them into its solution cells."""
    notebook = nbformat.read(released, as_version=4)
    for cell in notebook.cells:
        if cell.get("id") in answers:
            cell.source = answers[cell.id]
    nbformat.write(notebook, released)


def scores(course: Path, student: str) -> dict[str, tuple[float, float]]:
    from nbgrader.api import Gradebook  # here, not at collection: every pytest-xdist worker collects this file

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as book:
        submission = book.find_submission("day1", student)
        return {notebook.name: (notebook.score, notebook.max_score) for notebook in submission.notebooks}


@pytest.mark.timeout(1500)
def test_right_answers_get_full_points_and_wrong_or_fitted_ones_lose_theirs(tmp_path):
    course, exchange = tmp_path / "course", tmp_path / "exchange"
    source = course / "source" / "day1"
    source.mkdir(parents=True)
    exchange.mkdir()
    (course / "nbgrader_config.py").write_text(CONFIG.format(root=str(course), exchange=str(exchange)))
    for name in GRADED:
        shutil.copy(NOTEBOOKS / name, source / name)
    shutil.copytree(NOTEBOOKS / "lesson_tools", source / "lesson_tools", ignore=shutil.ignore_patterns("__pycache__"))

    nbgrader("generate_assignment", "day1", cwd=course)
    release = course / "release" / "day1"
    for name in GRADED:
        text = (release / name).read_text()
        assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text and "# YOUR CODE HERE" in text, name
    nbgrader("release_assignment", "day1", cwd=course)

    students = {
        "alice": {
            name: {solution: solution_source(name, solution) for solution, _ in exercises(NOTEBOOKS / name)} for name in GRADED
        },
        "bob": {
            name: {solution: ANSWERS[name][solution]["wrong"][-1] for solution, _ in exercises(NOTEBOOKS / name)}
            for name in GRADED
        },
        # carol's predictions are right, and her code fits the visible checks only
        "carol": {
            name: {
                solution: (ANSWERS[name][solution]["fitted"] or [solution_source(name, solution)])[0]
                for solution, _ in exercises(NOTEBOOKS / name)
            }
            for name in GRADED
        },
    }
    for student, answers in students.items():
        home = tmp_path / student
        home.mkdir()
        (home / "nbgrader_config.py").write_text(CONFIG.format(root=str(course), exchange=str(exchange)))
        nbgrader("fetch_assignment", "day1", "--course", "mcp-errors", cwd=home, user=student)
        for name in GRADED:
            answered(home / "day1" / name, answers[name])
        if student == "carol":  # in her own notebook, her fitted answers pass every check she sees
            for name in GRADED:
                with LearnerKernel(home / "day1" / name) as kernel:
                    assert kernel.run_all() == {}, name
        nbgrader("submit", "day1", "--course", "mcp-errors", f"--student={student}", cwd=home, user=student)

    nbgrader("collect", "day1", cwd=course)
    assert sorted(path.name for path in (course / "submitted").iterdir()) == ["alice", "bob", "carol"]
    nbgrader("autograde", "day1", cwd=course)
    nbgrader("generate_feedback", "day1", cwd=course)

    points = {student: scores(course, student) for student in students}
    checks = {Path(name).stem: float(len(exercises(NOTEBOOKS / name))) for name in GRADED}
    assert points["alice"] == {name: (total, total) for name, total in checks.items()}  # every check, hidden tests included
    assert points["bob"] == {name: (0.0, total) for name, total in checks.items()}
    # carol keeps the predictions' points and loses the code exercises' to the hidden tests
    assert points["carol"] == {name: (1.0, total) for name, total in checks.items()}

    # A failed check shows its explanation alone, in the graded notebook and in the feedback made of it.
    for student in ("bob", "carol"):
        for name in GRADED:
            graded = nbformat.read(course / "autograded" / student / "day1" / name, as_version=4)
            errors = [output for cell in graded.cells for output in cell.get("outputs", []) if output.output_type == "error"]
            assert errors and all(error.ename == "CheckFailed" for error in errors), (student, name)
            for error in errors:
                assert ANSI.sub("", "\n".join(error.traceback)).strip() == error.evalue.strip(), error.traceback
    feedback = (course / "feedback" / "bob" / "day1" / "02-tool-errors.html").read_text()
    assert "name one" in feedback and "hint:" in feedback  # his prediction named a list; his fix, a returned string
    graded = (course / "feedback" / "carol" / "day1" / "04-bad-arguments.html").read_text()
    assert "keep the title" in graded  # the hidden test's explanation, in her feedback
