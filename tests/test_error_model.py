"""Every row of the error model (docs/error-model.md), through the API and through the magics."""

import textwrap

import pytest
from mcp import MCPError
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp_types import CallToolResult, TextContent

import mcp_nb

CATALOG = {"Dune": "Frank Herbert", "Neuromancer": "William Gibson"}


def register_bookshop():
    @mcp_nb.tool()
    def get_author(title: str) -> str:
        """Look up the author of a book in the catalog."""
        if title == "tool-error":
            raise ToolError(f"No book titled {title!r} in the catalog.")
        if title == "mcp-error":
            raise MCPError(code=-32602, message=f"No book titled {title!r}.", data={"title": title})
        if title == "returns-error":
            return "Error: no such book"
        if title == "flagged":
            return CallToolResult(content=[TextContent(type="text", text="flagged by the tool")], is_error=True)
        return CATALOG[title]

    @mcp_nb.tool()
    def count_books(limit: int) -> int:
        return min(limit, len(CATALOG))

    @mcp_nb.resource("books://{title}")
    def book(title: str) -> str:
        if title == "missing":
            raise ResourceNotFoundError(f"No book titled {title!r} in the catalog.")
        if title == "broken":
            raise ResourceError("The catalog is being rebuilt.")
        if title == "mcp-error":
            raise MCPError(code=-32050, message="catalog offline", data={"retry_after": 5})
        return f"{title} by {CATALOG[title]}"

    @mcp_nb.resource("books://catalog")
    def catalog() -> str:
        return ", ".join(CATALOG)

    @mcp_nb.resource("books://static-crash")
    def static_crash() -> str:
        raise KeyError("nothing")

    @mcp_nb.prompt()
    def review(title: str) -> str:
        if title == "crash":
            raise KeyError(title)
        if title == "mcp-error":
            raise MCPError(code=-32050, message="reviews offline", data={"retry_after": 5})
        return f"Write a short review of {title}."


def levels(outcome):
    return [(log.level, log.traceback is not None) for log in outcome.server_logs]


# -- tools ------------------------------------------------------------------------------------


def test_success():
    register_bookshop()
    o = mcp_nb.call("get_author", {"title": "Dune"})
    assert (o.outcome, o.cause, o.content, o.is_error) == ("result", "ok", "Frank Herbert", False)
    assert o.structured_content == {"result": "Frank Herbert"}
    assert o.code is None and o.server_logs == ()


def test_tool_error_is_read_by_the_model():
    register_bookshop()
    o = mcp_nb.call("get_author", {"title": "tool-error"})
    assert (o.outcome, o.cause, o.is_error) == ("tool_error", "raised", True)
    assert o.content == "Error executing tool get_author: No book titled 'tool-error' in the catalog."
    assert o.structured_content is None
    assert levels(o) == [("INFO", False)]


def test_mcp_error_reaches_the_host_unchanged_and_logs_nothing():
    register_bookshop()
    o = mcp_nb.call("get_author", {"title": "mcp-error"})
    assert (o.outcome, o.cause) == ("protocol_error", "mcp_error")
    assert (o.code, o.message, o.data) == (-32602, "No book titled 'mcp-error'.", {"title": "mcp-error"})
    assert o.content is None and o.is_error is None
    assert o.server_logs == ()


def test_any_other_exception_is_a_crash_with_a_traceback_in_the_log():
    register_bookshop()
    o = mcp_nb.call("get_author", {"title": "Nothing"})
    assert (o.outcome, o.cause, o.content) == ("tool_error", "crash", "Error executing tool get_author")
    assert "Nothing" not in o.content  # the exception text never leaves the server
    (log,) = o.server_logs
    assert log.level == "ERROR" and log.message == "Tool 'get_author' raised an unexpected exception"
    assert "KeyError: 'Nothing'" in log.traceback
    assert log.exceptions[-1] == ("KeyError", "'Nothing'")


def test_returned_error_string_is_a_plain_result():
    register_bookshop()
    o = mcp_nb.call("get_author", {"title": "returns-error"})
    assert (o.outcome, o.cause, o.is_error, o.content) == ("result", "ok", False, "Error: no such book")


def test_result_flagged_is_error_passes_through():
    register_bookshop()
    o = mcp_nb.call("get_author", {"title": "flagged"})
    assert (o.outcome, o.cause, o.content, o.is_error) == ("tool_error", "returned", "flagged by the tool", True)


@pytest.mark.parametrize("arguments", [{"title": 42}, {}, {"title": None}])
def test_arguments_rejected_by_the_schema(arguments):
    register_bookshop()
    o = mcp_nb.call("get_author", arguments)
    assert (o.outcome, o.cause, o.is_error) == ("tool_error", "invalid_arguments", True)
    assert o.content.startswith("Error executing tool get_author: 1 validation error")
    (log,) = o.server_logs
    assert log.message == "Tool 'get_author' rejected arguments: ['title']"


