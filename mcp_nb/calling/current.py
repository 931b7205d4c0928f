"""The call whose handler is running now, if any: how a tool that calls tools is seen.

Set by `Call` around its request, read by the engine (a nested call's depth and parent)
and by a connection (an outside server's log lines filed under the call that caused them).
A module of its own so that calls and connections both read it without importing each other.
"""

from __future__ import annotations

import contextvars
from typing import Any

# Holds a `calling.call.Call` (or None); typed loosely so that this module imports nothing, not
# even for a type checker: the call's module imports this one.
CURRENT_CALL: contextvars.ContextVar[Any] = contextvars.ContextVar("mcp_nb_call", default=None)
