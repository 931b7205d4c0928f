"""From what came back (and what the server logged) to an outcome and a cause.

Pure functions over SDK values. A crash and a ToolError look alike to the client
(`Error executing tool NAME...` with isError), and resource and prompt failures
share codes, so the server's log records for the call decide, and where mcp_nb's
probe watched the handler, how the handler ended. The SDK's message texts live in
`sdk_compat`; tests pin each case of the error model.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from mcp_nb.records.structured import says_not_json
from mcp_nb.records.trace import ServerLog, ServerTrace
from mcp_nb.sdk_compat import (
    CONNECTION_CLOSED,
    CONNECTION_CLOSED_TEXT,
    FASTMCP_PROMPT_CRASHED,
    FASTMCP_PROMPT_UNCONVERTED,
    FASTMCP_TOOL_FAILED_LOG,
    FASTMCP_UNKNOWN_PROMPT,
    HANDLER_RAISED,
    INTERNAL_ERROR_TEXT,
    MISSING_ARGUMENTS,
    OUTPUT_INVALID,
    OUTPUT_MISSING,
    REMOTE_TOOL_ERRORS,
    RESOURCE_CRASH_TEXTS,
    RESOURCE_CRASHED,
    RESOURCE_FAILED,
    TOOL_CRASHED,
    TOOL_FAILED,
    TOOL_REJECTED,
    TS_RESOURCE_NOT_FOUND,
    TS_UNKNOWN_PROMPT,
    TS_UNKNOWN_TOOL_ANY,
    UNKNOWN_PROMPT,
    UNKNOWN_TOOL,
    ts_unfolded,
)

INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


def _templates(logs: Iterable[ServerLog]) -> set[str]:
    return {log.template for log in logs}


_OK = ("result", "ok")


def tool_result_cause(name: str, content: str, is_error: bool, trace: ServerTrace | None, local: bool = True) -> tuple[str, str]:
    if not is_error:
        return _OK
    if not local:
        return "tool_error", _remote_tool_error(name, content, trace)
    if _refused_not_json(name, content, trace):
        return "tool_error", "non_json_number"
    seen = _templates(trace.logs) if trace is not None else set()
    if TOOL_REJECTED in seen:
        return "tool_error", "invalid_arguments"
    if TOOL_CRASHED in seen:
        return "tool_error", "invalid_output" if _output_refused(trace) else "crash"
    if TOOL_FAILED in seen:
        if content == UNKNOWN_TOOL.format(name=name):
            return "tool_error", "unknown_tool"
        return "tool_error", "raised"
    # No SDK record (the user's logging configuration may keep the SDK's INFO lines from
    # being made): how the probed handler ended still tells.
    if trace is not None and trace.status == "raised":
        return ("tool_error", "raised") if trace.error_type == "ToolError" else ("tool_error", "crash")
    return "tool_error", "returned"


def _refused_not_json(name: str, content: str, trace: ServerTrace | None) -> bool:
    """The kernel's server refused what the handler returned as no JSON (NaN, an infinity): the
    probe raised it as a ToolError, whose text the SDK sends after its prefix."""
    prefix = f"Error executing tool {name}: "
    if trace is None or trace.status != "raised" or trace.error_type != "ToolError" or not content.startswith(prefix):
        return False
    return says_not_json(content[len(prefix) :])


def _output_refused(trace: ServerTrace | None) -> bool:
    """The server refused what the handler returned: it returned normally, and then the SDK's check
    of the value against the tool's output schema (a pydantic model) raised the crash."""
    if trace is None or trace.status != "returned":
        return False
    return any(kind == "ValidationError" for log in trace.logs for kind, _ in log.exceptions)


def _remote_tool_error(name: str, content: str, trace: ServerTrace | None) -> str:
    """An outside server's isError result: the texts the SDKs write tell what happened, and where the
    text is the handler's own (a FastMCP ToolError's), the line the server logged about it on stderr."""
    for pattern, cause in REMOTE_TOOL_ERRORS:
        if pattern(name, content):
            return cause
    if _said_on_stderr(trace, FASTMCP_TOOL_FAILED_LOG.format(name=name)):
        return "raised"
    return "returned"


