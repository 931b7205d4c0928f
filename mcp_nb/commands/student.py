"""The student version of a notebook, or of a course's folder: `python -m mcp_nb student-version SRC -o DST`.

A course keeps one source, the solution version, which CI runs. Its exercises use nbgrader's
markup: a solution cell carries nbgrader's metadata (`"nbgrader": {"solution": true, ...}`), and
the answer inside it sits between a line holding `BEGIN SOLUTION` and one holding
`END SOLUTION` (`### BEGIN SOLUTION` in code). The student version is the same notebook with
each such region replaced by a stub indented as its first line (a solution cell without a
region loses all its source to the stub) and every output cleared, as nbgrader's `ClearSolutions`
and `ClearOutput` preprocessors do, with one difference: the code stub is `# YOUR CODE HERE`
alone, without nbgrader's `raise NotImplementedError()`, so that a solution cell left blank still
runs and the exercise's check cell says what is missing. A check cell (`"grade": true`) may also
hold hidden tests, between a `BEGIN HIDDEN TESTS` line and an `END HIDDEN TESTS` line: the student
version leaves them out, as nbgrader's `ClearHiddenTests` does, and `nbgrader autograde` puts them
back (it restores every check cell from the source). `tests/test_student_version.py` shows the two
agree (nbgrader's `ClearSolutions(code_stub={"python": "# YOUR CODE HERE"})` and `ClearHiddenTests`).

Given a folder, it writes a copy of the folder in which every notebook with exercises is its
student version and everything else is as it was (the other notebooks, with their outputs, and
the files they read), and a `mine/` folder for the learner's own notebooks: what Binder's build
makes of `notebooks/`, and what the README's first command makes of it in `learn/`, so that a
learner opens the exercises without their answers. A learner's work is never overwritten: into a
folder that exists already, only what it does not hold yet is written (a new notebook of the
course, say), and every file it holds is left as it is and reported.

Only the standard library: the notebook is JSON, written back as nbformat writes it.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from mcp_nb.mistakes import BadValue, read_json
from mcp_nb.records.surrogates import escape_surrogates

BEGIN, END = "BEGIN SOLUTION", "END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"
CODE_STUB = "# YOUR CODE HERE"
TEXT_STUB = "YOUR ANSWER HERE"
MINE = "mine"  # the folder of a course's student version for the learner's own notebooks


def _is_solution(cell: dict) -> bool:
    return bool(cell.get("metadata", {}).get("nbgrader", {}).get("solution", False))


def _is_check(cell: dict) -> bool:
    return bool(cell.get("metadata", {}).get("nbgrader", {}).get("grade", False))


def _without_hidden_tests(source: str, where: str) -> tuple[str, bool]:
    """The source without its hidden tests (the lines from BEGIN HIDDEN TESTS to END HIDDEN TESTS), and whether it had any."""
    kept, inside, removed = [], False, False
    for line in source.split("\n"):
        if BEGIN_HIDDEN in line:
            if inside:
                raise BadValue(f"{where}: a {BEGIN_HIDDEN} inside another one")
            inside = removed = True
        elif END_HIDDEN in line:
            if not inside:
                raise BadValue(f"{where}: an {END_HIDDEN} without its {BEGIN_HIDDEN}")
            inside = False
        elif not inside:
            kept.append(line)
    if inside:
        raise BadValue(f"{where}: a {BEGIN_HIDDEN} without its {END_HIDDEN}")
    return "\n".join(kept), removed


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _stripped(cell: dict, where: str) -> tuple[str, bool]:
    """The cell's source with its solution regions replaced, and whether it had any."""
    stub = (CODE_STUB if cell.get("cell_type") == "code" else TEXT_STUB).split("\n")
    lines, kept, inside, replaced = _source(cell).split("\n"), [], False, False
    for line in lines:
        if BEGIN in line:
            if inside:
                raise BadValue(f"{where}: a {BEGIN} inside another one")
            inside = replaced = True
            indent = re.match(r"\s*", line).group(0)
            kept += [indent + stub_line for stub_line in stub]
        elif END in line:
            if not inside:
                raise BadValue(f"{where}: an {END} without its {BEGIN}")
            inside = False
        elif not inside:
            kept.append(line)
    if inside:
        raise BadValue(f"{where}: a {BEGIN} without its {END}")
    return "\n".join(kept), replaced


def student_version(notebook: dict) -> tuple[dict, int]:
    """The notebook (a decoded .ipynb) with its solutions stripped and its outputs cleared, and how many solution cells it had."""
    solutions = 0
    for number, cell in enumerate(notebook.get("cells", [])):
        where = f"cell {number} (id {cell.get('id', '?')})"
        source, replaced = _stripped(cell, where)
        if replaced and not _is_solution(cell):
            raise BadValue(f"{where}: a solution region in a cell not marked as a solution (nbgrader metadata solution: true)")
        source, hidden = _without_hidden_tests(source, where)
        if hidden and not _is_check(cell):
            raise BadValue(f"{where}: hidden tests in a cell not marked as a check (nbgrader metadata grade: true)")
        if _is_solution(cell):
            solutions += 1
            if not replaced:
                source = CODE_STUB if cell.get("cell_type") == "code" else TEXT_STUB
        cell["source"] = source.splitlines(keepends=True)  # a list of lines, as nbformat stores it
        if cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None
            cell.get("metadata", {}).pop("execution", None)
    return notebook, solutions


