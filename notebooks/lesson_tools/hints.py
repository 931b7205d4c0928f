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


HINTS.update(
    {
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
    }
)

HINTS.update(
    {
        # 04 Bad arguments
        "04-predict-invalid": {
            "outcome=protocol_error": "the request itself succeeded: the SDK answers a call whose arguments do not fit the schema "
            "with a result the model reads, so the model can correct its arguments",
            "outcome=result": "list_books never ran: the SDK checked the arguments against the input schema first",
            "cause=crash": "nothing crashed: list_books never ran, because its arguments did not fit its schema",
            "cause=raised": "nobody raised ToolError: list_books never ran",
            "cause": "the SDK checks the arguments against the input schema before list_books runs",
            "*": "the SDK checks the arguments against the input schema before list_books runs, and a wrong argument is one the "
            "model can correct",
        },
        "04-weeks-rejected": {
            "result / ok": "renew ran for {weeks} weeks: the type hint lets that number in. Give Weeks bounds the SDK checks, "
            "Annotated[int, Field(ge=..., le=...)], from 1 to 4 both included",
            "tool_error / raised": "renew ran for {weeks} weeks and refused it itself: put the rule in the type hint, where the SDK "
            "checks it before the function runs and the model reads it in the schema",
            "tool_error / unknown_tool": NOT_REGISTERED,
            "*": "make Weeks an int annotated with Field(ge=..., le=...), so that the SDK rejects {weeks} weeks",
        },
        "04-weeks-accepted": {
            "tool_error / invalid_arguments": "{weeks} weeks is within the rule (from 1 to 4, both included), and the SDK rejected "
            "it: check the bounds, and whether ge/le or gt/lt is meant",
            "*": "{weeks} weeks is within the rule, and renew should renew it",
        },
        "04-weeks-schema": "the model reads the rule in the input schema before it calls: a whole number ('type': 'integer') with "
        "'minimum' 1 and 'maximum' 4, which Annotated[int, Field(ge=1, le=4)] writes there. A check in a validator, or in the "
        "function, is not in the schema",
        "04-weeks-title": {
            "result / ok": "keep the title's check in the body: a schema cannot say which titles are in the catalog",
            "*": "keep the title's check in the body, which raises ToolError for a title not in the catalog",
        },
    }
)

HINTS.update(
    {
        # 05 Resources and prompts
        "05-not-found": {
            "protocol_error / crash": "the resource crashed, so the host got an internal error naming only the URI: check the title "
            "first, and raise ResourceNotFoundError(message) when it is not in the catalog",
            "protocol_error / resource_error": "ResourceError is for a failure other than 'not found' (-32603): a title that is not "
            "in the catalog is a resource that does not exist: raise ResourceNotFoundError",
            "protocol_error / mcp_error": "an MCPError reaches the host with its own code: give it INVALID_PARAMS (-32602), or "
            "raise ResourceNotFoundError, which does",
            "protocol_error / not_found": "the host should get -32602: raise ResourceNotFoundError from the resource's function",
            "result / ok": "a resource cannot fail inside a successful read: a returned text is the resource's content. Raise "
            "ResourceNotFoundError, naming the title",
            "*": "a title that is not in the catalog is a resource that does not exist: raise ResourceNotFoundError, naming the title",
        },
        "05-not-found-message": "the message is what the host gets (and may show its user): name the title and say that it is not "
        "in the catalog, as book's ResourceNotFoundError does",
        "05-not-found-found": {
            "protocol_error": "a title that is in the catalog should still get its count: fail only when the title is not in CATALOG",
            "*": "a title that is in the catalog should get its count, as 'Dune: 3 in stock'",
        },
        "05-not-found-bug": {
            "protocol_error / not_found": "with a bug planted in STOCK, the read of stock://Dune answered 'not found': catch only the "
            "failure you expect (a title not in the catalog), not every exception. A bug must stay a crash: -32603 for the host, "
            "the traceback in the log",
            "protocol_error / resource_error": "with a bug planted in STOCK, the read became a ResourceError: catch only the failure "
            "you expect. A bug must stay a crash, its traceback in the log",
            "result / ok": "the read of stock://Dune answered without reading STOCK: look the count up in STOCK",
            "*": "a bug in the resource should stay a crash, whose text stays on the server",
        },
        "05-predict-template-crash": {
            "outcome=tool_error": "a read has no is_error flag: a resource cannot fail inside a successful request, so it fails as a whole",
            "outcome=result": "book raised KeyError for Nothing: the read did not get its contents",
            "cause=not_found": "not_found was book's ResourceNotFoundError; this time book raised a KeyError, which nobody planned",
            "cause=resource_error": "resource_error is for a ResourceError the function raised on purpose; this KeyError was not",
            "code=-32602": "-32602 is for a resource that says it does not exist (ResourceNotFoundError); a crash is an internal error",
            "code": "a crash in a resource reaches the host as the JSON-RPC code for an internal error",
            "cause": "book raised KeyError, not ResourceNotFoundError, so the SDK treats it as a crash",
            "*": "book raised KeyError, not ResourceNotFoundError, so the SDK treats it as a crash; a read has no is_error flag, so it "
            "fails as a whole",
        },
    }
)

