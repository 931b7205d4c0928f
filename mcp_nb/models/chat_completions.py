"""A model behind an OpenAI-compatible chat-completions endpoint.

OpenAI's API and the servers that speak its dialect: Ollama (`http://127.0.0.1:11434/v1`),
llama.cpp's server (`http://127.0.0.1:8080/v1`), vLLM, LM Studio. The request is the conversation
as the loop keeps it (the host's `is_error` verdict left out: the API has no place for it), the
tools, and `tool_choice: "auto"`; the answer is a completion, read by `shape.read_reply`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from mcp_nb.mistakes import BadType, BadValue
from mcp_nb.models.endpoint import Endpoint, where
from mcp_nb.models.function import Model, Replier
from mcp_nb.models.keys import Key, key_from, scrub
from mcp_nb.models.shape import Reply, read_reply

OPENAI = "https://api.openai.com/v1"
# The keys a chat-completions message may carry; the loop's own (`is_error`) are not sent.
MESSAGE_KEYS = frozenset({"role", "content", "name", "tool_calls", "tool_call_id"})


def check_url(base_url: Any) -> str:
    if not isinstance(base_url, str):
        raise BadType(f"base_url is the endpoint's address (text), not {type(base_url).__name__}")
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadValue(f"base_url must be an http:// or https:// address, got {scrub(base_url)!r}")
    return base_url.rstrip("/")


def check_options(options: Any, reserved: frozenset[str]) -> dict[str, Any]:
    if options is None:
        return {}
    if not isinstance(options, Mapping) or not all(isinstance(k, str) for k in options):
        raise BadType('options= is a dict of the request\'s other fields (such as {"seed": 1})')
    taken = sorted(reserved & set(options))
    if taken:
        raise BadValue(f"options= cannot set {', '.join(taken)}: the loop sends them")
    return dict(options)


class OpenAICompatible(Model):
    """`model` at an OpenAI-compatible endpoint. `key`: the name of the environment variable that
    holds the API key (`"OPENAI_API_KEY"`), `mcp_nb.Key.prompt()`, or None for a local server that
    takes none. `temperature`, `max_tokens`: sent when given; `options`: any other field of the
    request (`{"seed": 1}`). `retries`: of a rate limit, a 5xx or a failed connection."""

    kind = "endpoint"

    def __init__(
        self,
        model: str,
        base_url: str = OPENAI,
        *,
        key: str | Key | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        options: Mapping[str, Any] | None = None,
        retries: int = 2,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise BadValue('model= names the model the endpoint serves (such as "gpt-4o-mini")')
        self.name = model
        self.base_url = check_url(base_url)
        self.key = key_from(key)
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.options = check_options(options, frozenset({"model", "messages", "tools", "tool_choice", "stream"}))
        self.endpoint = Endpoint(f"{self.base_url}/chat/completions", self._headers, retries)

    @property
    def label(self) -> str:
        return f"{self.name} at {where(self.base_url)}"

    def _headers(self) -> dict[str, str]:
        return {} if self.key is None else {"authorization": f"Bearer {self.key.value()}"}

    def check(self) -> None:
        if self.key is not None:
            self.key.check()

    def spec(self) -> dict[str, Any] | None:
        return {
            "kind": "openai-compatible",
            "model": self.name,
            "base_url": scrub(self.base_url),
            "key": None if self.key is None else self.key.env,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "options": self.options,
        }

    @contextlib.asynccontextmanager
    async def opened(self) -> AsyncIterator[Replier]:
        async with self.endpoint.opened() as client:

            async def reply(messages: list, tools: list, seconds: float, ids: str = "call") -> Reply:
                body: dict[str, Any] = {"model": self.name, "messages": [_sent(m) for m in messages], **self.options}
                if tools:
                    body["tools"] = tools
                    body["tool_choice"] = "auto"
                if self.temperature is not None:
                    body["temperature"] = self.temperature
                if self.max_tokens is not None:
                    body["max_tokens"] = self.max_tokens
                return read_reply(await self.endpoint.post(client, body, seconds), ids)

            yield reply

    def __repr__(self) -> str:
        return f"OpenAICompatible({self.name!r}, {scrub(self.base_url)!r}, key={self.key!r})"


def _sent(message: Mapping[str, Any]) -> dict[str, Any]:
    sent = {k: v for k, v in message.items() if k in MESSAGE_KEYS}
    if sent.get("content") is None and sent.get("role") == "assistant":
        # An assistant turn of tool calls only: OpenAI takes null or "", llama.cpp's server only "".
        sent["content"] = ""
    return sent
