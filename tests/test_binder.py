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
from pathlib import Path

import nbformat
import pytest
import warm
from fresh_venv import first_failure, make, once, run, tail
from kernels import WARM_KERNELS, nbval_over_ipc

from mcp_nb.commands.student import has_exercises, student_version

ROOT = Path(__file__).resolve().parent.parent
BINDER = ROOT / "binder"
# What is in this checkout but not in the repository Binder would copy (git-ignored, or git's own).
NOT_COPIED = (
    ".git",
    ".venv",
    ".peers",
    "artifacts",
    "__pycache__",
    ".pytest_cache",
    ".hypothesis",
    "*.egg-info",
    "results",
    ".ipynb_checkpoints",
)
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
        cwd=repo,
        env=env,
        timeout=1800,
    )
    assert installed.returncode == 0, "pip install -r binder/requirements.txt failed:\n" + tail(
        installed.stdout + installed.stderr
    )
    # Then repo2docker runs binder/postBuild, from the root, with the environment's Python first on PATH.
    post = repo / "binder" / "postBuild"
    if post.exists():
        built = run([post], cwd=repo, env=env, timeout=900)
        assert built.returncode == 0, "binder/postBuild failed:\n" + tail(built.stdout + built.stderr)
    # The solution versions nbval runs: this checkout's, outside the image, beside it as notebooks/ is in
    # the repository (notebook 13 finds the servers postBuild installed in ../.peers).
    ci = base / "ci"
    shutil.copytree(ROOT / "notebooks", ci / "notebooks", ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
    if (repo / ".peers").exists():
        (ci / ".peers").symlink_to(repo / ".peers")
    assert (venv / "bin" / "jupyter-lab").exists(), "binder/requirements.txt gives no JupyterLab"
    # On Binder, JupyterLab and the kernel share this environment. nbval runs from the test
    # environment instead, so the environment's kernel is named with its own interpreter's
    # path (jupyter_client would start a spec whose command is a bare `python` with its own).
    kernels = base / "kernels"
    spec = run(
        [venv / "bin" / "python", "-m", "ipykernel", "install", "--prefix", kernels, "--name", "python3"],
        cwd=base,
        env=dict(env, TMPDIR=str(base)),  # ipykernel stages the spec in a folder of TMPDIR it leaves behind
        timeout=120,
    )
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
    environment (its `python3` kernelspec, first on JUPYTER_PATH), started warm: forked from a
    process of that environment's Python, in its environment, that imported ipykernel and the SDK
    once for the test process (tests/warm.py), as the test environment's own kernels are."""
    python = str(binder_env["venv"] / "bin" / "python")
    env = dict(binder_env["env"], **{WARM_KERNELS: json.dumps([python, warm.kernels_of(python, binder_env["env"])])})
    return run(
        [
            *nbval_over_ipc(),  # the kernel on Unix sockets: no TCP port another test can take (tests/kernels.py)
            notebook,
            "--nbval",
            "--nbval-kernel-name=python3",
            "--nbval-cell-timeout=300",
            "--nbval-sanitize-with",
            SANITIZER,
            "-q",
            "-p",
            "no:cacheprovider",
        ],
        cwd=ROOT,
        env=env,
        timeout=900,
    )


def test_the_kernel_runs_in_the_binder_environment(binder_env):
    """The notebooks' kernel is the fresh venv's Python, of the version runtime.txt names,
    with this checkout's mcp_nb (`-e .`)."""
    probe = binder_env["base"] / "probe.ipynb"
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.cells = [
        nbformat.v4.new_code_cell(
            "import pathlib, sys, mcp_nb\n"
            f"assert pathlib.Path(sys.prefix).resolve() == pathlib.Path({str(binder_env['venv'])!r}).resolve(), sys.prefix\n"
            f"assert '%d.%d' % sys.version_info[:2] == {binder_env['version']!r}, sys.version\n"
            f"assert pathlib.Path(mcp_nb.__file__).resolve().is_relative_to({str(binder_env['repo'])!r}), mcp_nb.__file__\n"
            # forked from the warm process of that Python (its command line is the warm process's)
            "assert '--serve' in sys.orig_argv and 'kernels' in sys.orig_argv, sys.orig_argv\n"
            "import os\n"
            f"assert {WARM_KERNELS!r} not in os.environ"
        )
    ]
    nbformat.write(notebook, probe)
    done = nbval(probe, binder_env)
    assert done.returncode == 0, tail(done.stdout + done.stderr, 60)


def test_notebooks_are_found():
    # The file names sort in the course's order (docs/rules.md names cells by the two digits a
    # name starts with): the primer first, then the quickstart.
    assert [nb.name for nb in NOTEBOOKS][:2] == ["00-primer.ipynb", "01-quickstart.ipynb"]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[nb.name for nb in NOTEBOOKS])
