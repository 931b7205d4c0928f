"""A call's progress while it runs: a bar with the server's message.

The view is drawn by the thread that waits for the call (`Call.wait(watch)`), never by
mcp_nb's loop thread: in a notebook that thread is the kernel's, which owns the widgets
(docs/design.md), and a widget changed there reaches the front end at once, while the
cell runs. tqdm (already the sweeps' bar) is a widget in a notebook and text in a
terminal. Nothing is drawn for a call that reports no progress.
"""

from __future__ import annotations

from typing import Any


class ProgressView:
    """The live bar of one call, made at its first progress event."""

    __slots__ = ("call", "bar", "seen")

    def __init__(self, call: Any) -> None:
        self.call = call
        self.bar: Any = None
        self.seen = 0

    def __call__(self, done: bool = False) -> None:
        trace = self.call.trace
        events = trace.progress if trace is not None else ()
        if len(events) > self.seen:
            self.seen = len(events)
            self._draw(events[-1])
        if done and self.bar is not None:
            self._close()

    def _draw(self, event: Any) -> None:
        bar = self.bar
        if bar is None:
            from tqdm.auto import tqdm

            # No rate: the server's own counts, not items this process handled.
            shape = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]" if event.total is not None else None
            bar = self.bar = tqdm(total=event.total, desc=self.call.name, bar_format=shape, leave=True)
        elif event.total != bar.total:
            bar.reset(total=event.total)  # the notebook's widget takes a new total only this way
        if event.message:
            bar.set_postfix_str(event.message, refresh=False)
        bar.n = event.progress
        bar.refresh()

    def _close(self) -> None:
        outcome = self.call.outcome
        bar = self.bar
        if outcome is not None and not outcome.ok:
            bar.set_postfix_str(f"{bar.postfix or ''} ({outcome.outcome}: {outcome.cause})".strip(), refresh=False)
        bar.close()


def watch(call: Any) -> ProgressView:
    return ProgressView(call)
