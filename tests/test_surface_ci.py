"""Surfaces and eras in CI: `mcp-nb snapshot` and `mcp-nb diff` as scripts run them (their exit
statuses), the GitHub Actions steps of docs/cases.md as written, and the pytest plugin's
`--mcp-surface` and `--mcp-mode` in a pytest of its own."""

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import warm

ROOT = Path(__file__).resolve().parent.parent
BOOKSHOP = f"{sys.executable} {ROOT / 'notebooks' / 'servers' / 'bookshop.py'} stdio"
VERSION_1 = "%%mcp_tool --read-only\ndef get_author(title: str) -> str:\n    '''Who wrote it.'''\n    return {'Dune': 'Frank Herbert'}[title]"
VERSION_2 = "%%mcp_tool --read-only\ndef get_author(title: str, edition: int) -> str:\n    '''Who wrote it.'''\n    return {'Dune': 'Frank Herbert'}[title]"
PROMPT = "%%mcp_prompt\ndef blurb(title: str) -> str:\n    raise ValueError('no blurb yet')"


def env() -> dict[str, str]:
    values = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    values["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    values["PATH"] = str(Path(sys.executable).parent) + os.pathsep + values.get("PATH", "")  # this environment's mcp-nb
    return values


def notebook(folder: Path, *cells: str, name: str = "tools.ipynb") -> Path:
    path = folder / name
    code = [
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": c}
        for c in ("%load_ext mcp_nb", *cells)
    ]
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": code}))
    return path


def mcp_nb_command(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(warm.python("-m", "mcp_nb", *args), cwd=folder, env=env(), capture_output=True, text=True, timeout=180)


@pytest.fixture(scope="session")
def made_snapshots(tmp_path_factory):
    """surface.json (get_author, version 1) and new.json (version 2: a required parameter more), made
    once per worker: each `mcp-nb snapshot` runs the notebook in a kernel of its own."""
    folder = tmp_path_factory.mktemp("snapshots")
    notebook(folder, VERSION_1)
    assert mcp_nb_command(folder, "snapshot", "tools.ipynb", "-o", "surface.json").returncode == 0
    notebook(folder, VERSION_2)
    made = mcp_nb_command(folder, "snapshot", "tools.ipynb", "-o", "new.json")
    assert made.returncode == 0 and made.stderr.strip().endswith("wrote new.json: 1 tool, 0 resources, 0 templates, 0 prompts"), (
        made.stderr
    )
    return folder


@pytest.fixture
def snapshots(made_snapshots, tmp_path):
    """A folder of this test's own with the two snapshots and tools.ipynb (version 2)."""
    for name in ("surface.json", "new.json", "tools.ipynb"):
        (tmp_path / name).write_bytes((made_snapshots / name).read_bytes())
    return tmp_path


# -- mcp-nb diff and mcp-nb snapshot ----------------------------------------------------------------------


@pytest.mark.parametrize("fail_on, status", [("never", 0), ("breaking", 1), ("unknown", 1), ("any", 1)])
def test_diff_exits_1_when_a_change_reaches_fail_on(snapshots, fail_on, status):
    done = mcp_nb_command(snapshots, "diff", "surface.json", "new.json", "--fail-on", fail_on)
    assert done.returncode == status, done.stderr
    assert done.stdout.splitlines()[:3] == [
        "Surface diff (surface.json → new.json): 1 change: 1 breaking",
        "  breaking    tool get_author  $.inputSchema.properties.edition",
        "              new required parameter `edition`",
    ]
    assert (done.stderr == "") is (status == 0)


def test_diff_without_changes_exits_0_and_json_lists_the_changes(snapshots):
    same = mcp_nb_command(snapshots, "diff", "surface.json", "surface.json", "--fail-on", "any")
    assert same.returncode == 0 and same.stdout.strip() == "Surface diff (surface.json → surface.json): no changes"
    listed = mcp_nb_command(snapshots, "diff", "surface.json", "new.json", "--json")
    rows = json.loads(listed.stdout)
    assert listed.returncode == 0 and [(r["rule"], r["breaking"], r["where"]) for r in rows] == [
        ("required-property-added", True, "$.inputSchema.properties.edition")
    ]


def test_an_unknown_change_fails_at_unknown_not_at_breaking(snapshots):
    doc = json.loads((snapshots / "surface.json").read_text())
    doc["tools"]["get_author"]["_meta"] = {"team": "data"}
    (snapshots / "meta.json").write_text(json.dumps(doc))
    assert mcp_nb_command(snapshots, "diff", "surface.json", "meta.json", "--fail-on", "breaking").returncode == 0
    done = mcp_nb_command(snapshots, "diff", "surface.json", "meta.json", "--fail-on", "unknown")
    assert done.returncode == 1 and "  unknown     tool get_author  $._meta" in done.stdout


@pytest.mark.parametrize(
    "args, said",
    [
        (["diff", "surface.json", "missing.json"], "no snapshot file at missing.json"),
        (["diff", "surface.json", "tools.ipynb"], "tools.ipynb is not a surface snapshot"),
        (["diff", "surface.json"], "the following arguments are required: new"),
        (["diff", "surface.json", "new.json", "--fail-on", "sometimes"], "invalid choice: 'sometimes'"),
        (["snapshot", "tools.ipynb"], "the following arguments are required: -o/--output"),
        (
            ["snapshot", "tools.ipynb", "--url", "http://x", "-o", "s.json"],
            "give one of NOTEBOOK, --server COMMAND and --url URL, not NOTEBOOK and --url",
        ),
        (["snapshot", "--server", "x", "--header", "A: b", "-o", "s.json"], "--header goes with --url"),
    ],
)
def test_a_wrong_command_exits_2_in_one_line_and_writes_nothing(snapshots, args, said):
    before = sorted(p.name for p in snapshots.iterdir())
    done = mcp_nb_command(snapshots, *args)
    assert done.returncode == 2 and done.stdout == ""
    assert said in done.stderr.strip().splitlines()[-1], done.stderr
    assert sorted(p.name for p in snapshots.iterdir()) == before


def test_snapshot_of_a_stdio_server_and_a_notebook_that_fails(tmp_path):
    done = mcp_nb_command(tmp_path, "snapshot", "--server", BOOKSHOP, "-o", "bookshop.json")
    assert done.returncode == 0, done.stderr
    doc = json.loads((tmp_path / "bookshop.json").read_text())
    assert doc["server"]["name"] == "bookshop" and "get_author" in doc["tools"]
    notebook(tmp_path, "raise RuntimeError('boom')", name="broken.ipynb")
    failed = mcp_nb_command(tmp_path, "snapshot", "broken.ipynb", "-o", "broken.json")
    assert (
        failed.returncode == 1
        and "code cell 2 of broken.ipynb failed" in failed.stderr
        and not (tmp_path / "broken.json").exists()
    )
    unreachable = mcp_nb_command(tmp_path, "snapshot", "--server", f"{sys.executable} -c pass", "-o", "none.json")
    assert unreachable.returncode == 1 and unreachable.stderr.startswith("mcp-nb snapshot: could not connect to 'snapshot'")


def workflow_steps() -> list[str]:
    page = (ROOT / "docs" / "cases.md").read_text(encoding="utf-8")
    snippet = next(block for block in page.split("```text\n")[1:] if "mcp-nb diff" in block.split("```")[0]).split("```")[0]
    return [line.strip()[len("- run: ") :] for line in snippet.splitlines() if line.strip().startswith("- run: ")]


def run_steps(folder: Path, steps: list[str]) -> subprocess.CompletedProcess:
    """The steps in order, as a CI job's shell runs them: the first that fails ends the job."""
    return subprocess.run(
        ["bash", "-e", "-c", "\n".join(steps)], cwd=folder, env=env(), capture_output=True, text=True, timeout=300
    )


def test_the_github_actions_steps_run_as_written(tmp_path):
    install, snapshot, diff = workflow_steps()
    assert install == "python -m pip install -r requirements.txt"
    assert shlex.split(snapshot)[:2] == ["mcp-nb", "snapshot"] and shlex.split(diff)[:2] == ["mcp-nb", "diff"]
    notebook(tmp_path, VERSION_1)
    assert mcp_nb_command(tmp_path, "snapshot", "tools.ipynb", "-o", "surface.json").returncode == 0  # the release's, committed
    unchanged = run_steps(tmp_path, [snapshot, diff])
    assert unchanged.returncode == 0, unchanged.stderr
    notebook(tmp_path, VERSION_2)  # a commit that adds a required parameter
    broken = run_steps(tmp_path, [snapshot, diff])
    assert broken.returncode == 1 and "new required parameter `edition`" in broken.stdout
    assert broken.stderr.strip().endswith("mcp-nb diff: 1 change at --fail-on breaking")


# -- the pytest plugin -------------------------------------------------------------------------------------


def pytest_run(where: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        warm.python("-m", "pytest", "-p", "mcp_nb_pytest", "-p", "no:cacheprovider", "-rA", *args),
        cwd=where,
        env={**env(), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},  # the plugin named by -p, not every one of this environment's
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def test_one_item_per_change_a_breaking_one_failing_in_the_cases_style(snapshots):
    doc = json.loads((snapshots / "surface.json").read_text())
    doc["tools"]["get_author"]["description"] = "Old words."
    (snapshots / "surface.json").write_text(json.dumps(doc))
    run = pytest_run(snapshots, "--mcp-surface", "surface.json", "--mcp-notebook", "tools.ipynb", "surface.json", "-v")
    out = run.stdout
    assert run.returncode == 1, out + run.stderr
    assert "collected 2 items" in out
    assert "surface.json::tool get_author $.description PASSED" in out
    assert "surface.json::tool get_author $.inputSchema.properties.edition FAILED" in out
    report = out[out.index("_ surface tool get_author $.inputSchema.properties.edition _") :].splitlines()
    assert report[1:6] == [
        "change: tool get_author $.inputSchema.properties.edition (added)",
        "verdict: breaking (rule required-property-added)",
        "why:     new required parameter `edition`",
        "before:  null",
        'after:   {"title": "Edition", "type": "integer"}',
    ]


def test_an_unchanged_surface_is_one_passing_item_and_fail_on_breaking_lets_unknown_pass(snapshots):
    run = pytest_run(snapshots, "--mcp-surface", "new.json", "--mcp-notebook", "tools.ipynb", "new.json", "-v")
    assert run.returncode == 0 and "new.json::unchanged PASSED" in run.stdout and "1 passed" in run.stdout, run.stdout
    doc = json.loads((snapshots / "new.json").read_text())
    doc["tools"]["get_author"]["_meta"] = {"team": "data"}
    (snapshots / "meta.json").write_text(json.dumps(doc))
    strict = pytest_run(snapshots, "--mcp-surface", "meta.json", "--mcp-notebook", "tools.ipynb", "meta.json")
    lenient = pytest_run(
        snapshots, "--mcp-surface", "meta.json", "--mcp-notebook", "tools.ipynb", "--mcp-fail-on", "breaking", "meta.json"
    )
    assert strict.returncode == 1 and "verdict: unknown (rule unknown)" in strict.stdout
    assert lenient.returncode == 0 and "1 passed" in lenient.stdout


def test_a_served_kernel_s_surface_over_http_with_its_token(snapshots):
    import mcp_nb

    @mcp_nb.tool(read_only=True)
    def get_author(title: str) -> str:
        """Who wrote it."""
        return title

    handle = mcp_nb.serve()
    try:
        run = pytest_run(
            snapshots,
            "--mcp-surface",
            "surface.json",
            "--mcp-url",
            handle.url,
            "--mcp-header",
            f"Authorization: Bearer {handle.token}",
            "surface.json",
            "-v",
        )
    finally:
        handle.stop()
    # The same tool; served, the kernel offers completions and logging besides (compatible).
    assert run.returncode == 0, run.stdout + run.stderr
    assert "surface.json::server $.capabilities.completions PASSED" in run.stdout and "2 passed" in run.stdout
    assert handle.token not in run.stdout


@pytest.mark.parametrize(
    "args, said",
    [
        (["--mcp-surface", "missing.json"], "--mcp-surface: no snapshot file at"),
        (["--mcp-surface", "tools.ipynb"], "is not a surface snapshot"),
        (["--mcp-mode", "2025-11-25"], "--mcp-mode goes with --mcp-cases PATH"),
        (["--mcp-notebook", "tools.ipynb"], "--mcp-notebook goes with --mcp-cases PATH or --mcp-surface SNAPSHOT"),
        (["--mcp-surface", "surface.json", "--mcp-fail-on", "often"], "invalid choice: 'often'"),
    ],
)
def test_option_mistakes_stop_the_run_before_any_test(snapshots, args, said):
    run = pytest_run(snapshots, *args)
    assert run.returncode in (2, 4) and said in run.stderr, run.stdout + run.stderr


def test_a_server_that_does_not_come_up_is_one_failing_item(snapshots):
    run = pytest_run(snapshots, "--mcp-surface", "surface.json", "--mcp-server", f"{sys.executable} -c pass", "surface.json")
    assert run.returncode == 1 and "surface.json::snapshot" in run.stdout
    assert "no surface to compare: could not connect to" in run.stdout


def test_each_case_is_an_item_per_era_and_an_era_that_answers_otherwise_fails(tmp_path):
    notebook(tmp_path, VERSION_1, PROMPT)
    cases = [
        {
            "id": "dune",
            "name": "get_author",
            "arguments": {"title": "Dune"},
            "expect": {"outcome": "result", "cause": "ok", "content": "Frank Herbert"},
        },
        {
            "id": "blurb",
            "target": "prompt",
            "name": "blurb",
            "arguments": {"title": "Dune"},
            "expect": {"outcome": "protocol_error", "cause": "crash"},
        },
    ]
    (tmp_path / "cases.json").write_text(json.dumps({"mcp_nb_cases": 1, "cases": cases}))
    run = pytest_run(
        tmp_path,
        "--mcp-cases",
        "cases.json",
        "--mcp-notebook",
        "tools.ipynb",
        "--mcp-mode",
        "2025-11-25",
        "--mcp-mode",
        "2026-07-28",
        "cases.json",
        "-v",
    )
    out = run.stdout
    assert run.returncode == 1, out + run.stderr
    assert "collected 4 items" in out
    for item, result in (
        ("dune[2025-11-25]", "PASSED"),
        ("dune[2026-07-28]", "PASSED"),
        ("blurb[2025-11-25]", "PASSED"),
        ("blurb[2026-07-28]", "FAILED"),
    ):
        assert f"cases.json::{item} {result}" in out
    report = out[
        out.index("_ case blurb at 2026-07-28 _") if "_ case blurb at 2026-07-28 _" in out else out.index("blurb[2026-07-28] _") :
    ].splitlines()
    assert re.fullmatch(
        r"case blurb: prompt blurb \{\"title\": \"Dune\"\} \(server kernel, call #\d+, at 2026-07-28 \(protocol 2026-07-28\)\)",
        report[1],
    )
    assert report[2:5] == [
        "expected: protocol_error (crash)",
        "got:      protocol_error (crash)",
        "eras:     2026-07-28 answers otherwise than 2025-11-25: code: 0 → -32603; message: 'Error rendering prompt blurb' → 'Internal server error'",
    ]
