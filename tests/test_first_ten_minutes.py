"""A newcomer's first ten minutes: the README and every docs page work as written.

- Every ```python block of README.md and of each docs/*.md page runs, in order, in a fresh
  IPython shell of its own (a process of its own, as a newcomer starts: no extension loaded,
  mcp_nb not imported; started warm, tests/warm.py, from a process that imported IPython and
  the SDK), magics and all; a line whose comment promises an outcome ("# result (ok)") is the
  block's last, and the block shows that outcome (a cell shows only its last value).
- Every ```bash block of a docs page runs as written, in its page's order with the python
  blocks, in the same folder.
- Every code block says what it is: `python` (run here), `text` (a diagram, a file shown),
  a MyST directive, or `bash` (a command: the README's set up a machine, and
  tests/test_documented_commands.py runs them in a fresh copy of the repository).
- The panel's ipywidgets is a core dependency, and `import mcp_nb` still does not import it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import warm

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)
KNOWN = {"python", "text", "bash", "{eval-rst}", "{toctree}", "{image}"}


def blocks(page: Path) -> list[tuple[str, str]]:
    return [(language.strip(), body) for language, body in FENCE.findall(page.read_text(encoding="utf-8"))]


def test_every_code_block_says_what_it_is():
    for page in PAGES:
        for language, body in blocks(page):
            where = f"{page.relative_to(ROOT)}: block starting {body.splitlines()[0] if body.strip() else ''!r}"
            assert (language.split() or [""])[0] in KNOWN, (
                f"{where} is marked {language!r}; mark it python (it runs in the tests) or text"
            )
    assert sum(language == "python" for page in PAGES for language, _ in blocks(page)) >= 15  # the fences were found


RUNNER = r"""
import json, re, subprocess, sys
from IPython.core.interactiveshell import InteractiveShell

# A comment that promises an outcome ("# result (ok): ...") is a promise of what the cell shows.
PROMISE = re.compile(r"#\s*(result|tool_error|protocol_error|timeout) \((\w+)\)")
SHOWS_NOTHING = re.compile(r"^(?:[A-Za-z_][\w, .\[\]]*=(?!=)|assert |print\(|for |with |if )")

