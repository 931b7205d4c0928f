"""`python -m mcp_nb init-course DIR`: a teacher's starter folder, installed and checked as CI would.

The slow test makes the folder in a temporary directory with mcp_nb pinned to a wheel of
this checkout (the distribution mcp-notebook, checked to be what that venv imports mcp_nb from), then replays what follows on a fresh machine: a fresh venv of the Python
binder/runtime.txt names, the workflow's own `run:` steps (install binder/requirements.txt
and nbval, write the sanitizer again, nbval over notebooks/), with the teacher's step in
between: the notebook run once and its outputs stored, as the course's README says. nbval
then runs it a second time and compares every cell with the first run's outputs.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import nbformat
import pytest
from fresh_venv import make, run, tail
from kernels import execute

import mcp_nb
from mcp_nb.commands import course
from mcp_nb.notebook import nbval

ROOT = Path(__file__).resolve().parent.parent
PIN = "mcp-notebook[lab] @ git+https://github.com/OWNER/mcp_nb@v0.1.0"
LAYOUT = [
    ".github/workflows/notebooks.yml",
    "README.md",
    "binder/postBuild",
    "binder/requirements.txt",
    "binder/runtime.txt",
    "notebooks/01-first-tool.ipynb",
    "sanitize.cfg",
]
STORE = "python -m jupyter execute --inplace notebooks/*.ipynb"
# Run in the course's venv: which distribution is installed, and where `import mcp_nb` comes from.
INSTALLED = """
import json
from importlib import metadata
from pathlib import Path

import mcp_nb
from mcp_nb import sdk_compat

dist = metadata.distribution("mcp-notebook")
module = Path(mcp_nb.__file__).resolve()
try:
    metadata.distribution("mcp_nb")
    old = True
except metadata.PackageNotFoundError:
    old = False
