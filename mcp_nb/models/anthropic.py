"""A model behind Anthropic's Messages API (`POST /v1/messages`), spoken as its documentation writes it.

The loop keeps the conversation in the chat-completions shape; this adapter translates both ways:

- system messages become the request's `system`; the assistant's tool calls become `tool_use`
  blocks (their arguments, JSON text, the block's `input` object); each tool message becomes a
  `tool_result` block with the host's `is_error` verdict, the results of one turn in one user
  message, as the API wants them after the assistant's turn;
- the tools are offered as `{"name", "description", "input_schema"}` with `tool_choice: auto`;
- the answer's `text` blocks are the model's words, its `tool_use` blocks the tools it asks for,
  `stop_reason` read as chat completions name it (`end_turn` is `stop`, `tool_use` is
  `tool_calls`, `max_tokens` is `length`, `refusal` is `content_filter`, any other kept as it is),
  and `usage` counted with the cached input tokens.

Errors come as `{"type": "error", "error": {"type": ..., "message": ...}}` with an HTTP status; a
429 `rate_limit_error` with `retry-after`, and 529 `overloaded_error`, are retried (`endpoint.py`).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from mcp_nb.mistakes import BadValue, one_line, read_json
from mcp_nb.models.chat_completions import check_options, check_url
from mcp_nb.models.endpoint import Endpoint, where
from mcp_nb.models.errors import BadReply
from mcp_nb.models.function import Model, Replier
from mcp_nb.models.keys import Key, key_from, scrub
from mcp_nb.models.shape import Reply, ToolRequest

ANTHROPIC = "https://api.anthropic.com"
VERSION = "2023-06-01"
STOPS = {
    "end_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "stop_sequence": "stop",
    "refusal": "content_filter",
}


class Anthropic(Model):
    """`model` at Anthropic's Messages API. `key`: the name of the environment variable that holds
    the API key (by default `ANTHROPIC_API_KEY`), or `mcp_nb.Key.prompt()`. `max_tokens` is required
    by the API (1024 by default); `temperature` is sent when given, `options` are any other fields."""

    kind = "endpoint"

    def __init__(
        self,
        model: str,
        *,
        key: str | Key = "ANTHROPIC_API_KEY",
        base_url: str = ANTHROPIC,
        max_tokens: int = 1024,
        temperature: float | None = None,
        options: Mapping[str, Any] | None = None,
        retries: int = 2,
        version: str = VERSION,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise BadValue('model= names the model (such as "claude-sonnet-4-5")')
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise BadValue(f"max_tokens must be a whole number >= 1, got {max_tokens!r}")
        self.name = model
        self.base_url = check_url(base_url)
        self.key = key_from(key)
        if self.key is None:
            raise BadValue('Anthropic\'s API takes a key: key= names its environment variable ("ANTHROPIC_API_KEY")')
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.version = version
        self.options = check_options(
            options, frozenset({"model", "messages", "tools", "tool_choice", "system", "stream", "max_tokens"})
        )
        self.endpoint = Endpoint(f"{self.base_url}/v1/messages", self._headers, retries)

    @property
    def label(self) -> str:
        return f"{self.name} at {where(self.base_url)}"

    def _headers(self) -> dict[str, str]:
        return {"x-api-key": self.key.value(), "anthropic-version": self.version}

    def check(self) -> None:
        self.key.check()

    def spec(self) -> dict[str, Any] | None:
        return {
            "kind": "anthropic",
            "model": self.name,
            "base_url": scrub(self.base_url),
            "key": self.key.env,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "options": self.options,
        }

    @contextlib.asynccontextmanager
    async def opened(self) -> AsyncIterator[Replier]:
        async with self.endpoint.opened() as client:

            async def reply(messages: list, tools: list, seconds: float, ids: str = "call") -> Reply:
                system, turns = to_messages(messages)
                body: dict[str, Any] = {"model": self.name, "max_tokens": self.max_tokens, "messages": turns, **self.options}
                if system:
                    body["system"] = system
                if tools:
                    body["tools"] = [to_tool(tool) for tool in tools]
                    body["tool_choice"] = {"type": "auto"}
                if self.temperature is not None:
                    body["temperature"] = self.temperature
                return from_message(await self.endpoint.post(client, body, seconds))

            yield reply

    def __repr__(self) -> str:
        return f"Anthropic({self.name!r}, key={self.key!r})"


def to_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    function = tool.get("function", tool)
    out = {"name": function["name"], "input_schema": function.get("parameters") or {"type": "object", "properties": {}}}
    if function.get("description"):
        out["description"] = function["description"]
    return out


def to_messages(messages: Sequence[Mapping[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """The conversation in chat-completions shape as Anthropic's `system` and `messages`."""
    system: list[str] = []
    turns: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if turns and turns[-1]["role"] == role:  # the API alternates: a tool result and a user's words share a turn
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})

    for message in messages:
        role, content = message.get("role"), message.get("content")
        if role == "system":
            system.append(_text(content))
        elif role == "user":
            add("user", [{"type": "text", "text": _text(content)}])
        elif role == "assistant":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": _text(content)}] if _text(content) else []
            for call in message.get("tool_calls") or ():
                function = call.get("function", {})
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call.get("id"),
                        "name": function.get("name"),
                        "input": _input(function.get("arguments")),
                    }
                )
            add("assistant", blocks or [{"type": "text", "text": ""}])
        elif role == "tool":
            add(
                "user",
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": message.get("tool_call_id"),
                        "content": _text(content),
                        "is_error": bool(message.get("is_error")),
                    }
                ],
            )
    return "\n\n".join(s for s in system if s), turns


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "".join(p["text"] if isinstance(p, Mapping) and isinstance(p.get("text"), str) else str(p) for p in content)
    return str(content)


