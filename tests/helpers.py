"""Small helpers shared by the test modules (tests/ is on sys.path under pytest)."""

import time


def wait_until(predicate, limit: float = 10.0) -> bool:
    """Poll `predicate` until it holds or `limit` seconds pass: for things that happen on
    mcp_nb's loop thread or a worker thread, never for timing assertions."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return False