def stripped(source: str | Path) -> tuple[dict, int]:
    """The student version of the notebook file `source`, and its number of solution cells
    (ValueError, saying why, for a file that is no notebook or has no exercises)."""
    path = Path(source)
    try:
        notebook = read_json(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise BadValue(f"{path}: {err.strerror}") from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise BadValue(f"{path} is not a notebook (no list of cells)")
    try:
        version, solutions = student_version(notebook)
    except ValueError as err:
        raise BadValue(f"{path}: {err}") from None  # which notebook, when a folder holds several
    if solutions == 0:
        raise BadValue(f"{path} has no solution cell (nbgrader metadata solution: true): nothing to strip")
    return version, solutions


def _write(notebook: dict, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    # non-ASCII kept, as nbformat writes it; a lone surrogate (a "\\ud800" escape in the source's
    # JSON, which no UTF-8 file holds) written as that escape again
    text = escape_surrogates(json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False))
    target.write_text(text + "\n", encoding="utf-8")


def make(source: str | Path, target: str | Path) -> int:
    """Write the student version of the notebook `source` to `target`; returns the number of solution cells."""
    version, solutions = stripped(source)
    _write(version, Path(target))
    return solutions


def has_exercises(path: Path) -> bool:
    """Whether the notebook at `path` has a solution cell (one it cannot read has none)."""
    try:
        notebook = read_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    return isinstance(cells, list) and any(isinstance(cell, dict) and _is_solution(cell) for cell in cells)


def make_course(source: str | Path, target: str | Path) -> tuple[list[tuple[str, int]], list[str]]:
    """Copy the folder `source` to `target`, each notebook with exercises replaced by its student
    version, and make `target/mine/` for the learner's own notebooks. Into a `target` that exists,
    only what it does not hold yet is written: nothing there is overwritten. Returns (notebook,
    solution cells) for each student version written, and the files left as they were."""
    folder, out = Path(source), Path(target)
    if not folder.is_dir():
        raise BadValue(f"{folder} is not a folder")
    if out.exists() and not out.is_dir():
        raise BadValue(f"{out} exists and is not a folder: give a folder")
    if out.resolve().is_relative_to(folder.resolve()):
        raise BadValue(f"{out} is inside {folder}: give a folder outside it")
    with_exercises = sorted(path for path in folder.glob("*.ipynb") if has_exercises(path))
    if not with_exercises:
        raise BadValue(f"{folder} holds no notebook with a solution cell (nbgrader metadata solution: true): nothing to strip")
    # Every student version is made before anything is written: a broken markup leaves nothing half-made.
    versions = {path.name: stripped(path) for path in with_exercises}
    made, kept = [], []
    for path in sorted(_files(folder)):
        relative = path.relative_to(folder)
        destination = out / relative
        if destination.exists():
            kept.append(relative.as_posix())  # the learner's work, or a file of the course they have already
            continue
        destination.parent.mkdir(parents=True, exist_ok=True)
        if relative.as_posix() in versions:
            version, solutions = versions[relative.as_posix()]
            _write(version, destination)
            made.append((relative.as_posix(), solutions))
        else:
            shutil.copy2(path, destination)
    (out / MINE).mkdir(parents=True, exist_ok=True)
    return made, kept


def _files(folder: Path) -> list[Path]:
    """Every file of the course folder, but Jupyter's checkpoints and Python's caches."""
    skipped = {".ipynb_checkpoints", "__pycache__"}
    return [path for path in folder.rglob("*") if path.is_file() and not skipped & set(path.relative_to(folder).parts)]


# -- python -m mcp_nb student-version ----------------------------------------------------------


def arguments(parser) -> None:
    parser.add_argument(
        "source", help="the solution version: a notebook whose exercises use nbgrader's markup, or a folder of notebooks"
    )
    parser.add_argument(
        "-o",
        "--output",
        required=True,
        help="where to write the student version (solutions stripped, outputs cleared); for a folder, "
        "a folder: its copy, with each notebook that has exercises replaced by its student version, and mine/ "
        "for your own notebooks. Nothing that exists there is overwritten: what the folder already holds is "
        "left as it is (and said), and only what is new is written",
    )


def run(args) -> int:
    if Path(args.source).resolve() == Path(args.output).resolve():
        args.parser.error("the student version would overwrite its source: give another --output")
    try:
        if Path(args.source).is_dir():
            made, kept = make_course(args.source, args.output)
        elif Path(args.output).exists():
            made, kept = [], [args.output]
        else:
            made, kept = [(args.output, make(args.source, args.output))], []
    except ValueError as err:
        args.parser.error(str(err))
    where = (lambda name: str(Path(args.output) / name)) if Path(args.source).is_dir() else str
    for name, solutions in made:
        print(f"{where(name)}: {solutions} solution cells stripped, outputs cleared")
    notebooks = [name for name in kept if name.endswith(".ipynb")]
    for name in notebooks:
        print(f"{where(name)}: exists already, left as it is (your work is never overwritten; delete it to start it again)")
    others = len(kept) - len(notebooks)
    if others:
        print(f"{args.output}: {others} other files there already, left as they are")
    if Path(args.source).is_dir():
        print(f"{Path(args.output) / MINE}/: a folder for your own notebooks")
    return 0
