"""The README's commands run as written, from a fresh copy of the repository, on this machine.

The first command sets a machine up and opens JupyterLab: it is run as written, word for word,
in a copy of the repository's files (what a clone holds: the files git keeps, and those not
committed yet that it would keep), by whoever runs the tests (root in CI and containers) and by
an ordinary user (`runuser -u cloudsdk`), with a time limit. It never ends by itself, so the
test reads its output until JupyterLab says where it listens, checks what it made (learn/: the
course's student versions, never the solutions; learn/mine/), that JupyterLab answers on
127.0.0.1 and nowhere else, and ends it. Then it runs again, as a learner's next day starts:
their work in learn/ is left as it was. Of the others: the test command (`bash .ci/run`) is
the test suite itself, and tests/test_first_ten_minutes.py checks that it is there; the
command that prints the Binder link runs in a folder with a GitHub remote; the docs build runs
in the copy the first command set up, with its venv.

The Node peers that notebook 13 needs are installed once for the run by .ci/run (`.peers/`):
`MCP_NB_PEERS` points the copy's `tests/peers.py install --notebooks` at them, which then has
nothing to install. Everything else, the venv and the packages pip installs into it, is the
copy's own.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from helpers import copy_repository

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)
LISTENING = re.compile(r"http://127\.0\.0\.1:(\d+)/lab\?token=(\w+)")
ORDINARY = "cloudsdk"
SETUP_S = 900  # a venv and JupyterLab's packages, from pip's cache or the package index


def readme_commands() -> list[str]:
    return [body.strip() for language, body in FENCE.findall(README.read_text(encoding="utf-8")) if language.strip() == "bash"]


def _unavailable(why: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(why, pytrace=False)
    pytest.skip(why)


def fresh_copy(user: str | None) -> Path:
    """The repository's files in a new folder that `user` owns (None: whoever runs the tests)."""
    base = Path(tempfile.mkdtemp(prefix="mcp_nb-readme-"))
    base.chmod(0o755)  # an ordinary user reaches it (pytest's own tmp folders are root's alone)
    copy = base / "mcp_nb"
    copy_repository(copy)
    if user is not None:
        subprocess.run(["chown", "-R", f"{user}:{user}", str(base)], check=True)
    return copy


