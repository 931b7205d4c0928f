"""A course notebook in a real kernel, run cell by cell as a learner runs it (for tests/test_course_*.py).

`LearnerKernel` starts one kernel for one notebook (nbclient, as JupyterLab's kernel would run it,
in a folder of its own), runs all its cells, runs a range of them again after an answer changed,
or one cell again, and says which cells failed and how. A failed check is an error output whose
traceback is what the learner sees (`_render_traceback_`'s lines, for an `mcp_nb.CheckFailed`).
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import nbformat
from kernels import notebook_client

from mcp_nb.commands import student

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass(frozen=True)
class Failure:
    cell: str
    ename: str
    evalue: str
    shown: str  # the traceback as the learner sees it, without colours

    def __str__(self) -> str:
        return f"{self.cell}: {self.ename}: {self.shown}"


def course_copy(tmp: Path, students: bool) -> Path:
    """The course's folder, copied into `tmp`: the solution versions, or the student versions
    (`python -m mcp_nb student-version`, hidden tests left out)."""
    target = tmp / ("learn" if students else "notebooks")
    if students:
        student.make_course(NOTEBOOKS, target)
    else:
        shutil.copytree(NOTEBOOKS, target, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    return target


class LearnerKernel:
    """One notebook of a course folder in one real kernel, whose working folder is the notebook's."""

    def __init__(self, path: Path, timeout: int = 240) -> None:
        self.path = path
        self.notebook = nbformat.read(path, as_version=4)
        for cell in self.notebook.cells:
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        # its kernel over ipc: no TCP port another test can take (tests/kernels.py)
        self.client = notebook_client(self.notebook, path.parent, timeout, allow_errors=True)
        self._kernel = None

    def __enter__(self) -> LearnerKernel:
        self._kernel = self.client.setup_kernel()
        self._kernel.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._kernel.__exit__(*exc)

    # -- cells -------------------------------------------------------------------------------

    def index(self, cell_id: str) -> int:
        for number, cell in enumerate(self.notebook.cells):
            if cell.get("id") == cell_id:
                return number
        raise KeyError(f"{self.path.name} has no cell {cell_id!r}")

    def source(self, cell_id: str) -> str:
        return self.notebook.cells[self.index(cell_id)].source

    def write(self, cell_id: str, source: str) -> None:
        """Change a cell's source, as a learner types an answer."""
        self.notebook.cells[self.index(cell_id)].source = source

    def run(self, cell_id: str) -> Failure | None:
        number = self.index(cell_id)
        return self._run(number)

    def _run(self, number: int) -> Failure | None:
        cell = self.notebook.cells[number]
        if cell.cell_type != "code":
            return None
        cell.outputs = []
        self.client.execute_cell(cell, number)
        for output in cell.outputs:
            if output.output_type == "error":
                shown = ANSI.sub("", "\n".join(output.traceback))
                return Failure(cell.id, output.ename, output.evalue, shown)
        return None

    def run_range(self, first: str, last: str) -> dict[str, Failure]:
        """Run the cells from `first` to `last`, both included, in order; the failures, by cell."""
        failures = {}
        for number in range(self.index(first), self.index(last) + 1):
            failed = self._run(number)
            if failed:
                failures[failed.cell] = failed
        return failures

    def run_all(self) -> dict[str, Failure]:
        """Run > Run All Cells, every cell run whatever the one before did (as nbgrader's autograde does)."""
        return self.run_range(self.notebook.cells[0].id, self.notebook.cells[-1].id)

    def printed(self, cell_id: str) -> str:
        cell = self.notebook.cells[self.index(cell_id)]
        return "".join(output.get("text", "") for output in cell.outputs if output.output_type == "stream")


def exercises(path: Path) -> list[tuple[str, str]]:
    """(solution cell, check cell) of each exercise of a notebook, in order: a check is the first
    check cell after its solution cell."""
    cells = nbformat.read(path, as_version=4).cells
    found, solution = [], None
    for cell in cells:
        marks = cell.get("metadata", {}).get("nbgrader", {})
        if marks.get("solution"):
            solution = cell.id
        elif marks.get("grade") and solution:
            found.append((solution, cell.id))
            solution = None
    return found


def solution_source(name: str, cell_id: str) -> str:
    """The right answer: a solution cell of the solution version, as it is."""
    for cell in nbformat.read(NOTEBOOKS / name, as_version=4).cells:
        if cell.get("id") == cell_id:
            return cell.source
    raise KeyError(cell_id)
