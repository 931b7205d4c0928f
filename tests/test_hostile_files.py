"""Hostile: cases files and snapshots on disk, and the numbers in the answers they judge.

A save is whole or not at all (a reader never meets half a file, two writers never mix theirs, a
process killed mid-save leaves the old file); a path that is a FIFO or a device is refused in one
line rather than waited on for ever; a file of odd content (NaN, an integer of 5,000 digits, a
lone surrogate, nesting past any reader) is one line; an approx check reads numbers as JSON has
them (no "nan", no "1_000"), and an integer of 400 digits in an answer fails a case, it does not
raise out of the replay.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import warm
from helpers import checkout_env

import mcp_nb
from mcp_nb.records.cases import CasesError
from mcp_nb.records.surface import SurfaceError

# -- an approx check and the numbers of an answer ------------------------------------------------------


def _number_tool():
    @mcp_nb.tool(read_only=True)
    def measure(kind: str) -> dict:
        values = {
            "huge": 10**400,
            "nan": "nan",
            "inf": "Infinity",
            "underscored": "1_000",
            "spaced": " 12 ",
            "text": "12.5",
            "exact": 12,
            "far": 99999.5,
            "long_text": "1" + "0" * 400,
            "e400": "1e400",
        }
        return {"v": values[kind]}


def _judged(kind: str) -> tuple[bool, str]:
    case = {
        "id": kind,
        "name": "measure",
        "arguments": {"kind": kind},
        "expect": {"outcome": "result", "cause": "ok", "checks": [{"path": "$.v", "approx": 12.5, "tolerance": 1000}]},
    }
    (row,) = mcp_nb.replay([case]).itertuples()
    return row.passed, row.reason


@pytest.mark.parametrize("kind", ["huge", "long_text", "e400"])
def test_a_number_past_any_float_in_an_answer_fails_its_case_in_one_line(kind):
    _number_tool()
    passed, reason = _judged(kind)
    assert not passed and reason.startswith("$.v ≈ 12.5 ± 1000.0: got ") and len(reason) < 200


@pytest.mark.parametrize("kind", ["nan", "inf", "underscored", "spaced"])
def test_text_python_reads_as_a_number_but_json_does_not_is_no_number(kind):
    _number_tool()
    passed, reason = _judged(kind)
    assert not passed and reason.endswith(", not a number"), reason


@pytest.mark.parametrize("kind", ["text", "exact"])
def test_a_number_as_json_has_it_passes_within_the_tolerance(kind):
    _number_tool()
    assert _judged(kind) == (True, "")


# -- saving whole -------------------------------------------------------------------------------


def _many_tools(n: int = 1500) -> None:
    def same(x: int) -> int:
        return x

    for i in range(n):
        mcp_nb.tool(name=f"tool_{i}", description="a tool with a description long enough to make the file large " * 3)(same)


@pytest.mark.timeout(120)
def test_a_reader_never_meets_half_a_snapshot_while_it_is_saved_again(tmp_path):
    _many_tools()
    path = tmp_path / "surface.json"
    mcp_nb.snapshot(path=path)
    stop, failures = threading.Event(), []

    def save_again():
        while not stop.is_set():
            mcp_nb.snapshot(path=path)

    writer = threading.Thread(target=save_again)
    writer.start()
    try:
        deadline = time.monotonic() + 6
        while time.monotonic() < deadline and not failures:
            try:
                mcp_nb.diff(str(path), str(path))
            except SurfaceError as err:
                failures.append(str(err))
    finally:
        stop.set()
        writer.join()
    assert not failures, failures[:3]
    assert not [p for p in tmp_path.iterdir() if p.name != "surface.json"]  # no temporary file left behind


@pytest.mark.timeout(120)
def test_a_reader_never_meets_half_a_cases_file_and_two_writers_never_mix(tmp_path):
    @mcp_nb.tool(read_only=True)
    def shout(text: str) -> str:
        return text.upper()

    for i in range(300):
        mcp_nb.call("shout", {"text": f"word {i} " * 20})
    path = tmp_path / "cases.json"
    mcp_nb.history().to_cases(path)
    stop, failures = threading.Event(), []

    def save_again(last: int):
        while not stop.is_set():
            mcp_nb.history().to_cases(path, last=last)

    writers = [threading.Thread(target=save_again, args=(n,)) for n in (300, 150)]
    for writer in writers:
        writer.start()
    try:
        deadline = time.monotonic() + 6
        while time.monotonic() < deadline and not failures:
            try:
                count = len(mcp_nb.records.cases.load(path))
                if count not in (300, 150):
                    failures.append(f"{count} cases")
            except CasesError as err:
                failures.append(str(err))
    finally:
        stop.set()
        for writer in writers:
            writer.join()
    assert not failures, failures[:3]


SAVER = """
import os, sys
import mcp_nb

