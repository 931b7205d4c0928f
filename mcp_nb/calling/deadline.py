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


class Deadline:
    """One call's deadline: when it falls (loop time), the task it cancels then (None once the
    call ended, or the deadline fell), whether it fell (`expired`), and whether its clock stands
    still (`held`: the call waits for a person's answer)."""

    __slots__ = ("when", "task", "expired", "held")

    def __init__(self, when: float, task: asyncio.Task[object]) -> None:
        self.when = when
        self.task: asyncio.Task[object] | None = task
        self.expired = False
        self.held = False


class Deadlines:
    """The deadlines of the calls on one loop. The heap holds (when, seq, deadline): ordered by
    when it falls, then by when it was set (`seq`, unique, so two deadlines are never compared)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._heap: list[tuple[float, int, Deadline]] = []
        self._seq = itertools.count()
        self._timer: asyncio.TimerHandle | None = None
        self._armed_for = float("inf")
        self._ended = 0  # deadlines in the heap whose call already ended

    def start(self, seconds: float, task: asyncio.Task[object]) -> Deadline:
        """Cancel `task` when `seconds` have passed, unless `end(deadline)` comes first."""
        when = self._loop.time() + seconds
        deadline = Deadline(when, task)
        heapq.heappush(self._heap, (when, next(self._seq), deadline))
        if when < self._armed_for:
            self._arm(when)
        return deadline

    def hold(self, deadline: Deadline) -> float | None:
        """Stop `deadline`'s clock (a call waiting for a person's answer); returns the seconds it had
        left, for `resume`. None when it already expired or ended."""
        if deadline.task is None or deadline.held:
            return None
        # Rare (one per question a server asks), so taking it out of the heap may cost a rebuild.
        self._heap = [item for item in self._heap if item[2] is not deadline]
        heapq.heapify(self._heap)
        deadline.held = True  # out of the heap until `resume`
        return max(deadline.when - self._loop.time(), 0.0)

    def resume(self, deadline: Deadline, left: float) -> None:
        """Start `deadline`'s clock again with the `left` seconds `hold` returned."""
        if deadline.task is None or not deadline.held:
            return
        when = deadline.when = self._loop.time() + left
        deadline.held = False
        heapq.heappush(self._heap, (when, next(self._seq), deadline))
        if when < self._armed_for:
            self._arm(when)

    def restart(self, deadline: Deadline, seconds: float, ceiling: float) -> Deadline | None:
        """Move a running call's deadline to `seconds` from now, never past `ceiling` (loop time).

        The old deadline is ended and a new one pushed (the heap is never re-ordered in place).
        Returns the new deadline, or None when the old one already fell or ended (a deadline
        that has expired is not brought back by a progress event that came too late), or is
        held (`hold`: the call waits for a person's answer, and its clock stands still).
        """
        task = deadline.task
        if task is None or deadline.held:
            return None  # fell, ended, or held while the call waits for a person: its clock stands still
        when = min(self._loop.time() + seconds, ceiling)
        self.end(deadline)
        moved = Deadline(when, task)
        heapq.heappush(self._heap, (when, next(self._seq), moved))
        if when < self._armed_for:
            self._arm(when)
        return moved

    def end(self, deadline: Deadline) -> None:
        if deadline.task is None:  # the timer already took it out
            return
        deadline.task = None
        if deadline.held:  # so not in the heap
            return
        self._ended += 1
        # Keep the heap to about the calls still running: rebuild it when most entries are over.
        if self._ended > 512 and self._ended * 2 > len(self._heap):
            self._heap = [item for item in self._heap if item[2].task is not None]
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
        while heap and heap[0][0] <= now:
            deadline = heapq.heappop(heap)[2]
            task = deadline.task
            if task is None:
                self._ended = max(0, self._ended - 1)
            else:
                deadline.expired = True
                deadline.task = None
                task.cancel()
        if heap:
            self._arm(heap[0][0])
