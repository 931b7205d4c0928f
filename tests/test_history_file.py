"""A history that survives the kernel: calls written to a history file as they are recorded,
read back whole, every session's; bounded memory beside it; nothing secret on disk; bad files
said in one line."""

from __future__ import annotations

import json
import logging
import os
import stat
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from helpers import STARTS_WITHIN
from helpers import added as outcome
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

import mcp_nb
from mcp_nb.config import settings
from mcp_nb.history_file import ENV, HistoryFileError, as_path, check_writable
from mcp_nb.mistakes import BadValue
from mcp_nb.records import disk
from mcp_nb.records.history import COLUMNS, History
from mcp_nb.records.outcome import Outcome
from mcp_nb.records.redact import scrubber

ROOT = Path(__file__).resolve().parent.parent


def register():
    @mcp_nb.tool()
    def square(x: int) -> int:
        """The square of a number."""
        if x < 0:
            raise ValueError("negative")
        return x * x

    @mcp_nb.tool()
    def shout(text: str) -> str:
        return text.upper()


def parts(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.arrow"))


def same_frames(live: pd.DataFrame, back: pd.DataFrame) -> None:
    assert list(back.columns) == list(live.columns) == list(COLUMNS)
    for column in COLUMNS:
        assert str(back[column].dtype) == str(live[column].dtype), column
        if column in ("server_logs",):
            assert [[(r.level, r.message) for r in logs] for logs in back[column]] == [
                [(r.level, r.message) for r in logs] for logs in live[column]
            ]
        else:
            assert back[column].astype(object).tolist() == live[column].astype(object).tolist() or back[column].equals(
                live[column]
            ), column


def test_every_call_is_written_as_recorded_and_read_back_identical(tmp_path):
    register()
    path = tmp_path / "calls.mcpnb"
    mcp_nb.configure(history_file=str(path))
    mcp_nb.call("square", {"x": 3})
    mcp_nb.call("square", {"x": -1})  # a crash, logged
    mcp_nb.call("square", {"x": "a"})  # invalid arguments
    mcp_nb.call("shout", {"text": 'say "hi"\n\\ now'})  # a result whose text JSON escapes
    mcp_nb.read("nothing://here")  # a protocol error
    history = mcp_nb.history()
    assert history.sync()
    back = History.open(path)
    assert len(back) == 5
    same_frames(history.to_frame(), back.to_frame())
    assert back.to_frame()["structured_content"].tolist()[3] == {"result": 'SAY "HI"\n\\ NOW'}


def test_the_file_is_private_and_says_what_it_is(tmp_path):
    register()
    path = tmp_path / "calls.mcpnb"
    mcp_nb.configure(history_file=str(path))
    mcp_nb.call("square", {"x": 2})
    assert mcp_nb.history().sync()
    assert stat.S_IMODE(path.stat().st_mode) == 0o700
    for file in path.iterdir():
        assert stat.S_IMODE(file.stat().st_mode) == 0o600, file
    assert json.loads((path / "mcpnb.json").read_text())["mcp_nb_history"] == 2
    assert [p.name for p in parts(path)][0].startswith(mcp_nb.history().to_frame()["session"].iloc[0])


def test_calls_made_before_the_file_was_set_are_written_too(tmp_path):
    register()
    mcp_nb.call("square", {"x": 1})
    mcp_nb.configure(history_file=str(tmp_path / "calls.mcpnb"))
    mcp_nb.call("square", {"x": 2})
    mcp_nb.history().sync()
    assert History.open(tmp_path / "calls.mcpnb").to_frame()["arguments"].tolist() == [{"x": 1}, {"x": 2}]


def test_a_reopened_history_sees_the_calls_this_kernel_made_a_moment_ago(tmp_path):
    register()
    mcp_nb.configure(history_file=str(tmp_path / "calls.mcpnb"))
    mcp_nb.call("square", {"x": 4})
    assert len(History.open(tmp_path / "calls.mcpnb")) == 1  # no wait for the writer's quarter second


def test_memory_keeps_a_window_and_the_frame_still_has_every_call(tmp_path):
    plain, kept = History(), History()
    kept.keep(tmp_path / "calls.mcpnb", window=1024)
    for i in range(6000):
        plain.record(outcome(i, "add" if i % 3 else "sub"))
        kept.record(outcome(i, "add" if i % 3 else "sub"))
    assert kept.sync()  # the window is trimmed as calls are recorded, and once more after the last write
    assert 1024 <= kept.in_memory < 1024 + 1024, kept.in_memory
    assert plain.in_memory == 6000
    assert len(kept) == 6000
    expected, got = plain.to_frame(), kept.to_frame()
    for column in COLUMNS:
        if column not in ("recorded_at", "session"):
            assert got[column].equals(expected[column]), column
    assert kept.to_frame(last=10)["call_id"].tolist() == list(range(5990, 6000))
    assert kept.to_frame(last=3000)["call_id"].tolist() == list(range(3000, 6000))  # read partly from the file
    counted = kept.to_frame(columns=["name", "outcome"])
    assert list(counted.columns) == ["name", "outcome"] and counted["name"].value_counts().to_dict() == {"add": 4000, "sub": 2000}
    kept.close()


def test_clear_forgets_in_memory_and_the_file_keeps_every_call(tmp_path):
    history = History()
    history.keep(tmp_path / "calls.mcpnb")
    for i in range(10):
        history.record(outcome(i))
    history.clear()
    history.record(outcome(10))
    assert history.to_frame()["call_id"].tolist() == [10]
    history.close()
    assert History.open(tmp_path / "calls.mcpnb").to_frame()["call_id"].tolist() == list(range(11))


def test_reset_ends_the_writer_and_the_next_engine_writes_on(tmp_path):
    register()
    before = set(threading.enumerate())  # other tests' histories, kept by hand, may still write
    mcp_nb.configure(history_file=str(tmp_path / "calls.mcpnb"))
    mcp_nb.call("square", {"x": 1})
    writer = mcp_nb.history()._writer._thread
    mcp_nb.reset()  # flushes, then the thread ends
    assert not writer.is_alive()
    assert not [t for t in set(threading.enumerate()) - before if t.name.startswith("mcp_nb history file")]
    register()
    mcp_nb.call("square", {"x": 2})
    mcp_nb.history().sync()
    frame = History.open(tmp_path / "calls.mcpnb").to_frame()
    assert frame["arguments"].tolist() == [{"x": 1}, {"x": 2}]
    assert frame["session"].nunique() == 1  # one kernel, one session, reset or not


def test_a_timeouts_fate_that_changes_after_it_was_written_is_written_again(tmp_path):
    started, release = threading.Event(), threading.Event()

    @mcp_nb.tool()
    def slow() -> str:
        started.set()
        release.wait(30)
        return "late"

    mcp_nb.configure(history_file=str(tmp_path / "calls.mcpnb"))
    o = mcp_nb.call("slow", {}, timeout=STARTS_WITHIN)
    assert o.outcome == "timeout" and started.is_set()
    mcp_nb.history().sync()
    assert History.open(tmp_path / "calls.mcpnb").to_frame()["server_fate"].tolist() == ["running"]
    release.set()
    deadline = time.monotonic() + 10
    while o.server_fate == "running" and time.monotonic() < deadline:
        time.sleep(0.05)
    mcp_nb.call("square" if False else "slow", {}, timeout=5)  # a later call wakes the writer
    mcp_nb.history().sync()
    back = History.open(tmp_path / "calls.mcpnb").to_frame()
    assert back["server_fate"].tolist()[0] == "completed"
    assert back["fate_outcome"].tolist()[0] == "result"


KERNEL = """
import sys, mcp_nb
@mcp_nb.tool()
def work(x: int) -> int:
    if x % 5 == 0:
        raise ValueError("fives fail")
    return x
mcp_nb.configure(history_file=sys.argv[1])
for x in range(int(sys.argv[2])):
    mcp_nb.call("work", {"x": x})
"""


def kernel(path: Path, calls: int, **env: str) -> None:
    run = subprocess.run(
        [sys.executable, "-c", KERNEL, str(path), str(calls)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
    )
    assert run.returncode == 0, run.stderr


def test_sessions_side_by_side_and_call_ids_told_apart_per_session(tmp_path):
    path = tmp_path / "calls.mcpnb"
    kernel(path, 10)
    kernel(path, 20)
    history = mcp_nb.History.open(path)
    frame = history.to_frame()
    assert len(frame) == 30 and frame["session"].nunique() == 2
    assert frame["call_id"].duplicated().sum() == 10  # each kernel numbers its calls from 1
    first, second = frame["session"].cat.categories
    side = history.summary(by="session")
    assert list(side.columns.get_level_values(0).unique()) == [first, second]
    row = side.loc[("kernel", "tool", "work")]
    assert (row[(first, "result")], row[(first, "tool_error")], row[(first, "total")]) == (8, 2, 10)
    assert (row[(second, "result")], row[(second, "tool_error")], row[(second, "total")]) == (16, 4, 20)
    assert row[(first, "median_ms")] > 0 and row[(second, "p90_ms")] > 0
    assert history.health(last=100)["calls"].tolist() == [30]  # 30 calls, not 20 ids
    cases = history.to_cases(tmp_path / "cases.json")
    assert len(cases) == 30


def test_the_environment_variable_keeps_a_ci_kernels_calls(tmp_path):
    path = tmp_path / "ci.mcpnb"
    kernel(tmp_path / "unused.mcpnb", 0, **{ENV: str(path)})  # the variable names the file; configure() then sets another
    script = "import mcp_nb\n@mcp_nb.tool()\ndef one() -> int:\n    return 1\nmcp_nb.call('one', {})\n"
    run = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT), ENV: str(path)},
    )
    assert run.returncode == 0, run.stderr
    assert len(History.open(path)) == 1
    bad = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT), ENV: str(tmp_path / "no" / "such")},
    )
    assert bad.returncode == 0, bad.stderr
    said = [line for line in bad.stderr.splitlines() if ENV in line]
    assert len(said) == 1 and "does not exist" in said[0] and "memory only" in said[0]


