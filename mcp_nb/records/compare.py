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
from typing import Any, Iterable, NamedTuple

from mcp_nb.records.structured import json_equal, json_path
from mcp_nb.mistakes import BadJson, read_json


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
    text = repr(value) if isinstance(value, str) else _json(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(value)


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


def json_differences(a: Any, b: Any, steps: list | None = None, limit: int = 20) -> list[Difference]:
    """Where two JSON values differ, deepest first found: objects by key, lists of one length by
    index, anything else as a whole (at most `limit` places)."""
    found: list[Difference] = []
    _walk(a, b, steps or [], found, limit)
    return found


def _walk(a: Any, b: Any, steps: list, found: list[Difference], limit: int) -> None:
    if len(found) >= limit or json_equal(a, b):
        return
    if type(a) is dict and type(b) is dict:
        for key in list(a) + [k for k in b if k not in a]:
            _walk(a.get(key, _MISSING), b.get(key, _MISSING), [*steps, key], found, limit)
    elif type(a) is list and type(b) is list and len(a) == len(b):
        for index, (x, y) in enumerate(zip(a, b)):
            _walk(x, y, [*steps, index], found, limit)
    else:
        found.append(Difference(json_path(steps), a, b))


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
        found += [Difference(f"arguments {d.what}", d.before, d.after) for d in json_differences(_plain(a.arguments), _plain(b.arguments))]
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
    """Mappings and tuples as the JSON they stand for (a frame's cell may hold either)."""
    if isinstance(value, dict) or (hasattr(value, "items") and hasattr(value, "keys")):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def said(differences: list[Difference]) -> str:
    """The differences in one line each, joined: `code: -32603 → 0; message: ...`."""
    return "; ".join(str(d) for d in differences)