def test_numeric_string_accepted_and_extra_arguments_ignored():
    register_bookshop()
    assert mcp_nb.call("count_books", {"limit": "5"}).content == "2"
    o = mcp_nb.call("count_books", {"limit": 1, "extra": True})
    assert (o.outcome, o.content) == ("result", "1")


def test_unknown_tool_is_a_tool_error_not_a_protocol_error():
    o = mcp_nb.call("no_such_tool", {})
    assert (o.outcome, o.cause, o.content) == ("tool_error", "unknown_tool", "Unknown tool: no_such_tool")


# -- resources --------------------------------------------------------------------------------


def test_resource_read():
    register_bookshop()
    o = mcp_nb.read("books://Dune")
    assert (o.outcome, o.cause, o.content, o.target) == ("result", "ok", "Dune by Frank Herbert", "resource")
    assert mcp_nb.read("books://catalog").content == "Dune, Neuromancer"


def test_resource_not_found():
    register_bookshop()
    o = mcp_nb.read("books://missing")
    assert (o.outcome, o.cause, o.code) == ("protocol_error", "not_found", -32602)
    assert o.message == "No book titled 'missing' in the catalog."
    assert o.data == {"uri": "books://missing"}
    assert levels(o) == [("INFO", False)]


def test_resource_error():
    register_bookshop()
    o = mcp_nb.read("books://broken")
    assert (o.outcome, o.cause, o.code, o.message) == (
        "protocol_error",
        "resource_error",
        -32603,
        "The catalog is being rebuilt.",
    )
    assert o.data == {"uri": "books://broken"}
    assert levels(o) == [("INFO", False)]


@pytest.mark.parametrize(
    "uri, message",
    [
        ("books://Nothing", "Error creating resource from template books://Nothing"),
        ("books://static-crash", "Error reading resource books://static-crash"),
    ],
)
def test_resource_crash_names_only_the_uri(uri, message):
    register_bookshop()
    o = mcp_nb.read(uri)
    assert (o.outcome, o.cause, o.code, o.message) == ("protocol_error", "crash", -32603, message)
    assert levels(o) == [("ERROR", True)]


def test_unknown_uri():
    o = mcp_nb.read("other://x")
    assert (o.outcome, o.cause, o.code, o.message) == ("protocol_error", "not_found", -32602, "Unknown resource: other://x")
    assert o.data == {"uri": "other://x"}


def test_resource_mcp_error():
    register_bookshop()
    o = mcp_nb.read("books://mcp-error")
    assert (o.outcome, o.cause, o.code, o.message) == ("protocol_error", "mcp_error", -32050, "catalog offline")
    assert o.data == {"retry_after": 5} and o.server_logs == ()  # passed through, not a crash


# -- middleware -------------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["tool", "resource"])
def test_an_exception_in_middleware_is_a_crash_and_an_mcp_error_there_passes_through(target):
    register_bookshop()
    state = {"raise": RuntimeError("the gate is broken")}

    async def gate(ctx, call_next):
        if ctx.method in ("tools/call", "resources/read"):
            raise state["raise"]
        return await call_next(ctx)

    mcp_nb.server().middleware.append(gate)
    ask = (lambda: mcp_nb.call("get_author", {"title": "Dune"})) if target == "tool" else (lambda: mcp_nb.read("books://Dune"))
    o = ask()
    assert (o.outcome, o.cause, o.code, o.message) == ("protocol_error", "crash", -32603, "Internal server error")
    assert levels(o) == [("ERROR", True)] and o.server_logs[0].exceptions[-1] == ("RuntimeError", "the gate is broken")
    state["raise"] = MCPError(code=-32051, message="closed for stocktaking", data={"retry_after_s": 600})
    o = ask()
    assert (o.outcome, o.cause, o.code, o.data) == ("protocol_error", "mcp_error", -32051, {"retry_after_s": 600})
    assert o.server_logs == ()


# -- prompts ----------------------------------------------------------------------------------


def test_prompt_success():
    register_bookshop()
    o = mcp_nb.get_prompt("review", {"title": "Dune"})
    assert (o.outcome, o.cause, o.content) == ("result", "ok", "user: Write a short review of Dune.")


