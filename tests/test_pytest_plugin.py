"""The pytest plugin, run as CI runs it: pytest in a subprocess, its report read back."""

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import warm

ROOT = Path(__file__).resolve().parent.parent
BOOKSHOP = f"{sys.executable} {ROOT / 'notebooks' / 'servers' / 'bookshop.py'} stdio"

NOTEBOOK_CELLS = [
    "%load_ext mcp_nb",
    "CATALOG = {'Dune': 'F. Herbert', 'Neuromancer': 'William Gibson'}  # Dune's author was shortened: a regression",
    "%%mcp_tool --read-only\ndef get_author(title: str) -> str:\n    return CATALOG[title]",
    "# exploring, not a tool: left out of a headless run\nraise RuntimeError('never runs')",
]
CASES = [
    {
        "id": "dune",
        "name": "get_author",
        "arguments": {"title": "Dune"},
        "expect": {"outcome": "result", "cause": "ok", "content": "Frank Herbert"},
    },
    {
        "id": "neuromancer",
        "name": "get_author",
        "arguments": {"title": "Neuromancer"},
        "expect": {"outcome": "result", "cause": "ok", "content": "William Gibson"},
    },
    {
        "id": "unknown-title",
        "name": "get_author",
        "arguments": {"title": "Solaris"},
        "expect": {"outcome": "tool_error", "cause": "crash"},
    },
]


@pytest.fixture
def project(tmp_path):
    cells = [
        {
            "cell_type": "code",
            "metadata": {"tags": ["mcp-skip"]} if "never runs" in source else {},
            "execution_count": None,
            "outputs": [],
            "source": source,
        }
        for source in NOTEBOOK_CELLS
    ]
    (tmp_path / "tools.ipynb").write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}))
    (tmp_path / "cases.json").write_text(json.dumps({"mcp_nb_cases": 1, "cases": CASES}, indent=2))
    return tmp_path


# Installed, pytest loads the plugin by its entry point; `-p` names it for a checkout installed
# before the plugin existed. The entry point has the module's name, so the two are one plugin.
LOAD = ["-p", "mcp_nb_pytest"]


