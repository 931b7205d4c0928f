"""Deadlines for many calls, on one event-loop timer.

Every call has a deadline (30 s by default) and nearly every call finishes long
before it. A timer per call (`asyncio.timeout`, `loop.call_later`) costs a handle,
a heap push and a cancellation each time, a measurable share of a trivial in-process
call. Here a call costs a push on our own heap and one store when it ends; a single
loop timer, armed for the earliest deadline, wakes up rarely, cancels the calls
whose deadline has passed, and drops the entries of calls that already ended.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools

# An entry is [when, seq, task, expired]; task is None once the call has ended, when is None while held.
WHEN, SEQ, TASK, EXPIRED = 0, 1, 2, 3


class Deadlines:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._heap: list[list] = []
        self._seq = itertools.count()
        self._timer: asyncio.TimerHandle | None = None
        self._armed_for = float("inf")
        self._ended = 0  # entries in the heap whose call already ended

    def start(self, seconds: float, task: asyncio.Task) -> list:
        """Cancel `task` when `seconds` have passed, unless `end(entry)` comes first."""
        entry = [self._loop.time() + seconds, next(self._seq), task, False]
        heapq.heappush(self._heap, entry)
        if entry[WHEN] < self._armed_for:
            self._arm(entry[WHEN])
        return entry

    def hold(self, entry: list) -> float | None:
        """Stop `entry`'s clock (a call waiting for a person's answer); returns the seconds it had
        left, for `resume`. None when it already expired or ended."""
        if entry[TASK] is None or entry[WHEN] is None:
            return None
        left = entry[WHEN] - self._loop.time()
        # Rare (one per question a server asks), so taking it out of the heap may cost a rebuild.
        self._heap.remove(entry)
        heapq.heapify(self._heap)
        entry[WHEN] = None  # held: out of the heap until `resume`
        return max(left, 0.0)

    def resume(self, entry: list, left: float) -> None:
        """Start `entry`'s clock again with the `left` seconds `hold` returned."""
        if entry[TASK] is None or entry[WHEN] is not None:
            return
        entry[WHEN] = self._loop.time() + left
        heapq.heappush(self._heap, entry)
        if entry[WHEN] < self._armed_for:
            self._arm(entry[WHEN])

    def restart(self, entry: list, seconds: float, ceiling: float) -> list | None:
        """Move a running call's deadline to `seconds` from now, never past `ceiling` (loop time).

        The old entry is ended and a new one pushed (the heap is never re-ordered in place).
        Returns the new entry, or None when the old one already fired or ended (a deadline
        that has expired is not brought back by a progress event that came too late), or is
        held (`hold`: the call waits for a person's answer, and its clock stands still).
        """
        task = entry[TASK]
        if task is None:
            return None
        if entry[WHEN] is None:
            return None  # held while the call waits for a person: its clock stands still
        when = min(self._loop.time() + seconds, ceiling)
        self.end(entry)
        new = [when, next(self._seq), task, False]
        heapq.heappush(self._heap, new)
        if when < self._armed_for:
            self._arm(when)
        return new

    def end(self, entry: list) -> None:
        if entry[TASK] is None:  # the timer already took it out
            return
        if entry[WHEN] is None:  # held, so not in the heap
            entry[TASK] = None
            return
        entry[TASK] = None
        self._ended += 1
        # Keep the heap to about the calls still running: rebuild it when most entries are over.
        if self._ended > 512 and self._ended * 2 > len(self._heap):
            self._heap = [e for e in self._heap if e[TASK] is not None]
            heapq.heapify(self._heap)
            self._ended = 0

    def _arm(self, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._armed_for = when
        self._timer = self._loop.call_at(when, self._fire)

    def _fire(self) -> None:
        self._timer = None
        self._armed_for = float("inf")
        now = self._loop.time()
        heap = self._heap
        while heap and heap[0][WHEN] <= now:
            entry = heapq.heappop(heap)
            task = entry[TASK]
            if task is None:
                self._ended = max(0, self._ended - 1)
            else:
                entry[EXPIRED] = True
                entry[TASK] = None
                task.cancel()
        if heap:
            self._arm(heap[0][WHEN])
