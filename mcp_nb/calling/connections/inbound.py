"""What a server sends that the SDK would drop in silence, or choke on: taken before it gets there.

Two kinds, found on the way in (the stdio transport's lines, both transports' read streams):

- an answer to one of our requests that is no message the protocol allows (a number past any
  parser's, nesting past its depth, a lone surrogate, an error whose code is text, a result that
  is a list). The SDK's reader drops what it cannot validate, and the call would wait for its
  deadline: the line is read again here, leniently, for the id it answers (`answered_id`), and the
  request gets an error of mcp_nb's making at once (`refused_answer`, recorded `invalid_response`).
  Streamable HTTP needs none of this: the SDK's transport knows which request a POST's answer
  belongs to and makes such an error itself (`sdk_compat.BROKEN_ANSWER_TEXTS`).
- a progress notification whose progress or total no float can hold (an integer of 400 digits):
  the SDK's dispatcher converts both with `float()`, and its OverflowError would end the session.
  `Guarded` wraps a read stream: such a progress is dropped, such a total left out, and either
  said in one line on the connection (and so on the calls waiting on it).
"""

from __future__ import annotations

import contextvars
import dataclasses
import json
import re
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Generic, Protocol, TypeVar

import anyio
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCNotification
from pydantic import ValidationError

from mcp_nb.mistakes import nested_past, read_json

# The start of the message of the error a request gets for an answer that is no message the
# protocol allows (`refused_answer`); a call recorded with it is `invalid_response`.
REFUSED_ANSWER = "the server's answer is no message the protocol allows: "
SCANNED = 1 << 20  # how much of a line too deep to parse is read for its id (an answer says it first)
LONGEST_ID = 40  # the digits of an integer id read back (mcp_nb's own ids are small)

_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\]:,]')  # a JSON text, or a structural character
_INTEGER = re.compile(rb"-?\d+")


def answered_id(line: bytes) -> str | int | None:
    """The id of the request a line that is no valid message answers, if it reads as an answer at
    all (a JSON object with an id, a result or an error, and no method); else None. Read however
    broken the rest is: integers of any length are not converted, and a line nested too deep
    for the parser is read at its top level only."""
    members: object
    if nested_past(line):
        members = _top_level(line[:SCANNED])
    else:
        try:
            members = read_json(line, parse_int=_short_int, parse_constant=lambda _: None)
        except ValueError:  # not JSON at all (a half line, bytes that are no UTF-8): nothing answers
            return None
    if not isinstance(members, dict) or "method" in members or not ("result" in members or "error" in members):
        return None
    rid = members.get("id")
    return rid if isinstance(rid, str | int) and not isinstance(rid, bool) else None


def _short_int(digits: str) -> int | None:
    return int(digits) if len(digits) <= LONGEST_ID else None


def _top_level(line: bytes) -> dict[str, object] | None:
    """The members of the JSON object `line` starts with, each text or integer as itself and any
    other value as None, read without parsing what is nested (None where it is no object, or
    is cut short)."""
    if not line.lstrip().startswith(b"{"):
        return None
    members: dict[str, object] = {}
    depth, key, value_at = 0, "", -1  # value_at: where the value of `key` starts, while it is read
    for token in _TOKEN.finditer(line):
        mark = token.group()
        if mark in (b"{", b"["):
            if depth == 1 and value_at >= 0:
                members[key], value_at = None, -1  # an object or a list: not read
            depth += 1
        elif mark in (b"}", b"]"):
            if depth == 1 and value_at >= 0:
                members[key] = _scalar(line[value_at : token.start()])
            depth -= 1
            if depth == 0:
                return members
        elif depth != 1:
            continue
        elif mark == b":":
            value_at = token.end()
        elif mark == b",":
            if value_at >= 0:
                members[key], value_at = _scalar(line[value_at : token.start()]), -1
        elif value_at >= 0:
            members[key], value_at = _text(mark), -1
        else:
            key = str(_text(mark))
    return None


