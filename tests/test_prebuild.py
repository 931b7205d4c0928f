"""The builds made once per run (`fresh_venv.once`: Binder's environment, the docs site, a course
on a fresh machine), and made ahead of the tests by tests/prebuild.py, which .ci/run starts beside
the serial pass: a test gets the build made ahead, waits for one under way, and fails with the
message of one that failed; nothing is built twice."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fresh_venv import BUILT, built_once

PREBUILD = Path(__file__).resolve().parent / "prebuild.py"


def test_a_build_under_way_is_waited_for_and_made_once(tmp_path):
    started, finish = threading.Event(), threading.Event()
    builds = []

    def build(folder: Path) -> dict:
        builds.append(folder)
        started.set()
        finish.wait(30)
        (folder / "made").write_text("yes")
        return {"where": str(folder)}

    ahead = threading.Thread(target=built_once, args=(tmp_path, "env", build))
    ahead.start()
    assert started.wait(30)
    got = {}
    asker = threading.Thread(target=lambda: got.update(built_once(tmp_path, "env", build)))
    asker.start()
    time.sleep(0.3)
    assert not got, "the answer came before the build under way had ended"
    finish.set()
    ahead.join(30)
    asker.join(30)
    assert got == {"where": str(tmp_path / "env")} and (tmp_path / "env" / "made").read_text() == "yes"
    assert builds == [tmp_path / "env"]  # built once
    assert built_once(tmp_path, "env", build) == got and len(builds) == 1


def test_a_build_that_failed_fails_whoever_asks_after_with_its_message(tmp_path):
    def broken(folder: Path) -> dict:
        raise AssertionError("pip install -r binder/requirements.txt failed: no such package")

    with pytest.raises(AssertionError):
        built_once(tmp_path, "binder", broken)
    with pytest.raises(pytest.fail.Exception, match="binder \\(built once for the run\\): pip install .* no such package"):
        built_once(tmp_path, "binder", lambda folder: {"never": "called"})


@pytest.mark.parametrize(
    ("names", "env", "said"),
    [
        (["binder"], {}, f"{BUILT} must name a folder to build in"),
        (["wheels"], None, "no build named 'wheels' (binder, docs, course)"),
    ],
    ids=["no folder", "unknown build"],
)
def test_the_prebuild_command_says_what_is_wrong(names, env, said, tmp_path):
    environment = {k: v for k, v in os.environ.items() if k != BUILT}
    environment.update(env if env is not None else {BUILT: str(tmp_path)})
    done = subprocess.run(
        [sys.executable, PREBUILD, *names], env=environment, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )
    assert done.returncode != 0 and said in done.stdout + done.stderr, done.stderr[-2000:]
    assert not list(tmp_path.glob("*.json"))  # nothing was built
