"""The advice of every exercise, kept out of the check cells, where a learner would read it before answering.

`hints(name)` is a mapping for `mcp_nb.expect(hint=...)`, which picks the sentence by how the call
ended ("tool_error / crash", else "tool_error", else "*"), or for
`mcp_nb.check_prediction(hints=...)`, which picks it by what was predicted ("cause=raised", else
"cause", else "*"). A name is the notebook's number and the exercise: "02-fix-string".
"""

from __future__ import annotations

from collections.abc import Mapping

NOT_REGISTERED = "no tool of that name is registered: run the exercise's cell (the %%mcp_tool cell) before its check"

HINTS: dict[str, Mapping[str, str]] = {
    # 02 Tool errors
    "02-predict-crash": {
        "outcome=protocol_error": "only MCPError escapes a tool's wrapper as a JSON-RPC error; any other exception a tool raises "
        "still comes back as a result",
        "outcome=result": "the call did not answer: CATALOG['Nothing'] raised before get_author could return anything",
        "outcome=timeout": "the tool failed at once; nothing made the client wait",
        "cause=raised": "raised is for ToolError, the exception a tool raises on purpose; this KeyError was nobody's plan",
        "cause=mcp_error": "mcp_error is for MCPError; this tool raised a KeyError",
        "cause=returned": "returned is for a CallToolResult the tool built with is_error=True; this one returned nothing",
        "cause": "the tool raised an exception nobody planned for: neither a ToolError nor an MCPError",
        "*": "the tool raised a KeyError, neither a ToolError nor an MCPError",
    },
    "02-fix-string": {
        "result / ok": "a returned string is a success to the model: raise ToolError(message), or return a CallToolResult "
        "with is_error=True",
        "tool_error / crash": "the tool crashed, so the model read only 'Error executing tool get_year': raise ToolError(message) "
        "yourself when the title is not in YEARS, before anything else fails",
        "tool_error / invalid_arguments": "the call was refused before get_year ran: keep its signature, get_year(title: str)",
        "tool_error / unknown_tool": NOT_REGISTERED,
        "tool_error / invalid_output": "get_year says it returns a str (-> str), and a CallToolResult is no str: raise "
        "ToolError(message) instead, or declare -> CallToolResult and set is_error=True, as the error result above does",
        "protocol_error": "an MCPError goes to the host, and the model reads nothing: raise ToolError instead",
        "*": "for a title that is not in YEARS, raise ToolError(message)",
    },
    "02-fix-string-message": "the message is what the model reads: it should name the title the model sent and say that "
    "the book is not in the catalog, as the message the tool already builds does",
    "02-fix-string-found": {
        "tool_error": "a title that is in the catalog should still get its year: fail only when the title is not in YEARS",
        "*": "a title that is in the catalog should still get its year, as a plain result",
    },
    "02-fix-string-bug": {
        "tool_error / raised": "with a bug planted in YEARS, get_year of Dune became a tool error the model reads: catch only "
        "the failure you expect (a title not in YEARS), not every exception. A bug must stay a crash, its traceback in the log",
        "tool_error / returned": "with a bug planted in YEARS, get_year of Dune became an error result the model reads: "
        "check only for the failure you expect (a title not in YEARS). A bug must stay a crash, its traceback in the log",
        "result / ok": "get_year of Dune answered without reading YEARS: look the year up in YEARS",
        "*": "a bug in get_year should stay a crash: the model cannot fix it, and its traceback belongs in the log",
    },
}


def hints(name: str, **fields: object) -> Mapping[str, str] | str:
    """The advice of the exercise `name`, its `{field}`s filled in."""
    found = HINTS[name]
    if isinstance(found, str):
        return found.format(**fields) if fields else found
    return {key: text.format(**fields) if fields else text for key, text in found.items()}

HINTS.update({
    # 03 Choosing the error
    "03-reserve": {
        "tool_error / crash": "the tool crashed, so the model read only 'Error executing tool reserve': check the title first, "
        "and raise ToolError(message) when it is not in CATALOG",
        "tool_error / returned": "a returned error result is the C++ guide's way; the deciding question's answer is to raise ToolError",
        "result / ok": "reserve answered as if it had worked: a title the model got wrong is a mistake a smarter model could "
        "have avoided, so raise ToolError, naming the title",
        "protocol_error / mcp_error": "an MCPError is for a request no model could fix; a better title would have worked: raise ToolError",
        "tool_error / unknown_tool": NOT_REGISTERED,
        "*": "a title the model got wrong is a mistake a smarter model could have avoided: raise ToolError, naming the title",
    },
    "03-reserve-message": "the message is what the model reads: name the title it sent and say that the book is not in the catalog",
    "03-reserve-reserved": "check the title before RESERVED.append(title): a failed call should change nothing",
    "03-reserve-found": {
        "tool_error": "a title that is in the catalog should still be reserved: fail only when the title is not in CATALOG",
        "*": "a title that is in the catalog should be reserved, and the answer name its author",
    },
    "03-reserve-bug": {
        "tool_error / raised": "with a bug planted in CATALOG, reserve of Dune became a tool error the model reads: catch only "
        "the failure you expect (a title not in CATALOG), not every exception. A bug must stay a crash, its traceback in the log",
        "result / ok": "reserve of Dune answered without reading CATALOG: check the title against CATALOG",
        "*": "a bug in reserve should stay a crash: the model cannot fix it, and its traceback belongs in the log",
    },
    "03-predict-closed": {
        "outcome=tool_error": "the tool never ran: middleware sees a request before any tool's handler, and the gate refused it",
        "cause=raised": "get_author would have raised ToolError, but it never ran: the gate answered first",
        "cause=crash": "nothing crashed: the gate raised MCPError on purpose",
        "cause=not_found": "not_found is a resource's ResourceNotFoundError or an unknown URI; this is a tool call the gate refused",
        "outcome": "middleware sees a request before any tool's handler runs: what the gate raised is what the host gets",
        "cause": "the gate raised MCPError, with its own code, while the shop is closed",
        "*": "middleware sees a request before any tool's handler runs: while the shop is closed, get_author never sees the title",
    },
})
