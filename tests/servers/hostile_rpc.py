"""A hostile MCP server speaking raw JSON-RPC over stdio (no SDK), for tests/test_hostile_*.py.

It speaks the handshake era (2025-11-25) only: `server/discover` is answered "Method not found",
as an older server would. What it does wrong is chosen two ways:

- by the tool called: each tool below misbehaves in its own way when called (`garbage`,
  `dup_id`, `unknown_id`, `flood`, `hang`, `half_line`, `nan`, `huge_int`, `deep`, `surrogate`,
  `deep_id_last`, `nul`, `error_huge`, `error_odd`, `error_control`, `result_list`, `result_list_id_text`, `both`, `ping_first`,
  `ask_unknown`, `sample_garbage`, `elicit_garbage`, `progress_odd`, `log_odd`, `roots_flood`,
  `list_changed_flood` (`count` notices that a `kind`'s list changed; with `add`, one more entry and notice after them),
  `listings` (how many times the listing `method`, tools/list unless said, was asked), `slow_trickle`, `exit_mid`, `id_string`, `batch`);
- by what is read: `resources/read` of `mem://invalid` and `prompts/get` of `invalid` are answered
  with no message the protocol allows (a result that is a list; an error whose code is text);
- by the argument after the script's name, what its listings and handshake hold: `plain`,
  `odd_names` (names holding newlines, HTML, bidi and control characters, a huge description),
  `odd_info` (a server name and instructions holding newlines, HTML and control characters),
  `odd_schema` (input schemas nested 60 deep, of wrong shapes, with odd values), `deep_schema` (one nested
  400 deep, past what the SDK's JSON reader takes),
  `many_tools` (5,000 tools), `garbage_list` (tools/list answered with the wrong shapes).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "plain"
OUT = sys.stdout.buffer
LOCK = threading.Lock()
BIDI = "\u202e"
TOOLS = (
    "garbage dup_id unknown_id flood hang half_line nan huge_int deep deep_id_last surrogate nul error_huge error_odd "
    "error_control result_list result_list_id_text both ping_first ask_unknown sample_garbage elicit_garbage progress_odd log_odd "
    "roots_flood slow_trickle exit_mid id_string batch echo list_changed_flood html_text listings"
).split()


def send_raw(data: bytes) -> None:
    with LOCK:
        OUT.write(data)
        OUT.flush()


def send(message: dict) -> None:
    send_raw(json.dumps(message).encode() + b"\n")


def answer(rid, result) -> None:
    send({"jsonrpc": "2.0", "id": rid, "result": result})


def text(value: str) -> dict:
    return {"content": [{"type": "text", "text": value}], "isError": False}


def tools() -> list[dict]:
    listed = [{"name": n, "inputSchema": {"type": "object"}, "description": f"misbehaves: {n}"} for n in TOOLS]
    if MODE == "odd_names":
        listed += [
            {"name": "two\nlines", "inputSchema": {"type": "object"}, "description": "a name of two lines"},
            {
                "name": "<script>alert(1)</script>",
                "inputSchema": {"type": "object"},
                "description": "<img src=x onerror=alert(2)>",
            },
            {"name": f"evil{BIDI}txt.exe", "inputSchema": {"type": "object"}, "description": f"bidi {BIDI} here"},
            {"name": "bell\x07\x1b[31mred", "inputSchema": {"type": "object"}, "description": "\x1b[2J cleared"},
            {"name": "n" * 5000, "inputSchema": {"type": "object"}, "description": "d" * 2_000_000},
            {"name": "nul\x00byte", "inputSchema": {"type": "object"}},
        ]
    if MODE in ("odd_schema", "deep_schema"):
        deep: dict = {"type": "string"}
        for _ in range(400 if MODE == "deep_schema" else 60):
            deep = {"type": "object", "properties": {"x": deep}}
        listed += [
            {"name": "deep_schema", "inputSchema": deep},
            {"name": "odd_required", "inputSchema": {"type": "object", "properties": {"x": True, "y": False}, "required": ["x"]}},
            {
                "name": "odd_enum",
                "inputSchema": {"type": "object", "properties": {"x": {"enum": [1e308, -0.0, "<b>", None, {"a": []}]}}},
            },
            {
                "name": "huge_default",
                "inputSchema": {"type": "object", "properties": {"x": {"type": "integer", "default": 10**400}}},
            },
            {
                "name": "html_props",
                "inputSchema": {
                    "type": "object",
                    "properties": {"<i>x</i>": {"type": "string", "description": "</td><script>alert(3)</script>"}},
                },
            },
        ]
    if MODE == "many_tools":
        listed += [{"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(5000)]
    return listed


def info() -> dict:
    if MODE == "odd_info":
        return {"name": "evil\nTraceback (most recent call last):\n<script>alert(4)</script>", "version": "1\x1b[31m.0" + BIDI}
    return {"name": "hostile-rpc", "version": "1.0"}


def instructions() -> str | None:
    if MODE == "odd_info":
        return "line one\nline two <script>alert(5)</script>\x1b[2J" + BIDI
    return None


def later(seconds: float, action) -> None:
    threading.Timer(seconds, action).start()


def call_tool(rid, name: str, args: dict, meta: dict) -> None:  # noqa: C901 - one branch per misbehaviour
    token = meta.get("progressToken")
    if name == "echo":
        answer(rid, text(json.dumps(args)))
    elif name == "listings":
        answer(rid, text(str(LISTINGS[args.get("method", "tools/list")])))
    elif name == "garbage":
        send_raw(b'this is no json\n{"jsonrpc": "2.0"\n[1,2,3]\n{"jsonrpc":"2.0","id":null,"result":{}}\n\xff\xfe\n')
        answer(rid, text("after garbage"))
    elif name == "dup_id":
        answer(rid, text("first"))
        answer(rid, text("second"))
    elif name == "unknown_id":
        for other in (987654, "nobody", None, 1.5, [1], {"a": 1}):
            send({"jsonrpc": "2.0", "id": other, "result": text("not yours")})
            send({"jsonrpc": "2.0", "id": other, "error": {"code": -32000, "message": "not yours either"}})
        answer(rid, text("yours"))
    elif name == "flood":
        for i in range(int(args.get("count", 20000))):
            send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": f"line {i}"}})
        answer(rid, text("after the flood"))
    elif name == "list_changed_flood":
        notice = {"jsonrpc": "2.0", "method": f"notifications/{args.get('kind', 'tools')}/list_changed"}
        for _ in range(int(args.get("count", 5000))):
            send(notice)
        if args.get("add"):  # a change after the flood, said once more: the last notice must be read
            ADDED.add(args.get("kind", "tools"))
            send(notice)
        answer(rid, text("after the list changes"))
    elif name == "hang":
        pass  # never answers
    elif name == "half_line":
        send_raw(b'{"jsonrpc": "2.0", "id": ' + json.dumps(rid).encode() + b', "result": {"content": [{"type": "te')
    elif name == "nan":
        send_raw(
            b'{"jsonrpc": "2.0", "id": '
            + json.dumps(rid).encode()
            + b', "result": {"content": [{"type": "text", "text": "x"}], "structuredContent": {"v": NaN, "w": Infinity}}}\n'
        )
    elif name == "huge_int":
        send_raw(
            b'{"jsonrpc": "2.0", "id": '
            + json.dumps(rid).encode()
            + b', "result": {"content": [{"type": "text", "text": "x"}], "structuredContent": {"v": '
            + b"9" * 5000
            + b"}}}\n"
        )
    elif name == "deep":
        depth = int(args.get("depth", 100000))
        send_raw(
            b'{"jsonrpc": "2.0", "id": '
            + json.dumps(rid).encode()
            + b', "result": {"content": [{"type": "text", "text": "x"}], "structuredContent": {"v": '
            + b"[" * depth
            + b"]" * depth
            + b"}}}\n"
        )
    elif name == "deep_id_last":  # the id after a result nested past any parser's depth
        send_raw(
            b'{"jsonrpc": "2.0", "result": {"content": [], "structuredContent": {"v": '
            + b"[" * 100000
            + b"]" * 100000
            + b'}}, "id": '
            + json.dumps(rid).encode()
            + b"}\n"
        )
    elif name == "result_list_id_text":  # the request's id as text, which the SDK takes for it
        answer(str(rid), [1, 2, 3])
    elif name == "surrogate":
        send_raw(
            b'{"jsonrpc": "2.0", "id": '
            + json.dumps(rid).encode()
            + b', "result": {"content": [{"type": "text", "text": "lone \\ud800 surrogate \\udfff"}]}}\n'
        )
    elif name == "nul":
        answer(rid, text("nul\x00byte and \x1b[31mred\x1b[0m and " + BIDI + "bidi"))
    elif name == "html_text":
        answer(
            rid,
            {
                "content": [{"type": "text", "text": "<script>alert(6)</script><img src=x onerror=alert(7)>"}],
                "structuredContent": {"<b>k</b>": "</code><script>alert(8)</script>"},
                "isError": False,
            },
        )
    elif name == "error_huge":
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32000, "message": "E" * 8_000_000, "data": "D" * 1_000_000}})
    elif name == "error_odd":
        send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "error": {"code": "not a number", "message": ["not", "text"], "data": {"deep": [[[[]]]]}},
            }
        )
    elif name == "error_control":
        send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "error": {"code": -32000, "message": 'first\nTraceback (most recent call last):\n  File "x"\x1b[31m' + BIDI},
            }
        )
    elif name == "result_list":
        answer(rid, [1, 2, 3])
    elif name == "both":
        send({"jsonrpc": "2.0", "id": rid, "result": text("both"), "error": {"code": -1, "message": "both"}})
    elif name == "id_string":
        send({"jsonrpc": "2.0", "id": str(rid), "result": text("id as a string")})
        later(0.3, lambda: answer(rid, text("then the right id")))
    elif name == "ping_first":
        send({"jsonrpc": "2.0", "id": "srv-ping", "method": "ping"})
        later(0.2, lambda: answer(rid, text("after a ping")))
    elif name == "ask_unknown":
        send({"jsonrpc": "2.0", "id": "srv-odd", "method": "no/such/method", "params": {"x": 1}})
        later(0.2, lambda: answer(rid, text("after an unknown request")))
    elif name == "sample_garbage":
        send(
            {
                "jsonrpc": "2.0",
                "id": "srv-sample",
                "method": "sampling/createMessage",
                "params": {"messages": "not a list", "maxTokens": "many"},
            }
        )
        later(0.3, lambda: answer(rid, text("after garbage sampling")))
    elif name == "elicit_garbage":
        send(
            {
                "jsonrpc": "2.0",
                "id": "srv-elicit",
                "method": "elicitation/create",
                "params": {"message": 5, "requestedSchema": [1]},
            }
        )
        later(0.3, lambda: answer(rid, text("after garbage elicitation")))
    elif name == "roots_flood":
        for i in range(500):
            send({"jsonrpc": "2.0", "id": f"srv-roots-{i}", "method": "roots/list"})
        later(0.5, lambda: answer(rid, text("after 500 roots requests")))
    elif name == "progress_odd":
        odd = [float("nan"), float("inf"), -1, 10**400, "many", None]
        for progress in [odd[i] for i in args.get("which", range(len(odd)))]:
            params = {
                "progressToken": token if token is not None else "none",
                "progress": progress,
                "total": args.get("total", "x"),
                "message": "m\x1b[2J" * 1000,
            }
            send_raw(
                json.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": params}, default=str).encode() + b"\n"
            )
        send({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "not-yours", "progress": 1}})
        answer(rid, text("after odd progress"))
    elif name == "log_odd":
        for level in ("info", "nonsense", None, 5):
            send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/message",
                    "params": {"level": level, "logger": "l\nx\x1b[31m" + BIDI, "data": {"deep": "v" * 100_000}},
                }
            )
        send_raw(b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"error","data":NaN}}\n')
        answer(rid, text("after odd logs"))
    elif name == "slow_trickle":
        data = json.dumps({"jsonrpc": "2.0", "id": rid, "result": text("trickled")}).encode() + b"\n"

        def trickle():
            for i in range(0, len(data), 7):
                send_raw(data[i : i + 7])
                time.sleep(0.01)

        threading.Thread(target=trickle, daemon=True).start()
    elif name == "exit_mid":
        send_raw(b'{"jsonrpc": "2.0", "id": ')
        os._exit(3)
    elif name == "batch":
        send_raw(
            json.dumps(
                [
                    {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "batched"}},
                    {"jsonrpc": "2.0", "id": rid, "result": text("in a batch")},
                ]
            ).encode()
            + b"\n"
        )
        later(0.3, lambda: answer(rid, text("after a batch")))
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": f"Unknown tool: {name}"}})


LISTINGS = {"tools/list": 0, "resources/list": 0, "resources/templates/list": 0, "prompts/list": 0}
ADDED: set[str] = set()  # the kinds `list_changed_flood` added one more of, after its flood


def list_tools(rid) -> None:
    LISTINGS["tools/list"] += 1
    if MODE == "garbage_list":
        answer(
            rid,
            {"tools": [{"name": 5}, "not a tool", {"inputSchema": None}, {"name": "fine", "inputSchema": {"type": "object"}}]},
        )
        return
    added = [{"name": "added_late", "inputSchema": {"type": "object"}}] if "tools" in ADDED else []
    answer(rid, {"tools": tools() + added})


def listed(method: str) -> list[dict]:
    """What a listing other than the tools' holds: nothing, or the one entry added after a flood."""
    LISTINGS[method] += 1
    if method == "resources/list" and "resources" in ADDED:
        return [{"uri": "mem://added_late", "name": "added_late"}]
    if method == "prompts/list" and "prompts" in ADDED:
        return [{"name": "added_late"}]
    return []


