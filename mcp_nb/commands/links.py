"""The links that open a course for learners, made for the repository it lives in: `python -m mcp_nb course-links`.

Run in a clone of the course. The repository is the one its git remote (`origin`) names on GitHub:

    Binder         https://mybinder.org/v2/gh/OWNER/REPO/HEAD?urlpath=lab/tree/learn/00-primer.ipynb
    JupyterHub     HUB/hub/user-redirect/git-pull?repo=...&branch=learners&urlpath=lab/tree/REPO/learn/00-primer.ipynb

Binder builds the repository itself, and its `binder/postBuild` writes the student versions into
`learn/` and removes every solution from the image. A JupyterHub's nbgitpuller pulls a branch as
it is, so the hub's link names a branch that holds the student versions only: `--make-branch`
writes it (a commit of `learn/`, made from `notebooks/` as `student-version` makes it, on top of
the branch's last one), without touching the work tree; push it, and the link works. The
solutions stay where the teacher has them: in the repository's `notebooks/`.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import quote, urlencode

from mcp_nb.commands import student
from mcp_nb.mistakes import BadValue

LEARN = "learn"  # where binder/postBuild and the README's first command write the student versions
_GITHUB = re.compile(
    r"^(?:https://(?:[^@/]+@)?github\.com/|git@github\.com:|ssh://git@github\.com/)([^/\s]+)/([^/\s]+?)(?:\.git)?/?$"
)


def github_repository(url: str) -> tuple[str, str]:
    """(owner, repository) of a GitHub remote URL, https or ssh; ValueError for any other remote."""
    match = _GITHUB.match(url.strip())
    if match is None:
        raise BadValue(f"{url.strip()!r} is not a GitHub repository: Binder's links here are made for github.com (https or ssh)")
    return match[1], match[2]


def _git(*args: str, cwd: Path, env: dict | None = None) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=60)
    except OSError as err:
        raise BadValue(f"git cannot run here: {err.strerror}") from None
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or [f"git {args[0]} failed"])[-1]
        raise BadValue(f"git {' '.join(args[:3])}: {said}")
    return done.stdout.strip()


def first_notebook(notebooks: Path) -> str:
    """The course's first notebook: the one whose name sorts first (the file names are in the course's order)."""
    found = sorted(path.name for path in notebooks.glob("*.ipynb"))
    if not found:
        raise BadValue(f"{notebooks} holds no notebook")
    return found[0]


def binder_link(owner: str, repository: str, ref: str, notebook: str) -> str:
    return f"https://mybinder.org/v2/gh/{owner}/{repository}/{quote(ref, safe='')}?urlpath=" + quote(
        f"lab/tree/{LEARN}/{notebook}", safe="/"
    )


def hub_link(hub: str, owner: str, repository: str, branch: str, notebook: str) -> str:
    """An nbgitpuller link: the hub clones the branch into a folder named after the repository, and opens the notebook."""
    if not re.match(r"^https?://[^\s/]+", hub):
        raise BadValue(f"--hub takes the hub's address, such as https://hub.example.org, not {hub!r}")
    query = urlencode(
        {
            "repo": f"https://github.com/{owner}/{repository}",
            "branch": branch,
            "urlpath": f"lab/tree/{repository}/{LEARN}/{notebook}",
        }
    )
    return f"{hub.rstrip('/')}/hub/user-redirect/git-pull?{query}"


def make_branch(root: Path, notebooks: Path, branch: str) -> str:
    """Commit `learn/`, the student versions of `notebooks/`, as the branch `branch` (on top of its last
    commit, if it has one), without touching the work tree or the index; returns the commit."""
    head = _git("rev-parse", "--short", "HEAD", cwd=root)
    git_dir = _git("rev-parse", "--absolute-git-dir", cwd=root)
    with tempfile.TemporaryDirectory() as scratch:
        tree_dir = Path(scratch) / "tree"
        student.make_course(notebooks, tree_dir / LEARN)
        # A scratch index and the scratch folder as the work tree: the clone's own index and files are untouched.
        env = dict(os.environ, GIT_INDEX_FILE=str(Path(scratch) / "index"), GIT_DIR=git_dir, GIT_WORK_TREE=str(tree_dir))
        _git("add", "--all", "--force", ".", cwd=tree_dir, env=env)
        tree = _git("write-tree", cwd=tree_dir, env=env)
    parents = []
    try:
        parents = ["-p", _git("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", cwd=root)]
    except BadValue:
        pass  # a new branch
    message = f"{LEARN}/: the student versions of {notebooks.name}/ at {head} (python -m mcp_nb course-links --make-branch)"
    commit = _git("commit-tree", tree, *parents, "-m", message, cwd=root)
    _git("update-ref", f"refs/heads/{branch}", commit, cwd=root)
    return commit


# -- python -m mcp_nb course-links ----------------------------------------------------------------


def arguments(parser) -> None:
    parser.add_argument("--remote", default="origin", help="the git remote that names the repository on GitHub (default: origin)")
    parser.add_argument("--ref", default="HEAD", help="what Binder builds: a branch, a tag or a commit (default: HEAD)")
    parser.add_argument("--notebooks", default="notebooks", help="the course's folder of solution versions (default: notebooks)")
    parser.add_argument("--hub", metavar="URL", help="a JupyterHub with nbgitpuller: print its link too")
    parser.add_argument(
        "--branch", default="learners", help="the branch of student versions the hub's link pulls (default: learners)"
    )
    parser.add_argument(
        "--make-branch",
        action="store_true",
        help="write that branch: a commit of learn/, the student versions of the notebooks (push it yourself)",
    )


def run(args) -> int:
    try:
        root = Path(_git("rev-parse", "--show-toplevel", cwd=Path.cwd()))
        owner, repository = github_repository(_git("remote", "get-url", args.remote, cwd=root))
        notebooks = (Path.cwd() / args.notebooks).resolve()
        notebook = first_notebook(notebooks)
        if args.make_branch:
            commit = make_branch(root, notebooks, args.branch)
    except ValueError as err:
        args.parser.error(str(err))
    print(f"Binder:      {binder_link(owner, repository, args.ref, notebook)}")
    print(f"             (binder/postBuild writes the student versions into {LEARN}/ and keeps no solution in the image)")
    if args.hub:
        try:
            print(f"JupyterHub:  {hub_link(args.hub, owner, repository, args.branch, notebook)}")
        except ValueError as err:
            args.parser.error(str(err))
        print(f"             (nbgitpuller pulls the branch {args.branch}: it must hold the student versions only)")
    if args.make_branch:
        print(
            f"{args.branch}: {commit[:12]}, {LEARN}/ of {args.notebooks}/; publish it with: git push {args.remote} {args.branch}"
        )
    return 0