HINTS.update(
    {
        # 06 Timeouts
        "06-predict-sync-timeout": {
            "outcome=result": "the client waits at most 0.3 s, and place_order needs a second: the answer came too late for it",
            "outcome=protocol_error": "no error came back from the server: the client stopped waiting",
            "cause=cancelled": "cancelled is for a call the caller gave up on (an interrupt, a Cancel button); this one reached its deadline",
            "cause=max_timeout": "max_timeout is the ceiling of a deadline that resets on progress; this call had a plain deadline",
            "fate=cancelled": "an async handler is cancelled at its await; place_order is a sync function, which runs in a worker "
            "thread, and nothing can stop a thread from the outside",
            "fate": "place_order is a sync function: it runs in a worker thread to its end, whatever the client does",
            "*": "the client stopped waiting at the 0.3 s deadline, long before place_order's second was up",
        },
        "06-renew-slow": "keep the time.sleep(LIBRARY_DELAY) at the start of renew_loan: the check needs a slow call",
        "06-renew-repeat": {
            "tool_error": "a repeat of a renewal already done is no mistake: answer it as a success, and renew nothing more",
            "timeout": "the repeat timed out: look up the renewal_id before anything slow, or answer a done one at once",
            "tool_error / unknown_tool": NOT_REGISTERED,
            "*": "a renewal_id already done answers as a success, and renews nothing more",
        },
        "06-renew-twice": "add each renewal_id to RENEWED when you renew, and renew nothing for one that is already there "
        "(every id done, not only the last one)",
        "06-renew-new-id": "a new renewal_id is a new renewal: remember the ids done, not the titles",
    }
)

HINTS.update(
    {
        # 07 Over the wire
        "07-predict-batch": {
            "code=-32700": "-32700 is for bytes that are not JSON; this batch is valid JSON",
            "code=-32601": "-32601 is for a method the server does not have; the server never got as far as reading a method",
            "code=-32602": "-32602 is for a request whose params are wrong; the server never took this body for one request",
            "code": "the bytes parse as JSON, but a JSON array is not one request object: the JSON-RPC code for an invalid request",
            "status=200": "the server did not take the batch: an error answer to bytes it cannot take as one request is not a 200",
            "status=404": "404 is the status of a method the server does not have; this body is not one request at all",
            "status": "the server turns away input it cannot take as one request with the same HTTP status as the parse error above",
            "*": "the bytes parse as JSON, so it is not -32700, but a JSON array is not one request object",
        },
        "07-call-body": 'a tools/call\'s params hold the tool\'s "name" and its "arguments" ({"seconds": 0}), and on 2026-07-28 '
        'the "_meta" of META as well: request("tools/call", name=..., arguments=...) builds such a body',
    }
)

