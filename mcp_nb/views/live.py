"""A call's progress while it runs: a bar with the server's message.

The view is drawn by the thread that waits for the call (`Call.wait(watch)`), never by
mcp_nb's loop thread: in a notebook that thread is the kernel's, which owns the widgets
(docs/design.md), and a widget changed there reaches the front end at once, while the
cell runs. tqdm (already the sweeps' bar) is a widget in a notebook and text in a
terminal. Nothing is drawn for a call that reports no progress.

A server may send any number as its progress or total (NaN, infinity, a negative count,
10**400): the record keeps what was sent, and the bar draws what it can (`countable`).
Whatever goes wrong in drawing, the view says so once in the log and stops drawing: a
view never makes the call that it shows fail.

In a notebook a widget's output also stores a plain-text copy of the bar, which is what a
static viewer (GitHub, nbviewer, the docs site) shows. tqdm writes it once, when the bar
appears (`0%|`); `progress_bar` shows the widget under a display id and `close_bar` shows it
again there, so the stored copy is the bar's final state.
"""

from __future__ import annotations

import logging
import math
import sys
from collections.abc import Callable
from typing import Any

from mcp_nb import libraries as lib
from mcp_nb.mistakes import one_line

log = logging.getLogger(__name__)


# IPython is looked up, never imported: where it is not loaded there is no shell to show
# anything in (a script), and importing it would cost that script 25 ms to learn so. A running
# shell has loaded `IPython.display` with it (IPython.core.interactiveshell imports it).


def _shell() -> Any:
    """The running IPython shell (a kernel's, a terminal's), or None."""
    ipython = sys.modules.get("IPython")
    return None if ipython is None else ipython.get_ipython()


def _ipython_display() -> Callable[..., Any]:
    return sys.modules["IPython.display"].display


def progress_bar(**options: Any) -> Any:
    """tqdm's bar (`tqdm.auto`: a widget in a notebook, text elsewhere); close it with `close_bar`."""
    tqdm = lib.tqdm.tqdm
    notebook = sys.modules.get("tqdm.notebook")  # tqdm.auto loads it only where it chose it
    if notebook is None or not issubclass(tqdm, notebook.tqdm_notebook):
        return tqdm(**options)
    bar = tqdm(display=False, **options)
    bar.mcp_nb_shown = _ipython_display()(bar.container, display_id=True)
    return bar


def close_bar(bar: Any) -> None:
    """Close a bar of `progress_bar`; in a notebook, its output's plain text becomes its final state."""
    bar.close()
    shown = getattr(bar, "mcp_nb_shown", None)
    if shown is not None:
        shown.update(bar.container)


def countable(value: Any) -> float | None:
    """`value` as a count a bar can draw (finite, not negative; an int stays one), or None."""
    if type(value) is int:
        return value if 0 <= value < 2**63 else None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) and number >= 0 else None


class ProgressView:
    """The live bar of one call, made at its first progress event."""

    __slots__ = ("call", "bar", "seen", "broken")

    def __init__(self, call: Any) -> None:
        self.call = call
        self.bar: Any = None
        self.seen = 0
        self.broken = False

    def __call__(self, done: bool = False) -> None:
        if self.broken:
            return
        try:
            trace = self.call.trace
            events = trace.progress if trace is not None else ()
            if len(events) > self.seen:
                self.seen = len(events)
                self._draw(events[-1])
            if done and self.bar is not None:
                self._close()
        except Exception:  # a bug of the view's, or of tqdm's: the call goes on, undrawn
            self.broken = True
            log.exception("the progress bar of call #%s stopped drawing", getattr(self.call, "id", "?"))

    def _draw(self, event: Any) -> None:
        bar = self.bar
        total = countable(event.total) or None  # a total of 0 is no total
        if bar is None:
            # No rate: the server's own counts, not items this process handled.
            shape = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]" if total is not None else None
            bar = self.bar = progress_bar(total=total, desc=self.call.name, bar_format=shape, leave=True)
        elif total != bar.total:
            bar.reset(total=total)  # the notebook's widget takes a new total only this way
        if event.message:
            bar.set_postfix_str(one_line(event.message, 200), refresh=False)  # the server's words: no escapes reach the terminal
        progress = countable(event.progress)
        if progress is not None:
            bar.n = progress
        bar.refresh()

    def _close(self) -> None:
        outcome = self.call.outcome
        bar = self.bar
        if outcome is not None and not outcome.ok:
            bar.set_postfix_str(f"{bar.postfix or ''} ({outcome.outcome}: {outcome.cause})".strip(), refresh=False)
        close_bar(bar)


def watch(call: Any) -> ProgressView:
    return ProgressView(call)


def show(thing: Any) -> None:
    """Show `thing` now, before the running code goes on waiting: its card in a notebook, its
    text elsewhere (a script, a terminal)."""
    if _shell() is not None:
        _ipython_display()(thing)
    else:
        print(repr(thing), flush=True)


def live(thing: Any) -> None:
    """In a running kernel, show `thing` (a `Watch`) now and again after each of its updates:
    the output updates in place, whichever thread the update comes on."""
    if getattr(_shell(), "kernel", None) is None:
        return
    handle = _ipython_display()(thing, display_id=True)
    thing.on_update(lambda updated: handle.update(updated))
