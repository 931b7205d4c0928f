"""The history file where two actors meet, and where a failure is followed by a retry.

A recorder and `clear()`, setting and unsetting the file, `sync()`, `to_frame()` and a reader
opening the file, all beside a thread that keeps calling: no call is lost, none written twice.
A write that fails, then the same path set again: the retry writes what the file lacks. A
file stopped and resumed: only what it lacks. Anything in the folder that is not a regular
file (a named pipe, a directory, a device, a symbolic link) is refused in one line, never opened.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import threading
import warnings
from pathlib import Path

import pytest
from helpers import added as outcome

import mcp_nb
from mcp_nb.config import settings
from mcp_nb.history_file import HistoryFileError
from mcp_nb.mistakes import BadValue
from mcp_nb.records.history import History


def register():
    @mcp_nb.tool()
    def add(a: int, b: int = 0) -> int:
        return a + b


class Calling:
    """A thread that calls `add` until told to stop, keeping the id of every call it made."""

    def __init__(self, least: int = 0) -> None:
        self.made: list[int] = []
        self.least = least  # calls it makes before it heeds `stop`
        self.stopping = threading.Event()
        self.failed: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            while not self.stopping.is_set() or len(self.made) < self.least:
                o = mcp_nb.call("add", {"a": len(self.made)})
                assert o.outcome == "result", o
                self.made.append(o.call_id)
        except BaseException as err:  # noqa: BLE001 - said by the test
            self.failed.append(err)

    def __enter__(self) -> Calling:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopping.set()
        self.thread.join(120)
        assert not self.thread.is_alive(), "the calling thread did not end"
        assert not self.failed, self.failed

    def wait_for(self, calls: int) -> None:
        while len(self.made) < calls and self.thread.is_alive():
            self.stopping.wait(0.002)


def written(path: Path) -> list[int]:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a part said cut short fails the test
        return History.open(path).to_frame()["call_id"].tolist()


# -- where two actors meet ------------------------------------------------------------------------


def test_clear_beside_a_calling_thread_loses_no_call(tmp_path):
    # clear() synced, then swapped the store: the calls recorded in between were dropped from
    # memory and never written (24 and 30 of them in two runs of 40 clears).
    register()
    path = tmp_path / "calls.mcpnb"
    mcp_nb.configure(history_file=str(path))
    history = mcp_nb.history()
    with Calling(least=400) as calling:
        for i in range(40):
            calling.wait_for(10 * (i + 1))
            history.clear()
    assert history.sync()
    assert sorted(written(path)) == sorted(calling.made)  # each call once, none lost
    shown = history.to_frame()["call_id"].tolist()
    assert shown == calling.made[len(calling.made) - len(shown) :]  # memory shows what came after the last clear


def test_clear_with_a_file_hides_the_calls_and_keeps_them_in_the_file(tmp_path):
    history = History()
    history.keep(tmp_path / "calls.mcpnb")
    for i in range(3000):
        history.record(outcome(i))
        if i in (999, 1500):
            history.clear()
    assert len(history) == 1499 and history.to_frame()["call_id"].tolist() == list(range(1501, 3000))
    assert history.to_frame(last=5)["call_id"].tolist() == list(range(2995, 3000))
    history.close()
    assert written(tmp_path / "calls.mcpnb") == list(range(3000))


def test_the_file_set_and_unset_beside_a_calling_thread_holds_every_call_once(tmp_path):
    register()
    path, other = tmp_path / "calls.mcpnb", tmp_path / "other.mcpnb"
    mcp_nb.configure(history_file=str(path))
    history = mcp_nb.history()
    with Calling(least=300) as calling:
        for i in range(30):
            calling.wait_for(8 * (i + 1))
            mcp_nb.configure(history_file=(None, str(other), str(path))[i % 3])
            if i % 5 == 0:
                history.sync()
                frame = history.to_frame()
                assert frame["call_id"].is_unique
    mcp_nb.configure(history_file=str(path))
    assert history.sync()
    assert sorted(written(path)) == sorted(calling.made)
    assert sorted(history.to_frame()["call_id"]) == sorted(calling.made)
    assert len(set(written(other))) == len(written(other))  # the other file: what it was given, once


def test_two_threads_setting_the_file_at_once_leave_one_writer(tmp_path):
    path, other = tmp_path / "calls.mcpnb", tmp_path / "other.mcpnb"
    history = History()
    recorded = threading.Event()
    before = set(threading.enumerate())

    def recording() -> None:
        for i in range(20_000):
            history.record(outcome(i))
        recorded.set()

    def setting(target: Path) -> None:
        for _ in range(15):
            history.keep(target)
            history.keep(None)

    threads = [
        threading.Thread(target=recording),
        threading.Thread(target=setting, args=(path,)),
        threading.Thread(target=setting, args=(other,)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert recorded.is_set()
    history.keep(path)
    history.close()
    assert not [
        t for t in set(threading.enumerate()) - before if t.name.startswith("mcp_nb history file")
    ]  # no writer left behind
    assert written(path) == list(range(20_000))


def test_a_reader_beside_the_writer_sees_each_call_once(tmp_path):
    register()
    path = tmp_path / "calls.mcpnb"
    mcp_nb.configure(history_file=str(path))
    with Calling(least=200) as calling:
        for i in range(20):
            calling.wait_for(10 * (i + 1))
            seen = written(path)
            assert len(seen) == len(set(seen)) and set(seen) <= set(calling.made)
    assert mcp_nb.history().sync()
    assert sorted(written(path)) == sorted(calling.made)


# -- failure, then retry ----------------------------------------------------------------------------


def test_the_documented_retry_writes_what_the_file_lacks(tmp_path, caplog):
    register()
    path, away = tmp_path / "calls.mcpnb", tmp_path / "away"
    mcp_nb.configure(history_file=str(path))
    made = [mcp_nb.call("add", {"a": x}).call_id for x in range(400)]
    history = mcp_nb.history()
    assert history.sync()
    path.rename(away)  # the folder gone from under the writer (root ignores a read-only folder)
    with caplog.at_level(logging.WARNING, logger="mcp_nb"):
        made += [mcp_nb.call("add", {"a": x}).call_id for x in range(400, 800)]
        assert not history.sync(120)  # False as soon as the write fails (the bound is for a loaded machine)
    said = [r.getMessage() for r in caplog.records if "cannot be written" in r.getMessage()]
    assert len(said) == 1 and "\n" not in said[0] and "set history_file again" in said[0]
    away.rename(path)  # the disk is back; the user does what the message says
    mcp_nb.configure(history_file=str(path))
    assert history.sync()
    assert written(path) == made  # the 400 it lacked, none twice


def test_the_retry_through_config_magic_and_to_a_recreated_folder(shell, tmp_path, caplog):
    import shutil

    register()
    path = tmp_path / "calls.mcpnb"
    assert shell.run_cell(f"%config McpMagics.history_file = {str(path)!r}").success
    made = [mcp_nb.call("add", {"a": x}).call_id for x in range(50)]
    history = mcp_nb.history()
    assert history.sync()
    shutil.rmtree(path)  # gone for good: what was written with it
    with caplog.at_level(logging.WARNING, logger="mcp_nb"):
        made += [mcp_nb.call("add", {"a": x}).call_id for x in range(50, 80)]
        assert not history.sync(120)
    assert shell.run_cell(f"%config McpMagics.history_file = {str(path)!r}").success
    assert history.sync()
    assert written(path) == made  # a new file lacks every call memory holds
    assert shell.run_cell(f"%config McpMagics.history_file = {str(path)!r}").success  # set again, nothing to retry
    assert history.sync() and written(path) == made


def test_stop_and_resume_writes_only_what_the_file_lacks(tmp_path):
    register()
    path = tmp_path / "calls.mcpnb"
    mcp_nb.configure(history_file=str(path))
    made = [mcp_nb.call("add", {"a": x}).call_id for x in range(300)]
    mcp_nb.configure(history_file=None)
    made += [mcp_nb.call("add", {"a": x}).call_id for x in range(300, 400)]
    mcp_nb.configure(history_file=str(path))
    assert mcp_nb.history().sync()
    back = History.open(path)
    assert back.to_frame()["call_id"].tolist() == made
    assert back.summary().loc[("kernel", "tool", "add"), "result"] == 400
    assert back.health(last=1000)["calls"].tolist() == [400]
    assert len(back.to_cases(tmp_path / "cases.json")) == 400
    frame = mcp_nb.history().to_frame()
    assert frame["call_id"].tolist() == made


def test_resuming_after_another_file_and_a_window_reads_back_every_call_once(tmp_path):
    a, b = tmp_path / "a.mcpnb", tmp_path / "b.mcpnb"
    history = History()
    history.keep(a, window=1024)
    for i in range(3000):
        history.record(outcome(i))
    history.keep(b)
    for i in range(3000, 4500):
        history.record(outcome(i))
    history.keep(a)
    for i in range(4500, 6000):
        history.record(outcome(i))
    assert history.sync()
    assert history.to_frame()["call_id"].tolist() == list(range(6000))  # memory's window, and the rest read back
    assert len(history) == 6000
    history.close()
    in_a, in_b = written(a), written(b)
    # each file: what it was given while it was set, and what memory still held when it was set again; none twice
    assert in_a == sorted(set(in_a)) and in_a[:3000] == list(range(3000)) and in_a[-1500:] == list(range(4500, 6000))
    assert in_b == sorted(set(in_b)) and in_b[-1500:] == list(range(3000, 4500))
    assert sorted(set(in_a) | set(in_b)) == list(range(6000))


# -- what is not a regular file -----------------------------------------------------------------------


def history_file_with_calls(tmp_path: Path, calls: int = 3) -> Path:
    path = tmp_path / "calls.mcpnb"
    history = History()
    history.keep(path)
    for i in range(calls):
        history.record(outcome(i))
    history.close()
    return path


def swap_marker(path: Path, make) -> None:
    marker = path / "mcpnb.json"
    marker.unlink()
    make(marker)


MARKERS = {
    "a named pipe": lambda marker: os.mkfifo(marker),
    "a directory": lambda marker: marker.mkdir(),
    "a link to a device": lambda marker: marker.symlink_to("/dev/zero"),
    "a link outside the folder": lambda marker: marker.symlink_to(marker.parent.parent / "elsewhere.json"),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", list(MARKERS))
def test_a_marker_that_is_not_a_regular_file_is_refused_in_one_line(tmp_path, kind, shell):
    path = history_file_with_calls(tmp_path)
    (tmp_path / "elsewhere.json").write_text(json.dumps({"mcp_nb_history": 2}))
    swap_marker(path, MARKERS[kind])
    for attempt in (lambda: mcp_nb.configure(history_file=str(path)), lambda: History.open(path), lambda: History().keep(path)):
        with pytest.raises(BadValue, match="not a regular file") as caught:  # configure's, or a HistoryFileError
            attempt()
        assert "\n" not in str(caught.value)
    assert settings.history_file is None
    result = shell.run_cell(f"%mcp_history --file {shlex.quote(str(path))}")
    assert "not a regular file" in str(result.error_in_exec) and "\n" not in str(result.error_in_exec)


def test_a_marker_too_large_to_be_one_is_refused_unread(tmp_path):
    path = history_file_with_calls(tmp_path)
    marker = path / "mcpnb.json"
    with open(marker, "r+b") as f:
        f.truncate(1 << 34)  # sparse: 16 GB that read_text would try to hold
    with pytest.raises(HistoryFileError, match="too large") as caught:
        History.open(path)
    assert "\n" not in str(caught.value)


PARTS = {
    "a named pipe": os.mkfifo,
    "a directory": lambda part: part.mkdir(),
    "a link to a device": lambda part: part.symlink_to("/dev/zero"),
    "a link outside the folder": lambda part: part.symlink_to(part.parent.parent / "stolen.arrow"),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", list(PARTS))
def test_a_part_that_is_not_a_regular_file_is_left_out_in_one_line(tmp_path, kind):
    path = history_file_with_calls(tmp_path)
    real = sorted(path.glob("*.arrow"))[0]
    (tmp_path / "stolen.arrow").write_bytes(real.read_bytes())
    session, stream = real.name.split(".")[:2]
    for name in (f"{session}.{stream}.000000000100-000000000199.arrow", f"{session}.{stream}.fates000009.arrow"):
        PARTS[kind](path / name)
    with pytest.warns(mcp_nb.HistoryFileWarning) as said:
        back = History.open(path)
        assert back.to_frame()["call_id"].tolist() == [0, 1, 2]
        assert len(back) == 3
    messages = [str(w.message) for w in said]
    assert len(messages) == 1 and "\n" not in messages[0] and "not a regular file" in messages[0], messages
    # the kernel writing to it goes on writing, and reads its own calls back
    history = History()
    history.keep(path)
    history.record(outcome(3))
    assert history.sync()
    with pytest.warns(mcp_nb.HistoryFileWarning):
        assert sorted(History.open(path).to_frame()["call_id"]) == [0, 1, 2, 3]
    history.close()


def test_a_part_whose_rows_disagree_with_its_name_is_left_out(tmp_path):
    path = history_file_with_calls(tmp_path)
    real = sorted(path.glob("*.arrow"))[0]
    session, stream = real.name.split(".")[:2]
    (path / f"{session}.{stream}.000000000100-000000000999.arrow").write_bytes(real.read_bytes())  # 3 rows named 900
    with pytest.warns(mcp_nb.HistoryFileWarning, match="3 rows where its name says 900"):
        assert History.open(path).to_frame()["call_id"].tolist() == [0, 1, 2]
