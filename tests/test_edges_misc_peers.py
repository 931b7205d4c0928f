"""A test that needs a real peer says so at once when the peer is missing: it fails under CI (skips
elsewhere) naming what to install, before any browser, JupyterLab or kernel is started for it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers import checkout_env

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("ci, verdict", [("true", "1 error"), ("", "1 skipped")], ids=["CI", "a developer's run"])
def test_the_browser_question_test_without_server_everything_says_so_at_once(tmp_path, ci, verdict):
    env = {**checkout_env(), "MCP_NB_PEERS": str(tmp_path / "no-peers"), "CI": ci}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "tests/browser/test_question_browser.py",
            "-p",
            "no:cacheprovider",
            "-q",
            "-rA",
            "--timeout=120",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    said = run.stdout + run.stderr
    assert verdict in said, said[-3000:]
    assert "missing MCP peers: @modelcontextprotocol/server-everything@" in said, said[-3000:]
    assert "python -m jupyterlab" not in said and "TimeoutError" not in said  # nothing was started for it
    assert (run.returncode != 0) is bool(ci)