def pytest_run(where: Path, *args: str, path: tuple = (), autoload: bool = False) -> subprocess.CompletedProcess:
    """pytest in `where` with the plugin, as a project that has pytest and mcp_nb runs it. Not the
    other plugins of this test environment (nbval, hypothesis, xdist...), which would each be loaded
    in every run and are no part of what is tested, unless `autoload` (the entry point's test)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    if not autoload:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([*map(str, path), str(ROOT)])
    return subprocess.run(
        warm.python("-m", "pytest", *LOAD, "-p", "no:cacheprovider", "-rA", *args),
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def test_one_item_per_case_and_a_failure_says_expected_and_got(project):
    run = pytest_run(project, "--mcp-cases", "cases.json", "--mcp-notebook", "tools.ipynb", "-v")
    out = run.stdout
    assert run.returncode == 1, out + run.stderr
    assert "collected 3 items" in out
    assert "cases.json::dune FAILED" in out
    assert "cases.json::neuromancer PASSED" in out
    assert "cases.json::unknown-title PASSED" in out
    report = out[out.index("_ case dune _") :].splitlines()
    assert report[1:5] == [
        'case dune: tool get_author {"title": "Dune"} (server kernel, call #1)',
        "expected: result (ok)",
        "got:      result (ok)",
        "why:      content: expected 'Frank Herbert', got 'F. Herbert'",
    ]
    assert "1 failed, 2 passed" in out


def test_a_case_the_engine_refuses_is_one_short_failure(project):
    deep = {
        "id": "too-deep",
        "name": "get_author",
        "arguments": {"title": json.loads("[" * 120 + "]" * 120)},
        "expect": {"outcome": "result", "cause": "ok"},
    }
    (project / "cases.json").write_text(json.dumps({"mcp_nb_cases": 1, "cases": [CASES[1], deep]}))
    run = pytest_run(project, "--mcp-cases", "cases.json", "--mcp-notebook", "tools.ipynb")
    out = run.stdout
    assert run.returncode == 1, out + run.stderr
    assert "1 failed, 1 passed" in out
    lines = out[out.index("_ case too-deep _") :].splitlines()[1:]
    report = lines[: next(i for i, line in enumerate(lines) if line.startswith(("---", "___", "===")))]
    assert len(report) == 1, report  # one line, not pytest's and pluggy's frames
    assert report[0].startswith("case too-deep: tool get_author: refused before anything was sent: ")
    assert "nests lists and dicts more than 100 levels deep" in report[0]


def test_the_same_cases_against_a_stdio_server_and_with_other_tests_deselected(project):
    (project / "tests").mkdir()
    (project / "tests" / "test_other.py").write_text("def test_other():\n    pass\n")
    run = pytest_run(project, "tests", "--mcp-cases", "cases.json", "--mcp-server", BOOKSHOP, "-k", "dune or other", "-v")
    out = run.stdout
    assert run.returncode == 0, out + run.stderr
    assert "cases.json::dune PASSED" in out and "tests/test_other.py::test_other PASSED" in out
    assert "2 passed, 2 deselected" in out


def test_a_bad_cases_file_stops_the_run_naming_the_case_and_the_field(project):
    broken = json.loads((project / "cases.json").read_text())
    broken["cases"][1]["expect"]["outcome"] = "fine"
    (project / "cases.json").write_text(json.dumps(broken))
    run = pytest_run(project, "--mcp-cases", "cases.json", "--mcp-notebook", "tools.ipynb")
    assert run.returncode == 4  # pytest's usage error: nothing ran
    assert "case 'neuromancer' (number 2): field expect.outcome: Input should be 'result'" in run.stderr


@pytest.mark.parametrize(
    "args,said",
    [
        (["--mcp-notebook", "tools.ipynb"], "--mcp-notebook goes with --mcp-cases PATH"),
        (["--mcp-cases", "cases.json", "--mcp-notebook", "tools.ipynb", "--mcp-url", "http://127.0.0.1:1/mcp"], "give one of"),
        (["--mcp-cases", "cases.json", "--mcp-header", "A: b"], "--mcp-header goes with --mcp-url"),
        (["--mcp-cases", "cases.json", "--mcp-notebook", "nowhere.ipynb"], "--mcp-notebook: no notebook at nowhere.ipynb"),
    ],
)
def test_option_mistakes_are_usage_errors(project, args, said):
    run = pytest_run(project, *args)
    assert run.returncode == 4 and said in run.stderr, run.stderr


def test_a_server_that_cannot_start_fails_each_case_with_the_reason(project):
    run = pytest_run(project, "--mcp-cases", "cases.json", "--mcp-server", "no-such-command-mcp-nb --stdio")
    assert run.returncode == 1
    assert run.stdout.count("could not connect to no-such-command-mcp-nb --stdio") >= 3
    assert "3 failed" in run.stdout


def test_a_run_that_does_not_ask_for_cases_never_imports_mcp_nb(tmp_path):
    (tmp_path / "test_plain.py").write_text(
        "import sys\n\ndef test_plain():\n    assert not [m for m in sys.modules if m == 'mcp_nb' or m.startswith('mcp_nb.')]\n"
    )
    run = pytest_run(tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "--mcp-cases=PATH" in pytest_run(tmp_path, "--help").stdout  # the plugin was loaded: its options are there


def test_the_plugin_is_installed_with_the_package():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["entry-points"]["pytest11"] == {"mcp_nb_pytest": "mcp_nb_pytest"}
    assert "mcp_nb_pytest" in project["tool"]["setuptools"]["py-modules"]


def test_the_github_actions_snippet_runs_as_written(project):
    page = (ROOT / "docs" / "cases.md").read_text()
    snippet = next(block for block in page.split("```text\n")[1:] if "runs-on:" in block.split("```")[0]).split("```")[0]
    steps = [line.strip()[len("- run: ") :] for line in snippet.splitlines() if line.strip().startswith("- run: ")]
    assert steps[0] == 'python -m pip install -r requirements.txt "pytest>=8"'
    command = steps[-1].split()
    assert command[:3] == ["python", "-m", "pytest"]
    run = pytest_run(project, *command[3:], "-v")
    assert run.returncode == 1  # the notebook's get_author has the regression the cases catch
    assert "collected 3 items" in run.stdout and "cases.json::dune FAILED" in run.stdout


def test_installed_and_named_with_dash_p_it_is_one_plugin(project, tmp_path_factory):
    # An installed distribution, as pip leaves it: the entry point in its dist-info.
    site = tmp_path_factory.mktemp("site")
    info = site / "installed_mcp_notebook-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: installed-mcp-notebook\nVersion: 0.1.0\n")
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    points = pyproject["project"]["entry-points"]["pytest11"]
    (info / "entry_points.txt").write_text("[pytest11]\n" + "".join(f"{k} = {v}\n" for k, v in points.items()))
    run = pytest_run(project, "--mcp-cases", "cases.json", "--mcp-notebook", "tools.ipynb", path=(site,), autoload=True)
    assert "collected 3 items" in run.stdout and "1 failed, 2 passed" in run.stdout, run.stdout + run.stderr


def test_a_served_kernel_over_http_with_its_token_in_a_header(project):
    import mcp_nb

    @mcp_nb.tool(read_only=True)
    def get_author(title: str) -> str:
        return {"Dune": "Frank Herbert", "Neuromancer": "William Gibson"}[title]

    handle = mcp_nb.serve()
    try:
        served = pytest_run(
            project,
            "--mcp-cases",
            "cases.json",
            "--mcp-url",
            handle.url,
            "--mcp-header",
            f"Authorization: Bearer {handle.token}",
            "-v",
        )
        refused = pytest_run(project, "--mcp-cases", "cases.json", "--mcp-url", handle.url)
    finally:
        handle.stop()
    assert served.returncode == 0 and "3 passed" in served.stdout, served.stdout + served.stderr
    assert "cases.json::dune PASSED" in served.stdout
    assert refused.returncode == 1 and "3 failed" in refused.stdout
    assert f"could not connect to {handle.url}" in refused.stdout
    assert len(mcp_nb.history()) == 3  # the cases' calls, as an outside client's, in the served kernel's history
