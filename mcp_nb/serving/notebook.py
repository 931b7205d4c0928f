"""A notebook's code cells run in order in a headless IPython shell, as Run All would run them.

What the cells register (`%%mcp_tool`, `@mcp_nb.tool()`...) is then what gets served.
Cells tagged `mcp-skip` are left out (a plot, a slow exploration, a call that only makes
sense in a kernel). The first cell that fails stops the run with an error naming it.
The cells run in the notebook's folder, with that folder importable, as in Jupyter.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

from mcp_nb.mistakes import BadJson, Mistake, read_json

SKIP_TAG = "mcp-skip"


class NotebookError(Mistake, RuntimeError):
    """The notebook cannot be read, or one of its cells failed; the message says which and why."""


@dataclass(frozen=True)
class CodeCell:
    number: int  # 1-based, among the notebook's code cells
    source: str
    skipped: bool

    @property
    def first_line(self) -> str:
        lines = [line for line in self.source.splitlines() if line.strip()]
        return lines[0].strip() if lines else ""


def code_cells(path: Path) -> list[CodeCell]:
    """The notebook's code cells, in order."""
    try:
        notebook = read_json(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NotebookError(f"no notebook at {path}") from None
    except (OSError, UnicodeDecodeError, BadJson) as err:
        raise NotebookError(f"{path} is not a notebook (.ipynb JSON): {err}") from None
    if not isinstance(notebook, dict) or notebook.get("nbformat") != 4 or not isinstance(notebook.get("cells"), list):
        raise NotebookError(f"{path} is not a Jupyter notebook of format 4")
    cells = []
    for cell in notebook["cells"]:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        tags = (cell.get("metadata") or {}).get("tags") or []
        cells.append(CodeCell(len(cells) + 1, source, SKIP_TAG in tags))
    return cells


def headless_shell():
    """An IPython shell with no terminal and no kernel, that keeps no history on disk, and shows
    no cell's value: run as a script is, not as a notebook (an `Out[0]:` before each registration
    card is not what a terminal's user reads). What the cells print is printed."""
    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.ast_node_interactivity = "none"
    return InteractiveShell.instance(config=config)


def run_notebook(path: Path, shell=None) -> int:
    """Run the notebook's code cells in order (those tagged `mcp-skip` excepted); returns how many ran.

    Raises NotebookError naming the first cell that fails.
    """
    path = Path(path).resolve()
    cells = code_cells(path)
    shell = shell if shell is not None else headless_shell()
    os.chdir(path.parent)
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    ran = 0
    for cell in cells:
        if cell.skipped or not cell.source.strip():
            continue
        result = shell.run_cell(cell.source, store_history=False)
        error = result.error_before_exec or result.error_in_exec
        if error is not None:
            text = str(error).strip().splitlines()
            said = f"{type(error).__name__}: {text[0][:200]}" if text else type(error).__name__
            raise NotebookError(
                f"code cell {cell.number} of {path.name} failed ({cell.first_line[:60]!r}): {said}; "
                f"fix it, or tag the cell {SKIP_TAG} to leave it out"
            )
        ran += 1
    return ran
