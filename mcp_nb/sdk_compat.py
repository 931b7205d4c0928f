"""Everything mcp_nb needs from the `mcp` SDK that the SDK does not promise: in one place.

mcp_nb classifies calls by the SDK's own log messages, replaces registrations in the
SDK's managers in one step (the public `add_*` keep the first registration of a name,
and resources have no public removal at all), and keeps `MCPServer()` from configuring
the root logger. Each of these leans on a private attribute or a message text of the
SDK. They are gathered here, with the SDK releases they were checked against, so an
SDK upgrade that moves one fails in one place, by name: `check()` lists what moved,
and tests/test_sdk_compat.py provokes every message the classifier matches.

The texts of outside servers written with other SDKs (FastMCP, the TypeScript SDK) live here
too, each with its source and the release it was read in; tests/test_other_sdks_causes.py
provokes them from real servers of those SDKs, at the releases tests/peers.py pins.

The commands that need no MCP (`python -m mcp_nb diff`) import this module for its texts, so it
reaches the SDK's modules through `mcp_nb.libraries` (`lib.sdk_server.MCPServer`), each
imported when a function here first needs it.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable, Iterator
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from mcp_nb import libraries as lib
from mcp_nb.mistakes import Failure

SDK_VERSION = version("mcp")
CHECKED = ("2.3",)  # the minor releases whose privates and texts were verified

# -- message texts the classifier matches (the unformatted `record.msg` of the SDK's logs) -----

TOOL_REJECTED = "Tool %r rejected arguments: %r"  # INFO: arguments failed the input schema
TOOL_FAILED = "Tool %r failed: %r"  # INFO: ToolError, including an unknown tool
TOOL_CRASHED = "Tool %r raised an unexpected exception"  # ERROR with traceback
RESOURCE_FAILED = "Resource %r failed: %r"  # INFO: ResourceError / ResourceNotFoundError
RESOURCE_CRASHED = "Resource %r raised an unexpected exception"  # ERROR with traceback
HANDLER_RAISED = "request handler raised"  # ERROR: the in-process dispatcher's boundary (prompts)

# -- result and exception texts --------------------------------------------------------------

UNKNOWN_TOOL = "Unknown tool: {name}"  # the content of an unknown tool's isError result
UNKNOWN_PROMPT = "Unknown prompt:"  # the start of the ValueError for an unknown prompt
MISSING_ARGUMENTS = "Missing required arguments"  # the start of a prompt's missing-argument ValueError
TIMED_OUT = "Timed out after {seconds:g}s waiting for '{method}'"  # the in-process -32001 message
TIMED_OUT_JSONRPC = "Request '{method}' timed out"  # the same over JSON-RPC transports (stdio, HTTP)
# The client's RuntimeError for a structured result that breaks the tool's declared output schema
# (`ClientSession.validate_tool_result`): its text starts with the first, or ends with the second.
OUTPUT_INVALID = "Invalid structured content returned by tool "
OUTPUT_MISSING = " has an output schema but did not return structured content"

SDK_LOGGER = "mcp"  # the root of the SDK's logger tree
# The one SDK logger outside that tree: the client session's (`mcp/client/session.py` logs as
# "client"), which says a server's notification it could not read with its traceback.
SDK_SESSION_LOGGER = "client"

# -- what outside servers send (measured: the Python SDK 2.3 over stdio and HTTP, the TypeScript
# SDK 1.32 of server-everything), for the causes of their errors, which no probe watches ----------

CONNECTION_CLOSED = -32000  # the client's code when the stream ends under a request
CONNECTION_CLOSED_TEXT = "Connection closed"
INTERNAL_ERROR_TEXT = "Internal server error"  # the Python SDK's text for every prompt failure
RESOURCE_CRASH_TEXTS = ("Error reading resource", "Error creating resource from template")
# The streamable HTTP client turns an error status into a JSON-RPC error with one of these
# texts and drops the status and body (mcp/client/streamable_http.py `_handle_post_request`).
HTTP_STATUS_TEXTS = ("Server returned an error response", "Session terminated", "Not Found")
# And a 2xx answer that is no JSON-RPC at all (an HTML page from a proxy, a login form, a body
# cut short) into one with these: no handler raised anything, the client made the error up.
BROKEN_ANSWER_TEXTS = ("Unexpected content type: ", "Failed to parse JSON response: ", "Failed to parse SSE message: ")


# -- what servers written with other SDKs send (read in their sources and measured over stdio) ------
#
# FastMCP 4.2 (PyPI `fastmcp`, checked 4.2.3 on mcp 2.3): fastmcp/server/mixins/mcp_operations.py
# answers a call; fastmcp/server/server.py words the failures. Every failure of a tool is an isError
# result whose text is the FastMCP exception's alone: no prefix says which it was, except these.
FASTMCP_UNKNOWN_TOOL = "Unknown tool: {name!r}"  # `_on_call_tool`, for a missing or disabled tool
# `call_tool`: any exception but FastMCP's own is wrapped in ToolError("Error calling tool 'NAME': text"),
# or exactly "Error calling tool 'NAME'" with `mask_error_details`; logged at ERROR with its traceback
FASTMCP_TOOL_CRASHED = "Error calling tool {name!r}"
# ... and a ToolError (any FastMCPError) is sent as its bare message, logged with the same line on the
# server's stderr but without a traceback: over stdio that line is what tells it from a returned error.
FASTMCP_TOOL_FAILED_LOG = FASTMCP_TOOL_CRASHED
# fastmcp/tools/function_tool.py: arguments that fail the function's pydantic check are sent as pydantic's
# text, titled with the function's name (`call[fn]`), which need not be the tool's
FASTMCP_BAD_ARGUMENTS = re.compile(r"\d+ validation errors? for call\[")
# fastmcp/tools/base.py: a return value FastMCP refuses to send, sent as a ToolError: a number JSON cannot
# carry (NaN, an infinity), or one not serializable for the declared output schema
FASTMCP_NOT_JSON = "Tool result contains a non-finite float"
FASTMCP_OUTPUT_REFUSED = "Could not serialize the return value of tool "
# Prompts (`_on_get_prompt`): -32602 "Unknown prompt: 'NAME'"; -32602 "Missing required arguments: {...}"
# (fastmcp/prompts/function_prompt.py); -32603 "Could not convert argument 'A' with value ..." for an argument
# not of the function's type; -32603 "Error rendering prompt 'NAME'" (": text" unless masked) for any other
# exception, and a PromptError's own text with -32603.
FASTMCP_UNKNOWN_PROMPT = "Unknown prompt: "
FASTMCP_PROMPT_UNCONVERTED = "Could not convert argument "
FASTMCP_PROMPT_CRASHED = "Error rendering prompt "
# Resources (`_on_read_resource`): -32602 "Resource not found: 'URI'" with data {"uri"}; a crash -32603
# "Error reading resource 'URI'" (one of RESOURCE_CRASH_TEXTS, as the Python SDK's); a ResourceError -32603
# with its own text.
#
# The TypeScript SDK. 1.x (@modelcontextprotocol/sdk dist/esm/server/mcp.js, checked 1.32.2, as
# server-everything 2026.8.31 uses it): an McpError's message is "MCP error CODE: text", and every error of
# tools/call, the SDK's own included, is folded into an isError result with that message. 2.x
# (@modelcontextprotocol/server dist/mcp-*.mjs, checked 2.3.1): a ProtocolError's message is the text alone;
# an unknown or disabled tool is a JSON-RPC -32602 error, the other errors of tools/call isError results.
# In both, what a tool handler throws is sent as its bare message, as a returned isError would be.
TS_FOLDED = "MCP error {code}: "  # 1.x's prefix of an error folded into a tool's result
TS_UNKNOWN_TOOL = ("Tool {name} not found", "Tool {name} disabled")  # -32602
TS_UNKNOWN_TOOL_ANY = re.compile(r"Tool \S+ (not found|disabled)")  # the same, for any name (none holds a space, SEP-986)
TS_BAD_ARGUMENTS = ("Input validation error: Invalid arguments for tool {name}: ", "Invalid arguments for tool {name}: ")
TS_OUTPUT_REFUSED = "Output validation error: "  # the SDK refused the handler's structured result
# Prompts: -32602 "Prompt NAME not found" / "Prompt NAME disabled"; -32602 "Invalid arguments for prompt NAME: ...";
# what a callback throws: -32603 with its message (nothing tells a crash from a chosen error).
TS_UNKNOWN_PROMPT = re.compile(r"Prompt .+ (not found|disabled)")
# Resources: -32602 "Resource URI not found" (1.x), "Resource not found: URI" with data {"uri"} (2.x); earlier
# builds sent -32002, which 2.x still reads as a missing resource (`ProtocolError.fromError`).
TS_RESOURCE_NOT_FOUND = -32002


def _python_validation(name: str, content: str) -> bool:
    prefix = f"Error executing tool {name}: "
    return content.startswith(prefix) and " validation error" in content[len(prefix) : len(prefix) + 40]


def ts_unfolded(text: str, code: int = -32602) -> str:
    """A text without the TypeScript SDK 1.x's "MCP error CODE: ", which it puts before the message of
    every error it sends (a JSON-RPC error's and one folded into a tool's result)."""
    prefix = TS_FOLDED.format(code=code)
    return text[len(prefix) :] if text.startswith(prefix) else text


REMOTE_TOOL_ERRORS: tuple[tuple[Callable[[str, str], bool], str], ...] = (
    # the Python SDK: "Unknown tool: X"; pydantic's text for bad arguments; a crash's bare
    # "Error executing tool X"; a ToolError's "Error executing tool X: message"
    (lambda name, text: text == UNKNOWN_TOOL.format(name=name), "unknown_tool"),
    (_python_validation, "invalid_arguments"),
    (lambda name, text: text == f"Error executing tool {name}", "crash"),
    (lambda name, text: text.startswith(f"Error executing tool {name}: "), "raised"),
    # the TypeScript SDK: 1.x folds its JSON-RPC errors into the result's text, 2.x sends the text alone
    (lambda name, text: ts_unfolded(text) in tuple(t.format(name=name) for t in TS_UNKNOWN_TOOL), "unknown_tool"),
    (lambda name, text: ts_unfolded(text).startswith(tuple(t.format(name=name) for t in TS_BAD_ARGUMENTS)), "invalid_arguments"),
    (lambda name, text: ts_unfolded(text).startswith(TS_OUTPUT_REFUSED), "invalid_output"),
    # FastMCP
    (lambda name, text: text == FASTMCP_UNKNOWN_TOOL.format(name=name), "unknown_tool"),
    (lambda name, text: FASTMCP_BAD_ARGUMENTS.match(text) is not None, "invalid_arguments"),
    (lambda name, text: text.startswith(FASTMCP_NOT_JSON), "non_json_number"),
    (lambda name, text: text.startswith(FASTMCP_OUTPUT_REFUSED), "invalid_output"),
    (
        lambda name, text: (
            text == FASTMCP_TOOL_CRASHED.format(name=name) or text.startswith(FASTMCP_TOOL_CRASHED.format(name=name) + ": ")
        ),
        "crash",
    ),
)


class SDKMismatch(Failure, RuntimeError):
    """The installed `mcp` SDK moved something mcp_nb depends on."""


# -- the managers' registries ----------------------------------------------------------------


def tools(server) -> dict[str, Any]:
    """The tool manager's registry: name -> `Tool`."""
    return server._tool_manager._tools


