"""Every way into the panel: a callback runs on the kernel's thread, and a failure shows.

Widget callbacks (a click, a choice) arrive on the kernel's thread, but a panel also
hears from mcp_nb's loop thread (a call's done-callback, the history's listener) and
from timers. `KernelThread.hand_over` moves every one of them onto the kernel's thread,
so the widgets change on one thread only (docs/panel.md, "Threads", has the measurements
behind this choice).

`Guard` wraps every callback: an exception is shown in the panel (one line, the
traceback behind a disclosure) instead of reaching only the browser's log console, and
the panel is put back in step with its own state. A failure inside a callback the panel
itself set off (a widget it rewrote) belongs to the outer one, which handles it whole.
"""

from __future__ import annotations

import asyncio
import html
import logging
import math
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from mcp_nb.views.theme import MONO, MUTED
from mcp_nb.widgets.style import PROBLEM_BOX

log = logging.getLogger(__name__)


def running_kernel() -> Any:
    """The ipykernel kernel this process runs, or None (a script, pytest, a terminal IPython).

    Looked up, not imported: a kernel has loaded ipykernel before any cell runs, and where it
    has not there is no kernel to find (importing it would cost 70 ms to learn that)."""
    kernelbase = sys.modules.get("ipykernel.kernelbase")
    if kernelbase is None or not kernelbase.Kernel.initialized():
        return None
    return kernelbase.Kernel.instance()