def test_bad_settings_are_one_line_and_change_nothing(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    for bad, says in (
        (str(tmp_path / "missing" / "calls.mcpnb"), "does not exist"),
        (str(tmp_path / "notes.txt"), "it is a file"),
        (str(tmp_path), "holds other files"),
        (42, "is a path"),
        (b"calls.mcpnb", "is a path"),
    ):
        with pytest.raises(BadValue, match=says) as caught:
            mcp_nb.configure(history_file=bad)
        assert "\n" not in str(caught.value)
        assert settings.history_file is None
    with pytest.raises(BadValue, match="at least 1024"):
        mcp_nb.configure(history_window=10)
    mcp_nb.configure(history_file=tmp_path / "calls.mcpnb")  # a Path will do
    assert settings.history_file == str(tmp_path / "calls.mcpnb")


def test_bad_files_open_with_one_line(tmp_path):
    newer = tmp_path / "newer.mcpnb"
    newer.mkdir()
    (newer / "mcpnb.json").write_text(json.dumps({"mcp_nb_history": 99}))
    unreadable = tmp_path / "unreadable.mcpnb"
    unreadable.mkdir()
    (unreadable / "mcpnb.json").mkdir()  # a marker no one can read as text (tests run as root: no chmod)
    (tmp_path / "plain").write_text("x")
    for path, says in (
        (tmp_path / "missing.mcpnb", "no history file at"),
        (newer, "newer mcp_nb .history format 99; this one reads up to 2.: upgrade"),
        (unreadable, "cannot read"),
        (tmp_path / "plain", "it is a file"),
        (tmp_path, "holds other files"),
    ):
        with pytest.raises(HistoryFileError, match=says) as caught:
            History.open(path)
        assert "\n" not in str(caught.value)


def test_small_parts_are_merged_and_a_merges_leftovers_never_read_twice(tmp_path):
    from mcp_nb.records.writer import MERGE

    path = tmp_path / "calls.mcpnb"
    history = History()
    history.keep(path)
    for i in range(2 * MERGE + 1):
        history.record(outcome(2 * i))
        history.record(outcome(2 * i + 1, name="shout"))
        history.sync()  # a part of two calls
    history.close()
    live = history.to_frame()
    names = [p.name for p in parts(path)]
    assert len(names) == 3 and names[0].endswith(f".{0:012d}-{2 * MERGE - 1:012d}.arrow"), (
        names
    )  # twice 16 parts of two calls merged, and one part
    merged = disk.read_table(path / names[0])
    assert merged.num_rows == 2 * MERGE
    # a merge's input left behind (the writer died before it removed it): covered, so never read
    session, stream = names[0].split(".")[:2]
    disk.write_part(path, disk.part_name(session, int(stream), 2, 3), merged.slice(2, 2))
    back = History.open(path).to_frame()
    same_frames(live, back)
    assert back["call_id"].tolist() == list(range(2 * (2 * MERGE + 1)))


def test_a_file_opened_while_its_writer_merges_says_no_part_was_cut_short(tmp_path, monkeypatch):
    """History.open checks the end of every part it lists; the kernel writing the file may merge
    parts meanwhile (the merged part is in place before its inputs go). A part gone while checked
    is listed again, not said cut short: under load a test once warned of three parts cut short."""
    path = tmp_path / "calls.mcpnb"
    history = History()
    history.keep(path)
    for i in range(3):
        history.record(outcome(i))
        history.sync()  # a part of one call
    history.close()
    names = [p.name for p in parts(path)]
    session, stream = names[0].split(".")[:2]
    real_check = disk.check_part

    def merged_meanwhile(part: Path) -> None:
        if part.name == names[1] and part.exists():  # the writer merges while the reader is at the second part
            disk.merge(path, names, disk.part_name(session, int(stream), 0, 2))
        real_check(part)

    monkeypatch.setattr(disk, "check_part", merged_meanwhile)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a HistoryFileWarning would fail the test
        back = History.open(path)
        assert back.to_frame()["call_id"].tolist() == [0, 1, 2]
    assert [p.name for p in parts(path)] == [disk.part_name(session, int(stream), 0, 2)]


def test_a_file_of_the_older_format_opens_and_is_never_written_to(tmp_path):
    path = tmp_path / "calls.mcpnb"
    history = History()
    history.keep(path)
    for i in range(30):
        history.record(outcome(i))
        if i in (9, 19):
            history.sync()
    history.close()
    live = history.to_frame()
    for part in parts(path):  # format 1: the same tables as Parquet parts
        pq.write_table(disk.read_table(part), part.with_suffix(".parquet"))
        part.unlink()
    (path / "mcpnb.json").write_text(json.dumps({"mcp_nb_history": 1}))
    same_frames(live, History.open(path).to_frame())
    for attempt in (lambda: mcp_nb.configure(history_file=path), lambda: History().keep(path)):
        with pytest.raises(BadValue, match="older format .1; this mcp_nb writes 2.: it can be opened") as caught:
            attempt()
        assert "\n" not in str(caught.value)
    assert sorted(p.suffix for p in path.iterdir()) == [".json", ".parquet", ".parquet", ".parquet"]


def test_a_part_cut_short_is_said_in_one_line_and_the_calls_before_it_kept(tmp_path):
    path = tmp_path / "calls.mcpnb"
    history = History()
    history.keep(path)
    for i in range(30):
        history.record(outcome(i))
        if i in (9, 19):
            history.sync()  # three parts
    history.close()
    last = parts(path)[-1]
    last.write_bytes(last.read_bytes()[: last.stat().st_size // 2])  # a crash mid-copy, a disk that filled
    (path / ".half.arrow.123.abcd.tmp").write_bytes(b"ARROW1 half")  # a writer killed mid-write leaves this
    with pytest.warns(mcp_nb.HistoryFileWarning) as said:
        back = History.open(path)
    assert (
        len(said) == 1
        and "1 part left out" in str(said[0].message)
        and "cut short" in str(said[0].message)
        and "\n" not in str(said[0].message)
    )
    assert "its end is missing" in str(said[0].message)
    assert back.to_frame()["call_id"].tolist() == list(range(20))


def test_a_folder_removed_while_writing_is_said_once_and_calls_stay_in_memory(tmp_path, caplog):
    import shutil

    register()
    path = tmp_path / "calls.mcpnb"
    mcp_nb.configure(history_file=str(path))
    mcp_nb.call("square", {"x": 1})
    mcp_nb.history().sync()
    shutil.rmtree(path)
    with caplog.at_level(logging.WARNING, logger="mcp_nb"):
        for x in range(5):
            assert mcp_nb.call("square", {"x": x}).outcome == "result"
        assert not mcp_nb.history().sync(2)
        for x in range(5):
            mcp_nb.call("square", {"x": x})
        time.sleep(0.5)
    said = [r for r in caplog.records if "cannot be written" in r.getMessage()]
    assert len(said) == 1 and "\n" not in said[0].getMessage() and "memory" in said[0].getMessage()
    assert len(mcp_nb.history()) == 11
    assert len(mcp_nb.history().to_frame()) == 11


def test_nothing_secret_is_written(tmp_path):
    served = mcp_nb.serve()
    try:
        token = served.token
        leaky = f"token {token} at https://ann:hunter2pass@example.com/mcp?api_key=k3y-value&team=x, Authorization: Bearer abc.def.ghi"

        @mcp_nb.tool()
        def leak(extra: str) -> str:
            return leaky + extra

        mcp_nb.configure(history_file=str(tmp_path / "calls.mcpnb"))
        o = mcp_nb.call("leak", {"extra": f" again {token}"})
        assert token in o.content  # the kernel's own record keeps what the call returned
        mcp_nb.history().sync()
    finally:
        served.stop()
    written = [
        str(v) for part in parts(tmp_path / "calls.mcpnb") for column in disk.read_table(part).columns for v in column.to_pylist()
    ]
    text = "\n".join(written)
    for secret in (token, "hunter2pass", "k3y-value", "abc.def.ghi"):
        assert secret not in text, secret
    assert "https://ann:***@example.com/mcp?api_key=***&team=x" in text and "Bearer ***" in text


@hsettings(max_examples=40, deadline=None)
@given(st.text(max_size=40))
def test_a_history_file_setting_is_a_path_or_one_line(text):
    try:
        path = check_writable(text)
    except HistoryFileError as err:
        assert "\n" not in str(err)
    else:
        assert path is None or path.is_absolute()
    try:
        assert as_path(text) is None or as_path(text).is_absolute()
    except HistoryFileError:
        pass


@hsettings(max_examples=60, deadline=None)
@given(
    st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=30),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_.", min_size=4, max_size=20),
    st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=30),
)
def test_a_known_secret_never_survives_the_scrubber(before, secret, after):
    scrub = scrubber(lambda: [secret])
    assert secret not in scrub(before + secret + after).replace("***", "") or secret in "***"
    clean = "nothing to see"
    assert scrub(clean) is clean


def test_the_magics_set_the_file_and_show_every_sessions_calls(shell, tmp_path):
    import shlex

    from IPython.core.error import UsageError

    path = tmp_path / "calls.mcpnb"
    result = shell.run_cell(f"%config McpMagics.history_file = {str(tmp_path / 'no' / 'such')!r}")
    assert settings.history_file is None  # refused, in one line by IPython's %config, and nothing changed
    shell.run_cell(f"%config McpMagics.history_file = {str(path)!r}")
    assert settings.history_file == str(path)
    shell.run_cell("%%mcp_tool\ndef add(a: int, b: int) -> int:\n    return a + b")
    for line in ("add a=1 b=2", "add a=2 b=3", 'add {"a": "x"}'):
        shell.run_cell(f"%mcp_call {line}")
    result = shell.run_cell(f"%mcp_history --file {shlex.quote(str(path))} --summary --by session")
    assert result.success
    side = result.result
    session = mcp_nb.history().to_frame()["session"].iloc[0]
    assert side.loc[("kernel", "tool", "add"), (session, "result")] == 2
    assert side.loc[("kernel", "tool", "add"), (session, "tool_error")] == 1
    shown = shell.run_cell(f"%mcp_history --file {shlex.quote(str(path))}").result
    assert isinstance(shown, History) and len(shown) == 3
    for bad, says in (
        (f"--file {shlex.quote(str(tmp_path / 'missing'))}", "no history file at"),
        ("--by session", "--by goes with --summary"),
        (f"--file {shlex.quote(str(path))} --clear", "a history file keeps its own"),
    ):
        result = shell.run_cell(f"%mcp_history {bad}")
        assert isinstance(result.error_in_exec, UsageError) and says in str(result.error_in_exec), bad
        assert "\n" not in str(result.error_in_exec)
    cleared = shell.run_cell("%mcp_history --clear")
    assert cleared.success and len(mcp_nb.history()) == 0 and len(History.open(path)) == 3


@hsettings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.text(alphabet=st.characters(blacklist_categories=["Cs", "Cc", "Zl", "Zp"]), max_size=30)
)  # a cell's line holds no line break
def test_any_file_given_to_mcp_history_is_shown_or_one_line(shell, text):
    import shlex

    from IPython.core.error import UsageError

    result = shell.run_cell(f"%mcp_history --file {shlex.quote(text)}")
    assert result.success or isinstance(result.error_in_exec, UsageError), result.error_in_exec
    if not result.success:
        assert "\n" not in str(result.error_in_exec)