def prompts(server) -> dict[str, Any]:
    """The prompt manager's registry: name -> `Prompt`."""
    return server._prompt_manager._prompts


def resources(server) -> dict[str, Any]:
    """The resource manager's static resources: URI -> `Resource`."""
    return server._resource_manager._resources


def templates(server) -> dict[str, Any]:
    """The resource manager's templates: URI template -> `ResourceTemplate`."""
    return server._resource_manager._templates


def handler_of(entry: Any) -> Callable[..., Any] | None:
    """The function a tool, prompt, static resource or template calls."""
    return getattr(entry, "fn", None)


# -- building registrations without installing them ------------------------------------------

_staging_lock = threading.Lock()
_staging = None


def build_resource(fn: Callable[..., Any], uri: str, **options: Any) -> Any:
    """The `Resource` (static URI) or `ResourceTemplate` the SDK's decorator would register.

    The checks live in `MCPServer.resource` (template variables against parameters,
    defaults for query variables, no Context on a static resource), so the decorator runs
    on a private staging server and the built object is taken from it; the caller then
    installs it in the real server in one step, and readers never see the URI missing.
    """
    global _staging
    with _staging_lock:
        if _staging is None:
            _staging = new_server("mcp_nb-staging")
        statics, temps = resources(_staging), templates(_staging)
        statics.clear()
        temps.clear()
        _staging.resource(uri, **options)(fn)
        built = statics.get(uri) or temps.get(uri)
        statics.clear()
        temps.clear()
    if built is None:
        raise SDKMismatch(f"MCPServer.resource({uri!r}) registered nothing where mcp_nb looks (mcp {SDK_VERSION})")
    return built


