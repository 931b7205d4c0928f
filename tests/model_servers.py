"""Servers on 127.0.0.1 that speak models' wire formats as their vendors document them, for the adapters' tests.

Neither OpenAI's API nor Anthropic's can be reached from the tests, so each is stood in for by a
small HTTP server that checks a request as the real API does (the headers it requires, the body's
shape: a tool result must answer the tool call before it, a message may carry only the fields the
API knows) and answers from a script: each entry a reply in the vendor's shape, an error status
with the vendor's error body and headers (`retry-after`), a body that is not what the API sends,
or a pause. A request the API would refuse gets the API's 400 before the script is read.

    with ModelServer(anthropic_check(KEY), [tool_use(...), message("Frank Herbert")]) as server:
        model = mcp_nb.Anthropic("claude-x", base_url=server.url)

Each request is kept (`server.requests`: path, headers, decoded body) for the test to read.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Answer:
    """One scripted answer: a status, headers and a body (a dict is sent as JSON, bytes as they are),
    after `pause` seconds."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    pause: float = 0.0


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: Any


Check = Callable[[str, Mapping[str, str], Any], "Answer | None"]


class ModelServer:
    """An HTTP server on 127.0.0.1 answering POSTs: `check` first (an Answer refuses the request),
    then the script, in order (or `script(request)` when it is a function)."""

    def __init__(self, check: Check, script: list[Answer] | Callable[[Request], Answer]) -> None:
        self.check = check
        self.script = script
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._next = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw
                request = Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with server._lock:
                    server.requests.append(request)
                answer = server.check(self.path, request.headers, body) or server._scripted(request)
                if answer.pause:
                    time.sleep(answer.pause)
                payload = answer.body if isinstance(answer.body, bytes) else json.dumps(answer.body).encode()
                try:
                    self.send_response(answer.status)
                    self.send_header("content-type", "application/json")
                    for name, value in answer.headers.items():
                        self.send_header(name, value)
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped waiting (a timeout): nothing to tell it

            def log_message(self, *args: Any) -> None:
                pass  # the test reads `requests`; nothing on stderr

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="model server", daemon=True)

    def _scripted(self, request: Request) -> Answer:
        if callable(self.script):
            return self.script(request)
        with self._lock:
            i = self._next
            self._next += 1
        if i >= len(self.script):
            return Answer(500, {"error": {"type": "server_error", "message": "the test's script has no more answers"}})
        return self.script[i]

    def __enter__(self) -> ModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()


# -- OpenAI's chat completions ------------------------------------------------------------------

OPENAI_MESSAGE_KEYS = {
    "system": {"role", "content", "name"},
    "user": {"role", "content", "name"},
    "assistant": {"role", "content", "name", "tool_calls", "refusal"},
    "tool": {"role", "content", "tool_call_id"},
}


def openai_error(status: int, message: str, kind: str = "invalid_request_error", headers: dict[str, str] | None = None) -> Answer:
    return Answer(status, {"error": {"message": message, "type": kind, "param": None, "code": None}}, headers or {})


def openai_check(key: str | None = None) -> Check:
    """What OpenAI's API refuses before it looks at the model: a missing or wrong key (401), a body
    that is not a chat completion request, a message with a field it does not know, a tool message
    that answers no tool call of the assistant message before it (400)."""

    def check(path: str, headers: Mapping[str, str], body: Any) -> Answer | None:
        if path != "/v1/chat/completions":
            return openai_error(404, f"Invalid URL (POST {path})")
        if key is not None and headers.get("authorization") != f"Bearer {key}":
            given = headers.get("authorization", "").removeprefix("Bearer ")
            # The real API quotes the key it refused, masked; this one quotes it whole, so that a
            # test sees the adapter take it out of what it keeps.
            return openai_error(401, f"Incorrect API key provided: {given}.", "invalid_request_error")
        if not isinstance(body, dict) or not isinstance(body.get("model"), str) or not isinstance(body.get("messages"), list):
            return openai_error(400, "'model' and 'messages' are required")
        called: set[str] = set()
        for i, message in enumerate(body["messages"]):
            allowed = OPENAI_MESSAGE_KEYS.get(message.get("role"))
            if allowed is None:
                return openai_error(400, f"Invalid value for 'messages[{i}].role'")
            extra = sorted(set(message) - allowed)
            if extra:
                return openai_error(400, f"Additional properties are not allowed ('{extra[0]}' was unexpected) - 'messages.{i}'")
            if message["role"] == "assistant":
                called = {c["id"] for c in message.get("tool_calls") or ()}
            elif message["role"] == "tool" and message.get("tool_call_id") not in called:
                return openai_error(
                    400,
                    f"Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls' (messages[{i}])",
                )
        for tool in body.get("tools") or ():
            if tool.get("type") != "function" or not isinstance(tool.get("function", {}).get("name"), str):
                return openai_error(400, "Invalid 'tools': each tool is {type: function, function: {name, ...}}")
        return None

    return check


