"""Processes the notebooks start: a pytest run and its JUnit report (notebook 09), a Python program in the background (06).

A pytest run is the process `python -m pytest` would be, forked from one that imported pytest and the
SDK once per kernel (lesson_tools/warm_pytest.py), which saves each run most of its second.

run = pytest_run(folder, "test_bookshop.py")     # python -m pytest -v test_bookshop.py, in `folder`
run.verdicts, run.summary, run.seen              # per test, the line pytest ends with, what each test recorded
run.verdict_of("test_bookshop.py")               # a file's verdict, and its first failure's first line

job = python_in_background(PROGRAM)              # a fresh Python process, its stdout read when it is done
job.lines()                                      # waits for it, then its output, line by line
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import select
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class PytestRun:
    """A pytest run: its exit status, what it printed, and what each test saw (from its JUnit report)."""

    returncode: int
    stdout: str
    verdicts: dict[str, str] = field(default_factory=dict)  # test name -> passed or failed
    seen: dict[str, dict[str, str]] = field(default_factory=dict)  # test name -> its verdict and the properties it recorded
    failures: dict[str, str] = field(default_factory=dict)  # test name -> the first line of its failure
    # test file -> (test name, its verdict, its failure's first line) for each test it holds: one run
    # of several files (one test against several servers) costs one interpreter, not one each
    files: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)

    @property
    def summary(self) -> str:
        """pytest's last line, without the time, which differs from run to run: `3 passed`."""
        lines = self.stdout.strip().splitlines()
        return re.sub(r" in [0-9.]+s.*$", "", lines[-1].strip("= ")) if lines else "no output"

    def verdict_of(self, test_file: str) -> tuple[str, str]:
        """A test file's verdict: `passed` and "" when each of its tests passed; else `failed` and the first
        line of its first failure, or of why no test of it ran."""
        cases = self.files.get(Path(test_file).stem)
        if not cases:
            return "failed", "no test ran: " + self.summary
        failed = [failure for _, verdict, failure in cases if verdict == "failed"]
        return ("failed", failed[0]) if failed else ("passed", "")


def pytest_run(folder: Path, *test_files: str, timeout: float = 120) -> PytestRun:
    """Run pytest on `test_files` in `folder`, as `python -m pytest -v FILES` in a terminal would (with anyio's
    and mcp_nb's plugins, not every plugin installed), with a JUnit report from which each test's
    verdict and recorded properties (`record_property`) are read."""
    report = Path(folder) / "report.xml"
    report.unlink(missing_ok=True)
    # Only the plugins the lesson's tests use, as a course's environment has them: an environment
    # with many more installed (a developer's, the course's own CI) would load each in every run.
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    args = ["-v", "--no-header", "--color=no", "-p", "mcp_nb_pytest", "-p", "no:cacheprovider"]
    args += ["-o", "junit_family=xunit1", f"--junitxml={report.name}", *test_files]
    done = _warm_run(Path(folder), env, args, timeout)
    if done is None:  # no fork here (or the warm process would not start): a process of its own
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "anyio", *args],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    run = PytestRun(done.returncode, done.stdout)
    if not report.exists():
        return run
    for case in ET.parse(report).iter("testcase"):
        name = case.get("name")
        problems = [p for p in (case.find("failure"), case.find("error")) if p is not None]
        run.verdicts[name] = "failed" if problems else "passed"
        failure = ""
        if problems:
            failure = run.failures[name] = (problems[0].get("message") or "failed").splitlines()[0]
        file = Path(case.get("file") or "").stem  # xunit1 names each test's file
        run.files.setdefault(file, []).append((name, run.verdicts[name], failure))
        run.seen[name] = {"verdict": run.verdicts[name], **{p.get("name"): p.get("value") for p in case.iter("property")}}
    return run


class _WarmPytest:
    """lesson_tools/warm_pytest.py: pytest, anyio and the SDK imported once, each run a fork of it.
    Started at the kernel's first run; it ends when the kernel does (its stdin closes)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("warm_pytest.py"))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        atexit.register(self.close)

    def run(self, folder: Path, env: dict, args: list[str], timeout: float) -> subprocess.CompletedProcess:
        request = {"cwd": str(folder.resolve()), "env": env, "args": args, "timeout": timeout}
        with self.lock:
            assert self.process.stdin and self.process.stdout
            try:
                self.process.stdin.write(json.dumps(request) + "\n")
                self.process.stdin.flush()
                # It ends a run itself at `timeout`; the margin is for a process that stopped answering.
                ready, _, _ = select.select([self.process.stdout], [], [], timeout + 30)
                line = self.process.stdout.readline() if ready else ""
            except BaseException:
                # Interrupted (the learner's ■): its answer would come to the next run, so this
                # process ends, with the run under way; the next run starts another.
                self.end()
                raise
        if not line:
            self.end()
            raise OSError("the warm pytest process stopped answering")
        answer = json.loads(line)
        command = ["pytest", *args]
        if answer["returncode"] is None:
            raise subprocess.TimeoutExpired(command, timeout, output=answer["stdout"], stderr=answer["stderr"])
        return subprocess.CompletedProcess(command, answer["returncode"], answer["stdout"], answer["stderr"])

    def close(self) -> None:
        """At the kernel's exit: the end of its stdin is its cue to end."""
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.end()

    def end(self) -> None:
        """At once, with the run under way (SIGTERM: it ends that run's process group first)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError):  # a write it never read: nobody to flush it to
                stream.close()


_warm: _WarmPytest | None = None
_cold = not hasattr(os, "fork")  # True: every run takes a process of its own


def _warm_run(folder: Path, env: dict, args: list[str], timeout: float) -> subprocess.CompletedProcess | None:
    """A run in a fork of the warm process, or None where there is none: no fork on this system, or
    the warm process would not start or stopped answering (then this run and the kernel's next
    take a process of their own, as they would without it)."""
    global _warm, _cold
    if _cold:
        return None
    try:
        if _warm is None or _warm.process.poll() is not None:  # not started yet, or ended by an interrupt
            _warm = _WarmPytest()
        return _warm.run(folder, env, args, timeout)
    except OSError:
        _cold = True
        return None


class PythonJob:
    """A Python program run in a process of its own while the notebook goes on."""

    def __init__(self, program: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", program], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self._out: str | None = None
        self.stderr = ""

    def lines(self, timeout: float = 120) -> list[str]:
        """Wait for the program to end (at most `timeout` s), and return what it printed, line by line."""
        if self._out is None:
            self._out, self.stderr = self.process.communicate(timeout=timeout)
        return self._out.splitlines()


def python_in_background(program: str) -> PythonJob:
    return PythonJob(program)
