"""A fresh virtual environment, as a newcomer's machine, Binder or a CI runner starts with.

Shared by the tests that replay an install from nothing (tests/test_binder.py for this
repository's binder/, tests/test_init_course.py for a course made by `init-course`): the
venv is made with the interpreter of the Python version asked for, nothing of this
environment leaks into it (no PYTHONPATH, no VIRTUAL_ENV, no Jupyter or IPython
configuration of ours), and its bin/ is first on PATH.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

# Variables of this machine a fresh one does not have. PYTHONDONTWRITEBYTECODE among them: the
# fresh venvs are installed without bytecode (below), so Python must write it at first import.
LEAKY = {
    "VIRTUAL_ENV",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "PYTHONDONTWRITEBYTECODE",
    "JUPYTER_PATH",
    "MPLBACKEND",
    "MCP_NB_STABLE_OUTPUT",
}


def interpreter(version: str) -> str:
    """This machine's interpreter of Python `version` ("3.11"): the one the tests run on, when it
    is of that version (its installation's, not the test venv's), else the first on PATH.

    The tests' own is the one .ci/run chose for the run (the system's, where it is recent enough:
    see there), so a fresh venv's packages and kernels run on the same build as the rest."""
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    own = Path(sys.base_prefix) / "bin" / f"python{version}"
    if here == version and own.is_file() and os.access(own, os.X_OK):
        return str(own)
    found = shutil.which(f"python{version}") or (sys.executable if here == version else None)
    assert found, f"Python {version} is asked for, and is not on this machine"
    return found


def run(command: list, *, cwd: Path, env: dict, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=env,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
    )


def tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def first_failure(text: str, lines: int = 60) -> str:
    """A pytest run's first failure, from its header on, then the run's last lines: in a notebook
    run by nbval the first failing cell is the cause, and the cells after it mostly fail because
    of it, so the tail alone can hide the one that matters."""
    found = text.find("= FAILURES =")
    if found < 0:
        return tail(text, lines)
    first = "\n".join(text[found:].splitlines()[1 : lines + 1])
    return f"{first}\n[…]\n{tail(text, 20)}"


def environment(base: Path, venv: Path) -> dict:
    """The environment a fresh machine's user has, with `venv` active."""
    env = {key: value for key, value in os.environ.items() if key not in LEAKY}
    # A newcomer starts with no Jupyter or IPython configuration of their own.
    env.update(
        PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        JUPYTER_CONFIG_DIR=str(base / "jupyter-config"),
        JUPYTER_DATA_DIR=str(base / "jupyter-data"),
        JUPYTER_RUNTIME_DIR=str(base / "jupyter-runtime"),
        IPYTHONDIR=str(base / "ipython"),
        MPLCONFIGDIR=str(base / "matplotlib"),
        # pip writes no bytecode for what it installs (Python writes it at first import):
        # the same packages are installed, in about two thirds of the time.
        PIP_COMPILE="false",
    )
    return env


def make(base: Path, version: str) -> tuple[Path, dict]:
    """A new venv of Python `version` in base/venv, with a current pip, and the environment to run it in.

    A current pip, as Binder's image and a CI runner's Python have it (and the README's first command
    asks for, with the same `--upgrade-deps`): the pip a Python bundles is as old as that Python, and
    the one of 3.11 reads every file of every release on each project's index page to resolve
    JupyterLab's packages, twice the CPU time of a current one for the same install."""
    venv = base / "venv"
    env = environment(base, venv)
    created = run([interpreter(version), "-m", "venv", "--upgrade-deps", venv], cwd=base, env=env, timeout=300)
    assert created.returncode == 0, tail(created.stderr)
    return venv, env


def once(tmp_path_factory, name: str, build: Callable[[Path], dict]) -> dict:
    """`build(folder)` run once in the whole test run, by whichever pytest-xdist worker asks
    first; the others wait for it and get the same answer (a dict that JSON can hold).

    A fresh environment is a minute of pip: the tests that share one need not share a worker,
    so they can run side by side once it exists. A build that failed fails every test that
    asks for it, with the same message, instead of being tried again by each worker.
    """
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # each worker has its own basetemp under the run's
    answer = root / f"{name}.json"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or the process ends
        if answer.exists():
            saved = json.loads(answer.read_text())
            if "failed" in saved:
                pytest.fail(f"{name} (built by another worker): {saved['failed']}", pytrace=False)
            return saved
        folder = root / name
        folder.mkdir()
        try:
            built = build(folder)
        except BaseException as err:  # pytest's failures are BaseExceptions too
            answer.write_text(json.dumps({"failed": str(err) or type(err).__name__}))
            raise
        answer.write_text(json.dumps(built))
        return built
