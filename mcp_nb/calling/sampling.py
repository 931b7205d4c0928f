"""Sampling: a server asks the client's model for a completion in the middle of a call.

The MCP specification lets a server send `sampling/createMessage` (messages, a system
prompt, a token limit, model preferences) while one of its requests runs; the client
answers with the model's message, or refuses. A notebook's client has no model of its own,
so `connect(..., sampling=...)` says where the answers come from:

- a function `(messages, request) -> answer`, sync (run in a worker thread, never on mcp_nb's
  loop) or async: `messages` is a list of
  `{"role": ..., "text": ...}` (a non-text part named in brackets, `[image image/png]`),
  `request` the SDK's `CreateMessageRequestParams` (system prompt, limits, preferences);
  it is where an adapter to a model provider plugs in;
- a list of prepared answers, used in order over the connection's life;
- nothing (the default): each request is refused, with a reason the server is told.

An answer is the text of the model's reply, a dict (`text`, and `model`, `stop_reason`
if you like), or the SDK's `CreateMessageResult` as it is. With `connect(...,
sampling_tools=True)` the client says it can sample with tools: a request may then offer
tools (`request.tools`), and a reply may ask for one, `{"tool_use": {"name": ..., "input":
{...}}}` (with a `text` before it if you like), which the server runs and sends back. Each request and its answer is
recorded on the call it came during (`Outcome.samplings`), as questions are.
"""

from __future__ import annotations

import asyncio
import inspect
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mcp_types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    CreateMessageResultWithTools,
    ErrorData,
    SamplingMessageContentBlock,
    TextContent,
    ToolUseContent,
)

from mcp_nb.elicitation import in_thread, is_async
from mcp_nb.mistakes import BadType

MODEL = "mcp_nb"  # the model named in an answer that does not name its own
REFUSED = -1  # the code the specification's example gives a client's refusal of a sampling request
NO_MODEL = (
    "this notebook's client has no model to sample with: give mcp_nb.connect(..., sampling=) a "
    "function (messages, request) -> reply, or a list of prepared replies"
)
SOURCES = ("function", "prepared", "none")
# What `connect(sampling=)` takes: a function (messages, request) -> reply (or, async, an awaitable
# of one), or the prepared replies, used in order; None refuses every request.
SamplingFunction = Callable[[list[dict[str, str]], CreateMessageRequestParams], object]
SamplingSource = SamplingFunction | Sequence[object] | None
# How long a sampling function may take, sync or async: the call's deadline stands still
# meanwhile, so this is what keeps a model that never answers from holding the call for ever.
REPLY_WITHIN_S = 120.0


@dataclass(frozen=True, slots=True)
class Sampling:
    """One completion a server asked for during a call, and the reply it got (or why not)."""

    messages: tuple[Mapping[str, str], ...]  # the conversation sent, each {"role", "text"}
    system_prompt: str | None
    max_tokens: int | None
    text: str | None  # the reply's text; None when refused ("" for a reply that only asks for a tool)
    model: str | None  # the model the reply names
    stop_reason: str | None
    source: str  # one of SOURCES: where the reply came from
    reason: str | None  # why it was refused
    waited_ms: float
    tools: tuple[str, ...] = ()  # the names of the tools the request offered
    tool_use: Mapping[str, Any] | None = None  # the tool the reply asked for: {"name", "input"}

    @property
    def refused(self) -> bool:
        return self.text is None

    def as_dict(self) -> dict[str, Any]:
        return {
            "messages": [dict(m) for m in self.messages],
            "system_prompt": self.system_prompt,
            "max_tokens": self.max_tokens,
            "text": self.text,
            "model": self.model,
            "stop_reason": self.stop_reason,
            "source": self.source,
            "reason": self.reason,
            "tools": list(self.tools),
            "tool_use": None if self.tool_use is None else dict(self.tool_use),
        }


def check_sampling(value: object) -> None:
    """Refuse, in one line, what cannot answer a sampling request."""
    if value is None or callable(value):
        return
    if isinstance(value, (list, tuple)):
        for reply in value:
            _reply_parts(reply)
        return
    raise BadType(
        f"sampling is a function (messages, request) -> reply or a list of prepared replies, got {type(value).__name__}"
    )


class Sampler:
    """Where one connection's sampling replies come from."""

    def __init__(self, value: Any) -> None:
        check_sampling(value)
        self.value = value
        self._used = 0

    async def answer(self, params: Any, within: float = REPLY_WITHIN_S) -> Sampling:
        """The reply to one request; a function that has not replied after `within` seconds refuses."""
        t0 = time.perf_counter()
        messages = tuple(_message(m) for m in getattr(params, "messages", None) or ())
        reply: Any = None
        source = "none"
        reason: str | None = NO_MODEL
        value = self.value
        if callable(value):
            source = "function"
            reply, reason = await _replied(value, [dict(m) for m in messages], params, within)
        elif isinstance(value, (list, tuple)):
            source = "prepared"
            if self._used < len(value):
                reply, reason = value[self._used], None
                self._used += 1
            else:
                reason = f"all {len(value)} prepared replies were used"
        text = model = stop = tool_use = None
        offered = tuple(str(getattr(t, "name", "")) for t in getattr(params, "tools", None) or ())
        if reply is not None and reason is None:
            try:
                text, model, stop = _reply_parts(reply)
                tool_use = _tool_use(reply, offered)
            except BadType as err:  # a reply that is no reply: refused, and the record says what it was
                text = model = stop = tool_use = None
                reason = str(err)
        if text is None and reason is None:
            reason = "the reply had no text"
        return Sampling(
            messages=messages,
            system_prompt=getattr(params, "system_prompt", None),
            max_tokens=getattr(params, "max_tokens", None),
            text=text,
            model=model,
            stop_reason=stop,
            source=source,
            reason=reason,
            waited_ms=(time.perf_counter() - t0) * 1000.0,
            tools=offered,
            tool_use=tool_use,
        )


