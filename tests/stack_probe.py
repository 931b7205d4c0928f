"""Python run in the middle of whatever the test does, as the garbage collector runs a finalizer.

A reader that descends into nested text by recursion (Python's json module does) uses the stack
up to the interpreter's limit before it gives up. Whatever else Python runs in that moment fails
for want of stack: the finalizer of an object the collector frees, a callback. It fails quietly
("Exception ignored in ..."), and its work is lost. Where it happens depends on when the
collector runs, so a test would catch it once in a hundred runs; here it collects at every
allocation of a container (`gc.set_threshold(1, ...)`) and runs a probe that needs a little stack, so a
reader that goes that deep is caught every time.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass
class Probe:
    ran: int = 0
    failed: int = 0


def _descend(n: int) -> int:
    return _descend(n - 1) + 1 if n else 0


@contextlib.contextmanager
def python_runs_meanwhile(frames: int = 30) -> Iterator[Probe]:
    """Run Python needing `frames` frames of stack at every collection of the youngest generation
    while the block runs; the `Probe` says how often it ran and how often it found no stack."""
    probe = Probe()

    def collecting(phase: str, info: dict[str, int]) -> None:
        if phase != "start":
            return
        probe.ran += 1
        try:
            _descend(frames)
        except RecursionError:
            probe.failed += 1

    before = gc.get_threshold()
    # Only the youngest generation at every allocation: the older ones, as usual, so that the
    # whole heap is not walked at each allocation.
    gc.set_threshold(1, 10**9, 10**9)
    gc.callbacks.append(collecting)
    try:
        yield probe
    finally:
        gc.callbacks.remove(collecting)
        gc.set_threshold(*before)


def assert_nothing_failed(probe: Probe) -> None:
    assert probe.ran > 0, "the collector never ran: the probe proves nothing"
    assert probe.failed == 0, f"Python run meanwhile found no stack {probe.failed} time(s) of {probe.ran}"
