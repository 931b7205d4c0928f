"""Replay what Binder does with binder/, without Docker, and run every notebook there.

repo2docker reads only binder/ when it exists: `runtime.txt` picks the Python, and
`requirements.txt` is installed with pip from the repository root (so its `-e .` is
this checkout), then `postBuild` runs. Here: a fresh virtual environment of that Python,
`pip install -r binder/requirements.txt` from the root, `binder/postBuild`, then each notebook in notebooks/ executed top
to bottom in that environment with `jupyter execute`, as a learner's "Run All" would.
Nothing is installed on top: `jupyter execute` (nbclient) comes with JupyterLab, so a
notebook that needs a package binder/requirements.txt lacks fails here as it would on
Binder. Every notebook checks its own facts in assert cells, so "it executed" means
"its facts hold".

Slow (a minute or two, most of it pip) and needs the package registry, as Binder does.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
import pytest

from fresh_venv import make, run, tail

ROOT = Path(__file__).resolve().parent.parent
BINDER = ROOT / "binder"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def runtime_version() -> str:
    """The Python version binder/runtime.txt asks for, e.g. "3.11"."""
    runtime = (BINDER / "runtime.txt").read_text().strip()
    assert runtime.startswith("python-"), f"binder/runtime.txt should read python-X.Y, not {runtime!r}"
    return runtime.removeprefix("python-")


@pytest.fixture(scope="module")
def binder_env(tmp_path_factory):
    """A fresh venv with binder/requirements.txt installed, and the environment to run it in."""
    base = tmp_path_factory.mktemp("binder")
    version = runtime_version()
    venv, env = make(base, version)

    # What repo2docker runs, from the repository root, with nothing else.
    installed = run(
        [venv / "bin" / "python", "-m", "pip", "install", "--quiet", "-r", "binder/requirements.txt"],
        cwd=ROOT, env=env, timeout=1800,
    )  # fmt: skip
    assert installed.returncode == 0, "pip install -r binder/requirements.txt failed:\n" + tail(installed.stdout + installed.stderr)
    # Then repo2docker runs binder/postBuild, from the root, with the environment's Python first on PATH.
    post = BINDER / "postBuild"
    if post.exists():
        built = run([post], cwd=ROOT, env=env, timeout=900)
        assert built.returncode == 0, "binder/postBuild failed:\n" + tail(built.stdout + built.stderr)
    assert (venv / "bin" / "jupyter-execute").exists(), "binder/requirements.txt gives no `jupyter execute` (nbclient)"
    assert (venv / "bin" / "jupyter-lab").exists(), "binder/requirements.txt gives no JupyterLab"
    return {"base": base, "venv": venv, "env": env, "version": version}


def test_the_kernel_runs_in_the_binder_environment(binder_env):
    """The notebooks' kernel is the fresh venv's Python, of the version runtime.txt names."""
    probe = binder_env["base"] / "probe.ipynb"
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.cells = [nbformat.v4.new_code_cell("import sys, mcp_nb; print(sys.prefix); print('%d.%d' % sys.version_info[:2]); print(mcp_nb.__file__)")]
    nbformat.write(notebook, probe)
    done = run([binder_env["venv"] / "bin" / "jupyter", "execute", "--inplace", probe], cwd=probe.parent, env=binder_env["env"], timeout=300)
    assert done.returncode == 0, tail(done.stderr)
    output = nbformat.read(probe, as_version=4).cells[0].outputs[0]["text"].split()
    assert Path(output[0]).resolve() == binder_env["venv"].resolve()
    assert output[1] == binder_env["version"]
    assert Path(output[2]).resolve().is_relative_to(ROOT)  # `-e .`: the checkout itself


def test_notebooks_are_found():
    assert [nb.name for nb in NOTEBOOKS][:1] == ["00-quickstart.ipynb"]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[nb.name for nb in NOTEBOOKS])
def test_notebook_runs_top_to_bottom_in_the_binder_environment(binder_env, notebook):
    # Without --inplace nothing is written: the stored outputs stay as committed.
    done = run(
        [binder_env["venv"] / "bin" / "jupyter", "execute", "--timeout=300", notebook],
        cwd=notebook.parent, env=binder_env["env"], timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, f"{notebook.name} failed in the Binder environment:\n" + tail(done.stderr, 60)


def test_binder_reads_only_what_it_should():
    """binder/ is read as a pip environment, and the README's launch link has its notebook."""
    # First match wins in repo2docker: any of these would replace requirements.txt.
    assert not [name for name in ("environment.yml", "Pipfile", "Pipfile.lock") if (BINDER / name).exists()]
    assert os.access(BINDER / "postBuild", os.X_OK), "repo2docker runs binder/postBuild only when it is executable"
    lines = [line.strip() for line in (BINDER / "requirements.txt").read_text().splitlines()]
    assert any(line.split("[")[0] == "-e ." for line in lines), "binder/requirements.txt must install the checkout (-e .)"
    assert (ROOT / "notebooks" / "00-quickstart.ipynb").exists()  # ?urlpath=lab/tree/notebooks/00-quickstart.ipynb
    assert json.loads((ROOT / "notebooks" / "00-quickstart.ipynb").read_text())["metadata"]["kernelspec"]["name"] == "python3"