def _said_on_stderr(trace: ServerTrace | None, line: str) -> bool:
    """A stdio server wrote `line` to stderr during the call, however its logging drew and wrapped it
    (compared without whitespace, so a line cut at any column still matches)."""
    wanted = "".join(line.split())
    said = "".join(
        "".join(log.message.translate(_FRAMES).split())
        for log in (trace.logs if trace is not None else ())
        if log.source == "stderr"
    )
    return wanted in said


# -32042, URLElicitationRequiredError (MCP 2025-11-25): the request needs the user to open a page
# first (an authorization, a payment); its data lists the pages. The request may be sent again after.
URL_REQUIRED = -32042


def protocol_error_cause(
    target: str,
    code: int | None,
    trace: ServerTrace | None,
    message: str = "",
    local: bool = True,
    raised: tuple[tuple[str, str], ...] = (),
) -> str:
    """`local`: the kernel's own server (its log tells what happened), else an outside one (its
    code and text do). `raised`: the (type, text) chain of the exception the request failed with,
    when the caller holds it (a served kernel's middleware does; the kernel's own calls read it
    from the log)."""
    if code == URL_REQUIRED:  # whoever raised it: the user must open a page, then call again
        return "url_required"
    if not local:
        return _remote_protocol_error(target, code, message or "", trace)
    if code == INTERNAL_ERROR and trace is not None and trace.error_type == "MCPError" and says_not_json(message):
        return "non_json_number"  # the kernel's server refused a resource's or a prompt's NaN (registering/probe.py)
    logs = trace.logs if trace is not None else ()
    seen = _templates(logs)
    if target != "prompt" and HANDLER_RAISED in seen:
        # The dispatcher's boundary logged an exception no tool or resource handler turned into
        # an answer: the server's middleware raised (an MCPError there is passed on unlogged).
        return "crash"
    if target == "resource":
        if RESOURCE_CRASHED in seen:
            return "crash"
        if RESOURCE_FAILED in seen:
            return "not_found" if code == INVALID_PARAMS else "resource_error"
        if trace is not None and trace.status == "raised" and trace.error_type != "MCPError":
            return {"ResourceNotFoundError": "not_found", "ResourceError": "resource_error"}.get(trace.error_type or "", "crash")
        return "mcp_error"
    if target == "prompt":
        for log in logs:
            if log.template == HANDLER_RAISED and log.exceptions:
                return _prompt_failure(log.exceptions)
        if raised:
            return _prompt_failure(raised)
        if trace is not None and trace.status == "raised" and trace.error_type != "MCPError":
            return "crash"
        return "mcp_error"
    return "mcp_error"


def _remote_protocol_error(target: str, code: int | None, message: str, trace: ServerTrace | None) -> str:
    """An outside server's JSON-RPC error: its code and text, and a stdio server's own log lines."""
    if code == CONNECTION_CLOSED and message == CONNECTION_CLOSED_TEXT:
        return "disconnected"
    text = ts_unfolded(message, code) if code is not None else message  # without the TypeScript SDK 1.x's prefix
    if target == "tool":
        # The TypeScript SDK 2.x answers an unknown or disabled tool with a JSON-RPC error, not a result.
        if code == INVALID_PARAMS and TS_UNKNOWN_TOOL_ANY.fullmatch(text):
            return "unknown_tool"
        return "mcp_error"
    if target == "resource":
        if code in (INVALID_PARAMS, TS_RESOURCE_NOT_FOUND):
            return "not_found"
        if code == INTERNAL_ERROR:
            return "crash" if message.startswith(RESOURCE_CRASH_TEXTS) else "resource_error"
        return "mcp_error"
    if target == "prompt":
        if code == INVALID_PARAMS:
            # the one code for a missing prompt and bad arguments (TypeScript SDK, FastMCP): the text tells
            if message.startswith(FASTMCP_UNKNOWN_PROMPT) or TS_UNKNOWN_PROMPT.fullmatch(text):
                return "not_found"
            return "invalid_arguments"
        if code in (INTERNAL_ERROR, 0) and message == INTERNAL_ERROR_TEXT:
            # The Python SDK hides every prompt failure behind one text; a stdio server's
            # stderr, when it is there, still carries the exception it logged.
            said = [log.message for log in (trace.logs if trace is not None else ()) if log.source == "stderr"]
            return _prompt_failure_said(said)
        if code == INTERNAL_ERROR and message.startswith(FASTMCP_PROMPT_CRASHED):
            return "crash"
        if code == INTERNAL_ERROR and message.startswith(FASTMCP_PROMPT_UNCONVERTED):
            return "invalid_arguments"
        return "mcp_error"
    return "mcp_error"


