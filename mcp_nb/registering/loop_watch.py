"""The event loop's health: an async handler that does not await blocks every call.

Each engine has one watch (its registry's): the probe of an async handler names the
handler on it while a step runs, and a caller waiting from another thread reads it to say
who made it wait.
"""

from __future__ import annotations

import threading
import time
import warnings
from typing import Any

from mcp_nb.records.trace import ServerLog, ServerTrace
from mcp_nb.views.theme import BLOCKED_FOR

BLOCKING_AFTER_S = 0.1  # asyncio's own debug threshold for a slow step


class LoopWatch:
    """Which async handler holds mcp_nb's loop right now, and for how long, readable from any thread."""

    def __init__(self) -> None:
        self.label: str | None = None
        self.since = 0.0
        self._warned: set[str] = set()
        self._lock = threading.Lock()

    def forget(self) -> None:
        """Warn afresh (a new server has new handlers, perhaps of the same names)."""
        with self._lock:
            self._warned.clear()

    def blocker(self, at_least: float = BLOCKING_AFTER_S) -> tuple[str, float] | None:
        """(handler, seconds) when one async handler has held the loop for `at_least` seconds."""
        label, since = self.label, self.since
        if label is None:
            return None
        held = time.perf_counter() - since
        return (label, held) if held >= at_least else None

    def blocked(self, label: str, seconds: float, trace: ServerTrace | None, where: Any = None) -> None:
        message = (
            f"async {label} blocked mcp_nb's " + BLOCKED_FOR.format(seconds=seconds) + ": every other call "
            "and every deadline waited. Make it a plain `def` (mcp_nb then runs it in a worker thread), or move "
            "the blocking work into `await asyncio.to_thread(...)`."
        )
        if trace is not None:
            trace.add(ServerLog(level="WARNING", logger="mcp_nb", message=message, at=time.time()))
            if trace.held is None or seconds > trace.held[1]:
                trace.held = (label, seconds)
        with self._lock:
            first = label not in self._warned
            self._warned.add(label)
        if first:
            # Pointed at the handler's own `def`, so the warning shows the user's code.
            code = getattr(where, "__code__", None)
            if code is not None:
                module = getattr(where, "__module__", None) or "__main__"
                warnings.warn_explicit(message, LoopBlockedWarning, code.co_filename, code.co_firstlineno, module=module)
            else:
                warnings.warn(message, LoopBlockedWarning, stacklevel=2)


class LoopBlockedWarning(RuntimeWarning):
    """An async handler held mcp_nb's event loop (said once per handler)."""