def _text(token: bytes) -> str | None:
    try:
        return str(json.loads(token))
    except ValueError:
        return None


def _scalar(raw: bytes) -> int | None:
    raw = raw.strip()
    return int(raw) if _INTEGER.fullmatch(raw) and len(raw) <= LONGEST_ID else None


def refused_answer(line: bytes, err: ValidationError) -> str:
    """Why the answer on `line` is no message the protocol allows, in one line after
    REFUSED_ANSWER: the JSON that could not be read, or the first thing wrong with the answer as
    the kind of answer it says it is (an error, or a result)."""
    problems = err.errors(include_url=False, include_input=False)
    unread = [p for p in problems if p.get("type") == "json_invalid"]
    if unread:
        return REFUSED_ANSWER + _bounded(str(unread[0].get("msg", "")))
    kind = "JSONRPCError" if b'"error"' in line and b'"result"' not in line else "JSONRPCResponse"
    own = [p for p in problems if p.get("loc", ())[:1] == (kind,)] or problems
    first = own[0]
    where = ".".join(str(part) for part in first.get("loc", ())[1:]) or "the answer"
    more = f" ({len(own) - 1} more)" if len(own) > 1 else ""
    return REFUSED_ANSWER + _bounded(f"{where}: {first.get('msg', '')}{more}")


def _bounded(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- progress no float can hold ------------------------------------------------------------------

Item = TypeVar("Item")
Received = TypeVar("Received", covariant=True)


class _Receiving(Protocol[Received]):  # a transport's read stream, as the SDK's dispatcher reads it
    async def receive(self) -> Received: ...

    async def aclose(self) -> None: ...


class Guarded(Generic[Item]):
    """A transport's read stream, with each progress notification the SDK's dispatcher cannot
    convert taken out of it (the progress: the notification dropped; the total: left out), and
    said (`said(line)`). Everything else passes as it came, with the context the transport read
    it in (`last_context`, which streamable HTTP's stream carries for each message)."""

    def __init__(self, inner: _Receiving[Item], said: Callable[[str], None]) -> None:
        self._inner, self._said = inner, said

    @property
    def last_context(self) -> contextvars.Context | None:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Item:
        while True:
            item = await self._inner.receive()
            kept = self._kept(item)
            if kept is not None:
                return kept

    def _kept(self, item: Item) -> Item | None:
        if not isinstance(item, SessionMessage):
            return item
        message = item.message
        if not isinstance(message, JSONRPCNotification) or message.method != "notifications/progress":
            return item
        params = message.params
        if not isinstance(params, Mapping):
            return item
        if _past_any_float(params.get("progress")):
            self._said(f"a progress notification was dropped: its progress, {_digits(params['progress'])}, is past any float")
            return None
        if _past_any_float(params.get("total")):
            self._said(f"a progress notification's total, {_digits(params['total'])}, is past any float: it was left out")
            params = {name: value for name, value in params.items() if name != "total"}
            return dataclasses.replace(item, message=message.model_copy(update={"params": params}))
        return item

    def __aiter__(self) -> Guarded[Item]:
        return self

    async def __anext__(self) -> Item:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    def close(self) -> None:
        # the SDK's ReadStream promises no `close`; the streams its transports hand over (anyio's) have one
        closing = getattr(self._inner, "close", None)
        if closing is not None:
            closing()

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Guarded[Item]:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.aclose()


def _past_any_float(value: object) -> bool:
    if not isinstance(value, int) or isinstance(value, bool):
        return False
    try:
        float(value)
    except OverflowError:
        return True
    return False


def _digits(value: int) -> str:
    bits = abs(value).bit_length()  # Python writes no integer of more than 4,300 digits out: counted from its bits
    return f"an integer of {len(str(abs(value))) if bits < 14000 else f'some {int(bits * 0.30103) + 1}'} digits"