@pytest.mark.parametrize(
    "name, arguments, cause",
    [("review", {"title": "crash"}, "crash"), ("nope", {}, "not_found"), ("review", {}, "invalid_arguments")],
)
def test_prompt_failures_are_internal_errors_told_apart_by_the_log(name, arguments, cause):
    register_bookshop()
    o = mcp_nb.get_prompt(name, arguments)
    assert (o.outcome, o.cause, o.code, o.message) == ("protocol_error", cause, -32603, "Internal server error")
    assert levels(o) == [("ERROR", True)]  # the SDK logs a traceback even for the caller's mistakes


def test_a_prompt_argument_the_client_will_not_send_is_its_own_error_not_a_refused_answer():
    register_bookshop()
    o = mcp_nb.get_prompt("review", {"title": 5})  # prompt arguments are strings: the client refuses to send it
    assert (o.outcome, o.cause, o.code) == ("protocol_error", "client_error", None)
    assert o.message.startswith("ValidationError: 1 validation error for GetPromptRequestParams")
    assert o.server_logs == ()  # nothing reached the server


def test_prompt_mcp_error():
    register_bookshop()
    o = mcp_nb.get_prompt("review", {"title": "mcp-error"})
    assert (o.outcome, o.cause, o.code) == ("protocol_error", "mcp_error", -32050)
    assert (o.message, o.data) == ("reviews offline", {"retry_after": 5}) and o.server_logs == ()


# -- the same rows through the magics ---------------------------------------------------------

BOOKSHOP_CELLS = [
    (
        "mcp_tool",
        "",
        """
        def get_author(title: str) -> str:
            '''Look up the author of a book in the catalog.'''
            if title == "tool-error":
                raise ToolError(f"No book titled {title!r} in the catalog.")
            if title == "mcp-error":
                raise MCPError(code=-32602, message="no such book", data={"title": title})
            if title == "returns-error":
                return "Error: no such book"
            return CATALOG[title]
    """,
    ),
    (
        "mcp_resource",
        "books://{title}",
        """
        def book(title: str) -> str:
            if title == "missing":
                raise ResourceNotFoundError("no such book")
            if title == "broken":
                raise ResourceError("rebuilding")
            return CATALOG[title]
    """,
    ),
    (
        "mcp_prompt",
        "",
        """
        def review(title: str) -> str:
            if title == "crash":
                raise KeyError(title)
            return f"Review {title}."
    """,
    ),
]

MAGIC_ROWS = [
    ("mcp_call", "get_author title=Dune", "result", "ok"),
    ("mcp_call", "get_author title=tool-error", "tool_error", "raised"),
    ("mcp_call", "get_author title=Nothing", "tool_error", "crash"),
    ("mcp_call", "get_author title=returns-error", "result", "ok"),
    ("mcp_call", "get_author title=mcp-error", "protocol_error", "mcp_error"),
    ("mcp_call", 'get_author {"title": 42}', "tool_error", "invalid_arguments"),
    ("mcp_call", "get_author", "tool_error", "invalid_arguments"),
    ("mcp_call", "nope x=1", "tool_error", "unknown_tool"),
    ("mcp_read", "books://Dune", "result", "ok"),
    ("mcp_read", "books://missing", "protocol_error", "not_found"),
    ("mcp_read", "books://broken", "protocol_error", "resource_error"),
    ("mcp_read", "books://Nothing", "protocol_error", "crash"),
    ("mcp_read", "nothing://here", "protocol_error", "not_found"),
    ("mcp_get_prompt", "review title=Dune", "result", "ok"),
    ("mcp_get_prompt", "review title=crash", "protocol_error", "crash"),
    ("mcp_get_prompt", "review", "protocol_error", "invalid_arguments"),
    ("mcp_get_prompt", "nope", "protocol_error", "not_found"),
]


@pytest.fixture
def bookshop_cells(shell):
    shell.user_ns.update(
        CATALOG=dict(CATALOG),
        ToolError=ToolError,
        MCPError=MCPError,
        ResourceError=ResourceError,
        ResourceNotFoundError=ResourceNotFoundError,
    )
    for magic, line, body in BOOKSHOP_CELLS:
        result = shell.run_cell(f"%%{magic} {line}\n" + textwrap.dedent(body))
        assert result.success, result.error_in_exec
    return shell


@pytest.mark.parametrize("magic, line, outcome, cause", MAGIC_ROWS)
def test_error_model_through_magics(bookshop_cells, magic, line, outcome, cause):
    o = bookshop_cells.run_line_magic(magic, line)
    assert (o.outcome, o.cause) == (outcome, cause)
    assert mcp_nb.history().to_frame()["call_id"].tolist() == [o.call_id]


def test_magic_result_lands_in_underscore(bookshop_cells):
    result = bookshop_cells.run_cell("%mcp_call get_author title=Dune")
    assert result.success and result.result.content == "Frank Herbert"
