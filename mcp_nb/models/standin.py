"""The scripted stand-in: a few written rules that read what the host tells them. Not a language model.

It shows the loop with no key and no network, and does so the same way every time, so the course
can show what an error message is worth: the same task ends recovered after a `ToolError` that
names the problem, and given up after a crash, whose message names nothing. Every reply it gives
names it (`model: "mcp_nb scripted stand-in"`), and every view labels it as what it is.

Its rules, in order:

1. First turn: call `tool` with `arguments` when they were given; else the offered tool whose name
   the task mentions (or the only one, or the first), its required arguments filled from the task:
   a text argument from the quoted phrases of the task in order ('Dun', "Dun", `Dun`, “Dun”), a
   number from its numbers.
2. After a result (the host did not mark what it told as an error): answer with what it was told.
3. After an error, repair the last call when the message says how, and call again:
   - a tool that is not offered: the offered tool whose name is nearest, same arguments;
   - a message that quotes values (`No book titled 'Dun'. Known titles: 'Dune', 'Emma'`): the text
     argument the message quotes (else the only one) takes the quoted value nearest to it.
   Arguments already tried are not tried again, and it makes at most `max_calls` calls.
4. Otherwise give up: answer that it could not, quoting the first line it was told.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from mcp_nb.mistakes import BadType, BadValue, one_line, read_json
from mcp_nb.models.function import Model
from mcp_nb.models.shape import Reply, ToolRequest

NAME = "mcp_nb scripted stand-in"
LABEL = "scripted stand-in (written rules, not a language model)"
# Quoted text, as a message or a task quotes a value: '…', "…", `…`, “…”, ‘…’, «…». A single quote
# inside a word is an apostrophe ("the catalog's titles"), not a quote.
_QUOTED = re.compile(
    r"(?<!\w)'([^'\n]{1,200})'(?!\w)|\"([^\"\n]{1,200})\"|`([^`\n]{1,200})`|“([^”\n]{1,200})”|(?<!\w)‘([^’\n]{1,200})’(?!\w)|«([^»\n]{1,200})»"
)
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?!\w|\.\d)")


class StandIn(Model):
    """A scripted stand-in for a model (see the module's rules): deterministic, no network, no key.
    `tool`, `arguments`: its first call, when the task alone should not decide it."""

    kind = "stand-in"
    name = "scripted stand-in"

    def __init__(self, tool: str | None = None, arguments: Mapping[str, Any] | None = None, *, max_calls: int = 5) -> None:
        if tool is not None and (not isinstance(tool, str) or not tool):
            raise BadValue(f"tool= names the stand-in's first call, got {tool!r}")
        if arguments is not None and not isinstance(arguments, Mapping):
            raise BadType(f"arguments= is a dict of the first call's arguments, not {type(arguments).__name__}")
        if not isinstance(max_calls, int) or isinstance(max_calls, bool) or max_calls < 1:
            raise BadValue(f"max_calls must be a whole number >= 1, got {max_calls!r}")
        self.tool = tool
        self.arguments = dict(arguments) if arguments is not None else None
        self.max_calls = max_calls

    @property
    def label(self) -> str:
        return LABEL

    def spec(self) -> dict[str, Any] | None:
        return {"kind": "stand-in", "tool": self.tool, "arguments": self.arguments, "max_calls": self.max_calls}

    async def reply(self, messages: list, tools: list, seconds: float, ids: str = "call") -> Reply:
        return self.decide(messages, tools, ids)

    def decide(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]], ids: str = "call") -> Reply:
        """The next reply to this conversation (a pure function of it)."""
        offered = {f["name"]: f for f in (t.get("function", t) for t in tools) if isinstance(f, Mapping) and "name" in f}
        made = _calls_made(messages)
        if not made:
            return self._first(_task(messages), offered, ids)
        request, told, is_error = made[-1]
        if told is None:  # the host did not answer its last call: nothing to read
            return _answer("I was told nothing about my last call.")
        if not is_error:
            return _answer(told or "Done.")
        tried = {(r.name, _canonical(r.arguments)) for r, _, _ in made}
        if len(made) < self.max_calls:
            repaired = _repaired(request, told, offered)
            if repaired is not None and (repaired[0], _canonical(repaired[1])) not in tried:
                return _call(ids, *repaired)
        said = one_line(told, 200) if told.strip() else "nothing"
        return _answer(f"I could not do it. The tool said: {said}")

    def _first(self, task: str, offered: Mapping[str, Mapping[str, Any]], ids: str) -> Reply:
        if self.tool is not None:
            name = self.tool
        elif offered:
            mentioned = [
                n for n in sorted(offered, key=len, reverse=True) if re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", task)
            ]
            name = mentioned[0] if mentioned else next(iter(offered))
        else:
            return _answer("I was offered no tool for this.")
        if self.arguments is not None:
            return _call(ids, name, self.arguments)
        return _call(ids, name, _from_task(task, offered.get(name, {}).get("parameters") or {}))

    def __repr__(self) -> str:
        return f"<{LABEL}>"


def _task(messages: Sequence[Mapping[str, Any]]) -> str:
    for message in messages:
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            return message["content"]
    return ""


def _calls_made(messages: Sequence[Mapping[str, Any]]) -> list[tuple[ToolRequest, str | None, bool]]:
    """Each tool call of the conversation, with what the host told of it and whether as an error."""
    answers = {m.get("tool_call_id"): m for m in messages if m.get("role") == "tool"}
    made = []
    for message in messages:
        if message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or ():
            function = call.get("function", {})
            request = ToolRequest(str(call.get("id")), str(function.get("name")), str(function.get("arguments") or ""))
            told = answers.get(call.get("id"))
            text = None if told is None else (told.get("content") if isinstance(told.get("content"), str) else "")
            made.append((request, text, bool(told.get("is_error")) if told is not None else True))
    return made


def _quoted(text: str) -> list[str]:
    return [next(g for g in match.groups() if g is not None) for match in _QUOTED.finditer(text)]


def _from_task(task: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties") if isinstance(schema.get("properties"), Mapping) else {}
    required = [p for p in schema.get("required", ()) if p in properties] if isinstance(schema.get("required"), list) else []
    texts, numbers = _quoted(task), _NUMBER.findall(task)
    arguments: dict[str, Any] = {}
    for name in required or list(properties)[:1]:
        kind = properties.get(name, {}).get("type") if isinstance(properties.get(name), Mapping) else None
        if kind in ("integer", "number") and numbers:
            value = numbers.pop(0)
            arguments[name] = int(float(value)) if kind == "integer" else float(value)
        elif kind in (None, "string") and texts:
            arguments[name] = texts.pop(0)
    return arguments


def _repaired(request: ToolRequest, told: str, offered: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
    try:
        arguments = read_json(request.arguments or "{}")
    except ValueError:
        return None
    if not isinstance(arguments, dict):
        return None
    if request.name not in offered:
        nearest = difflib.get_close_matches(request.name, list(offered), n=1, cutoff=0.5)
        return (nearest[0], arguments) if nearest else None
    quoted = [q for q in dict.fromkeys(_quoted(told)) if q not in arguments.values()]
    texts = {k: v for k, v in arguments.items() if isinstance(v, str)}
    if not quoted or not texts:
        return None
    named = [k for k, v in texts.items() if v and (f"'{v}'" in told or f'"{v}"' in told or v in _quoted(told))]
    if named:
        argument = named[0]
    elif len(texts) == 1:
        argument = next(iter(texts))
    else:
        argument = max(texts, key=lambda k: max(_near(texts[k], q) for q in quoted))
    current = texts[argument]
    best = max(quoted, key=lambda q: _near(current, q))  # the first of equals, in the message's order
    return request.name, {**arguments, argument: best}


def _near(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a.casefold(), b.casefold()).ratio()


def _canonical(arguments: Any) -> str:
    if isinstance(arguments, str):
        try:
            arguments = read_json(arguments or "{}")
        except ValueError:
            return arguments
    return json.dumps(arguments, sort_keys=True)


def _call(ids: str, name: str, arguments: Mapping[str, Any]) -> Reply:
    text = json.dumps(dict(arguments), ensure_ascii=False)
    return Reply(None, (ToolRequest(f"{ids}_1", name, text),), finish="tool_calls", model=NAME)


def _answer(text: str) -> Reply:
    return Reply(text, (), finish="stop", model=NAME)