def _prompt_failure(chain: tuple[tuple[str, str], ...]) -> str:
    # The SDK wraps every prompt failure in ValueError(str(original)) from original.
    for type_name, text in chain:
        if text.startswith(UNKNOWN_PROMPT):
            return "not_found"
        if text.startswith(MISSING_ARGUMENTS) or type_name == "ValidationError":
            return "invalid_arguments"
    return "crash"


# Box-drawing characters and rich's pointer: where `rich` is installed, the SDK's logging draws a
# server's tracebacks in boxes and wraps them to 80 columns, so one exception line can span lines.
_FRAMES = str.maketrans({chr(c): " " for c in range(0x2500, 0x2580)} | {"\u2771": " "})


def _prompt_failure_said(lines: list[str]) -> str:
    """A prompt's failure as a stdio server's stderr tells it, however its logging draws and wraps it."""
    text = " ".join(" ".join(line.translate(_FRAMES).split()) for line in lines)
    # The exception's own line ("ValueError: Missing required arguments: ..."), not a line of
    # source code that a drawn traceback shows beside it.
    if ": " + UNKNOWN_PROMPT in text:
        return "not_found"
    if ": " + MISSING_ARGUMENTS in text:
        return "invalid_arguments"
    return "crash"


def refused_request(err: BaseException) -> bool:
    """A request the SDK would not take, refused by its own params model before any handler
    (a client's that would not build it, a server's that would not read it): pydantic's
    ValidationError, titled with the request's model."""
    return type(err).__name__ == "ValidationError" and getattr(err, "title", "").endswith(("RequestParams", "Request"))


def client_failure(err: BaseException) -> tuple[str, Any]:
    """What escaped the SDK's client, as a cause and the data to keep: a lost connection, an
    HTTP error status, an answer the protocol's schema refused, or else a client error."""
    while isinstance(err, BaseExceptionGroup) and len(err.exceptions) == 1:
        err = err.exceptions[0]
    kinds = {cls.__name__ for cls in type(err).__mro__}
    if "HTTPStatusError" in kinds:
        response = getattr(err, "response", None)
        status = getattr(response, "status_code", None)
        try:
            body = response.text[:2000] if response is not None else ""
        except Exception:  # noqa: BLE001 - a streamed body may not be readable any more
            body = ""
        return "http_error", {"status": status, "body": body}
    if "NonJsonNumber" in kinds:  # mcp_nb's client refused an answer holding NaN or an infinity
        return "non_json_number", None
    if kinds & {"OAuthFlowError", "AuthorizationPending"}:  # a step-up during the call that got no token
        return "unauthorized", None
    if kinds & {
        "ConnectionLost",
        "ClosedResourceError",
        "BrokenResourceError",
        "EndOfStream",
        "ConnectionError",
        "TransportError",
        "ConnectError",
        "ReadError",
        "WriteError",
        "RemoteProtocolError",
    }:
        return "disconnected", None
    if "ValidationError" in kinds:
        # The client checks what it sends as well as what it gets: a request it would not build
        # (arguments its own params model refuses, such as a prompt argument that is no string)
        # was never sent, so no answer was refused.
        if refused_request(err):
            return "client_error", None
        return "invalid_response", None
    if isinstance(err, RuntimeError) and (str(err).startswith(OUTPUT_INVALID) or str(err).endswith(OUTPUT_MISSING)):
        return "invalid_output", None  # the client refused a structured result that breaks the declared schema
    return "client_error", None


