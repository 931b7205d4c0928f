"""The official MCP conformance suite against a served notebook.

The fixtures notebook (tests/conformance/fixtures.ipynb) defines, cell by cell, what the
suite's server scenarios call. Its cells run in the test's IPython shell and `%mcp_serve`
serves them (once more through `python -m mcp_nb serve --http`). The suite cannot send
headers, so it runs through the one opt-out, `--dangerously-no-auth`, on 127.0.0.1, with the
Host and Origin checks on (its `dns-rebinding-protection` scenario tests those). Every
scenario the suite has for a spec version must pass, or be listed with its reason in that
version's expected-failures file.
"""

import re
import subprocess
import tempfile
from pathlib import Path

import peers
import pytest
import warm

import mcp_nb
from mcp_nb.serving.notebook import code_cells

# The fixtures use 2025-era features (log messages, sampling) the SDK marks deprecated at 2026-07-28.
pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

HERE = Path(__file__).resolve().parent / "conformance"
FIXTURES = HERE / "fixtures.ipynb"
SUITE = "@modelcontextprotocol/conformance"
VERSIONS = ("2025-11-25", "2026-07-28")


def scenarios_for(version: str) -> set[str]:
    """The server scenarios the pinned suite runs at `version` (as `conformance list --server` says)."""
    listed = peers.conformance("list", "--server")
    assert listed.returncode == 0, listed.stderr[-2000:]
    found = re.findall(r"^\s*- (\S+) \[([^\]]*)\]", listed.stdout, flags=re.MULTILINE)
    return {name for name, versions in found if version in versions.split(",")}


def run_suite(url: str, version: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as results:
        return peers.conformance(
            "server",
            "--url",
            url,
            "--suite",
            "all",
            "--spec-version",
            version,
            "--expected-failures",
            str(HERE / f"expected-failures.{version}.yml"),
            "-o",
            results,
        )


def check(done: subprocess.CompletedProcess, version: str) -> None:
    summary = done.stdout.split("=== SUMMARY ===")[-1]
    assert done.returncode == 0, f"conformance at {version} failed:\n{summary[-6000:]}\n{done.stderr[-3000:]}"
    ran = set(re.findall(r"^[✓✗] (\S+):", summary, flags=re.MULTILINE))
    assert ran == scenarios_for(version), f"scenarios not run at {version}: {scenarios_for(version) - ran}"


@pytest.fixture
def fixtures_served(shell):
    peers.require(SUITE)
    for cell in code_cells(FIXTURES):
        result = shell.run_cell(cell.source)
        assert result.success, f"fixtures cell {cell.number} failed: {result.error_in_exec or result.error_before_exec}"
    handle = shell.run_line_magic("mcp_serve", "--dangerously-no-auth")
    yield handle
    shell.run_line_magic("mcp_serve", "--stop")


@pytest.mark.parametrize("version", VERSIONS)
def test_every_server_scenario_passes_against_mcp_serve(fixtures_served, version):
    check(run_suite(fixtures_served.url, version), version)
    frame = mcp_nb.history().to_frame()
    # The suite's calls are the history's rows, like anyone's, classified the same way.
    assert len(frame) and (frame["via"] == "http").all()
    crashed = frame[frame["name"] == "test_error_handling"]
    assert set(zip(crashed["outcome"], crashed["cause"])) == {("tool_error", "crash")}
    assert fixtures_served.refused.get("host", 0) >= 1  # the rebinding scenario's request, refused at the door


def test_the_suite_passes_against_python_m_mcp_nb_serve():
    peers.require(SUITE)
    version = VERSIONS[0]
    process = subprocess.Popen(
        warm.python("-m", "mcp_nb", "serve", str(FIXTURES), "--http", "--dangerously-no-auth"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        said = ""
        while (found := re.search(r"serving at (http://\S+/mcp)", said)) is None:
            line = process.stderr.readline()
            assert line, f"the server ended early: {said[-3000:]}"
            said += line
        check(run_suite(found.group(1), version), version)
    finally:
        peers.stop(process)
        process.stderr.close()


def _env():
    import os

    env = dict(os.environ)
    root = str(HERE.parent.parent)
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return env