def completion(content: str | None = None, calls: list[tuple[str, str]] = (), usage: tuple[int, int] | None = (12, 5)) -> Answer:
    """A chat completion: the assistant's words, or its tool calls as (name, arguments text)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}} for i, (n, a) in enumerate(calls)
        ]
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "test-model",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
    }
    if usage is not None:
        body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
    return Answer(200, body)


# -- Anthropic's Messages API -------------------------------------------------------------------


def anthropic_error(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> Answer:
    return Answer(status, {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_test"}, headers or {})


def anthropic_check(key: str) -> Check:
    """What the Messages API refuses before it runs the model: a missing or wrong `x-api-key`
    (401), no `anthropic-version` (400), no `max_tokens` or `messages`, a tool without
    `input_schema`, a `tool_use` whose id the next user message does not answer with a
    `tool_result`, a `tool_result` that answers no `tool_use` before it (400 invalid_request_error)."""

    def check(path: str, headers: Mapping[str, str], body: Any) -> Answer | None:
        if path != "/v1/messages":
            return anthropic_error(404, "not_found_error", f"Not found: {path}")
        if headers.get("x-api-key") != key:
            return anthropic_error(401, "authentication_error", f"invalid x-api-key: {headers.get('x-api-key')}")
        if not headers.get("anthropic-version"):
            return anthropic_error(400, "invalid_request_error", "anthropic-version: header is required")
        if (
            not isinstance(body, dict)
            or not isinstance(body.get("max_tokens"), int)
            or not isinstance(body.get("messages"), list)
        ):
            return anthropic_error(400, "invalid_request_error", "max_tokens: Field required")
        if "system" in body and not isinstance(body["system"], (str, list)):
            return anthropic_error(400, "invalid_request_error", "system: Input should be a valid string")
        for tool in body.get("tools") or ():
            if "input_schema" not in tool or "name" not in tool:
                return anthropic_error(400, "invalid_request_error", "tools.0.input_schema: Field required")
        waiting: set[str] = set()
        for i, message in enumerate(body["messages"]):
            blocks = (
                message["content"] if isinstance(message["content"], list) else [{"type": "text", "text": message["content"]}]
            )
            if message["role"] == "user":
                answered = {b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"}
                if answered - waiting:
                    return anthropic_error(
                        400, "invalid_request_error", f"messages.{i}: unexpected `tool_use_id` found in `tool_result` blocks"
                    )
                if waiting - answered:
                    return anthropic_error(
                        400,
                        "invalid_request_error",
                        f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after",
                    )
                for b in blocks:
                    if b.get("type") == "tool_result" and not isinstance(b.get("is_error", False), bool):
                        return anthropic_error(400, "invalid_request_error", f"messages.{i}: is_error must be a boolean")
                waiting = set()
            elif message["role"] == "assistant":
                waiting = {b["id"] for b in blocks if b.get("type") == "tool_use"}
                if any(not isinstance(b.get("input"), dict) for b in blocks if b.get("type") == "tool_use"):
                    return anthropic_error(
                        400, "invalid_request_error", f"messages.{i}: tool_use.input: Input should be a valid dictionary"
                    )
            else:
                return anthropic_error(400, "invalid_request_error", f"messages.{i}.role: Input should be 'user' or 'assistant'")
        return None

    return check


def message(
    text: str | None = None, tools: list[tuple[str, dict]] = (), stop: str | None = None, usage: dict[str, int] | None = None
) -> Answer:
    """A Messages API answer: text, then tool_use blocks as (name, input)."""
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text is not None else []
    content += [{"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": given} for i, (name, given) in enumerate(tools)]
    return Answer(
        200,
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": content,
            "stop_reason": stop or ("tool_use" if tools else "end_turn"),
            "stop_sequence": None,
            "usage": usage or {"input_tokens": 20, "output_tokens": 7},
        },
    )
