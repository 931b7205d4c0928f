"""Two answers compared by structure, not by text: where they differ, as JSON paths.

A tool's content is often JSON written as text: two answers that differ only in key order,
whitespace or the spelling of a number (`1.0` and `1`, `9.99` and `9.990`) are the same answer.
So content that both sides wrote as JSON is compared as JSON (`structured.json_equal`: numbers
by value, true is never 1), and anything else as text. This is what a replay's judge, the
comparison of one case's answers under two protocol eras, and the panel's diff of two pinned
calls all read.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from mcp_nb.mistakes import BadJson, one_line, read_json
from mcp_nb.records.structured import json_equal, json_path


class _Absent:
    """What stands where one side has nothing (a key it lacks): not None, which is JSON's null."""

    absent = True  # how a view tells it apart without importing this module

    def __repr__(self) -> str:
        return "nothing"


_MISSING = _Absent()


class Difference(NamedTuple):
    """One place where two answers differ: what (a field, or a JSON path into it), and the two values."""

    what: str
    before: Any
    after: Any

    def __str__(self) -> str:
        return f"{self.what}: {_short(self.before)} → {_short(self.after)}"


def _short(value: Any, limit: int = 80) -> str:
    if value is _MISSING:
        return "nothing"
    return one_line(repr(value) if isinstance(value, str) else _json(value), limit)  # an answer's words: safe, one line


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(value)
    except RecursionError:  # a value nested deeper than the writer goes: its kind, not its text
        return f"[{type(value).__name__} nested too deeply to show]"


def as_json(text: Any) -> Any:
    """The JSON value `text` holds, or `_MISSING` when it is not text holding JSON."""
    if not isinstance(text, str):
        return _MISSING
    stripped = text.strip()
    if not stripped or stripped[0] not in '{["-0123456789tfn':
        return _MISSING  # most texts are not JSON: not worth a parse
    try:
        return read_json(stripped)
    except BadJson:
        return _MISSING


def same_content(expected: str | None, got: str | None) -> bool:
    """Whether two contents are the same answer: equal text, or the same JSON however written."""
    if expected == got:
        return True
    a, b = as_json(expected), as_json(got)
    return a is not _MISSING and b is not _MISSING and json_equal(a, b)


def json_differences(a: Any, b: Any, steps: list[str | int] | None = None, limit: int = 20) -> list[Difference]:
    """Where two JSON values differ, deepest first found: objects by key, lists of one length by
    index, anything else as a whole (at most `limit` places). A loop, not recursion: the values
    may come from a case file nested as deep as Python's JSON reader takes."""
    found: list[Difference] = []
    stack: list[tuple[Any, Any, list[str | int]]] = [(a, b, list(steps or []))]
    while stack and len(found) < limit:
        x, y, at = stack.pop()
        if x is y:
            continue
        if type(x) is dict and type(y) is dict:  # read key by key, not compared whole first: each level once
            keys = list(x) + [k for k in y if k not in x]
            stack.extend((x.get(key, _MISSING), y.get(key, _MISSING), [*at, key]) for key in reversed(keys))
        elif type(x) is list and type(y) is list and len(x) == len(y):
            stack.extend((x[i], y[i], [*at, i]) for i in range(len(x) - 1, -1, -1))
        elif not json_equal(x, y):
            found.append(Difference(json_path(at), x, y))
    return found


def content_differences(a: str | None, b: str | None) -> list[Difference]:
    """Where two contents differ: by JSON path when both are JSON, else the text as a whole."""
    if same_content(a, b):
        return []
    x, y = as_json(a), as_json(b)
    if x is not _MISSING and y is not _MISSING:
        return [Difference(f"content {d.what}", d.before, d.after) for d in json_differences(x, y)]
    return [Difference("content", a, b)]


def outcome_differences(a: Any, b: Any, arguments: bool = False) -> list[Difference]:
    """Where two Outcomes (or history rows read as calls) differ, as a client would see it: how
    the call ended, the code, the message of a protocol error, the content and the structured
    content by structure; their arguments first, with `arguments`."""
    found: list[Difference] = []
    if arguments:
        found += [
            Difference(f"arguments {d.what}", d.before, d.after)
            for d in json_differences(_plain(a.arguments), _plain(b.arguments))
        ]
    for field in ("outcome", "cause", "code", "is_error"):
        x, y = getattr(a, field, None), getattr(b, field, None)
        if x != y:
            found.append(Difference(field, x, y))
    if "protocol_error" in (a.outcome, b.outcome) and a.message != b.message:
        found.append(Difference("message", a.message, b.message))
    found += content_differences(a.content, b.content)
    x, y = _plain(a.structured_content), _plain(b.structured_content)
    if not json_equal(x, y):
        found += [Difference(f"structured_content {d.what}", d.before, d.after) for d in json_differences(x, y)]
    return found


def _plain(value: Any) -> Any:
    """Mappings and tuples as the JSON they stand for (a frame's cell may hold either). A loop, not
    recursion, for the same reason as `json_differences`."""
    top: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, top, 0)]
    while stack:
        item, holder, key = stack.pop()
        if isinstance(item, dict) or (hasattr(item, "items") and hasattr(item, "keys")):
            pairs = [(str(k), v) for k, v in item.items()]
            copy: Any = dict.fromkeys(name for name, _ in pairs)  # the keys in their order, filled below
            stack.extend((v, copy, name) for name, v in pairs)
        elif isinstance(item, (list, tuple)):
            copy = [None] * len(item)
            stack.extend((v, copy, i) for i, v in enumerate(item))
        else:
            copy = item
        holder[key] = copy
    return top[0]


def said(differences: list[Difference]) -> str:
    """The differences in one line each, joined: `code: -32603 → 0; message: ...`."""
    return "; ".join(str(d) for d in differences)
