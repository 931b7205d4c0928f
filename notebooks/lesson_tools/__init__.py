"""What the course's notebooks need besides the lesson: checks, hints, and the plumbing of a server or a process.

A notebook imports it from its own folder (the kernel's working folder), so it reads what the
lesson is about and leaves the rest here:

    from lesson_tools import hints, require, planted_bug

- `checks`: what an exercise's check needs beyond `mcp_nb.expect` and `mcp_nb.check_prediction`
  (a message that says a title is not in the catalog, a planted bug, bounds read from a schema, a
  prediction that is not about an Outcome);
- `hints`: the advice of every exercise, picked by how the call ended, kept out of the check
  cells, where a learner would read it before answering;
- `wire`: the Python SDK's Streamable HTTP server on 127.0.0.1 behind a token (notebook 07);
- `runs`: a pytest run and its JUnit report (notebook 09), a Python process in the background (06);
- `tap`: the JSON-RPC messages between a client and a server, as they pass (the primer).

Nothing here is mcp_nb's API: it is this course's, and a course of your own need not use it.
"""

from lesson_tools.checks import (
    CheckFailed,
    answered,
    hint_lines,
    integer_bounds,
    names_and_says_not_found,
    planted_bug,
    prediction_hints,
    put_middleware,
    require,
)
from lesson_tools.hints import hints

__all__ = [
    "CheckFailed",
    "answered",
    "hint_lines",
    "hints",
    "integer_bounds",
    "names_and_says_not_found",
    "planted_bug",
    "prediction_hints",
    "put_middleware",
    "require",
]