def late_outcome(target: str, trace: ServerTrace) -> tuple[str, str]:
    """Classify a handler that ended after the client stopped waiting, from how it ended."""
    if trace.status == "returned":
        if target == "tool" and trace.returned_error:
            return "tool_error", "returned"
        return "result", "ok"
    kind = trace.error_type
    if kind == "MCPError":
        return "protocol_error", "mcp_error"
    if target == "tool":
        return (
            ("tool_error", "raised")
            if kind in ("ToolError", "ResourceError", "ResourceNotFoundError")
            else (
                "tool_error",
                "crash",
            )
        )
    if target == "resource":
        if kind == "ResourceNotFoundError":
            return "protocol_error", "not_found"
        if kind == "ResourceError":
            return "protocol_error", "resource_error"
    return "protocol_error", "crash"


# Content blocks a card shows as themselves: images and sounds, and an embedded resource whose
# blob is an image or a sound. The text names them (`[image image/png]`), as it always did.
MEDIA_KINDS = ("image", "audio")


def media_kind(block: Any) -> str | None:
    """The kind of media a content block is, image or audio, when a card can show it as itself; else None."""
    kind: str | None = getattr(block, "type", None)
    if kind in MEDIA_KINDS:
        return kind
    if kind == "resource":
        inner = getattr(block, "resource", None)
        family = (getattr(inner, "mime_type", None) or "").partition("/")[0]
        if family in MEDIA_KINDS and getattr(inner, "blob", None) is not None:
            return family
    return None


def content_text(blocks: Sequence[Any]) -> str:
    """The text a model reads from content blocks; other kinds are named, not dropped."""
    if len(blocks) == 1 and getattr(blocks[0], "text", None) is not None:
        text: str = blocks[0].text  # the common case: one text block
        return text
    return _blocks_text(blocks)


def content_media(blocks: Sequence[Any]) -> tuple[Any, ...]:
    """The blocks among `blocks` that are images or sounds, as the SDK gave them (never copied)."""
    if len(blocks) == 1 and getattr(blocks[0], "text", None) is not None:
        return ()
    return tuple(block for block in blocks if media_kind(block) is not None)


def _blocks_text(blocks: Sequence[Any]) -> str:
    parts = []
    for block in blocks:
        text = getattr(block, "text", None)
        if text is not None:
            parts.append(text)
            continue
        kind = getattr(block, "type", type(block).__name__)
        if kind == "resource":
            inner = getattr(block, "resource", None)
            parts.append(getattr(inner, "text", None) or f"[resource {getattr(inner, 'uri', '')}]")
        elif kind == "resource_link":
            parts.append(f"[resource link {getattr(block, 'uri', '')}]")
        else:
            parts.append(f"[{kind} {getattr(block, 'mime_type', '') or ''}]".replace(" ]", "]"))
    return "\n".join(parts)


def resource_text(contents: Iterable[Any]) -> str:
    parts = []
    for item in contents:
        text = getattr(item, "text", None)
        if text is not None:
            parts.append(text)
        else:
            blob = getattr(item, "blob", "") or ""
            parts.append(f"[blob {getattr(item, 'mime_type', '')}, {len(blob) * 3 // 4} bytes]")
    return "\n".join(parts)


def prompt_text(messages: Iterable[Any]) -> str:
    return "\n".join(f"{m.role}: {content_text([m.content])}" for m in messages)