HINTS.update(
    {
        # 08 Retries and degradation
        "08-predict-gave-up": {
            "attempts=2": "retries counts the attempts after the first one, so Retry(retries=2) makes at most three",
            "attempts=4": "the policy stops at its maximum: the first attempt, and retries=2 more",
            "attempts": "retries counts the attempts after the first one",
            "outcome=protocol_error": "giving up is not an outcome of its own: the call ends as its last attempt did",
            "outcome=result": "warehouse_count never answers: every attempt waits 0.1 s for a tool that sleeps 30 s",
            "cause=cancelled": "nobody cancelled the call: each attempt reached its deadline",
            "*": "giving up is not an outcome of its own: the call ends as its last attempt did, and every attempt waited 0.1 s "
            "for a tool that sleeps 30 s",
        },
        "08-policy-kind": "write a policy as Retry(...), with the fields the task names: retries=, codes=, backoff=",
        "08-policy-call": {
            "protocol_error / mcp_error": "a policy retries only the error codes named in its codes=: give it codes=(BUSY,), and retries=2",
            "tool_error / unknown_tool": "run the cell that registers stock_level before the check",
            "*": "a policy retries only the error codes named in its codes=: give it codes=(BUSY,), and retries=2",
        },
        "08-policy-attempts": "the service is busy twice, so the third attempt is the first that can succeed",
        "08-policy-retries": "retries counts the attempts after the first one: retries=2 makes at most three, and the guide asks for "
        "a maximum",
        "08-policy-codes": "only the busy code is a transient failure here: other codes, such as an internal error (-32603), mean "
        "something that another attempt will not fix. Name only BUSY in codes=",
        "08-policy-tool-errors": "a tool error is for the model to read and react to, not for a loop to repeat: leave tool_errors off",
        "08-policy-force": "force=True would retry a tool that declares neither readOnlyHint nor idempotentHint, such as a charge: "
        "stock_level only reads, so it needs no force",
        "08-policy-backoff": "backoff is the first wait, in seconds: backoff=0.01 is 10 ms, with nothing added at random (jitter=0)",
    }
)

HINTS.update(
    {
        # 09 Testing
        "09-predict-raises": {
            "raises=True": "the SDK turns the tool's exception into a result with is_error set before raise_exceptions=True could "
            "act, so nothing is raised in the test",
            "is_error=False": "the tool failed, and the result says so with its flag",
            "*": "the SDK turns the tool's exception into a result with is_error set before raise_exceptions=True could act",
        },
        "09-write-bookshop": "assert on the result the Client returns: result.is_error, and result.content[0].text, the exact text "
        "the model reads ('Error executing tool get_author'); pytest.raises waits for an exception that never comes",
        "09-write-lenient_bookshop": "lenient_bookshop returns the same text as a success: assert that the result is flagged "
        "(result.is_error), not only what it says",
        "09-write-leaky_bookshop": "leaky_bookshop flags its result, but the model reads the KeyError's text: assert the exact text "
        "the model reads, result.content[0].text == 'Error executing tool get_author'",
        "09-write-exact": "the crash's result is flagged, and its text is exactly 'Error executing tool get_author', whatever the "
        "exception was: assert both, and nothing else",
        "09-caplog-bookshop": "caplog.records are the test's logging records: the crash is the one at ERROR (record.levelname), "
        "its message is record.getMessage(), and record.exc_info[1].__cause__ is the exception the tool raised",
        "09-caplog-silent_bookshop": "a test that finds the crash should fail when nothing is logged: assert that the ERROR record is there",
        "09-caplog-leaky_bookshop": "leaky_bookshop logs a WARNING and raises a ToolError, a tool error and no crash: assert that the "
        "record is at ERROR, with the message of a crash",
        "09-caplog-cause": "the record's exception is the SDK's wrapper, raised from yours: assert that "
        "record.exc_info[1].__cause__ is a KeyError (of the title sent)",
    }
)

HINTS.update(
    {
        # 10 Regression cases
        "10-predict-failing": "{case}: a case fails when its outcome or cause changed, or when one of its checks no longer holds; "
        "get_book-1 no longer compares the exact content, only $.author and $.price (10, tolerance 1)",
        "10-quote-replay": "delete the case's exact content and give its expect a list of checks, as section 2 did for get_book-1: "
        "one that $.title equals Dune, and one that $.price is approx 12 with a tolerance of 0.5",
        "10-quote-exact": 'del quoted["content"]: an exact content holds the price of one call, which the next call does not repeat',
        "10-quote-title": 'keep the title exact: a check {"path": "$.title", "equals": "Dune"}',
        "10-quote-price": 'the service quotes 12.00, give or take 0.50: check {"path": "$.price", "approx": 12, "tolerance": 0.5}, '
        "centred on 12, neither wider nor narrower",
    }
)

