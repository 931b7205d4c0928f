"""The student version of a notebook, or of a course's folder: `python -m mcp_nb student-version SRC -o DST`.

A course keeps one source, the solution version, which CI runs. Its exercises use nbgrader's
markup: a solution cell carries nbgrader's metadata (`"nbgrader": {"solution": true, ...}`), and
the answer inside it sits between a line holding `BEGIN SOLUTION` and one holding
`END SOLUTION` (`### BEGIN SOLUTION` in code). The student version is the same notebook with
each such region replaced by a stub indented as its first line (a solution cell without a
region loses all its source to the stub) and every output cleared, as nbgrader's `ClearSolutions`
and `ClearOutput` preprocessors do, with one difference: the code stub is `# YOUR CODE HERE`
alone, without nbgrader's `raise NotImplementedError()`, so that a solution cell left blank still
runs and the exercise's check cell says what is missing. `tests/test_student_version.py` shows
the two agree (nbgrader's `ClearSolutions(code_stub={"python": "# YOUR CODE HERE"})`).

Given a folder, it writes a copy of the folder in which every notebook with exercises is its
student version and everything else is as it was (the other notebooks, with their outputs, and
the files they read): what Binder's build makes of `notebooks/`, so that a class opens the
exercises without their answers (binder/postBuild).

Only the standard library: the notebook is JSON, written back as nbformat writes it.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from mcp_nb.mistakes import BadValue, read_json

BEGIN, END = "BEGIN SOLUTION", "END SOLUTION"
CODE_STUB = "# YOUR CODE HERE"
TEXT_STUB = "YOUR ANSWER HERE"


def _is_solution(cell: dict) -> bool:
    return bool(cell.get("metadata", {}).get("nbgrader", {}).get("solution", False))


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
    target.write_text(json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def make(source: str | Path, target: str | Path) -> int:
    """Write the student version of the notebook `source` to `target`; returns the number of solution cells."""
    version, solutions = stripped(source)
    _write(version, Path(target))
    return solutions


def has_exercises(path: Path) -> bool:
    """Whether the notebook at `path` has a solution cell (one it cannot read has none)."""
    try:
        notebook = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    return isinstance(cells, list) and any(isinstance(cell, dict) and _is_solution(cell) for cell in cells)


def make_course(source: str | Path, target: str | Path) -> list[tuple[str, int]]:
    """Copy the folder `source` to `target` (which must not exist), each notebook with exercises
    replaced by its student version; returns (notebook, solution cells) for each one replaced."""
    folder, out = Path(source), Path(target)
    if not folder.is_dir():
        raise BadValue(f"{folder} is not a folder")
    if out.exists():
        raise BadValue(f"{out} exists already: give a folder that does not")
    if out.resolve().is_relative_to(folder.resolve()):
        raise BadValue(f"{out} is inside {folder}: give a folder outside it")
    with_exercises = sorted(path for path in folder.glob("*.ipynb") if has_exercises(path))
    if not with_exercises:
        raise BadValue(f"{folder} holds no notebook with a solution cell (nbgrader metadata solution: true): nothing to strip")
    # Every student version is made before anything is written: a broken markup leaves no half-made folder.
    versions = [(path.name, *stripped(path)) for path in with_exercises]
    shutil.copytree(folder, out, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    for name, version, _ in versions:
        _write(version, out / name)
    return [(name, solutions) for name, _, solutions in versions]


# -- python -m mcp_nb student-version ----------------------------------------------------------


def arguments(parser) -> None:
    parser.add_argument(
        "source", help="the solution version: a notebook whose exercises use nbgrader's markup, or a folder of notebooks"
    )
    parser.add_argument(
        "-o", "--output", required=True,
        help="where to write the student version (solutions stripped, outputs cleared); for a folder, "
        "a new folder: its copy, with each notebook that has exercises replaced by its student version",
    )  # fmt: skip


def run(args) -> int:
    if Path(args.source).resolve() == Path(args.output).resolve():
        args.parser.error("the student version would overwrite its source: give another --output")
    try:
        if Path(args.source).is_dir():
            made = make_course(args.source, args.output)
        else:
            made = [(args.output, make(args.source, args.output))]
    except ValueError as err:
        args.parser.error(str(err))
    for name, solutions in made:
        where = name if not Path(args.source).is_dir() else str(Path(args.output) / name)
        print(f"{where}: {solutions} solution cells stripped, outputs cleared")
    return 0