path, at = os.path.realpath(sys.argv[1]), sys.argv[2]  # as /proc names the files open
folder = os.path.dirname(path)


def same(x: int) -> int:
    return x


for i in range(200):
    mcp_nb.tool(name=f"tool_{i}", description="a description of some length " * 15)(same)
mcp_nb.snapshot(path=path)  # the old snapshot, whole
mcp_nb.snapshot(path=path)


def into_folder(call) -> bool:
    # a write on a file of the snapshot's folder, whatever name the writer gave it
    try:
        fd = call.__self__.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    return os.path.dirname(os.readlink(f"/proc/self/fd/{fd}")) == folder


def pause(frame, event, call):
    # the process stops inside the next save, before the C call named `at`, until it is killed
    if event != "c_call":
        return
    if at == "write":
        here = getattr(call, "__name__", "") == "write" and into_folder(call)
    else:
        here = call is getattr(os, at)  # os.fsync, os.replace: not str.replace
    if here:
        sys.setprofile(None)
        print("stopped", flush=True)
        sys.stdin.read()


sys.setprofile(pause)
mcp_nb.snapshot(path=path)
sys.setprofile(None)
print("saved without stopping", flush=True)
"""


@pytest.mark.timeout(120)
@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reads which file a write is on from /proc")
@pytest.mark.parametrize("at", ["write", "fsync", "replace"])
def test_a_process_killed_while_it_saves_leaves_the_old_snapshot_whole(tmp_path, at):
    # Killed at a point of the save chosen, not at a moment: inside its write, before the data is
    # on the disk, before it takes the place of the old snapshot.
    path = tmp_path / "surface.json"
    saver = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(SAVER), str(path), at],
        env=checkout_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        said = saver.stdout.readline()
    finally:
        saver.send_signal(signal.SIGKILL)
        saver.wait(30)
        saver.stdout.close()
        saver.stdin.close()
    assert said == "stopped\n", said
    whole = mcp_nb.diff(str(path), str(path))  # read as a snapshot: a torn file is a SurfaceError
    assert whole is not None
    assert {p.name for p in tmp_path.iterdir() if not p.name.startswith(".")} == {"surface.json"}


# -- what is no file ------------------------------------------------------------------------------


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe.json"
    os.mkfifo(path)
    return path


@pytest.mark.timeout(30)
def test_a_fifo_given_as_a_snapshot_or_cases_file_to_read_is_refused_in_one_line(fifo):
    with pytest.raises(SurfaceError, match="not a regular file"):
        mcp_nb.diff(str(fifo), str(fifo))
    with pytest.raises(CasesError, match="not a regular file"):
        mcp_nb.replay(str(fifo))


@pytest.mark.timeout(30)
def test_a_fifo_given_as_a_snapshot_or_cases_file_to_write_is_refused_and_left_alone(fifo):
    with pytest.raises(SurfaceError, match="not a regular file"):
        mcp_nb.snapshot(path=fifo)
    with pytest.raises(CasesError, match="not a regular file"):
        mcp_nb.history().to_cases(fifo)
    assert fifo.is_fifo()


@pytest.mark.timeout(30)
def test_a_fifo_through_the_magics_is_a_usage_error(fifo, shell):
    for line in (f"%mcp_snapshot {fifo}", f"%mcp_diff {fifo}", f"%mcp_replay {fifo}"):
        result = shell.run_cell(line)
        assert type(result.error_in_exec).__name__ == "UsageError", (line, result.error_in_exec)
        assert "not a regular file" in str(result.error_in_exec)


# -- files of odd content -------------------------------------------------------------------------


def _write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    return path


SNAPSHOTS = {
    "nan": '{"mcp_nb_surface": 1, "server": {"name": "x", "version": NaN}, "tools": {}}',
    "huge_int": '{"mcp_nb_surface": 1, "server": {"name": "x", "version": ' + "9" * 5000 + '}, "tools": {}}',
    "deep": '{"mcp_nb_surface": 1, "server": {"name": "x"}, "tools": {"t": ' + "[" * 100_000 + "]" * 100_000 + "}}",
    "surrogate_bytes": '{"mcp_nb_surface": 1, "server": {"name": "x\ud800"}, "tools": {}}',
    "not_utf8": None,
    "list": "[1, 2, 3]",
    "empty": "",
}


@pytest.mark.parametrize("kind", sorted(SNAPSHOTS))
def test_a_snapshot_file_of_odd_content_is_refused_in_one_line(tmp_path, kind):
    text = SNAPSHOTS[kind]
    path = tmp_path / "odd.json"
    if text is None:
        path.write_bytes(b'{"mcp_nb_surface": 1, "server": {"name": "\xff\xfe"}}')
    else:
        path = _write(tmp_path, "odd.json", text)
    with pytest.raises(SurfaceError) as refused:
        mcp_nb.diff(str(path), str(path))
    assert "\n" not in str(refused.value) and len(str(refused.value)) < 400


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", sorted(k for k in SNAPSHOTS if SNAPSHOTS[k] is not None))
def test_mcp_nb_diff_on_a_file_of_odd_content_exits_2_with_one_line(tmp_path, kind):
    path = _write(tmp_path, "odd.json", SNAPSHOTS[kind])
    run = subprocess.run(
        warm.python("-m", "mcp_nb", "diff", path, path),
        env=checkout_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2, run.stderr[-2000:]
    assert "Traceback" not in run.stderr


CASES = {
    "nan_arguments": '{"mcp_nb_cases": 1, "cases": [{"id": "a", "name": "t", "arguments": {"x": NaN}, "expect": {"outcome": "result", "cause": "ok"}}]}',
    "huge_timeout": '{"mcp_nb_cases": 1, "cases": [{"id": "a", "name": "t", "timeout": '
    + "9" * 5000
    + ', "expect": {"outcome": "result", "cause": "ok"}}]}',
    "deep": '{"mcp_nb_cases": 1, "cases": [{"id": "a", "name": "t", "arguments": {"x": '
    + "[" * 100_000
    + "]" * 100_000
    + '}, "expect": {"outcome": "result", "cause": "ok"}}]}',
    "control_id": '{"mcp_nb_cases": 1, "cases": [{"id": "a\\u001b[2J\\nTraceback", "name": "t", "expect": {"outcome": "nope", "cause": "ok"}}]}',
    "approx_inf": '{"mcp_nb_cases": 1, "cases": [{"id": "a", "name": "t", "expect": {"outcome": "result", "cause": "ok", "checks": [{"approx": 1e400}]}}]}',
    "tolerance_huge_int": '{"mcp_nb_cases": 1, "cases": [{"id": "a", "name": "t", "expect": {"outcome": "result", "cause": "ok", "checks": [{"approx": 1, "tolerance": '
    + "9" * 400
    + "}]}}]}",
}


@pytest.mark.parametrize("kind", sorted(CASES))
def test_a_cases_file_of_odd_content_is_refused_in_one_line(tmp_path, kind):
    path = _write(tmp_path, "cases.json", CASES[kind])
    with pytest.raises(CasesError) as refused:
        mcp_nb.replay(str(path))
    said = str(refused.value)
    assert "\n" not in said and "\x1b" not in said and len(said) < 400, said
    assert len(mcp_nb.history()) == 0  # nothing was called


def test_a_cases_file_of_many_cases_is_read_once_and_nothing_is_called_before_it_is_read(tmp_path):
    good = {"id": "a", "name": "t", "expect": {"outcome": "result", "cause": "ok"}}
    bad = dict(good, id="b", expect={"outcome": "result", "cause": "nope"})
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"mcp_nb_cases": 1, "cases": [good] * 1 + [bad]}))
    with pytest.raises(CasesError, match="case 'b' \\(number 2\\)"):
        mcp_nb.replay(str(path))
    assert len(mcp_nb.history()) == 0
