"""In real kernels: a kernel killed (SIGKILL) in the middle of a sweep loses at most the calls of its
last second, and what it wrote reads back whole; a new kernel reopens the file, and the panel's
History tab shows every session's calls."""

from __future__ import annotations

import os
import queue
import signal
import time
from pathlib import Path

import pytest

import mcp_nb
from mcp_nb.records.writer import WRITE_AT

ROOT = Path(__file__).resolve().parent.parent


def start():
    from kernels import start_new_kernel  # over ipc: no TCP port to lose

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return start_new_kernel(env=env)


def run(client, code: str, limit: float = 120) -> str:
    """Execute `code`; what it printed (an error fails the test)."""
    sent = client.execute(code)
    printed, deadline = [], time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            message = client.get_iopub_msg(timeout=1)
        except queue.Empty:
            continue
        if message["parent_header"].get("msg_id") != sent:
            continue
        if message["msg_type"] == "stream":
            printed.append(message["content"]["text"])
        if message["msg_type"] == "error":
            raise AssertionError("\n".join(message["content"]["traceback"][-5:]))
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            return "".join(printed)
    raise AssertionError(f"the cell did not finish within {limit} s")


SWEEP = """
import os, time, mcp_nb
LOG = os.open({log!r}, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

@mcp_nb.tool()
{kind}def work(x: int) -> int:
    os.write(LOG, f"{{x}} {{time.time()!r}}\\n".encode())  # the call ran: said before it is recorded
    return x

%config McpMagics.history_file = {path!r}
"""


@pytest.mark.serial
@pytest.mark.parametrize("kind", ["", "async "], ids=["sync tool", "async tool"])
def test_a_kernel_killed_mid_sweep_loses_at_most_its_last_second(tmp_path, kind):
    # An async tool's sweep runs wholly on mcp_nb's loop, back to back: the writer's thread gets the
    # GIL only when the loop lends it (records/writer.py), and the bound must hold all the same.
    path, log = tmp_path / "calls.mcpnb", tmp_path / "ran.log"
    manager, client = start()
    try:
        run(client, "%load_ext mcp_nb\n" + SWEEP.format(log=str(log), path=str(path), kind=kind))
        # Far more calls than run before the kill (a few thousand a second), and few enough that the
        # sweep starts at once: it prepares every call before the first runs (9 us each).
        client.execute("mcp_nb.sweep('work', [{'x': x} for x in range(200_000)], concurrency=8, progress=False)")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # well into the sweep: thousands of calls, several parts written
            time.sleep(0.5)
            if log.exists() and log.stat().st_size > 200_000 and len(list(path.glob("*.arrow"))) >= 3:
                break
        time.sleep(1.0)
        killed_at = time.time()
        os.kill(manager.provisioner.process.pid, signal.SIGKILL)
        manager.provisioner.process.wait(30)
    finally:
        client.stop_channels()
        manager.cleanup_resources()
    ran = {}
    for line in log.read_text().splitlines():
        x, at = line.split()
        ran[int(x)] = float(at)
    with _no_warnings():
        frame = mcp_nb.History.open(path).to_frame()  # whole: no part cut short, no error
    kept = frame["arguments"].map(lambda a: a["x"]).tolist()
    assert len(kept) == len(set(kept)) and set(kept) <= set(ran)  # every row written is a call that ran, once
    assert (frame["outcome"] == "result").all() and frame["session"].nunique() == 1
    lost = set(ran) - set(kept)
    last_second = [x for x, at in ran.items() if at >= killed_at - 1.0]
    print(f"{len(ran)} calls ran, {len(kept)} kept, {len(lost)} lost; {len(last_second)} ran in the last second")
    assert len(kept) > 3 * WRITE_AT
    assert len(lost) <= min(len(last_second), 1024)
    assert all(ran[x] >= killed_at - 1.0 for x in lost), sorted(killed_at - ran[x] for x in lost)[-5:]


class _no_warnings:
    def __enter__(self):
        import warnings

        self._caught = warnings.catch_warnings(record=True)
        self.said = self._caught.__enter__()
        warnings.simplefilter("always")

    def __exit__(self, *exc):
        self._caught.__exit__(*exc)
        assert not [str(w.message) for w in self.said if issubclass(w.category, mcp_nb.HistoryFileWarning)]


PANEL = """
import mcp_nb
panel = mcp_nb.panel(history={path!r})
panel.tabs.selected_index = 1  # the History tab, as a click on it
tab = panel.history_tab
print(len(tab.calls.options), "|", panel.tabs.get_title(1), "|", tab.summary.value.count("mcp-nb") >= 0)
print(tab.counts.value.count("<tr>"))
tab.pinning.value = True
tab.calls.value = tab.calls.options[0][1]   # the newest call: pinned
tab.calls.value = tab.calls.options[-1][1]  # the oldest shown: pinned too
tab.cases_path.value = {cases!r}
tab.save_pinned()
print(tab.cases_status.value)
"""


def test_a_new_kernel_reopens_the_file_and_the_panel_shows_every_session(tmp_path):  # nothing timed: in the parallel pass
    path = tmp_path / "calls.mcpnb"
    for session in range(2):  # two kernels, one after the other, as after "Restart kernel and run all"
        manager, client = start()
        try:
            run(client, f"%load_ext mcp_nb\n%config McpMagics.history_file = {str(path)!r}\nimport mcp_nb")
            run(client, "@mcp_nb.tool()\ndef add(a: int, b: int) -> int:\n    return a + b\n")
            run(
                client,
                f"for i in range({3 + session}):\n    mcp_nb.call('add', {{'a': i, 'b': 1}})\nmcp_nb.call('add', {{'a': 'x'}})",
            )
        finally:
            client.stop_channels()
            manager.shutdown_kernel(now=False)  # a kernel shut down writes what it holds
    manager, client = start()
    try:
        run(client, "%load_ext mcp_nb\nimport mcp_nb")
        summary = run(
            client,
            f"side = mcp_nb.History.open({str(path)!r}).summary(by='session')\nprint(side.shape, list(side.columns.levels[0]))",
        )
        assert summary.startswith("(1, 14)")
        printed = run(client, PANEL.format(path=str(path), cases=str(tmp_path / "cases.json")))
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    options, title, _ = printed.splitlines()[0].split(" | ")
    assert options == "9" and title == "History (9)"  # 4 calls of the first kernel, 5 of the second
    assert "saved 2 cases" in printed
    assert (tmp_path / "cases.json").exists()