async def _replied(function: Any, messages: list[dict[str, str]], params: Any, within: float) -> tuple[Any, str | None]:
    """A sampling function's reply, or None and why not. A plain function runs in a thread of its
    own (`in_thread`: a model's client blocks while it waits for the model; on mcp_nb's loop that
    would hold every call, the served kernel and the panel), an async one on the loop; either is
    given `within` seconds, and one that has not replied by then refuses."""
    replying = asyncio.ensure_future(_reply_of(function, messages, params))
    try:
        done, _ = await asyncio.wait({replying}, timeout=within)
    finally:
        if not replying.done():
            replying.cancel()
    if not done:
        return None, f"the sampling function did not reply within {within:g} s"
    try:
        reply = replying.result()
    except Exception as err:  # noqa: BLE001 - a broken sampler refuses the request; the record says why
        return None, f"the sampling function raised {type(err).__name__}: {err}"
    return reply, None if reply is not None else "the sampling function returned None"


async def _reply_of(function: Any, messages: list[dict[str, str]], params: Any) -> Any:
    if is_async(function):
        reply = function(messages, params)
    else:
        reply = await in_thread(function, messages, params)
    if inspect.isawaitable(reply):  # a plain function that hands back a coroutine (a partial, a lambda)
        reply = await reply
    return reply


def sdk_answer(sampled: Sampling) -> CreateMessageResult | CreateMessageResultWithTools | ErrorData:
    """What goes back to the server: the model's message, or a refusal with its reason."""
    if sampled.text is None:
        return ErrorData(code=REFUSED, message=f"sampling refused: {sampled.reason}")
    if sampled.tool_use is not None:
        use = sampled.tool_use
        content: list[SamplingMessageContentBlock] = [TextContent(type="text", text=sampled.text)] if sampled.text else []
        content.append(ToolUseContent(type="tool_use", name=use["name"], id=use["id"], input=dict(use["input"])))
        return CreateMessageResultWithTools(
            role="assistant", content=content, model=sampled.model or MODEL, stop_reason="toolUse"
        )
    return CreateMessageResult(
        role="assistant",
        content=TextContent(type="text", text=sampled.text),
        model=sampled.model or MODEL,
        stop_reason=sampled.stop_reason or "endTurn",
    )


def _tool_use(reply: Any, offered: tuple[str, ...]) -> dict[str, Any] | None:
    """The tool a reply written as a dict asks for, checked against the ones the request offered."""
    if not isinstance(reply, Mapping) or reply.get("tool_use") is None:
        return None
    use = reply["tool_use"]
    if not isinstance(use, Mapping) or not isinstance(use.get("name"), str) or not isinstance(use.get("input", {}), Mapping):
        raise BadType(f"a reply's tool_use is {{'name': ..., 'input': {{...}}}}, got {use!r}")
    if use["name"] not in offered:
        raise BadType(
            f"the reply asks for the tool {use['name']!r}, which the request did not offer (it offered: {', '.join(offered) or 'none'})"
        )
    return {
        "name": use["name"],
        "input": dict(use.get("input") or {}),
        "id": str(use.get("id") or f"call_{uuid.uuid4().hex[:12]}"),
    }


def _reply_parts(reply: Any) -> tuple[str | None, str | None, str | None]:
    """(text, model, stop_reason) of a reply as a user may write one."""
    if isinstance(reply, str):
        return reply, None, None
    if isinstance(reply, Mapping):
        text = reply.get("text", "" if reply.get("tool_use") is not None else None)
        if not isinstance(text, str):
            raise BadType(f"a sampling reply written as a dict has a 'text' string, got {reply!r}")
        return text, _optional_text(reply.get("model")), _optional_text(reply.get("stop_reason"))
    content = getattr(reply, "content", None)
    if content is not None and hasattr(reply, "role"):  # the SDK's CreateMessageResult
        text = getattr(content, "text", None)
        return (text if isinstance(text, str) else None), getattr(reply, "model", None), getattr(reply, "stop_reason", None)
    raise BadType(f"a sampling reply is text, a dict with 'text', or a CreateMessageResult; got {type(reply).__name__}")


def _optional_text(value: Any) -> str | None:
    return None if value is None else str(value)


def _message(message: Any) -> dict[str, str]:
    """A sampling message as the record keeps it: its role and its text."""
    role = str(getattr(message, "role", ""))
    content = getattr(message, "content", None)
    parts = content if isinstance(content, Sequence) and not isinstance(content, str) else [content]
    return {"role": role, "text": " ".join(_part(p) for p in parts if p is not None)}


def _part(part: Any) -> str:
    text = getattr(part, "text", None)
    if isinstance(text, str):
        return text
    kind = getattr(part, "type", type(part).__name__)
    mime = getattr(part, "mime_type", None)
    return f"[{kind}{' ' + mime if mime else ''}]"