def test_notebook_runs_top_to_bottom_in_the_binder_environment_and_shows_what_it_stored(binder_env, notebook):
    # The solution version, beside the image; nbval writes nothing: the stored outputs stay as committed.
    kept = binder_env["base"] / "ci" / "notebooks" / notebook.name
    assert kept.read_bytes() == notebook.read_bytes()
    done = nbval(kept, binder_env)
    assert done.returncode == 0, f"{notebook.name} failed in the Binder environment:\n" + first_failure(done.stdout + done.stderr)


def test_binder_opens_the_student_versions(binder_env):
    """What the launch link opens, learn/ after Binder's build: each notebook with exercises is its student
    version, as `python -m mcp_nb student-version` makes it; every other file is as committed; mine/ waits
    for the learner's own notebooks."""
    opened = binder_env["repo"] / "learn"
    with_exercises = [notebook for notebook in NOTEBOOKS if has_exercises(notebook)]
    assert len(with_exercises) >= 9  # the core notebooks' exercises (docs/course.md)
    for notebook in NOTEBOOKS:
        shown = json.loads((opened / notebook.name).read_text(encoding="utf-8"))
        if notebook in with_exercises:
            expected, solutions = student_version(json.loads(notebook.read_text(encoding="utf-8")))
            assert solutions and shown == expected, f"{notebook.name} is not its student version on Binder"
        else:
            assert (opened / notebook.name).read_bytes() == notebook.read_bytes(), notebook.name
    for other in (ROOT / "notebooks").rglob("*"):
        if other.is_file() and other.suffix != ".ipynb" and "__pycache__" not in other.parts:
            assert (opened / other.relative_to(ROOT / "notebooks")).read_bytes() == other.read_bytes(), other.name
    assert (opened / "00-primer.ipynb").exists() and (opened / "mine").is_dir()  # the launch link's notebook (course-links)


def answer_lines() -> set[str]:
    """The lines only the answers hold: each solution region's and hidden tests' lines (long enough to say
    something of their own) that no student version holds elsewhere."""
    regions, shown = set(), set()
    for notebook in NOTEBOOKS:
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        for cell in cells:
            inside = False
            for line in "".join(cell["source"]).splitlines():
                if "BEGIN SOLUTION" in line or "BEGIN HIDDEN TESTS" in line:
                    inside = True
                elif "END SOLUTION" in line or "END HIDDEN TESTS" in line:
                    inside = False
                elif inside and len(line.strip()) >= 20:
                    regions.add(line.strip())
        version, _ = student_version(json.loads(notebook.read_text(encoding="utf-8")))
        shown |= {line.strip() for cell in version["cells"] for line in "".join(cell["source"]).splitlines()}
    return regions - shown


def test_binders_image_holds_no_solution(binder_env):
    """Nothing a learner can open on Binder gives an exercise's answer away: no solution version, no
    hidden test, no answer key, no test that answers, no history to check one out of."""
    repo = binder_env["repo"]
    assert not (repo / ".git").exists() and not (repo / "notebooks").exists()
    answers = answer_lines()
    assert len(answers) > 40, len(answers)  # the check has something to look for
    found = []
    for path in repo.rglob("*"):
        if not path.is_file() or ".peers" in path.relative_to(repo).parts:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if path.suffix == ".ipynb":
            text = "\n".join("".join(cell.get("source", "")) for cell in json.loads(text).get("cells", []))
        own = path.is_relative_to(repo / "mcp_nb")  # mcp_nb's own code names the markers, and its starter course has its example
        for marker in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS"):
            if marker in text and not own:
                found.append(f"{path.relative_to(repo)}: {marker}")
        lines = {line.strip() for line in text.splitlines()}
        found += [f"{path.relative_to(repo)}: {line}" for line in sorted(answers & lines)]
    assert not found, found


def test_binder_reads_only_what_it_should():
    """binder/ is read as a pip environment, and the README's launch link has its notebook."""
    # First match wins in repo2docker: any of these would replace requirements.txt.
    assert not [name for name in ("environment.yml", "Pipfile", "Pipfile.lock") if (BINDER / name).exists()]
    assert os.access(BINDER / "postBuild", os.X_OK), "repo2docker runs binder/postBuild only when it is executable"
    lines = [line.strip() for line in (BINDER / "requirements.txt").read_text().splitlines()]
    assert any(line.split("[")[0] == "-e ." for line in lines), "binder/requirements.txt must install the checkout (-e .)"
    assert (ROOT / "notebooks" / "00-primer.ipynb").exists()  # ?urlpath=lab/tree/learn/00-primer.ipynb, once built
    assert json.loads((ROOT / "notebooks" / "00-primer.ipynb").read_text())["metadata"]["kernelspec"]["name"] == "python3"