def _kernel_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop of the kernel's main thread, where ipykernel runs every cell and every
    message from the front end; None outside a kernel."""
    io_loop = getattr(running_kernel(), "io_loop", None)
    return getattr(io_loop, "asyncio_loop", None)


class KernelThread:
    """Where the widget updates of a panel run.

    In a kernel: on its main thread, through its event loop. While a cell runs, what is
    handed over waits for the cell to end (or to `await`), as clicks from the front end
    do. Outside a kernel (a script, pytest) there is no such thread: updates run at
    once on the thread that brings them, one at a time under `lock`.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.loop = loop
        self.lock = threading.RLock()

    @classmethod
    def of_kernel(cls) -> KernelThread:
        return cls(_kernel_loop())

    def here(self) -> bool:
        """Whether a widget may be changed from the calling thread now."""
        if self.loop is None:
            return True
        try:
            return asyncio.get_running_loop() is self.loop
        except RuntimeError:  # no loop runs in this thread
            return False

    def hand_over(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run `fn(*args)` on the kernel's thread: now when called there, else as soon as it is free."""
        if self.here():
            with self.lock:
                fn(*args)
            return
        try:
            self.loop.call_soon_threadsafe(self._run, fn, args)
        except RuntimeError:  # the loop is closed: the kernel is shutting down, nobody is watching
            log.debug("the kernel's loop is closed; a widget update was dropped")

    def _run(self, fn: Callable[..., Any], args: tuple) -> None:
        with self.lock:
            fn(*args)

    def later(self, delay: float, fn: Callable[[], Any]) -> Callable[[], None]:
        """Run `fn()` on the kernel's thread after `delay` seconds; returns a function that cancels it."""
        if self.loop is None:
            timer = threading.Timer(delay, self.hand_over, (fn,))
            timer.daemon = True
            timer.start()
            return timer.cancel
        handle: list[asyncio.TimerHandle] = []
        cancelled = threading.Event()

        def arm() -> None:
            if not cancelled.is_set():
                handle.append(self.loop.call_later(delay, self._run, fn, ()))

        def cancel() -> None:
            cancelled.set()
            self.hand_over(lambda: [h.cancel() for h in handle])

        self.hand_over(arm)
        return cancel


# A click on a button can reach the kernel before the changes made in the fields just before it,
# two ways: ipywidgets sends a widget's values one at a time (the next once the kernel has
# answered the last) but a click at once (ipywidgets issue 252 on GitHub); and JupyterLab sends a
# widget's messages to a subshell of the kernel, or to its main shell while that subshell is
# being set up, so a click heard on a subshell while a cell runs is not behind a change queued
# on the main shell. Each change still on its way comes within a round trip of the one before.
SETTLE_S = 0.5
WAITED_S = 0.1  # a click handed over to the kernel's thread later than this had to wait for it


class Settle:
    """When the kernel last heard the user change a value, and the clicks that wait for the
    changes that may still be on their way.

    A click heard within SETTLE_S of a change, or one that waited for the kernel's thread (a
    cell was running), runs once no change has come for SETTLE_S; any other runs at once.
    Outside a kernel there is no front end whose changes could be behind a click: at once.
    """

    def __init__(self, thread: KernelThread) -> None:
        self.thread = thread
        self.last_edit = -math.inf
        self._waiting: dict[object, Callable[[], None]] = {}  # a click waiting, by button: its cancel

    def edited(self, _change: object = None) -> None:
        """A value changed (a widget observer, on whatever thread heard it)."""
        self.last_edit = time.monotonic()

    def watch(self, *widgets: Any, names: str = "value") -> None:
        """Count every change of these widgets' `names` as an edit."""
        for widget in widgets:
            widget.observe(self.edited, names)

    def stamping(self, what: str, fn: Callable[..., Any]) -> Callable[..., None]:
        """A form's callback wrapper (`Form(schema, settle.stamping)`): each change is an edit,
        and its callback runs on the kernel's thread (JupyterLab may deliver it on a subshell's)."""

        def stamped(*args: Any) -> None:
            self.edited()
            self.thread.hand_over(fn, *args)

        return stamped

    def click(
        self,
        heard: float | None,
        fn: Callable[[], Any],
        key: object,
        rerun: Callable[[Callable[[], None]], None] | None = None,
    ) -> None:
        """On the kernel's thread: run `fn()` for a click the kernel heard at `heard`, now or once
        the changes behind it are in. `key`: the button (a second click meanwhile is the same
        click). `rerun(again)` runs the check again when the wait is over (a guard's `run`)."""
        if key in self._waiting:
            return
        now = time.monotonic()
        waited = heard is not None and now - heard > WAITED_S
        wait = max(self.last_edit, now if waited else -math.inf) + SETTLE_S - now
        if wait <= 0 or self.thread.loop is None:
            fn()
            return

        def again() -> None:
            self._waiting.pop(key, None)
            self.click(None, fn, key, rerun)

        self._waiting[key] = self.thread.later(wait, (lambda: rerun(again)) if rerun is not None else again)


class Guard:
    """The one wrapper of every callback of a panel: hand over to the kernel's thread, run,
    and show whatever it raises.

    `recover()` runs after a failure, to put the widgets back in step with the panel's
    state; `closed()` says the panel is gone (a late callback then does nothing).
    """

    def __init__(
        self,
        thread: KernelThread,
        view: FailureView,
        recover: Callable[[], None],
        closed: Callable[[], bool],
    ) -> None:
        self.thread = thread
        self.view = view
        self.recover = recover
        self.closed = closed
        self.depth = 0
        self.settle = Settle(thread)  # when the user last changed a value; the clicks that wait for it

    def __call__(
        self, what: str, fn: Callable[..., Any], user: bool = True, edit: bool = True, heard: bool = False
    ) -> Callable[..., None]:
        """`fn` as a callback: `what` says what it does ("choosing an entry") when it fails.

        `user`: it answers something the user did, so once it succeeds, an earlier
        failure on screen is out of date. `edit`: what the user did changed a value (typing,
        choosing), not a click: `settle` hears of it. `heard`: `fn` is given first the time
        the kernel heard the callback, taken on the thread the message came in on (JupyterLab
        sends a widget's messages to a subshell of the kernel where it has one).
        """

        def callback(*args: Any) -> None:
            now = time.monotonic()
            if user and edit:
                self.settle.last_edit = now
            self.thread.hand_over(self.run, what, fn, (now, *args) if heard else args, user)

        callback.__name__ = getattr(fn, "__name__", "callback")
        return callback

    def settled(self, what: str, fn: Callable[[], Any]) -> Callable[..., None]:
        """A button's callback: `fn()`, guarded, with what the fields show (see `Settle`)."""

        def clicked(heard: float, *_button: Any) -> None:
            self.settle.click(heard, fn, clicked, lambda again: self.run(what, again, (), True))

        return self(what, clicked, edit=False, heard=True)

    def enter(self, what: str, fn: Callable[..., Any], *args: Any) -> None:
        """From any thread: run `fn(*args)` on the kernel's thread, guarded (a listener's way in)."""
        self.thread.hand_over(self.run, what, fn, args, False)

    def run(self, what: str, fn: Callable[..., Any], args: tuple = (), user: bool = False) -> None:
        """Run `fn(*args)` now (on the kernel's thread); show a failure instead of raising it."""
        if self.closed():
            return
        if self.depth:
            fn(*args)  # set off by an outer callback: it fails (and recovers) as a whole
            return
        self.depth += 1
        try:
            fn(*args)
        except Exception as err:  # noqa: BLE001  shown in the panel: that is the point
            self.depth -= 1
            self._failed(what, err)
        else:
            self.depth -= 1
            if user:
                self.view.clear()

    def _failed(self, what: str, err: Exception) -> None:
        log.debug("the panel failed while %s", what, exc_info=err)
        self.view.show(what, err)
        self.depth += 1  # what recovering rewrites must not read as the user's doing
        try:
            self.recover()
        except Exception as again:  # noqa: BLE001
            log.debug("putting the panel back in step failed too", exc_info=again)
            self.view.show(what, err, again)
        finally:
            self.depth -= 1


class FailureView:
    """One line saying what failed, with the traceback behind a disclosure."""

    def __init__(self, widget) -> None:
        self.widget = widget
        self.last: Exception | None = None

    def show(self, what: str, err: Exception, also: Exception | None = None) -> None:
        self.last = err
        self.widget.value = failure_html(what, err, also)

    def clear(self) -> None:
        if self.last is not None:
            self.last = None
            self.widget.value = ""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def failure_html(what: str, err: BaseException, also: BaseException | None = None) -> str:
    trace = "".join(traceback.format_exception(err))
    if also is not None:
        trace += "\nand then, putting the panel back in step:\n" + "".join(traceback.format_exception(also))
    line = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
    return (
        f'<details class="mcp-nb-failure-box" style="{PROBLEM_BOX};padding:3px 10px;margin:2px 0 6px">'
        f'<summary style="cursor:pointer"><b>The panel failed while {_e(what)}:</b> {_e(line)}'
        f' <span style="{MUTED}">(a bug in the panel: open for the traceback)</span></summary>'
        f'<pre style="margin:4px 0;white-space:pre-wrap;{MONO};font-size:11px">{_e(trace)}</pre></details>'
    )
