"""The kernel's thread owns every widget update of the panel.

Calls end on mcp_nb's loop thread, the history's rebuild waits on a timer, registrations
may come from any thread: whatever brings an update, the widgets change on the kernel's
thread only. Checked in a real kernel (through jupyter_client), and under stress with a
thread that runs an event loop the way ipykernel's main thread does.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from pathlib import Path

import ipywidgets as w
import pytest
from helpers import wait_until
from test_panel_failures import coherent

import mcp_nb
from mcp_nb.widgets import Panel
from mcp_nb.widgets.callbacks import KernelThread
from mcp_nb.widgets.history_tab import DEBOUNCE_S

ROOT = Path(__file__).resolve().parents[1]


class FakeKernelThread(threading.Thread):
    """A thread running an asyncio loop, as ipykernel's main thread does between cells."""

    def __init__(self) -> None:
        super().__init__(name="kernel", daemon=True)
        self.loop = asyncio.new_event_loop()

    def run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def do(self, fn, *args, timeout: float = 30.0):
        """Run `fn(*args)` on this thread, as a cell would, and wait for its result."""

        async def cell():
            return fn(*args)

        return asyncio.run_coroutine_threadsafe(cell(), self.loop).result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.join(5)
        self.loop.close()


@pytest.fixture
def kernel():
    thread = FakeKernelThread()
    thread.start()
    yield thread
    thread.stop()


@pytest.fixture
def changes(monkeypatch):
    """Every widget trait change, with the thread that made it."""
    seen: list[tuple[str, str, str]] = []
    original = w.Widget.notify_change

    def spy(self, change):
        seen.append((threading.current_thread().name, type(self).__name__, change["name"]))
        return original(self, change)

    monkeypatch.setattr(w.Widget, "notify_change", spy)
    return seen


def test_outside_a_kernel_updates_run_at_once_one_at_a_time():
    thread = KernelThread.of_kernel()
    assert thread.loop is None and thread.here()  # pytest runs no kernel: nothing to hop onto
    order = []
    thread.hand_over(order.append, 1)
    assert order == [1]


def test_many_calls_ending_while_the_kernel_thread_switches_entries(kernel, changes):
    """Stress: calls from four threads and from the panel end while the kernel's thread keeps
    choosing entries; no update is lost, garbled, or made from another thread."""

    @mcp_nb.tool()
    def fast(n: int = 0) -> str:
        return f"fast {n}"

    @mcp_nb.tool()
    def other(text: str = "x") -> str:
        return f"other {text}"

    panel: Panel = kernel.do(lambda: Panel(mcp_nb.engine(), kernel_thread=KernelThread(kernel.loop)))
    kernel.do(lambda: setattr(panel.tabs, "selected_index", 1))  # the history tab rebuilds as calls end
    del changes[:]

    def worker(k: int) -> None:
        for n in range(40):
            mcp_nb.call("fast", {"n": 1000 * k + n})

    workers = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    panel_calls = []

    def switch_and_call(i: int) -> None:
        panel.select("tool", "fast" if i % 2 else "other")
        if panel._call is None:
            panel._entries[panel._current].form.fields[("n" if i % 2 else "text")].widget.value = str(i)
            future = panel.call()
            if future is not None:
                panel_calls.append(future)

    for t in workers:
        t.start()
    for i in range(300):
        kernel.do(switch_and_call, i)
    for t in workers:
        t.join(30)
    for future in panel_calls:
        future.result(10)

    calls = len(mcp_nb.history())
    assert calls == 160 + len(panel_calls) and len(panel_calls) > 5
    # Everything handed over has run once the kernel's thread is idle again.
    assert wait_until(lambda: kernel.do(lambda: panel.tabs.titles[1]) == f"History ({calls})", 10 + DEBOUNCE_S)
    assert wait_until(lambda: kernel.do(lambda: panel._call is None and f"{calls} calls" in panel.history_tab.summary.value))

    def final_state():
        coherent(panel)
        last = panel_calls[-1].result()
        assert panel._shown is last and f"#{last.call_id}" in panel.outcome.value
        assert panel.failure.value == ""
        rows = panel.history_tab.calls.options
        assert len(rows) == 50 and f"#{mcp_nb.history().to_frame()['call_id'].iloc[-1]}" in rows[0][0]
        return True

    assert kernel.do(final_state)
    threads = {name for name, _, _ in changes}
    assert threads == {"kernel"}, sorted(threads)
    kernel.do(panel.close)


KERNEL_SESSION = """
import asyncio, json, threading, time
import ipywidgets as w
import mcp_nb
from mcp_nb.widgets import show

@mcp_nb.tool()
def fast(n: int = 0) -> str:
    return f"fast {n}"

@mcp_nb.tool()
def slow(seconds: float = 0.3) -> str:
    time.sleep(seconds)
    return "slow"

panel = show()
seen = []
_notify = w.Widget.notify_change
def _spy(self, change):
    seen.append(threading.current_thread().name)
    return _notify(self, change)
w.Widget.notify_change = _spy
panel.tabs.selected_index = 1
"""

KERNEL_CALLS = """
def others():
    for n in range(30):
        mcp_nb.call("fast", {"n": n})
    def late() -> str:
        return "late"
    mcp_nb.tool()(late)  # a registration from another thread
background = threading.Thread(target=others, name="background")
background.start()
panel.select("tool", "slow")
panel.call()
"""

KERNEL_REPORT = """
background.join()
await asyncio.sleep(1.5)  # the kernel's loop runs what was handed over
print(json.dumps({
    "threads": sorted(set(seen)),
    "title": panel.tabs.titles[1],
    "calls": len(mcp_nb.history()),
    "listed": ("tool", "late") in [v for _, v in panel.picker.options],
    "idle": panel._call is None and panel.cancel_button.layout.display == "none",
    "main": threading.main_thread().name,
}))
"""


def test_in_a_real_kernel_every_widget_changes_on_the_kernels_thread():
    pytest.importorskip("ipykernel")
    from kernels import start_new_kernel  # over ipc: no TCP port to lose

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    km, kc = start_new_kernel(kernel_name="python3", env=env)
    try:

        def run(code: str) -> str:
            reply = kc.execute_interactive(code, timeout=60, output_hook=lambda msg: out.append(msg))
            assert reply["content"]["status"] == "ok", reply["content"]
            return "".join(m["content"].get("text", "") for m in out if m["msg_type"] == "stream")

        out: list = []
        run("%load_ext mcp_nb")
        run(KERNEL_SESSION)
        run(KERNEL_CALLS)
        out.clear()
        report = json.loads(run(KERNEL_REPORT).strip().splitlines()[-1])
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert report["threads"] == [report["main"]], report
    assert report["calls"] == 31 and report["title"] == "History (31)", report
    assert report["listed"] and report["idle"], report