def _input(arguments: Any) -> dict[str, Any]:
    """A tool call's arguments as the `input` object of a `tool_use` block. Text that is not a JSON
    object (a model of another vendor wrote it) is kept as the text itself, under `_arguments`."""
    if isinstance(arguments, Mapping):
        return dict(arguments)
    try:
        value = read_json(arguments or "{}")
    except (TypeError, ValueError):
        return {"_arguments": str(arguments)}
    return value if isinstance(value, dict) else {"_arguments": str(arguments)}


def from_message(body: Any) -> Reply:
    """A Messages API answer as a Reply; `BadReply` for anything that is not a message."""
    if not isinstance(body, Mapping) or body.get("type", "message") != "message" or not isinstance(body.get("content"), list):
        raise BadReply(f"the Messages API answered with no message: {one_line(scrub(json.dumps(body)[:400]), 160)}")
    texts, calls = [], []
    for i, block in enumerate(body["content"]):
        if not isinstance(block, Mapping):
            raise BadReply(f"content block {i} of the message is not an object")
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text", "")))
        elif kind == "tool_use":
            name, given = block.get("name"), block.get("input", {})
            if not isinstance(name, str):
                raise BadReply(f"tool_use block {i} names no tool")
            arguments = json.dumps(given, ensure_ascii=False) if isinstance(given, Mapping) else str(given)
            calls.append(ToolRequest(str(block.get("id") or f"toolu_{i + 1}"), name, arguments))
    usage = body.get("usage") if isinstance(body.get("usage"), Mapping) else {}
    counted = [usage.get(k) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")]
    prompt = (
        sum(v for v in counted if isinstance(v, int) and not isinstance(v, bool))
        if any(isinstance(v, int) for v in counted)
        else None
    )
    completion = usage.get("output_tokens") if isinstance(usage.get("output_tokens"), int) else None
    stop = body.get("stop_reason")
    return Reply(
        content="".join(texts) if texts else None,
        tool_calls=tuple(calls),
        finish=STOPS.get(stop, stop) if isinstance(stop, str) else None,
        model=body.get("model") if isinstance(body.get("model"), str) else None,
        prompt_tokens=prompt,
        completion_tokens=completion,
    )