HINTS.update(
    {
        # 11 Capstone
        "11-classify-pair": "a pair is (outcome type, cause), and the cause one that outcome type has: mcp_nb.CAUSE_DOC says what "
        "each means",
        "11-classify": {
            "A": "A: a title the model got wrong is a mistake a smarter model could have avoided: a ToolError it reads",
            "B": "B: copies outside the schema's bounds never reach the function: the SDK rejects them, as a tool error the model reads",
            "C": "C: a request no call could get served is refused for the host, in middleware: an MCPError",
            "D": "D: a read of a resource that does not exist fails for the host, with -32602: ResourceNotFoundError",
            "E": "E: a bug is no failure you plan: the tool crashes, the model reads only that it failed, the traceback goes to the log",
            "F": "F: the tool tried and failed, and the model should know; the Python guide (as this course reads it) raises ToolError, "
            "the C++ guide returns an error result for an expected failure: your pair must be your reading's",
            "G": "G: the client stops waiting at its deadline: a timeout, whatever the server does",
            "H": "H: with a policy that retries the busy code, the call ends as its third attempt did: it answered",
        },
        "11-price": {
            "tool_error / crash": "the tool crashed, so the model read only 'Error executing tool price': check the title first, and "
            "raise ToolError(message) when it is not in PRICES",
            "*": "a title the model got wrong: raise ToolError, with a message that names the title and says it is not in the catalog",
        },
        "11-price-found": "a title in the catalog should still get its price",
        "11-price-bug": {
            "tool_error / raised": "with a bug planted in PRICES, price became a tool error the model reads: catch only the failure you "
            "expect (a title not in PRICES); a bug must stay a crash",
            "*": "a bug in price should stay a crash",
        },
        "11-copies": {
            "result / ok": "order ran for {copies} copies: give Copies its rule in the type hint, Annotated[int, Field(ge=1, le=10)]",
            "tool_error / raised": "order ran for {copies} copies and refused it itself: put the rule in the type hint, where the SDK "
            "checks it and the model reads it",
            "*": "give Copies its rule in the type hint, Annotated[int, Field(ge=1, le=10)]",
        },
        "11-copies-accepted": "{copies} copies is within the rule (1 to 10, both included), and should be ordered",
        "11-copies-schema": "the model reads the rule in the schema: a whole number with 'minimum' 1 and 'maximum' 10",
        "11-supplier": {
            "result / ok": "order answered as if it had ordered: when the supplier does not answer, fail the way your F_READING says, "
            "and order nothing",
            "tool_error / raised": 'you raised ToolError, which is the Python guide\'s reading; your F_READING says "cpp": return a '
            "CallToolResult with is_error=True, or change F_READING",
            "tool_error / returned": 'you returned an error result, which is the C++ guide\'s reading; your F_READING says "python": '
            "raise ToolError, or change F_READING",
            "tool_error / crash": "the tool crashed: say what happened, with a ToolError or an error result, as your F_READING says",
            "*": "when the supplier does not answer, fail the way your F_READING says, and order nothing",
        },
        "11-cover": {
            "protocol_error / crash": "the resource crashed: for a title without a cover, raise ResourceNotFoundError, naming the title",
            "*": "a cover that is not on file is a resource that does not exist: raise ResourceNotFoundError, naming the title",
        },
        "11-cover-found": "a title with a cover should still get it",
        "11-cover-bug": {
            "protocol_error / not_found": "with a bug planted in COVERS, the read answered 'not found': check only for the title, not "
            "for every exception; a bug must stay a crash",
            "*": "a bug in cover should stay a crash",
        },
        "11-gate": {
            "result / ok": "the call was served while INVENTORY was on: in inventory_gate, raise MCPError for every tools/call while "
            "INVENTORY is on",
            "protocol_error / crash": "the gate crashed, which the host gets as -32603: raise MCPError, with your code, message and data",
            "*": "in inventory_gate, raise MCPError(code=..., message=..., data=...) for every tools/call while INVENTORY is on",
        },
        "11-gate-code": "pick a code from -32000..-32099 that the SDK does not use itself (the cell's sdk_codes) and that these "
        "notebooks have not given a meaning (-32050 busy, -32051 closed for maintenance, -32052 not ready yet)",
        "11-gate-said": 'give the host something to show and to act on: a message that says why, and data such as {"retry_after_s": ...}',
        "11-gate-every-tool": "the warehouse being closed concerns every tool: refuse every tools/call, not only order",
        "11-gate-reads": "a read is no tool call: let every other request through (call_next)",
        "11-gate-open": "when INVENTORY is off, every call goes through",
        "11-report": {
            "result / ok": "the host waited for the answer: give the one call its own deadline, mcp_nb.call(..., timeout=0.2)",
            "*": 'the host\'s call is report = mcp_nb.call("stock_report", timeout=0.2): a deadline of its own, 0.2 s at most',
        },
        "11-report-own": "give the one call its own deadline (timeout=...); the client-wide one (mcp_nb.configure) is for every call",
    }
)

