"""Imports the SDK's client makes lazily on the first tool result, done ahead of time."""

from __future__ import annotations

import contextlib
import threading

_warmed = threading.Event()


def warm_up_in_background() -> None:
    """Import what the SDK's client imports lazily on the first tool result.

    `jsonschema` (with its URI grammar) takes about a second to import; left lazy, that
    second lands inside the first call of every kernel and skews its duration. Done
    once, in a thread, while the user is still writing cells.
    """
    if _warmed.is_set():
        return
    _warmed.set()

    def warm() -> None:
        with contextlib.suppress(Exception):
            import jsonschema  # noqa: F401
            import jsonschema.exceptions  # noqa: F401

    threading.Thread(target=warm, name="mcp_nb-warm-up", daemon=True).start()