print(json.dumps({
    "name": dist.metadata["Name"],
    "version": dist.version,
    "module": str(module),
    "imported_from_it": module in {Path(dist.locate_file(f)).resolve() for f in dist.files},
    "provides_mcp_nb": metadata.packages_distributions().get("mcp_nb"),
    "own_version": sdk_compat._own_version(),
    "old_name_installed": old,
}))
"""


def files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def workflow_steps(root: Path) -> list[str]:
    return re.findall(r"^\s*- run: (.+)$", (root / ".github/workflows/notebooks.yml").read_text(), flags=re.M)


def init_course(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "mcp_nb", "init-course", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


# -- the folder ------------------------------------------------------------------------------------


def test_the_course_has_its_files_with_mcp_nb_pinned(tmp_path):
    made = init_course("course", "--mcp-nb", PIN, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    root = tmp_path / "course"
    assert files(root) == sorted(LAYOUT)
    assert sorted(made.stdout.split()[: len(LAYOUT)]) == sorted(LAYOUT)  # what was written, said
    requirements = (root / "binder/requirements.txt").read_text()
    assert [line for line in requirements.splitlines() if not line.startswith("#")] == [PIN]
    version = "%d.%d" % sys.version_info[:2]
    assert (root / "binder/runtime.txt").read_text() == f"python-{version}\n"
    assert f'python-version: "{version}"' in (root / ".github/workflows/notebooks.yml").read_text()
    assert (root / "sanitize.cfg").read_text() == nbval.sanitizer()
    assert f"mcp_nb {mcp_nb.__version__}" in (root / "README.md").read_text() and STORE in (root / "README.md").read_text()
    notebook = nbformat.read(root / "notebooks/01-first-tool.ipynb", as_version=4)
    nbformat.validate(notebook)
    assert "%config McpMagics.stable_output = True" in notebook.cells[1].source
    assert not any(cell.get("outputs") for cell in notebook.cells)  # stored by the teacher's first run
    steps = workflow_steps(root)
    assert steps[0].startswith("python -m pip install -r binder/requirements.txt")
    assert "--nbval-sanitize-with sanitize.cfg notebooks/" in steps[-1]


def test_binders_build_of_the_course_opens_the_student_versions(tmp_path):
    """binder/postBuild, run as repo2docker runs it (from the course's root, executable), writes
    the student versions into learn/ and leaves no solution version in the image."""
    assert init_course("course", "--mcp-nb", PIN, cwd=tmp_path).returncode == 0
    root = tmp_path / "course"
    post = root / "binder" / "postBuild"
    assert os.access(post, os.X_OK), "repo2docker runs binder/postBuild only when it is executable"
    lesson = (root / "notebooks/01-first-tool.ipynb").read_bytes()
    # The environment's Python first on PATH, as on Binder; mcp_nb from this checkout.
    env = dict(os.environ, PYTHONPATH=str(ROOT), PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    built = subprocess.run([str(post)], cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    assert lesson.count(b"BEGIN SOLUTION") == 1 and not (root / "notebooks").exists() and not (root / "solutions").exists()
    assert not [path for path in root.rglob("*.ipynb") if b"BEGIN SOLUTION" in path.read_bytes()]  # no notebook holds a solution
    assert (root / "learn" / "mine").is_dir()
    opened = nbformat.read(root / "learn/01-first-tool.ipynb", as_version=4)
    exercise = next(cell for cell in opened.cells if cell.id == "exercise")
    assert "# YOUR CODE HERE" in exercise.source and "ToolError(" not in exercise.source
    assert "### BEGIN SOLUTION" not in "".join(cell.source for cell in opened.cells)


def _run(path: Path) -> dict[str, tuple[str, str]]:
    """Execute a notebook in a kernel of this environment; the cells that failed, by id: (ename, evalue)."""
    notebook = nbformat.read(path, as_version=4)
    execute(notebook, path.parent, allow_errors=True)
    return {cell.id: (o.ename, o.evalue) for cell in notebook.cells for o in cell.get("outputs", []) if o.output_type == "error"}


def test_the_first_lessons_exercise_passes_in_the_solution_version_and_fails_with_its_message_in_the_students(tmp_path):
    assert init_course("course", "--mcp-nb", PIN, cwd=tmp_path).returncode == 0
    root = tmp_path / "course"
    lesson = root / "notebooks/01-first-tool.ipynb"
    cells = {cell.id: cell for cell in nbformat.read(lesson, as_version=4).cells}
    assert cells["exercise"].metadata["nbgrader"]["solution"] is True and "### BEGIN SOLUTION" in cells["exercise"].source
    assert cells["exercise-check"].metadata["nbgrader"]["grade"] is True and "mcp_nb.expect(" in cells["exercise-check"].source
    assert _run(lesson) == {}  # the solution version: every cell runs, the check passes
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    made = subprocess.run(
        [sys.executable, "-m", "mcp_nb", "student-version", "notebooks/01-first-tool.ipynb", "-o", "student/01-first-tool.ipynb"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    students = root / "student/01-first-tool.ipynb"
    stripped = {cell.id: cell for cell in nbformat.read(students, as_version=4).cells}
    assert "# YOUR CODE HERE" in stripped["exercise"].source and "ToolError(" not in stripped["exercise"].source
    failed = _run(students)
    assert list(failed) == ["exercise-check"], failed  # only the unanswered check fails, and it says why
    ename, evalue = failed["exercise-check"]
    assert ename == "CheckFailed"  # an AssertionError that shows its explanation alone
    assert evalue.startswith('the call of tool get_year {"title": "Nothing"} ended tool_error / crash, not tool_error / raised')
    assert f"its cause, crash: {mcp_nb.CAUSE_DOC['crash']}" in evalue and "(KeyError: 'Nothing')" in evalue
    assert "hint: a title the model got wrong is a mistake it can fix" in evalue


def test_a_folder_that_is_not_empty_is_left_as_it_was(tmp_path):
    (tmp_path / "course").mkdir()
    (tmp_path / "course" / "notes.md").write_text("mine")
    refused = init_course("course", "--mcp-nb", PIN, cwd=tmp_path)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert refused.stderr.strip().splitlines()[-1].endswith("already exists and is not an empty folder: nothing was written")
    assert files(tmp_path / "course") == ["notes.md"]
    (tmp_path / "empty").mkdir()
    assert course.create(tmp_path / "empty", PIN)  # an empty folder is fine
    with pytest.raises(ValueError, match="not an empty folder"):
        course.create(tmp_path / "course" / "notes.md", PIN)


def test_the_distribution_is_named_mcp_notebook():
    """pyproject.toml's name is what init-course pins, and the extras that name the project name it so."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == course.DISTRIBUTION == "mcp-notebook"
    assert project["scripts"] == {"mcp-nb": "mcp_nb.commands:main"}  # the console script keeps its name
    own = [r for extra in project["optional-dependencies"].values() for r in extra if re.match(r"mcp[-_.]n", r, flags=re.I)]
    assert own and all(r.startswith("mcp-notebook[") for r in own), own


def test_a_requirement_that_does_not_name_mcp_notebook_is_refused(tmp_path):
    assert course.requirement_line("mcp-notebook[lab]==0.1.0") == "mcp-notebook[lab]==0.1.0"
    # PEP 503: the same name, however it is spelled
    assert course.requirement_line("mcp_notebook[lab]==0.1.0") == "mcp_notebook[lab]==0.1.0"
    assert (
        course.requirement_line("MCP.Notebook @ https://example.org/mcp_notebook-0.1.0.tar.gz")
        == "MCP.Notebook @ https://example.org/mcp_notebook-0.1.0.tar.gz"
    )
    assert course.requirement_line("git+https://github.com/OWNER/mcp_nb@v0.1.0") == PIN
    for wrong in ("numpy", "mcp_notebookx==1", "mcp_nbx==1", "", "mcp-notebook\n-e ."):
        with pytest.raises(ValueError, match="--mcp-nb takes a requirement naming mcp-notebook"):
            course.requirement_line(wrong)


@pytest.mark.parametrize("old", ["mcp_nb[lab]==0.1.0", "mcp-nb", "MCP.NB @ git+https://github.com/OWNER/mcp_nb@v0.1.0"])
def test_a_requirement_naming_the_other_project_on_pypi_is_refused_in_one_line(tmp_path, old):
    name = re.match(r"[\w.-]+", old).group(0)
    renamed = "mcp-notebook" + old[len(name) :]
    with pytest.raises(ValueError) as refused:
        course.requirement_line(old)
    assert str(refused.value) == (
        f"--mcp-nb: {name} on PyPI is another project; this one is named mcp-notebook: write {renamed!r}, not {old!r}"
    )
    made = init_course("course", "--mcp-nb", old, cwd=tmp_path)
    assert made.returncode == 2 and "Traceback" not in made.stderr and not (tmp_path / "course").exists()
    assert made.stderr.strip().splitlines()[-1].endswith(str(refused.value))
    refused = init_course("course", "--mcp-nb", "numpy", cwd=tmp_path)
    assert refused.returncode == 2 and not (tmp_path / "course").exists()


def distribution(tmp_path: Path, direct_url: dict | None) -> metadata.Distribution:
    """A real installed-package record, as pip leaves it in site-packages."""
    info = tmp_path / "mcp_notebook-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mcp-notebook\nVersion: 0.1.0\n")
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url))
    return metadata.PathDistribution(info)


