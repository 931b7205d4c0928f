"""The course's pytest runs (notebooks/lesson_tools/runs.py, notebook 09): each run is forked from
a process that imported pytest and the SDK once per kernel, and must be the process `python -m
pytest` would be — its own modules, environment and working folder, its own time limit, gone
with whatever it started when that limit passes, and the warm process gone with its kernel."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers import ended, wait_until

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "notebooks"))

from lesson_tools import runs  # noqa: E402

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the warm runs fork; elsewhere each run is a process")

SHOP = '''\
from mcp.server import MCPServer

mcp = MCPServer("Shop")
EDITION = {edition}


@mcp.tool()
def get_author(title: str) -> str:
    """Look up the author of a book."""
    return {{"Dune": "Frank Herbert"}}[title]
'''

TESTS = """\
import os
import sys

import pytest
from mcp import Client

from shop import EDITION, mcp


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
async def test_a_call(record_property):
    async with Client(mcp, raise_exceptions=True) as client:
        result = await client.call_tool("get_author", {"title": "Solaris"})
    record_property("edition", EDITION)
    record_property("lesson", os.environ.get("LESSON", ""))
    record_property("mcp_nb imported", "mcp_nb" in sys.modules)
    record_property("where", os.getcwd())
    assert result.is_error


def test_a_failure():
    assert EDITION == 0
"""


def write_hanging_test(folder: Path, marker: Path) -> None:
    """test_hangs.py: starts a `sleep` (its pid written to `marker`), then waits five minutes."""
    (folder / "test_hangs.py").write_text(
        textwrap.dedent(f"""\
        import subprocess
        import time

        def test_hangs():
            sleeper = subprocess.Popen(["sleep", "300"])
            open({str(marker)!r}, "w").write(str(sleeper.pid))
            time.sleep(300)
        """)
    )


def write(folder: Path, edition: int) -> None:
    (folder / "shop.py").write_text(SHOP.format(edition=edition))
    (folder / "test_shop.py").write_text(TESTS)


def test_each_run_imports_the_folders_modules_afresh_with_the_kernels_environment(tmp_path, monkeypatch):
    write(tmp_path, 1)
    first = runs.pytest_run(tmp_path, "test_shop.py")
    assert first.summary == "1 failed, 1 passed", first.stdout
    assert first.seen["test_a_call"]["edition"] == "1"
    assert first.failures["test_a_failure"] == "assert 1 == 0"  # asserts rewritten, as in any pytest run
    # The SDK was imported before the fork; mcp_nb was not, and a test that does not import it finds it absent.
    assert first.seen["test_a_call"]["mcp_nb imported"] == "False"
    assert first.seen["test_a_call"]["where"] == str(tmp_path.resolve())

    write(tmp_path, 2)  # a learner edits the module: the next run imports the new one
    monkeypatch.setenv("LESSON", "nine")  # and the kernel's environment as it is at the run
    second = runs.pytest_run(tmp_path, "test_shop.py")
    assert (second.seen["test_a_call"]["edition"], second.seen["test_a_call"]["lesson"]) == ("2", "nine")
    assert second.failures["test_a_failure"] == "assert 2 == 0"

    other = tmp_path / "other"  # another folder, its own module of the same name
    other.mkdir()
    write(other, 3)
    assert runs.pytest_run(other, "test_shop.py").seen["test_a_call"]["edition"] == "3"


def test_a_run_past_its_limit_is_ended_with_what_it_started_and_the_next_run_works(tmp_path):
    marker = tmp_path / "sleeper.pid"
    write_hanging_test(tmp_path, marker)
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        runs.pytest_run(tmp_path, "test_hangs.py", timeout=5)
    assert time.monotonic() - started < 60
    assert wait_until(lambda: ended(int(marker.read_text())), 5), "the process the timed-out run started is still running"
    write(tmp_path, 4)
    assert runs.pytest_run(tmp_path, "test_shop.py").seen["test_a_call"]["edition"] == "4"


def test_the_warm_process_ends_with_the_kernel_that_started_it_however_it_ends(tmp_path):
    write(tmp_path, 5)
    program = textwrap.dedent(f"""\
        import os, sys
        sys.path.insert(0, {str(ROOT / "notebooks")!r})
        from lesson_tools import runs
        run = runs.pytest_run({str(tmp_path)!r}, "test_shop.py")
        print(run.summary, runs._warm.process.pid, flush=True)
        os._exit(0)  # as a killed kernel ends: no atexit, no cleanup of its own
        """)
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    summary, _, pid = done.stdout.strip().rpartition(" ")
    assert summary == "1 failed, 1 passed", done.stdout + done.stderr
    assert wait_until(lambda: ended(int(pid)), 5), "the warm pytest process outlived the kernel that started it"


def test_an_interrupted_run_ends_with_what_it_started_and_the_next_run_gets_its_own_answer(tmp_path):
    marker = tmp_path / "sleeper.pid"
    write_hanging_test(tmp_path, marker)

    def interrupt(*_):  # as the kernel's interrupt does: KeyboardInterrupt in the waiting cell
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 4)
    try:
        with pytest.raises(KeyboardInterrupt):
            runs.pytest_run(tmp_path, "test_hangs.py", timeout=60)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert wait_until(lambda: ended(int(marker.read_text())), 5), "the interrupted run's process ran on"
    write(tmp_path, 6)  # not the interrupted run's answer: this run's
    assert runs.pytest_run(tmp_path, "test_shop.py").seen["test_a_call"]["edition"] == "6"
