"""A newcomer's first ten minutes: the README and every docs page work as written.

- Every ```python block of README.md and of each docs/*.md page runs, in order, in a fresh
  IPython shell of its own (a subprocess: nothing loaded, nothing imported, as a newcomer
  starts), magics and all; a line whose comment promises an outcome ("# result (ok)") is the
  block's last, and the block shows that outcome (a cell shows only its last value).
- Every code block says what it is: `python` (run here), `text` (a diagram), a MyST
  directive, or `bash` (the README's two commands only, which cannot run inside the test
  suite: the second one is the test suite). Of those, the first one's JupyterLab command is
  run here, with this environment's JupyterLab, as whoever runs the tests (root in CI and
  containers); its venv and `pip install -e ".[lab]"` are what tests/test_binder.py replays.
- The panel's ipywidgets is a core dependency, and `import mcp_nb` still does not import it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import tomllib
import urllib.request
from pathlib import Path

import pytest

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
            assert (language.split() or [""])[0] in KNOWN, f"{where} is marked {language!r}; mark it python (it runs in the tests) or text"
    assert sum(language == "python" for page in PAGES for language, _ in blocks(page)) >= 15  # the fences were found


RUNNER = r"""
import json, re, sys
from IPython.core.interactiveshell import InteractiveShell

# A comment that promises an outcome ("# result (ok): ...") is a promise of what the cell shows.
PROMISE = re.compile(r"#\s*(result|tool_error|protocol_error|timeout) \((\w+)\)")
SHOWS_NOTHING = re.compile(r"^(?:[A-Za-z_][\w, .\[\]]*=(?!=)|assert |print\(|for |with |if )")

shell = InteractiveShell.instance()
for number, source in enumerate(json.load(sys.stdin), 1):
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
    sources = [body for language, body in blocks(page) if language == "python"]
    env = dict(os.environ, IPYTHONDIR=str(tmp_path / "ipython"), MPLBACKEND="Agg")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    done = subprocess.run(
        [sys.executable, "-c", RUNNER], input=json.dumps(sources), cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, f"{page.name}:\n{done.stderr[-3000:]}\n{done.stdout[-2000:]}"
    assert f"ALL {len(sources)} BLOCKS RAN" in done.stdout


def readme_commands() -> list[str]:
    return [body.strip() for language, body in blocks(README) if language == "bash"]


def test_the_readme_has_its_two_commands_and_what_they_name_exists():
    setup, tests = readme_commands()
    for command in (setup, tests):
        checked = subprocess.run(["bash", "-n", "-c", command], capture_output=True, text=True)
        assert checked.returncode == 0, checked.stderr
    assert setup.startswith(
        "python3 -m venv .venv && .venv/bin/pip install -e \".[lab]\" && .venv/bin/python tests/peers.py install --notebooks && .venv/bin/jupyter lab "
    )
    assert (ROOT / "tests" / "peers.py").exists()  # it installs Node's peers for notebook 13
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(req.startswith("jupyterlab") for req in extras["lab"])
    assert (ROOT / shlex.split(setup)[-1]).is_dir()  # the folder JupyterLab opens on
    assert tests == "bash .ci/run" and os.access(ROOT / ".ci" / "run", os.X_OK)


def non_loopback_address() -> str | None:
    """This machine's address on its outward interface, if it has one (no packet is sent)."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))  # TEST-NET-1: routing only
        address = probe.getsockname()[0]
    except OSError:
        return None
    finally:
        probe.close()
    return None if address.startswith("127.") else address


def test_the_readme_opens_jupyterlab_on_loopback_for_whoever_runs_it(tmp_path):
    command = readme_commands()[0].split("&&")[-1].strip()
    argv = shlex.split(command)
    assert argv[0] == ".venv/bin/jupyter"
    argv[0] = str(Path(sys.executable).with_name("jupyter"))
    # The user's own Jupyter config and runtime files stay out of it; nothing opens a browser.
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "config"), JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
               JUPYTER_DATA_DIR=str(tmp_path / "data"), BROWSER="true")  # fmt: skip
    server = subprocess.Popen(argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
    log: list[str] = []
    found = threading.Event()
    url: list[str] = []

    def read_log():
        for line in server.stderr:
            log.append(line)
            match = re.search(r"http://127\.0\.0\.1:(\d+)/lab\?token=(\w+)", line)
            if match and not url:
                url.append(match.group(0))
                found.set()

    reader = threading.Thread(target=read_log, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 120
        while not found.wait(0.2):
            assert reader.is_alive(), f"JupyterLab exited ({server.poll()}):\n" + "".join(log[-30:])
            assert time.monotonic() < deadline, "JupyterLab did not start:\n" + "".join(log[-30:])
        port, token = re.search(r":(\d+)/lab\?token=(\w+)", url[0]).groups()
        status = None
        for _ in range(100):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=5) as response:
                    status = json.load(response)
                break
            except OSError:
                time.sleep(0.2)
        assert status is not None and "started" in status, "".join(log[-30:])
        outward = non_loopback_address()
        if outward is not None:
            with pytest.raises(OSError):
                socket.create_connection((outward, int(port)), timeout=2).close()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(10)
        reader.join(10)


def test_what_to_install_is_named_as_the_distribution():
    """pip installs mcp-notebook (pyproject.toml); mcp-nb on PyPI is another project, so no page,
    notebook, starter file or message of the package says to install that."""
    name = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"]
    assert name == "mcp-notebook"
    assert f'pip install "{name}[lab] @ git+' in README.read_text(encoding="utf-8")
    old = re.compile(r"""pip install\s+['"]?mcp[-_.]nb\b|['"]mcp[-_.]nb\[""", re.I)
    texts = [*PAGES, *(ROOT / "notebooks").glob("*.ipynb"), *(ROOT / "mcp_nb").rglob("*.py"), *(ROOT / "mcp_nb" / "starter").iterdir()]
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