shell = InteractiveShell.instance()
for number, (language, source) in enumerate(json.load(sys.stdin), 1):
    if language == "bash":  # a command of the page, run as written where its cells wrote their files
        ran = subprocess.run(["bash", "-e", "-c", source], capture_output=True, text=True, timeout=300)
        if ran.returncode != 0:
            print(f"\nBLOCK {number} FAILED: exit status {ran.returncode}\n{source}\n{ran.stdout[-2000:]}{ran.stderr[-2000:]}", file=sys.stderr)
            sys.exit(1)
        continue
    result = shell.run_cell(source)
    error = result.error_before_exec or result.error_in_exec
    if error is not None:
        print(f"\nBLOCK {number} FAILED: {type(error).__name__}: {error}\n{source}", file=sys.stderr)
        sys.exit(1)
    lines = [line for line in source.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    for index, line in enumerate(lines):
        promise = PROMISE.search(line)
        if promise is None or SHOWS_NOTHING.match(line[: promise.start()].strip()):
            continue
        shown = result.result
        if index != len(lines) - 1:
            print(f"\nBLOCK {number}: {line.strip()!r} promises what it shows, but only a cell's last value is shown", file=sys.stderr)
            sys.exit(1)
        if (getattr(shown, "outcome", None), getattr(shown, "cause", None)) != promise.groups():
            print(f"\nBLOCK {number}: {line.strip()!r} shows {shown!r}", file=sys.stderr)
            sys.exit(1)
print(f"\nALL {number} BLOCKS RAN")
"""


@pytest.mark.parametrize("page", [p for p in PAGES if any(lang == "python" for lang, _ in blocks(p))], ids=lambda p: p.name)
def test_every_python_block_runs_as_written(page, tmp_path):
    """A page's ```python blocks, and on a docs page its ```bash blocks too, run as written, in the
    page's order, in one folder: a command finds the files the cells before it wrote. The README's
    commands set up a machine: tests/test_documented_commands.py runs them in a copy of the repository."""
    sources = [
        (language, body) for language, body in blocks(page) if language == "python" or (language == "bash" and page != README)
    ]
    env = dict(os.environ, IPYTHONDIR=str(tmp_path / "ipython"), MPLBACKEND="Agg")
    # A page's `tempfile.mkdtemp()` is the reader's to remove; here it goes in the test's folder.
    (tmp_path / "tmp").mkdir()
    env["TMPDIR"] = str(tmp_path / "tmp")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    # `python`, `pytest`, `mcp-nb` in a page's commands: this environment's, as in the reader's activated one
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    done = subprocess.run(
        warm.python("-c", RUNNER),
        input=json.dumps(sources),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"{page.name}:\n{done.stderr[-3000:]}\n{done.stdout[-2000:]}"
    assert f"ALL {len(sources)} BLOCKS RAN" in done.stdout


def readme_commands() -> list[str]:
    return [body.strip() for language, body in blocks(README) if language == "bash"]


def test_the_readme_has_its_two_commands_and_what_they_name_exists():
    """The first command opens JupyterLab on learn/ (the course's student versions, made by it),
    never on the solutions; the second is the test command. tests/test_documented_commands.py
    runs the first as written, from a fresh copy of the repository."""
    setup, tests = readme_commands()[:2]
    for command in readme_commands():
        checked = subprocess.run(["bash", "-n", "-c", command], capture_output=True, text=True)
        assert checked.returncode == 0, checked.stderr
    steps = [step.strip() for step in setup.split("&&")]
    assert steps[:3] == [
        "python3 -m venv --upgrade-deps .venv",
        '.venv/bin/pip install -e ".[lab]"',
        ".venv/bin/python tests/peers.py install --notebooks",
    ]
    assert ".venv/bin/python -m mcp_nb student-version notebooks -o learn" in steps
    lab = shlex.split(steps[-1])
    assert lab[:2] == [".venv/bin/jupyter", "lab"] and "--allow-root" in lab and "--ip=127.0.0.1" in lab and lab[-1] == "learn/"
    assert "learn/" in (ROOT / ".gitignore").read_text().splitlines()  # a learner's work is never committed
    assert (ROOT / "tests" / "peers.py").exists()  # it installs Node's peers for notebook 13
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(req.startswith("jupyterlab") for req in extras["lab"])
    assert tests == "bash .ci/run" and os.access(ROOT / ".ci" / "run", os.X_OK)


def test_what_to_install_is_named_as_the_distribution():
    """pip installs mcp-notebook (pyproject.toml); mcp-nb on PyPI is another project, so no page,
    notebook, starter file or message of the package says to install that."""
    name = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"]
    assert name == "mcp-notebook"
    assert f'pip install "{name}[lab] @ git+' in README.read_text(encoding="utf-8")
    old = re.compile(r"""pip install\s+['"]?mcp[-_.]nb\b|['"]mcp[-_.]nb\[""", re.I)
    texts = [
        *PAGES,
        *(ROOT / "notebooks").glob("*.ipynb"),
        *(ROOT / "mcp_nb").rglob("*.py"),
        *(ROOT / "mcp_nb" / "starter").iterdir(),
    ]
    wrong = [f"{path.relative_to(ROOT)}: {m.group(0)}" for path in texts for m in old.finditer(path.read_text(encoding="utf-8"))]
    assert wrong == []


def test_ipywidgets_is_a_core_dependency_and_the_lab_extra_keeps_jupyterlab():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = [re.split(r"[<>=!~ \[]", requirement)[0] for requirement in project["dependencies"]]
    assert "ipywidgets" in names
    lab = [re.split(r"[<>=!~ \[]", requirement)[0] for requirement in project["optional-dependencies"]["lab"]]
    assert "jupyterlab" in lab and "ipywidgets" not in lab


def test_import_and_load_ext_do_not_import_ipywidgets():
    code = (
        "import sys\n"
        "import mcp_nb\n"
        "assert 'ipywidgets' not in sys.modules, 'import mcp_nb imported ipywidgets'\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "shell = InteractiveShell.instance()\n"
        "shell.run_line_magic('load_ext', 'mcp_nb')\n"
        "assert shell.run_cell('%%mcp_tool\\ndef f(x: int) -> int:\\n    return x\\n').success\n"
        "assert shell.run_cell('%mcp_call f x=1').success\n"
        "assert 'ipywidgets' not in sys.modules, 'the magics imported ipywidgets'\n"
        "assert shell.run_cell('%mcp_panel').success\n"
        "assert 'ipywidgets' in sys.modules\n"
        "print('ok')\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-2000:]
