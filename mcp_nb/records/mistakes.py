"""A user's mistake or mcp_nb's own bug: what a face says in one line, and what it lets through.

mcp_nb's checks say what is wrong with the input by raising: its own error classes (a cell
that defines no function, a line that does not split, a cases file that cannot be read...),
or a ValueError or TypeError with a message for the user, raised by a `raise` statement in
one of its modules. A face (the magics, the panel) says those in one line, and nothing has
changed.

Anything else is a bug, and keeps its traceback so that it can be reported: a ValueError or
TypeError that Python itself raised inside mcp_nb (`None + 1`, a call with the wrong
arguments), or that a library or a patched-in function raised.
"""

from __future__ import annotations

import dis

_RAISE = dis.opmap["RAISE_VARARGS"]


def is_mistake(err: BaseException, kinds: tuple[type[BaseException], ...] = ()) -> bool:
    """Whether `err` says what is wrong with the user's input (`kinds`: the face's own error
    classes for bad input, always mistakes), rather than being a bug."""
    if kinds and isinstance(err, kinds):
        return True
    return isinstance(err, (ValueError, TypeError)) and raised_by_a_check(err)


def raised_by_a_check(err: BaseException) -> bool:
    """Whether `err` was raised by a `raise` statement of mcp_nb's own code: where it started
    (the innermost frame of its traceback; a re-raise keeps it) is an mcp_nb module, stopped
    at a `raise`, not at an operation or a call that failed."""
    tb = err.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    frame = tb.tb_frame
    module = frame.f_globals.get("__name__") or ""
    if module != "mcp_nb" and not module.startswith("mcp_nb."):
        return False
    code = frame.f_code.co_code
    return 0 <= tb.tb_lasti < len(code) and code[tb.tb_lasti] == _RAISE
