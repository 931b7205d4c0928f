"""A user's mistake or mcp_nb's own bug: what a face says in one line, and what it lets through.

Every check of mcp_nb that refuses the user's input raises a `Mistake`: `BadValue` and `BadType`
(still a ValueError and a TypeError, for whoever catches those), or one of mcp_nb's own error
classes for bad input (a cell that defines no function, a line that does not split, a cases file
that cannot be read...), which are Mistakes too. A face (the magics, the panel) says a Mistake in
one line, and nothing has changed.

Anything else is a bug and keeps its traceback, so that it can be reported: a ValueError or a
TypeError that Python raised inside mcp_nb (`None + 1`, a call with the wrong arguments), or
that a library raised. The line between the two is drawn where the error is raised, on purpose,
not guessed where it is caught.

A leaf module: every layer's checks raise these.
"""

from __future__ import annotations

import json
from typing import Any


class Mistake(Exception):
    """The user's input is wrong, and the message says how (one line)."""


class BadValue(Mistake, ValueError):
    """A value the user gave that mcp_nb refuses."""


class BadType(Mistake, TypeError):
    """A value of a kind mcp_nb cannot take where the user gave it."""



class BadJson(BadValue):
    """Text that is not JSON Python can read: why (`msg`) and where (`lineno`, `colno`, `pos`;
    None where the text is JSON but not for Python: nested too deeply, an integer too long)."""

    def __init__(self, msg: str, lineno: int | None = None, colno: int | None = None, pos: int | None = None) -> None:
        self.msg, self.lineno, self.colno, self.pos = msg, lineno, colno, pos
        super().__init__(msg if lineno is None else f"{msg} at line {lineno}, column {colno}")


def read_json(text: str | bytes) -> Any:
    """The value of JSON the user (or a file, or a server) wrote, or a `BadJson` saying why not.

    Python's own reader has three ways to refuse: a JSONDecodeError for text that is not JSON,
    a RecursionError for arrays or objects nested past the interpreter's limit, and a ValueError
    for an integer of more digits than `sys.get_int_max_str_digits()` allows. Each reader of user
    text needs all three said in one line, so they are said here once.
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise BadJson(err.msg, err.lineno, err.colno, err.pos) from None
    except RecursionError:
        raise BadJson("nested too deeply") from None
    except ValueError as err:  # an integer of more than 4300 digits (or a str that is not text)
        raise BadJson(first_line(err)) from None


def first_line(err: BaseException, named: bool = False) -> str:
    """What `err` says, in one line: the first line of its message (its type's name when it
    says nothing); with `named`, after its type's name ("OSError: ..."), for errors that are
    not mcp_nb's own and whose type tells as much as their text."""
    text = str(err).strip()
    line = text.splitlines()[0] if text else ""
    if named:
        return f"{type(err).__name__}: {line}" if line else type(err).__name__
    return line or type(err).__name__