@pytest.mark.parametrize(
    "direct_url, pinned",
    [
        (None, "mcp-notebook[lab]==0.1.0"),  # from a package index
        (
            {
                "url": "https://github.com/OWNER/mcp_nb",
                "vcs_info": {"vcs": "git", "commit_id": "0123abc", "requested_revision": "v0.1.0"},
            },
            "mcp-notebook[lab] @ git+https://github.com/OWNER/mcp_nb@0123abc",
        ),
        (
            {"url": "https://example.org/mcp_notebook-0.1.0-py3-none-any.whl", "archive_info": {}},
            "mcp-notebook[lab] @ https://example.org/mcp_notebook-0.1.0-py3-none-any.whl",
        ),
    ],
    ids=["index", "git", "archive"],
)
def test_the_pin_is_where_this_mcp_nb_was_installed_from(tmp_path, direct_url, pinned):
    assert course.installed_requirement(distribution(tmp_path, direct_url)) == pinned


def test_an_install_binder_cannot_reach_asks_for_the_pin(tmp_path):
    local = distribution(tmp_path, {"url": "file:///home/me/mcp_nb", "dir_info": {"editable": True}})
    with pytest.raises(
        ValueError, match="file:///home/me/mcp_nb, which Binder cannot reach: say where Binder gets mcp_nb with --mcp-nb"
    ):
        course.installed_requirement(local)


