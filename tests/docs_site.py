"""The documentation site, built once for the whole test run.

tests/test_docs.py checks the build (offline, warnings as errors) and its pages; the browser
tests (tests/browser) look at the same pages in Chromium. One Sphinx build (half a minute of
CPU) serves both, whichever pytest-xdist worker asks first (`fresh_venv.once`). It is made in a
copy of the repository where a user has put broken notebooks of their own (`USERS_NOTEBOOKS`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fresh_venv import once
from helpers import copy_repository

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
NO_NETWORK = "http://127.0.0.1:9"  # the discard port: nothing listens


# Where a user makes notebooks of their own in a clone: the course's folder, the learner's (learn/,
# learn/mine/), docs/ itself. The one build is of a copy of the repository with a broken notebook in
# each, so that it shows, besides the pages, that none of them is rendered or can break the build.
USERS_NOTEBOOKS = (
    "notebooks/Untitled.ipynb",
    "learn/02-tool-errors.ipynb",
    "learn/mine/Untitled.ipynb",
    "docs/scratch.ipynb",
    "docs/notebooks/mine.ipynb",
)
BROKEN = "{ this is not a notebook"


def _build(folder: Path) -> dict:
    copy = folder / "repository"
    copy_repository(copy)
    for where in USERS_NOTEBOOKS:
        (copy / where).parent.mkdir(parents=True, exist_ok=True)
        (copy / where).write_text(BROKEN)
    return {**_build_at(copy, folder), "copy": str(copy)}


def _build_at(root: Path, folder: Path) -> dict:
    """`sphinx-build -W --keep-going -b html docs OUT` in the repository at `root`, where any
    attempt to reach the network goes to a closed local port, so a build that needed it (an
    intersphinx inventory, a remote image) fails."""
    out = folder / "html"
    env = dict(os.environ)
    for key in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        env[key] = NO_NETWORK
    env.pop("no_proxy", None)
    env.pop("NO_PROXY", None)
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", str(root / "docs"), str(out)],
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if "No module named sphinx" in done.stderr:
        pytest.fail("Sphinx is not installed: install the documentation dependencies (sphinx, myst-nb, furo)")
    assert done.returncode == 0, "the documentation build failed:\n" + "\n".join((done.stdout + done.stderr).splitlines()[-40:])
    return {"html": str(out)}


def site(tmp_path_factory) -> dict:
    """The build: its html folder (`html`) and the copy of the repository it was built from (`copy`)."""
    return once(tmp_path_factory, "docs", _build)


def built(tmp_path_factory) -> Path:
    """The built site's html folder."""
    return Path(site(tmp_path_factory)["html"])