def is_template(entry: Any) -> bool:
    return hasattr(entry, "uri_template")


# -- the client session's check of structured results --------------------------------------------


def output_schemas(session: Any) -> dict[str, Any] | None:
    """The session's cache of each listed tool's output schema (what its own check judges by)."""
    schemas = getattr(session, "_tool_output_schemas", None)
    return schemas if isinstance(schemas, dict) else None


def replace_result_check(session: Any, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """Put `make(the SDK's check)` in place of this one session's `validate_tool_result`."""
    session.validate_tool_result = make(session.validate_tool_result)


def lighten_tool_calls(session: Any, reaches_request: Callable[[str], bool], dropped: tuple[str, ...]) -> None:
    """Send this session's `tools/call` requests to a tool that cannot reach its request without
    the client capabilities `dropped`.

    At 2026-07-28 a request carries the client's capabilities in its `_meta`, and the server
    rebuilds them as pydantic models for every request; an elicitation capability alone costs
    about 2 % of a trivial call. A handler that cannot reach its request (`reaches_request(name)`
    is False) can use none of them. The SDK stamps every request with one dict (`_stamp`, set
    when the session adopts its era): the stamp is wrapped, the lighter dict made once."""
    key = lib.mcp_types.CLIENT_CAPABILITIES_META_KEY
    stamp = session._stamp
    lighter: dict[int, dict[str, Any]] = {}

    def stamped(data: dict[str, Any], opts: Any) -> None:
        stamp(data, opts)
        if data["method"] != "tools/call":
            return
        params = data["params"]
        name = params.get("name")
        if not isinstance(name, str) or reaches_request(name):
            return
        meta = params.get("_meta")
        full = meta.get(key) if isinstance(meta, dict) else None
        if isinstance(full, dict):
            light = lighter.get(id(full))
            if light is None:
                light = lighter[id(full)] = {k: v for k, v in full.items() if k not in dropped}
            meta[key] = light

    session._stamp = stamped


# -- what serving the kernel to outside clients reaches -------------------------------------------


def lowlevel(server) -> Any:
    """The low-level `Server` under an `MCPServer`: where request handlers are added and run."""
    return server._lowlevel_server


def subscription_bus(server) -> Any:
    """The bus that carries change events to 2026-07-28 clients' `subscriptions/listen` streams."""
    return server._subscriptions


def connection_of(session: Any) -> Any:
    """The per-client `Connection` behind a request's `ServerSession` (one per client session)."""
    return session._connection


def restrict_log_levels(session: Any, levels: frozenset[str]) -> None:
    """Let this request send only `notifications/message` of these levels (`logging/setLevel`'s filter,
    which the SDK leaves to the application)."""
    session._allowed_log_levels = session._allowed_log_levels & levels


# -- a handler's Context ------------------------------------------------------------------------


def context_parameter(fn: Callable[..., Any]) -> str | None:
    """The parameter of `fn` the SDK fills with the request's `Context` (what the SDK itself looks for)."""
    return lib.sdk_context_injection.find_context_parameter(fn)


def uses_resolvers(fn: Callable[..., Any]) -> bool:
    """Whether a parameter of `fn` is filled by a resolver (`Annotated[T, Resolve(...)]`): a
    resolver may take the request's Context, and ask the client a question, for a completion or
    for its roots, so a handler with one reaches its request even without a Context parameter.
    A signature the SDK cannot read counts as one that may."""
    try:
        return bool(lib.sdk_resolve.find_resolved_parameters(fn))
    except Exception:  # noqa: BLE001 - the SDK refuses it at registration; assume the worst meanwhile
        return True


async def send_context_log(ctx: Any, level: Any, data: Any, logger: str | None) -> None:
    """What `Context.log` sends, through the session's public `send_notification`.

    `Context.log` and `ServerSession.send_log_message` are deprecated (SEP-2577) and warn on
    every call; the message is the same notification on the request's stream, sent only
    at the levels this request opted in to (the session's `_allowed_log_levels`, as
    `send_log_message` checks it).
    """
    types = lib.sdk_types
    request = getattr(ctx, "_request_context", None)
    session = getattr(request, "session", None)
    if session is None:  # outside a request: nobody to send it to
        return
    if level not in getattr(session, "_allowed_log_levels", ()):
        return
    await session.send_notification(
        types.LoggingMessageNotification(params=types.LoggingMessageNotificationParams(level=level, data=data, logger=logger)),
        related_request_id=ctx.request_id,
    )


# -- the server, without its logging side effect -----------------------------------------------

_construct_lock = threading.Lock()


@contextlib.contextmanager
def _no_logging_setup() -> Iterator[None]:
    # `MCPServer()` calls `configure_logging`, which runs `logging.basicConfig` on the root
    # logger (and imports rich). The root logger is the user's: for mcp_nb's own servers
    # that call is skipped, and the root logger is never touched.
    module = lib.sdk_server_module
    with _construct_lock:
        original = module.configure_logging
        module.configure_logging = lambda *args, **kwargs: None
        try:
            yield
        finally:
            module.configure_logging = original


def new_server(name: str):
    with _no_logging_setup():
        # Named with mcp_nb's version, which clients of a served kernel see as the server's.
        return lib.sdk_server.MCPServer(name, version=_own_version())


def _own_version() -> str:
    try:
        return version("mcp-notebook")  # the distribution's name (pyproject.toml)
    except PackageNotFoundError:  # run from a checkout that is not installed
        return ""


# -- the check ------------------------------------------------------------------------------


def http_client(headers: dict[str, str], auth: Any = None) -> Any:
    """An httpx client made as the SDK makes its own for streamable HTTP (its timeouts, redirects
    followed), for mcp_nb to hang its response hook on: the hook keeps an error status's body,
    which the SDK's transport drops. The factory is private to the SDK."""
    return lib.sdk_httpx_utils.create_mcp_http_client(headers=headers, auth=auth)


def problems() -> list[str]:
    """What moved in the installed SDK, one line each; empty when everything is where mcp_nb looks."""
    found: list[str] = []
    try:
        module = lib.sdk_server_module
    except ImportError as err:
        return [f"mcp.server.mcpserver.server cannot be imported: {err}"]
    if not callable(getattr(module, "configure_logging", None)):
        found.append("mcp.server.mcpserver.server.configure_logging is gone (mcp_nb skips it to leave the root logger alone)")
    try:
        server = new_server("mcp_nb-check")
    except Exception as err:  # noqa: BLE001 - any failure here is the answer
        return found + [f"MCPServer(name) failed: {type(err).__name__}: {err}"]
    try:
        httpx_utils = lib.sdk_httpx_utils
    except ImportError:
        httpx_utils = None
    if not callable(getattr(httpx_utils, "create_mcp_http_client", None)):
        found.append("mcp.shared._httpx_utils.create_mcp_http_client is gone (mcp_nb's HTTP connections are made with it)")
    ClientSession = lib.sdk_client_session.ClientSession
    if not callable(getattr(ClientSession, "validate_tool_result", None)):
        found.append("ClientSession.validate_tool_result is gone (mcp_nb checks structured results first)")
    if "_tool_output_schemas" not in ClientSession.__init__.__code__.co_names:
        found.append("ClientSession._tool_output_schemas is gone (the output schemas mcp_nb checks against)")
    if "_stamp" not in ClientSession.__init__.__code__.co_names:
        found.append("ClientSession._stamp is gone (mcp_nb sends lighter capabilities to tools that cannot use them)")
    if not hasattr(lib.mcp_types, "CLIENT_CAPABILITIES_META_KEY"):
        found.append("mcp_types.CLIENT_CAPABILITIES_META_KEY is gone (where a request carries the client's capabilities)")
    ServerSession = lib.sdk_server_session.ServerSession
    for attribute in ("_connection", "_allowed_log_levels"):
        if attribute not in ServerSession.__init__.__code__.co_names:
            found.append(f"ServerSession.{attribute} is gone (serving reaches a client's connection and log filter)")
    Context = lib.sdk_mcpserver.Context
    if "_request_context" not in getattr(Context, "__private_attributes__", {}):
        found.append("Context._request_context is gone (mcp_nb sends a handler's log messages through its session)")
    if not callable(getattr(ServerSession, "send_notification", None)):
        found.append("ServerSession.send_notification is gone (mcp_nb sends a handler's log messages with it)")
    if not callable(getattr(getattr(server, "_lowlevel_server", None), "add_request_handler", None)):
        found.append("MCPServer._lowlevel_server.add_request_handler is gone (serving adds its request handlers there)")
    if not callable(getattr(getattr(server, "_subscriptions", None), "publish", None)):
        found.append("MCPServer._subscriptions.publish is gone (serving tells 2026-07-28 clients what changed)")
    for what, reach in (
        ("MCPServer._tool_manager._tools", tools),
        ("MCPServer._prompt_manager._prompts", prompts),
        ("MCPServer._resource_manager._resources", resources),
        ("MCPServer._resource_manager._templates", templates),
    ):
        try:
            registry = reach(server)
        except AttributeError:
            found.append(f"{what} is gone")
            continue
        if not isinstance(registry, dict):
            found.append(f"{what} is a {type(registry).__name__}, not a dict")
    return found


def check() -> None:
    """Raise `SDKMismatch` naming every private part that moved."""
    moved = problems()
    if moved:
        raise SDKMismatch(f"mcp_nb does not fit the installed mcp {SDK_VERSION}: " + "; ".join(moved))


def checked_release() -> bool:
    return any(SDK_VERSION == r or SDK_VERSION.startswith(r + ".") for r in CHECKED)


_verified = False


def verify_once() -> None:
    """On an SDK release mcp_nb was not checked against, check the privates before first use."""
    global _verified
    if _verified:
        return
    if not checked_release():
        check()
    _verified = True