# -- a fresh machine -------------------------------------------------------------------------------


def source_copy(base: Path) -> Path:
    """What the package is built from, without this checkout's build leftovers."""
    src = base / "src"
    src.mkdir()
    # The modules beside the package (the pytest plugin) are named in pyproject.toml: a wheel
    # without one would install an entry point that breaks every pytest run of its venv.
    modules = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"].get("py-modules", [])
    for name in ("pyproject.toml", "README.md", "LICENSE", *(f"{module}.py" for module in modules)):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "mcp_nb", src / "mcp_nb", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return src


@pytest.fixture(scope="module")
def course_machine(tmp_path_factory):
    """The course folder, pinned to a wheel of this checkout, and a fresh venv where the
    workflow's install step has run."""
    base = tmp_path_factory.mktemp("course")
    version = "%d.%d" % sys.version_info[:2]  # what init-course writes into binder/runtime.txt
    venv, env = make(base, version)
    built = run(
        [venv / "bin" / "python", "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", base / "wheels", source_copy(base)],
        cwd=base,
        env=env,
        timeout=900,
    )
    assert built.returncode == 0, tail(built.stdout + built.stderr)
    (wheel,) = (base / "wheels").glob("mcp_notebook-*.whl")  # the wheel's file name: the distribution's, normalized
    made = init_course(str(base / "course"), "--mcp-nb", f"mcp-notebook[lab] @ {wheel.as_uri()}", cwd=base)
    assert made.returncode == 0, made.stderr
    root = base / "course"
    assert (root / "binder/runtime.txt").read_text().strip() == f"python-{version}"
    install, *steps = workflow_steps(root)
    installed = run(["bash", "-c", install], cwd=root, env=env, timeout=1800)
    assert installed.returncode == 0, f"{install}\n" + tail(installed.stdout + installed.stderr)
    # The wheel installed under the name mcp-notebook, and `import mcp_nb` loads from it.
    checked = run([venv / "bin" / "python", "-c", INSTALLED], cwd=root, env=env, timeout=120)
    assert checked.returncode == 0, tail(checked.stdout + checked.stderr)
    found = json.loads(checked.stdout.strip().splitlines()[-1])
    assert found["name"] == "mcp-notebook" and found["version"] == mcp_nb.__version__, found
    assert found["imported_from_it"] and Path(found["module"]).is_relative_to(venv.resolve()), found
    assert found["provides_mcp_nb"] == ["mcp-notebook"] and found["own_version"] == mcp_nb.__version__, found
    assert not found["old_name_installed"], found
    return {"root": root, "venv": venv, "env": env, "steps": steps}


def test_the_course_runs_stores_and_passes_nbval_on_a_fresh_machine(course_machine):
    root, env, steps = course_machine["root"], course_machine["env"], course_machine["steps"]
    written = (root / "sanitize.cfg").read_text()
    # The teacher's first run, which stores the outputs.
    stored = run(["bash", "-c", STORE], cwd=root, env=env, timeout=600)
    assert stored.returncode == 0, tail(stored.stderr)
    notebook = nbformat.read(root / "notebooks/01-first-tool.ipynb", as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1))
    assert "result (ok)" in json.dumps(code[2].outputs) and "tool_error (raised)" in json.dumps(code[3].outputs)
    # CI's steps: the sanitizer written again, and nbval's second run against the stored outputs.
    for step in steps:
        done = run(["bash", "-c", step], cwd=root, env=env, timeout=900)
        assert done.returncode == 0, f"{step}\n" + tail(done.stdout + done.stderr, 60)
    assert f"{len(code)} passed" in done.stdout
    assert (root / "sanitize.cfg").read_text() == written  # the same mcp_nb writes the same file


def test_the_course_installs_what_binder_needs(course_machine):
    """JupyterLab for Binder, and the kernel's mcp_nb is the pinned wheel, not this checkout."""
    venv, env = course_machine["venv"], course_machine["env"]
    assert (venv / "bin" / "jupyter-lab").exists()
    where = run(
        [venv / "bin" / "python", "-c", "import mcp_nb; print(mcp_nb.__file__)"], cwd=course_machine["root"], env=env, timeout=120
    )
    assert Path(where.stdout.strip()).resolve().is_relative_to(venv.resolve())
