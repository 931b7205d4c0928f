"""Replay what Binder does with binder/, without Docker, and compare every notebook there with nbval.

repo2docker copies the repository into the image and reads only binder/ when it exists:
`runtime.txt` picks the Python, and `requirements.txt` is installed with pip from the copy's
root (so its `-e .` is the copy), then `postBuild` runs there. Here: a copy of this checkout's
files, a fresh virtual environment of that Python, `pip install -r binder/requirements.txt`
from the copy's root, `binder/postBuild`, then each solution version (what postBuild keeps in
solutions/) run top to bottom by a kernel of that environment, as a learner's "Run All" would,
and compared with its stored outputs by nbval; and notebooks/ there, what the launch link
opens, checked to be the student versions.

This is the one place the test command runs the notebooks. nbval itself runs from the
test environment: it and pytest are test tools, so nothing is installed on top of what
binder/requirements.txt gives, and a notebook that needs a package it lacks fails here as
it would on Binder. Every notebook checks its own facts in assert cells, so "it passed"
means "its facts hold, and it shows what it showed when it was stored".

Slow (a minute for pip, then the notebooks) and needs the package registry, as Binder does.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import nbformat
import pytest

from fresh_venv import make, once, run, tail
from mcp_nb.commands.student import has_exercises, student_version

ROOT = Path(__file__).resolve().parent.parent
BINDER = ROOT / "binder"
# What is in this checkout but not in the repository Binder would copy (git-ignored, or git's own).
NOT_COPIED = (".git", ".venv", ".peers", "artifacts", "__pycache__", ".pytest_cache", "*.egg-info", "results", ".ipynb_checkpoints")
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SANITIZER = ROOT / "notebooks" / "sanitize.cfg"


def runtime_version() -> str:
    """The Python version binder/runtime.txt asks for, e.g. "3.11"."""
    runtime = (BINDER / "runtime.txt").read_text().strip()
    assert runtime.startswith("python-"), f"binder/runtime.txt should read python-X.Y, not {runtime!r}"
    return runtime.removeprefix("python-")


def build(base: Path) -> dict:
    """A copy of the repository in `base` and a fresh venv with binder/requirements.txt
    installed from it, as repo2docker makes them."""
    version = runtime_version()
    venv, env = make(base, version)
    repo = base / "repo"  # postBuild changes what it finds: never this checkout
    shutil.copytree(ROOT, repo, ignore=shutil.ignore_patterns(*NOT_COPIED), symlinks=True)

    # What repo2docker runs, from the copy's root, with nothing else.
    installed = run(
        [venv / "bin" / "python", "-m", "pip", "install", "--quiet", "-r", "binder/requirements.txt"],
        cwd=repo, env=env, timeout=1800,
    )  # fmt: skip
    assert installed.returncode == 0, "pip install -r binder/requirements.txt failed:\n" + tail(installed.stdout + installed.stderr)
    # Then repo2docker runs binder/postBuild, from the root, with the environment's Python first on PATH.
    post = repo / "binder" / "postBuild"
    if post.exists():
        built = run([post], cwd=repo, env=env, timeout=900)
        assert built.returncode == 0, "binder/postBuild failed:\n" + tail(built.stdout + built.stderr)
    assert (venv / "bin" / "jupyter-lab").exists(), "binder/requirements.txt gives no JupyterLab"
    # On Binder, JupyterLab and the kernel share this environment. nbval runs from the test
    # environment instead, so the environment's kernel is named with its own interpreter's
    # path (jupyter_client would start a spec whose command is a bare `python` with its own).
    kernels = base / "kernels"
    spec = run([venv / "bin" / "python", "-m", "ipykernel", "install", "--prefix", kernels, "--name", "python3"], cwd=base, env=env, timeout=120)
    assert spec.returncode == 0, "binder/requirements.txt gives no kernel (ipykernel):\n" + tail(spec.stdout + spec.stderr)
    env = dict(env, JUPYTER_PATH=str(kernels / "share" / "jupyter"))  # searched before any other
    return {"base": str(base), "venv": str(venv), "repo": str(repo), "env": env, "version": version}


@pytest.fixture(scope="session")
def binder_env(tmp_path_factory):
    """The fresh Binder environment, made once for the run: its notebooks' tests may run on
    different workers (tests/conftest.py spreads them), and each asks for the same one."""
    made = once(tmp_path_factory, "binder", build)
    return {**made, "base": Path(made["base"]), "venv": Path(made["venv"]), "repo": Path(made["repo"])}


def nbval(notebook: Path, binder_env: dict):
    """nbval, from the test environment, over `notebook`, with a kernel of the Binder
    environment (its `python3` kernelspec, first on JUPYTER_PATH)."""
    return run(
        [sys.executable, "-m", "pytest", notebook, "--nbval", "--nbval-kernel-name=python3",
         "--nbval-cell-timeout=300", "--nbval-sanitize-with", SANITIZER, "-q", "-p", "no:cacheprovider"],
        cwd=ROOT, env=binder_env["env"], timeout=900,
    )  # fmt: skip


def test_the_kernel_runs_in_the_binder_environment(binder_env):
    """The notebooks' kernel is the fresh venv's Python, of the version runtime.txt names,
    with this checkout's mcp_nb (`-e .`)."""
    probe = binder_env["base"] / "probe.ipynb"
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.cells = [nbformat.v4.new_code_cell(
        "import pathlib, sys, mcp_nb\n"
        f"assert pathlib.Path(sys.prefix).resolve() == pathlib.Path({str(binder_env['venv'])!r}).resolve(), sys.prefix\n"
        f"assert '%d.%d' % sys.version_info[:2] == {binder_env['version']!r}, sys.version\n"
        f"assert pathlib.Path(mcp_nb.__file__).resolve().is_relative_to({str(binder_env['repo'])!r}), mcp_nb.__file__"
    )]  # fmt: skip
    nbformat.write(notebook, probe)
    done = nbval(probe, binder_env)
    assert done.returncode == 0, tail(done.stdout + done.stderr, 60)


