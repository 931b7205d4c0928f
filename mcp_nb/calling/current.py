"""The call whose handler is running now, if any: how a tool that calls tools is seen.

Set by `Call` around its request, read by the engine (a nested call's depth and parent)
and by a connection (an outside server's log lines filed under the call that caused them).
A module of its own so that calls and connections both read it without importing each other.
"""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the call's module imports this one: only a type checker reads that one from here
    from mcp_nb.calling.call import Call

CURRENT_CALL: contextvars.ContextVar[Call | None] = contextvars.ContextVar("mcp_nb_call", default=None)