def environment(copy: Path, user: str | None) -> dict[str, str]:
    """A newcomer's environment: no venv of ours active, no Jupyter configuration, no browser."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key.startswith(("PIP_", "http_", "https_", "HTTP", "no_proxy", "NO_PROXY", "LANG", "LC_"))
    }
    home = pwd.getpwnam(user).pw_dir if user else os.environ.get("HOME", str(copy.parent))
    env.update(
        HOME=home,
        PATH="/usr/local/bin:/usr/bin:/bin",
        BROWSER="true",
        JUPYTER_CONFIG_DIR=str(copy.parent / "jupyter-config"),
        JUPYTER_DATA_DIR=str(copy.parent / "jupyter-data"),
        JUPYTER_RUNTIME_DIR=str(copy.parent / "jupyter-runtime"),
        IPYTHONDIR=str(copy.parent / "ipython"),
        MCP_NB_PEERS=str(ROOT / ".peers"),
    )
    return env


class Running:
    """The first command, started as written; its output read as it comes."""

    def __init__(self, command: str, copy: Path, user: str | None) -> None:
        argv = ["bash", "-c", command]
        if user is not None:
            argv = [
                shutil.which("runuser") or "runuser",
                "-u",
                user,
                "--",
                "env",
                "-i",
                *(f"{k}={v}" for k, v in environment(copy, user).items()),
                *argv,
            ]
        self.process = subprocess.Popen(
            argv,
            cwd=copy,
            env=environment(copy, user),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.log: list[str] = []
        self.found = threading.Event()
        self.url: tuple[int, str] | None = None
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.log.append(line)
            match = LISTENING.search(line)
            if match and self.url is None:
                self.url = (int(match.group(1)), match.group(2))
                self.found.set()

    def tail(self) -> str:
        return "".join(self.log[-40:])

    def wait_for_jupyterlab(self) -> tuple[int, str]:
        deadline = time.monotonic() + SETUP_S
        while not self.found.wait(0.5):
            assert self.process.poll() is None or self.reader.is_alive(), (
                f"the command ended ({self.process.poll()}):\n{self.tail()}"
            )
            assert time.monotonic() < deadline, f"JupyterLab did not start within {SETUP_S} s:\n{self.tail()}"
        return self.url

    def stop(self) -> None:
        with_signal(self.process, signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            with_signal(self.process, signal.SIGKILL)
            self.process.wait(10)
        self.reader.join(10)


def with_signal(process: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(process.pid, sig)  # its own session: the command and all it started
    except ProcessLookupError:
        pass


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


def check_jupyterlab(port: int, token: str, log: str) -> None:
    status = None
    for _ in range(100):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=5) as response:
                status = json.load(response)
            break
        except OSError:
            time.sleep(0.2)
    assert status is not None and "started" in status, log
    outward = non_loopback_address()
    if outward is not None:
        with pytest.raises(OSError):
            socket.create_connection((outward, port), timeout=2).close()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/contents?token={token}", timeout=10) as response:
        root = {item["name"] for item in json.load(response)["content"]}
    assert "mine" in root and "02-tool-errors.ipynb" in root, root  # JupyterLab's root is learn/


def solution_notebooks() -> list[str]:
    return sorted(
        path.name for path in (ROOT / "notebooks").glob("*.ipynb") if '"solution": true' in path.read_text(encoding="utf-8")
    )


def run_first_command(copy: Path, user: str | None) -> None:
    running = Running(readme_commands()[0], copy, user)
    try:
        port, token = running.wait_for_jupyterlab()
        check_jupyterlab(port, token, running.tail())
    finally:
        running.stop()


@pytest.mark.timeout(3 * SETUP_S)
@pytest.mark.parametrize("user", [None, ORDINARY], ids=["whoever-runs-the-tests", "an-ordinary-user"])
def test_the_readmes_first_command_opens_the_course_as_a_learner_has_it(user):
    if user is not None and (os.geteuid() != 0 or shutil.which("runuser") is None):
        _unavailable("running the command as an ordinary user needs root and runuser")
    if user is not None:
        try:
            pwd.getpwnam(user)
        except KeyError:
            _unavailable(f"no user {user} on this machine (useradd -m {user})")
    copy = fresh_copy(user)
    try:
        run_first_command(copy, user)
        learn = copy / "learn"
        exercises = solution_notebooks()
        assert exercises, "no notebook of the course has exercises"
        for name in exercises:
            text = (learn / name).read_text(encoding="utf-8")
            assert "BEGIN SOLUTION" not in text and "# YOUR CODE HERE" in text, f"learn/{name} is not the student version"
        assert (learn / "mine").is_dir()
        if user is not None:
            assert (learn / "mine").stat().st_uid == pwd.getpwnam(user).pw_uid

        if user is None:
            # What follows runs once, as the ordinary user, the case with more to go wrong (whose
            # files, whose HOME): the run as root has shown the command itself works.
            return
        # The next day: the command again, over a learner's work, which stays as it was.
        worked = learn / exercises[0]
        worked.write_text(worked.read_text(encoding="utf-8").replace("# YOUR CODE HERE", "answer = 42  # mine"), encoding="utf-8")
        own = learn / "mine" / "notes.ipynb"
        own.write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}', encoding="utf-8")
        if user is not None:
            subprocess.run(["chown", f"{user}:{user}", str(worked), str(own)], check=True)
        before = {path: path.read_bytes() for path in (worked, own)}
        run_first_command(copy, user)
        assert {path: path.read_bytes() for path in (worked, own)} == before

        # The docs, built as the README says, with the venv the first command made.
        docs = next(c for c in readme_commands() if "sphinx-build" in c)
        argv = ["bash", "-c", docs]
        if user is not None:
            argv = [
                shutil.which("runuser") or "runuser",
                "-u",
                user,
                "--",
                "env",
                "-i",
                *(f"{k}={v}" for k, v in environment(copy, user).items()),
                *argv,
            ]
        done = subprocess.run(
            argv, cwd=copy, env=environment(copy, user), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=SETUP_S
        )
        assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
        assert (copy / "docs" / "_build" / "html" / "magics.html").exists()
    finally:
        shutil.rmtree(copy.parent, ignore_errors=True)


def test_the_binder_link_is_made_for_wherever_the_repository_lives(tmp_path):
    """The README's command prints the Binder link of the clone's GitHub repository, from either form of its address."""
    command = next(c for c in readme_commands() if "course-links" in c)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks")
    expected = "https://mybinder.org/v2/gh/someone/their-mcp_nb/HEAD?urlpath=lab/tree/learn/00-primer.ipynb"
    for address in (
        "https://github.com/someone/their-mcp_nb.git",
        "git@github.com:someone/their-mcp_nb.git",
        "https://github.com/someone/their-mcp_nb",
    ):
        subprocess.run(["git", "remote", "remove", "origin"], cwd=tmp_path, capture_output=True)
        subprocess.run(["git", "remote", "add", "origin", address], cwd=tmp_path, check=True)
        run = command.replace(".venv/bin/python", shlex.quote(sys.executable), 1)
        printed = subprocess.run(["bash", "-c", run], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
        assert expected in printed.split(), (address, printed)
    assert (ROOT / "notebooks" / "00-primer.ipynb").exists()  # where the link opens