def test_notebooks_are_found():
    # The file names sort in the course's order (docs/rules.md names cells by the two digits a
    # name starts with): the primer first, then the quickstart.
    assert [nb.name for nb in NOTEBOOKS][:2] == ["00-primer.ipynb", "01-quickstart.ipynb"]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[nb.name for nb in NOTEBOOKS])
def test_notebook_runs_top_to_bottom_in_the_binder_environment_and_shows_what_it_stored(binder_env, notebook):
    # The solution version, where Binder's build keeps it; nbval writes nothing: the stored outputs stay as committed.
    kept = binder_env["repo"] / "solutions" / notebook.name
    assert kept.read_bytes() == notebook.read_bytes(), f"binder/postBuild changed the solution version of {notebook.name}"
    done = nbval(kept, binder_env)
    assert done.returncode == 0, f"{notebook.name} failed in the Binder environment:\n" + tail(done.stdout + done.stderr, 80)


def test_binder_opens_the_student_versions(binder_env):
    """What the launch link opens, notebooks/ after Binder's build: each notebook with exercises is
    its student version, as `python -m mcp_nb student-version` makes it; every other file is as committed."""
    opened = binder_env["repo"] / "notebooks"
    with_exercises = [notebook for notebook in NOTEBOOKS if has_exercises(notebook)]
    assert len(with_exercises) >= 8  # the core notebooks' exercises (docs/course.md)
    for notebook in NOTEBOOKS:
        shown = json.loads((opened / notebook.name).read_text(encoding="utf-8"))
        if notebook in with_exercises:
            expected, solutions = student_version(json.loads(notebook.read_text(encoding="utf-8")))
            assert solutions and shown == expected, f"{notebook.name} is not its student version on Binder"
            assert "BEGIN SOLUTION" not in json.dumps(shown["cells"])
        else:
            assert (opened / notebook.name).read_bytes() == notebook.read_bytes(), notebook.name
    for other in (ROOT / "notebooks").rglob("*"):
        if other.is_file() and other.suffix != ".ipynb" and "__pycache__" not in other.parts:
            assert (opened / other.relative_to(ROOT / "notebooks")).read_bytes() == other.read_bytes(), other.name
    assert (opened / "00-primer.ipynb").exists()  # the README's and docs/course.md's launch link


def test_binder_reads_only_what_it_should():
    """binder/ is read as a pip environment, and the README's launch link has its notebook."""
    # First match wins in repo2docker: any of these would replace requirements.txt.
    assert not [name for name in ("environment.yml", "Pipfile", "Pipfile.lock") if (BINDER / name).exists()]
    assert os.access(BINDER / "postBuild", os.X_OK), "repo2docker runs binder/postBuild only when it is executable"
    lines = [line.strip() for line in (BINDER / "requirements.txt").read_text().splitlines()]
    assert any(line.split("[")[0] == "-e ." for line in lines), "binder/requirements.txt must install the checkout (-e .)"
    assert (ROOT / "notebooks" / "01-quickstart.ipynb").exists()  # ?urlpath=lab/tree/notebooks/01-quickstart.ipynb
    assert json.loads((ROOT / "notebooks" / "01-quickstart.ipynb").read_text())["metadata"]["kernelspec"]["name"] == "python3"
