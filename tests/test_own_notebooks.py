"""A user's own notebook under nbval: executed, stored, then checked by a second run.

The notebook is written here (not one of ours): it calls a tool with each outcome type
(result, tool_error raised and crashed, protocol_error, timeout with its late fate), shows
outcome cards, a registration card and the history table. It is stored the way a user
stores it (`jupyter execute --inplace`, a real kernel) and checked by nbval in another:

- with the shipped sanitizer (`python -m mcp_nb nbval-sanitize`), it passes;
- with stable output (MCP_NB_STABLE_OUTPUT=1 for both runs, or `%config` in the notebook)
  and no sanitizer at all, it passes;
- with neither, the same stored notebook fails: the durations differ, so the two passes
  above prove something;
- stored without stable output and checked with it (and the sanitizer), it passes: the
  sanitizer rewrites a view into the form stable output prints.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from kernels import nbval_over_ipc

from mcp_nb.config import STABLE_OUTPUT_ENV

ROOT = Path(__file__).resolve().parent.parent

SETUP = """\
%load_ext mcp_nb
import threading
import time
import mcp_nb
from mcp import MCPError
from mcp.server.mcpserver.exceptions import ToolError
let_go = threading.Event()  # lets the slow tool end
"""
STABLE = "%config McpMagics.stable_output = True\n"
CELLS = [
    '''\
%%mcp_tool --read-only
def lookup(title: str) -> str:
    """Find a book's author."""
    if title == "Nothing":
        raise ToolError(f"No book titled {title!r}.")
    if title == "Offline":
        raise MCPError(code=-32050, message="catalog offline", data={"retry_after": 5})
    if title == "Broken":
        return {}["catalog"]
    return "Frank Herbert"
''',
    """\
%%mcp_tool
def slow() -> str:
    let_go.wait(30)  # until the call has timed out: the card shown at once says "still running"
    return "late"
""",
    "%mcp_call lookup title=Dune",
    "%mcp_call lookup title=Nothing",
    "%mcp_call lookup title=Broken",
    "%mcp_call lookup title=Offline",
    # A deadline the handler starts well within on a loaded machine (tests/helpers.py: STARTS_WITHIN)
    "late = %mcp_call slow --timeout 2\nlate",
    # The late fate as a state: shown once the handler is known to have ended.
    'let_go.set()\nwhile late.server_fate == "running":\n    time.sleep(0.02)\nlate',
    "%mcp_history",
    'assert list(mcp_nb.history().to_frame()["outcome"]) == ["result", "tool_error", "tool_error", "protocol_error", "timeout"]',
]


def write_notebook(path: Path, stable_in_notebook: bool = False) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    setup = SETUP + (STABLE if stable_in_notebook else "")
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in [setup, *CELLS]]
    nbformat.write(notebook, path)
    return path


def environment(tmp: Path, stable: bool) -> dict:
    env = {key: value for key, value in os.environ.items() if key != STABLE_OUTPUT_ENV}
    env.update(
        PYTHONPATH=str(ROOT),  # the kernels import this checkout
        IPYTHONDIR=str(tmp / "ipython"),
        JUPYTER_CONFIG_DIR=str(tmp / "jupyter-config"),
        JUPYTER_RUNTIME_DIR=str(tmp / "jupyter-runtime"),
    )
    if stable:
        env[STABLE_OUTPUT_ENV] = "1"
    return env


def store(notebook: Path, env: dict) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "jupyter", "execute", "--inplace", "--timeout=120", notebook.name],
        cwd=notebook.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    cells = nbformat.read(notebook, as_version=4).cells
    assert all(cell.outputs for cell in cells[2:-1]), "a cell stored no output"


def check(notebook: Path, env: dict, sanitizer: Path | None) -> subprocess.CompletedProcess:
    command = [
        *nbval_over_ipc(),  # pytest, its kernel on Unix sockets: no TCP port another test can take (tests/kernels.py)
        "--nbval",
        "--nbval-current-env",
        "--nbval-cell-timeout=120",
        "-p",
        "no:cacheprovider",
        "-q",
        notebook.name,
    ]
    if sanitizer is not None:
        command += ["--nbval-sanitize-with", str(sanitizer)]
    return subprocess.run(
        command, cwd=notebook.parent, env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL
    )


def passed(result: subprocess.CompletedProcess) -> bool:
    return result.returncode == 0 and f"{len(CELLS) + 1} passed" in result.stdout


@pytest.fixture
def sanitizer(tmp_path) -> Path:
    path = tmp_path / "sanitize.cfg"
    written = subprocess.run(
        [sys.executable, "-m", "mcp_nb", "nbval-sanitize", "-o", path],
        env=environment(tmp_path, stable=False),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert written.returncode == 0, written.stderr
    return path


def test_stored_as_usual_it_passes_with_the_shipped_sanitizer_and_fails_without(tmp_path, sanitizer):
    notebook = write_notebook(tmp_path / "own.ipynb")
    plain = environment(tmp_path, stable=False)
    store(notebook, plain)
    stored = nbformat.read(notebook, as_version=4)
    html = "".join(out.get("data", {}).get("text/html", "") for cell in stored.cells for out in cell.outputs)
    assert " ms</span>" in html and ">ms</th>" in html and "Traceback (most recent call last)" in html
    assert "completed after the client gave up: result (ok) at " in html

    with_sanitizer = check(notebook, plain, sanitizer)
    assert passed(with_sanitizer), with_sanitizer.stdout[-4000:]
    without = check(notebook, plain, None)
    assert without.returncode != 0, "the second run matched without a sanitizer: nothing here varies"
    assert " ms</span>" in without.stdout  # what differed: the durations
    # Checked with stable output on: the sanitizer turns both into the same stable form.
    mixed = check(notebook, environment(tmp_path, stable=True), sanitizer)
    assert passed(mixed), mixed.stdout[-4000:]


def test_with_stable_output_from_the_environment_it_passes_with_no_sanitizer(tmp_path):
    notebook = write_notebook(tmp_path / "own.ipynb")
    stable = environment(tmp_path, stable=True)
    store(notebook, stable)
    html = "".join(
        out.get("data", {}).get("text/html", "") for cell in nbformat.read(notebook, as_version=4).cells for out in cell.outputs
    )
    assert " ms</span>" not in html and ">ms</th>" not in html and "File &quot;" not in html
    assert "completed after the client gave up: result (ok)</div>" in html and "-32050 catalog offline" in html
    result = check(notebook, stable, None)
    assert passed(result), result.stdout[-4000:]


def test_with_stable_output_set_in_the_notebook_it_passes_with_no_sanitizer(tmp_path):
    notebook = write_notebook(tmp_path / "own.ipynb", stable_in_notebook=True)
    plain = environment(tmp_path, stable=False)
    store(notebook, plain)
    result = check(notebook, plain, None)
    assert passed(result), result.stdout[-4000:]