def main() -> None:
    for raw in sys.stdin.buffer:
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(message, dict) or "method" not in message:
            continue  # a response to one of our requests, or nothing we know
        method, rid, params = message["method"], message.get("id"), message.get("params") or {}
        if rid is None:
            continue  # a notification
        if method == "initialize":
            capabilities = {
                "tools": {"listChanged": True},
                "logging": {},
                "resources": {"subscribe": True, "listChanged": True},
                "prompts": {"listChanged": True},
            }
            result = {"protocolVersion": "2025-11-25", "capabilities": capabilities, "serverInfo": info()}
            if instructions() is not None:
                result["instructions"] = instructions()
            answer(rid, result)
        elif method == "ping":
            answer(rid, {})
        elif method == "tools/list":
            list_tools(rid)
        elif method == "tools/call":
            call_tool(rid, params.get("name"), params.get("arguments") or {}, params.get("_meta") or {})
        elif method in ("resources/list", "resources/templates/list", "prompts/list"):
            key = {"resources/list": "resources", "resources/templates/list": "resourceTemplates", "prompts/list": "prompts"}[
                method
            ]
            answer(rid, {key: listed(method)})
        elif method == "resources/read" and params.get("uri") == "mem://invalid":
            answer(rid, [1, 2, 3])  # a result that is a list
        elif method == "prompts/get" and params.get("name") == "invalid":
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": "not a number", "message": ["not", "text"]}})
        elif method == "logging/setLevel":
            answer(rid, {})
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}})


if __name__ == "__main__":
    main()
