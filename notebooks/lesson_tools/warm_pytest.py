"""A Python process with pytest, anyio and the MCP SDK already imported, which runs each pytest
of a notebook in a fork of itself (lesson_tools.runs starts it, once per kernel).

Why: a pytest run of the lesson's tests spends two thirds of its time importing the SDK (its
pydantic models are built at import). A fork of a process that did it once starts with them
built, and is otherwise the fresh process `python -m pytest` would be: each run its own child,
its own modules (the learner's module and tests are imported in the child only, and forgotten
with it), its own working folder, environment, stdout and stderr. mcp_nb itself is not imported
here: a test that asks whether mcp_nb was imported gets the answer its own imports give.

Protocol, one JSON object per line: the kernel writes a request on stdin
    {"cwd": ..., "env": {...}, "args": [...], "timeout": seconds}
and reads the answer on stdout
    {"returncode": int | null, "stdout": str, "stderr": str}     (returncode null: timed out)
The process ends when its stdin ends, that is when the kernel that started it ends, however.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import threading
import time

import anyio.pytest_plugin
import mcp  # noqa: F401  (imported for the children: the cost this process exists to pay once)
import mcp.client  # noqa: F401
import mcp.server.mcpserver  # noqa: F401
import pytest


def run_in_child(request: dict, out: int, err: int) -> None:
    """In the forked child: become the process `python -m pytest ARGS` in `cwd` would be, run, exit."""
    code = 3  # pytest's "internal error", if anything below raises
    try:
        os.setpgid(0, 0)  # a group of its own: a run that times out is ended with what it started
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.path.insert(0, request["cwd"])  # as `python -m` puts the working folder first
        sys.argv = ["pytest", *request["args"]]
        stdin = os.open(os.devnull, os.O_RDONLY)
        for fd, target in ((0, stdin), (1, out), (2, err)):
            os.dup2(target, fd)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 (fd 0 stays open for the child's life)
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
        # anyio's plugin is given as an object: named by `-p anyio`, pytest would warn that the
        # module anyio, imported here already, cannot have its asserts rewritten.
        code = int(pytest.main(request["args"], plugins=[anyio.pytest_plugin]))
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001, S110 (exiting anyway; the code says how it ended)
                pass
        os._exit(code)


def wait(pid: int, timeout: float) -> int | None:
    """The child's exit status, or None after `timeout` s, when it and its group were ended."""
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
            return None
        time.sleep(0.01)


def serve() -> None:
    # A fork copies only the thread that forks: with another thread running, a lock it held would
    # stay held in the child forever. The imports above start none; say so if one ever does.
    if threading.active_count() != 1:
        raise SystemExit("warm_pytest: a thread was started at import, and a fork could deadlock")
    running = []  # the run under way, if any: ended with this process

    def end(*_) -> None:  # SIGTERM: the kernel gave up on the run (an interrupt), or is going
        for pid in running:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        os._exit(0)

    signal.signal(signal.SIGTERM, end)
    answers = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            answers.flush()
            pid = os.fork()
            if pid == 0:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                run_in_child(request, out.fileno(), err.fileno())
            try:
                os.setpgid(pid, pid)  # here too: a kill before the child's own call must reach its group
            except OSError:
                pass
            running.append(pid)
            returncode = wait(pid, request["timeout"])
            running.remove(pid)
            said = []
            for file in (out, err):
                file.seek(0)
                said.append(file.read().decode(errors="replace"))
        answers.write(json.dumps({"returncode": returncode, "stdout": said[0], "stderr": said[1]}) + "\n")
        answers.flush()


if __name__ == "__main__":
    # Run as a script, this folder would come first on sys.path, where `python -m pytest` has none
    # of it: a learner's test importing a module named like one of lesson_tools' would find ours.
    if sys.path and sys.path[0] == os.path.dirname(os.path.abspath(__file__)):
        del sys.path[0]
    serve()