HINTS.update(
    {
        # 05 Resources and prompts, exercise 3
        "05-announce": {
            "protocol_error / crash": "the prompt crashed on CATALOG[title], and the host got only -32603: before the lookup, raise "
            "MCPError for a title in UPCOMING, with NOT_READY as its code",
            "protocol_error / invalid_arguments": "keep the prompt's one argument, title",
            "protocol_error / mcp_error": "the host should get this notebook's 'not ready yet', NOT_READY (-32052): give that code",
            "result / ok": "a prompt cannot fail inside its messages: raise MCPError, so that the host gets the refusal",
            "*": "for a title in UPCOMING, raise MCPError(code=NOT_READY, message=..., data={...}) before the lookup",
        },
        "05-announce-said": "the host gets exactly what you raise: a message that names the title, and data such as "
        '{"title": title, "ready_at": UPCOMING[title]}',
        "05-announce-found": "a title in the catalog should still get its messages",
    }
)

HINTS.update(
    {
        # 03 Choosing the error, exercise 3
        "03-holiday": {
            "result / ok": "the call was served on the holiday: in holiday_gate, raise MCPError for every tools/call while HOLIDAY is on",
            "protocol_error / crash": "the gate crashed, which the host gets as -32603: raise MCPError, with your code, message and data",
            "tool_error": "the gate let the call through to the tool: raise MCPError in the gate itself, before call_next",
            "*": "in holiday_gate, raise MCPError(code=..., message=..., data=...) for every tools/call while HOLIDAY is on",
        },
        "03-holiday-code": "pick a code from -32000..-32099 that is not in sdk_codes and that these notebooks have not given a "
        "meaning (-32050 busy, -32051 closed for maintenance, -32052 not ready yet)",
        "03-holiday-said": "give the host something to show and to act on: a message that says why, and data such as "
        '{"retry_after_s": ...}',
        "03-holiday-every-tool": "a holiday concerns every tool: refuse every tools/call, whatever its tool",
        "03-holiday-open": "when HOLIDAY is off, every call goes through: call_next(ctx)",
    }
)

HINTS.update(
    {
        # 08 Retries and degradation, exercise 3
        "08-hours-fallback": "read with mcp_nb.read(uri, fallback=CACHED_HOURS): a failed read hands back the fallback as its content",
        "08-hours-notice": "a read that fell back says so (read.fallback), and its message is the server's own words (read.message): "
        "put them in the notice",
        "08-hours-up": "when the read works, show its content, and no notice (None)",
    }
)

HINTS.update(
    {
        # 06 Timeouts, exercise 3
        "06-predict-soon": {
            "cause=cancelled": "nobody cancelled soon: its own deadline of 0.2 s passed, long before the client-wide 120 s",
            "cause": "soon's deadline passed: the client stopped waiting",
            "code=-32800": "-32800 is a cancellation's code; a deadline that passed is -32001",
            "code": "a deadline that passed reaches the host as REQUEST_TIMEOUT, -32001",
            "*": "a call's own deadline wins over the client-wide one",
        },
        "06-predict-own-deadline": "a call's own deadline (timeout=) wins over the client-wide one: the Outcome records it in timeout_s",
        "06-predict-stopped": {
            "cause=deadline": "the caller cancelled stopped after 0.1 s, before its own deadline of 0.5 s",
            "cause": "the caller gave up first: the cause says so",
            "code=-32001": "-32001 is a deadline's code; a caller's cancellation has its own, -32800",
            "code": "a caller's cancellation reaches the host as the C++ guide's 'request cancelled', -32800",
            "*": "the caller cancelled the call before its deadline",
        },
    }
)