def test_a_value_nested_too_deep_for_json_is_written_as_a_note_and_writing_goes_on(tmp_path):
    deep: list = []
    inner = deep
    for _ in range(50_000):
        inner.append([])
        inner = inner[0]
    history = History()
    history.keep(tmp_path / "calls.mcpnb")
    odd = Outcome(1, "tool", "deep", {"a": 1}, "protocol_error", "mcp_error", None, None, None, -1, "m", deep, 1.0, 1.0, 30.0)
    history.record(odd)
    history.record(outcome(2))
    assert history.sync() and history._writer.failed is None
    history.close()
    back = History.open(tmp_path / "calls.mcpnb").to_frame()
    assert back["data"].tolist() == ["<list nested too deep to be written>", None]


def test_calls_recorded_while_a_write_is_under_way_are_written_when_the_history_is_closed(tmp_path, monkeypatch):
    # The last write at close() (the interpreter's exit, reset()) once stopped after the round already
    # under way, and the calls recorded during that round were never written: 26 of 30 in a kernel.
    from mcp_nb.records import disk

    began, go_on = threading.Event(), threading.Event()
    write_part = disk.write_part

    def slow_first_write(*args, **kwargs):
        if not began.is_set():
            began.set()
            go_on.wait(10)
        return write_part(*args, **kwargs)

    monkeypatch.setattr(disk, "write_part", slow_first_write)
    history = History()
    history.keep(tmp_path / "calls.mcpnb")
    history.record(outcome(1))
    assert began.wait(10)  # the writer is writing call 1
    for i in range(2, 6):
        history.record(outcome(i))
    closing = threading.Thread(target=history.close)
    closing.start()
    time.sleep(0.1)  # close() has asked for the last write while the first is still under way
    go_on.set()
    closing.join(30)
    assert sorted(History.open(tmp_path / "calls.mcpnb").to_frame()["call_id"]) == [1, 2, 3, 4, 5]
