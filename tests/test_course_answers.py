"""The course's exercises, answered as learners answer them, in a real kernel (issue 42).

Each notebook's student version (what `python -m mcp_nb student-version` and Binder give a class)
runs the way a learner runs it: Run All with the blanks, then every wrong answer of
tests/course_answers.py in turn, its cells run again from the answer to the check and the check
once more; Run All again; then the right answers, the same way; Run All once more; and every
exercise again after it. Each check gives the verdict its answer deserves every time: a wrong
answer fails its check, and only its check, with an `mcp_nb.CheckFailed` that shows its
explanation alone; a right answer passes; and no other cell fails, however often it ran. Then,
in the same kernel, each check gets its hidden tests back (as nbgrader's autograde puts them
back): the answers fitted to the visible checks fail it, and the right answer passes.
"""

from __future__ import annotations

import nbformat
import pytest
from course_answers import ANSWERS
from course_runs import NOTEBOOKS, LearnerKernel, course_copy, exercises, solution_source

NAMES = sorted(path.name for path in NOTEBOOKS.glob("*.ipynb") if exercises(path))


def test_every_notebook_with_exercises_has_answers_for_each():
    assert NAMES and set(ANSWERS) <= set(NAMES)
    for name in ANSWERS:
        assert [solution for solution, _ in exercises(NOTEBOOKS / name)] == list(ANSWERS[name]), name


def stub_of(path, cell_id: str) -> str:
    """What the student version holds in a solution cell: the blank to fill in."""
    return next(cell.source for cell in nbformat.read(path, as_version=4).cells if cell.get("id") == cell_id)


def _answers(name: str):
    for solution, check in exercises(NOTEBOOKS / name):
        yield solution, check, ANSWERS.get(name, {}).get(solution, {"wrong": [], "fitted": [], "right": []})


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", NAMES)
def test_a_learners_wrong_answers_fail_and_right_ones_pass_however_often_the_cells_run(name, tmp_path):
    folder = course_copy(tmp_path, students=True)
    checks = {check for _, check in exercises(folder / name)}
    with LearnerKernel(folder / name) as kernel:
        failed = kernel.run_all()
        assert set(failed) == checks, [str(f) for f in failed.values()]  # the blanks run; their checks say what is missing
        for blank in failed.values():
            assert blank.ename == "CheckFailed" and ("not answered yet" in blank.shown or "hint: " in blank.shown), str(blank)
        for solution, check, answers in _answers(name):
            for number, wrong in enumerate(answers["wrong"]):
                kernel.write(solution, wrong)
                failed = kernel.run_range(solution, check)
                assert set(failed) == {check}, (wrong, [str(f) for f in failed.values()])
                assert failed[check].ename == "CheckFailed", (wrong, str(failed[check]))
                assert failed[check].shown.strip() == failed[check].evalue.strip(), failed[
                    check
                ].shown  # its explanation, no frames
                if number == 0:  # the check alone, once more
                    again = kernel.run(check)
                    assert again is not None and again.ename == "CheckFailed", wrong
            for fitted in answers["fitted"]:  # the visible check lets it through: the hidden tests are for these
                kernel.write(solution, fitted)
                assert kernel.run_range(solution, check) == {}, fitted
        for solution, check, answers in _answers(name):  # Run All with a wrong answer (or the blank) in each exercise
            kernel.write(solution, answers["wrong"][0] if answers["wrong"] else stub_of(folder / name, solution))
        failed = kernel.run_all()
        assert set(failed) == checks and all(f.ename == "CheckFailed" for f in failed.values()), [str(f) for f in failed.values()]
        for solution, check, answers in _answers(name):
            for right in [*answers["right"], solution_source(name, solution)]:
                kernel.write(solution, right)
                failed = kernel.run_range(solution, check)
                assert failed == {}, (right, [str(f) for f in failed.values()])
            assert kernel.run(check) is None, solution  # the check alone, once more
        failed = kernel.run_all()
        assert failed == {}, [str(f) for f in failed.values()]
        for solution, check, _ in _answers(name):  # an exercise done again after Run All
            assert kernel.run_range(solution, check) == {}, solution
        # Graded: each check with its hidden tests back, as the solution version has it (what nbgrader's
        # autograde runs). The answers fitted to the visible checks fail it; the right answer passes.
        for solution, check, answers in _answers(name):
            if not answers["fitted"]:
                continue
            hidden = solution_source(name, check)
            assert "### BEGIN HIDDEN TESTS" in hidden and kernel.source(check) != hidden, check
            kernel.write(check, hidden)
            for fitted in answers["fitted"]:
                kernel.write(solution, fitted)
                failed = kernel.run_range(solution, check)
                assert set(failed) == {check} and failed[check].ename == "CheckFailed", (
                    fitted,
                    [str(f) for f in failed.values()],
                )
            kernel.write(solution, solution_source(name, solution))
            assert kernel.run_range(solution, check) == {}, solution
