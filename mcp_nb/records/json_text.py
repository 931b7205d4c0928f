"""The JSON text of the history's nested columns (arguments, results, logs, progress...): how a
history file writes a value (records/disk.py) and how a frame's `JsonArray` decodes it back into
the value the in-memory history holds (records/lazy.py). Standard library and records/trace only:
the writer's thread and the frame both import it without importing each other.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from mcp_nb.records.trace import ProgressEvent, ServerLog

try:  # the C encoder, where Python has it (CPython does)
    from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]  # typeshed leaves CPython's C encoder out
except ImportError:  # pragma: no cover
    c_make_encoder = None


def _encoder() -> tuple[Callable[[Any, int], Any] | None, Callable[[Any], str]]:
    """JSON text of a value, compact, non-ASCII kept, anything without a JSON form as its str: the C
    encoder's chunks (a third of `json.dumps`' cost on a small dict), and the whole text."""
    if c_make_encoder is None:  # pragma: no cover
        fast = None
    else:
        fast = c_make_encoder(None, str, encode_basestring, None, ":", ",", False, False, True)

    def encode(value: Any) -> str:
        try:
            return (
                "".join(fast(value, 0))
                if fast is not None
                else json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
            )
        except (TypeError, ValueError, RecursionError):  # a key no JSON object can have, a cycle, a value nested too deep...
            try:
                return json.dumps(repr(value), ensure_ascii=False)
            except RecursionError:
                return json.dumps(f"<{type(value).__name__} nested too deep to be written>")

    return fast, encode


CHUNKS, ENCODE = _encoder()

# The column of a history file's part that holds a row's plain texts (content, message, protocol,
# its name, server, worker, client) as they were, for a row where one held a lone surrogate, which
# the text's own column holds as its escape (`\\ud800`, what any Arrow reader shows); mcp_nb's
# reader puts the exact text back (records/encoding.py: `exact_texts`). A part whose texts all fit
# UTF-8 has no such column.
EXACT = "exact_texts"


def plain(value: Any) -> Any:
    """A value of a nested column as JSON can carry it: log records and progress events as dicts."""
    if isinstance(value, tuple) and value and isinstance(value[0], (ServerLog, ProgressEvent)):
        if isinstance(value[0], ServerLog):
            return [
                {
                    "level": r.level,
                    "logger": r.logger,
                    "message": r.message,
                    "traceback": r.traceback,
                    "source": r.source,
                    "at": r.at,
                }
                for r in value
            ]
        return [{"progress": e.progress, "total": e.total, "message": e.message, "seconds": e.seconds} for e in value]
    return value


def logs_of(records: list[dict[str, Any]]) -> tuple[ServerLog, ...]:
    """The server's log records of a call, from their decoded JSON."""
    return tuple(
        ServerLog(
            r.get("level", ""),
            r.get("logger", ""),
            r.get("message", ""),
            r.get("traceback"),
            source=r.get("source", "logging"),
            at=r.get("at"),
        )
        for r in records
    )


def events_of(events: list[Any]) -> tuple[ProgressEvent, ...]:
    """The progress events of a call, from their decoded JSON."""
    return tuple(ProgressEvent(e.get("progress"), e.get("total"), e.get("message"), e.get("seconds", 0.0)) for e in events)
