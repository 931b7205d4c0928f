"""The chat-completions shape: a model's reply read into a `Reply`, and the messages the loop sends.

What a model function may return (anything else is a `BadReply`, and the episode says why):

- an assistant message, `{"role": "assistant", "content": "...", "tool_calls": [{"id": ...,
  "type": "function", "function": {"name": ..., "arguments": "<JSON text>"}}]}`: `content` may be
  None or a list of text parts, `role` may be left out, `arguments` may be a dict (it is written
  as JSON) and `id` may be left out (one is made);
- a whole completion, `{"choices": [{"message": {...}, "finish_reason": ...}], "usage": {...},
  "model": ...}`, or an object with `model_dump()` that gives one (what the `openai` client
  returns), so the official client can be the body of a model function as it is;
- a plain string: an answer with no tool call.

The arguments stay the text the model wrote: whether they are JSON, and what the model is told
when they are not, is the host's decision (`mcp_nb/episodes/policy.py`), not the reader's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mcp_nb.mistakes import one_line
from mcp_nb.models.errors import BadReply

FINISHES = ("stop", "tool_calls", "length", "content_filter")


@dataclass(frozen=True, slots=True)
class ToolRequest:
    """One tool the model asked for: the id the answer must name, the tool's name, and the
    arguments as the model wrote them (JSON text, or not)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Reply:
    """A model's reply: its words, the tools it asked for, why it stopped, and the tokens it
    reports (None where it reports none)."""

    content: str | None
    tool_calls: tuple[ToolRequest, ...] = ()
    finish: str | None = None
    model: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    @property
    def tokens(self) -> int | None:
        if self.prompt_tokens is None and self.completion_tokens is None:
            return None
        return (self.prompt_tokens or 0) + (self.completion_tokens or 0)

    def message(self) -> dict[str, Any]:
        """The assistant message as it goes back into the conversation."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": r.id, "type": "function", "function": {"name": r.name, "arguments": r.arguments}} for r in self.tool_calls
            ]
        return message


def read_reply(value: Any, made_ids: str = "call") -> Reply:
    """A model function's return value as a `Reply`; `BadReply` (one line) for anything else."""
    if isinstance(value, str):
        return Reply(value)
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, Mapping):
        try:
            value = dump()
        except Exception as err:  # noqa: BLE001 - whatever the object's own dump raised, said in one line
            raise BadReply(f"the reply's model_dump() failed: {one_line(err)}") from None
    if not isinstance(value, Mapping):
        raise BadReply(f"a reply is an assistant message (a dict) or a string, not {type(value).__name__}")
    finish, usage, model = None, value.get("usage"), value.get("model")
    if "choices" in value:
        choices = value["choices"]
        if not isinstance(choices, Sequence) or isinstance(choices, (str, bytes)) or not choices:
            raise BadReply("the completion has no choices")
        choice = choices[0]
        if not isinstance(choice, Mapping) or not isinstance(choice.get("message"), Mapping):
            raise BadReply("the completion's first choice has no message")
        finish = choice.get("finish_reason")
        value = choice["message"]
    else:
        finish = value.get("finish_reason")
    role = value.get("role", "assistant")
    if role != "assistant":
        raise BadReply(f"a reply is the assistant's message, not one of role {one_line(role, 40)!r}")
    prompt, completion = _usage(usage)
    return Reply(
        content=_content(value.get("content")),
        tool_calls=_tool_calls(value.get("tool_calls"), made_ids),
        finish=finish if isinstance(finish, str) else None,
        model=model if isinstance(model, str) else None,
        prompt_tokens=prompt,
        completion_tokens=completion,
    )


def _content(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, Sequence) and not isinstance(content, (bytes, bytearray)):
        texts = []
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part, str):
                texts.append(part)
        return "".join(texts)
    raise BadReply(f"a reply's content is text, a list of text parts or null, not {type(content).__name__}")


def _tool_calls(calls: Any, made_ids: str) -> tuple[ToolRequest, ...]:
    if calls is None:
        return ()
    if not isinstance(calls, Sequence) or isinstance(calls, (str, bytes)):
        raise BadReply(f"a reply's tool_calls is a list, not {type(calls).__name__}")
    found = []
    for i, call in enumerate(calls):
        if not isinstance(call, Mapping):
            raise BadReply(f"tool call {i} of the reply is {type(call).__name__}, not an object")
        function = call.get("function", call)  # {"name", "arguments"} at the top is read as well
        if not isinstance(function, Mapping):
            raise BadReply(f"tool call {i} of the reply has no function")
        name = function.get("name")
        if not isinstance(name, str):
            raise BadReply(f"tool call {i} of the reply names no tool")
        arguments = function.get("arguments", "")
        if arguments is None:
            arguments = ""
        elif not isinstance(arguments, str):
            try:  # a function model may give the arguments as a dict: they are what JSON would carry
                arguments = json.dumps(arguments, ensure_ascii=False, allow_nan=False)
            except (TypeError, ValueError) as err:
                raise BadReply(f"the arguments of tool call {i} ({name!r}) have no JSON form: {one_line(err)}") from None
        given = call.get("id")
        found.append(ToolRequest(given if isinstance(given, str) and given else f"{made_ids}_{i + 1}", name, arguments))
    return tuple(found)


def _usage(usage: Any) -> tuple[int | None, int | None]:
    """Tokens as the chat-completions usage names them (Anthropic's names are read as well)."""
    if not isinstance(usage, Mapping):
        return None, None
    prompt = usage.get("prompt_tokens", usage.get("input_tokens"))
    completion = usage.get("completion_tokens", usage.get("output_tokens"))
    return _count(prompt), _count(completion)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def tool_spec(name: str, description: str | None, parameters: Mapping[str, Any] | None) -> dict[str, Any]:
    """A tool as the chat-completions API offers it to a model."""
    function: dict[str, Any] = {
        "name": name,
        "parameters": dict(parameters) if parameters else {"type": "object", "properties": {}},
    }
    if description:
        function["description"] = description
    return {"type": "function", "function": function}


def tool_message(request_id: str, text: str, is_error: bool) -> dict[str, Any]:
    """What the host tells the model of one tool call. `is_error` is the host's verdict: Anthropic's
    API carries it (`tool_result.is_error`); a chat-completions endpoint is sent the text alone."""
    return {"role": "tool", "tool_call_id": request_id, "content": text, "is_error": is_error}
