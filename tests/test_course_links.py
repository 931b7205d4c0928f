"""`python -m mcp_nb course-links`: the Binder and JupyterHub links of a course, made for the repository its clone's
remote names, and a branch of student versions for the hub, written without touching the clone's work tree."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from mcp_nb.commands.links import github_repository

ROOT = Path(__file__).resolve().parent.parent
ENV = dict(
    os.environ,
    PYTHONPATH=str(ROOT),
    GIT_AUTHOR_NAME="t",
    GIT_AUTHOR_EMAIL="t@example.org",
    GIT_COMMITTER_NAME="t",
    GIT_COMMITTER_EMAIL="t@example.org",
)


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=ENV, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def links(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mcp_nb", "course-links", *args], cwd=cwd, capture_output=True, text=True, env=ENV, timeout=120
    )


@pytest.fixture
def clone(tmp_path):
    """A clone of a course: this repository's notebooks, committed, with a GitHub remote."""
    root = tmp_path / "course"
    root.mkdir()
    git("init", "-q", "-b", "main", cwd=root)
    shutil.copytree(ROOT / "notebooks", root / "notebooks", ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
    git("add", "-A", cwd=root)
    git("commit", "-q", "-m", "the course", cwd=root)
    git("remote", "add", "origin", "git@github.com:a-teacher/mcp-course.git", cwd=root)
    return root


@pytest.mark.parametrize(
    "url, named",
    [
        ("https://github.com/someone/mcp_nb.git\n", ("someone", "mcp_nb")),
        ("https://github.com/someone/mcp_nb", ("someone", "mcp_nb")),
        ("https://token@github.com/someone/mcp_nb.git", ("someone", "mcp_nb")),
        ("git@github.com:someone/mcp_nb.git", ("someone", "mcp_nb")),
        ("ssh://git@github.com/someone/mcp_nb.git", ("someone", "mcp_nb")),
    ],
)
def test_a_github_remote_names_its_repository(url, named):
    assert github_repository(url) == named


@pytest.mark.parametrize("url", ["https://gitlab.com/someone/mcp_nb.git", "/srv/git/mcp_nb.git", "https://github.com/someone"])
def test_another_remote_is_refused_in_one_line(url):
    with pytest.raises(ValueError, match="is not a GitHub repository"):
        github_repository(url)


def test_the_links_open_the_student_versions_of_the_repository_the_remote_names(clone):
    done = links("--hub", "https://hub.example.org/", cwd=clone)
    assert done.returncode == 0, done.stderr
    binder, hub = (line.split(None, 1)[1] for line in done.stdout.splitlines() if line.startswith(("Binder:", "JupyterHub:")))
    assert binder == "https://mybinder.org/v2/gh/a-teacher/mcp-course/HEAD?urlpath=lab/tree/learn/00-primer.ipynb"
    pulled = urlparse(hub)
    assert (pulled.scheme, pulled.netloc, pulled.path) == ("https", "hub.example.org", "/hub/user-redirect/git-pull")
    assert parse_qs(pulled.query) == {
        "repo": ["https://github.com/a-teacher/mcp-course"],
        "branch": ["learners"],
        "urlpath": ["lab/tree/mcp-course/learn/00-primer.ipynb"],
    }
    tagged = links("--ref", "v1.0", cwd=clone)
    assert "https://mybinder.org/v2/gh/a-teacher/mcp-course/v1.0?urlpath=lab/tree/learn/00-primer.ipynb" in tagged.stdout


def test_a_clone_without_a_github_remote_or_a_hub_address_is_refused_in_one_line(clone):
    git("remote", "set-url", "origin", "https://gitlab.com/a-teacher/mcp-course.git", cwd=clone)
    refused = links(cwd=clone)
    assert refused.returncode == 2 and "is not a GitHub repository" in refused.stderr.strip().splitlines()[-1]
    assert "Traceback" not in refused.stderr
    git("remote", "remove", "origin", cwd=clone)
    assert links(cwd=clone).returncode == 2
    git("remote", "add", "origin", "https://github.com/a-teacher/mcp-course", cwd=clone)
    bad_hub = links("--hub", "hub.example.org", cwd=clone)
    assert bad_hub.returncode == 2 and "--hub takes the hub's address" in bad_hub.stderr


def test_the_hubs_branch_holds_the_student_versions_only_and_the_clone_is_untouched(clone):
    (clone / "notebooks" / "scratch.txt").write_text("a teacher's file, not committed\n")
    status = git("status", "--porcelain", cwd=clone)
    made = links("--make-branch", cwd=clone)
    assert made.returncode == 0, made.stderr
    assert "git push origin learners" in made.stdout
    assert git("status", "--porcelain", cwd=clone) == status and git("rev-parse", "--abbrev-ref", "HEAD", cwd=clone) == "main"
    files = git("ls-tree", "-r", "--name-only", "learners", cwd=clone).splitlines()
    assert files and all(name.startswith("learn/") for name in files)
    assert {f"learn/{p.name}" for p in (ROOT / "notebooks").glob("*.ipynb")} <= set(files)
    for name in files:
        blob = git("show", f"learners:{name}", cwd=clone)
        assert "BEGIN SOLUTION" not in blob and "BEGIN HIDDEN TESTS" not in blob, name
    first = git("rev-parse", "learners", cwd=clone)
    again = links("--make-branch", cwd=clone)
    assert again.returncode == 0 and git("rev-parse", "learners~1", cwd=clone) == first  # on top of the last one
