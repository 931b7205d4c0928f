"""An outside server over stdio, written as bare JSON-RPC with Python's `json` module, which writes
NaN and the infinities as the literals `NaN`, `Infinity` and `-Infinity` (no SDK would): its tool
`mean` answers with a structured result whose mean is NaN, `spread` with one whose high end is
Infinity (it declares no output schema), and `count` with an ordinary result. JSON has no such
numbers: a strict client cannot read these answers. And `huge`, whose output schema bounds its
count beyond a float's range (JSON's numbers have no range), with a result inside the bound."""

from __future__ import annotations

import json
import sys

NUMBER = {"type": "object", "properties": {"value": {"type": "number"}}, "required": ["value"]}
TOOLS = [
    {"name": "mean", "inputSchema": {"type": "object"}, "outputSchema": NUMBER},
    {"name": "spread", "inputSchema": {"type": "object"}},
    {"name": "count", "inputSchema": {"type": "object"}, "outputSchema": NUMBER},
    {
        "name": "huge",
        "inputSchema": {"type": "object"},
        "outputSchema": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 10**400, "multipleOf": 10**399}}},
    },
]
ANSWERS = {
    "mean": {"value": float("nan")},
    "spread": {"low": 0, "high": [1, float("inf")]},
    "count": {"value": 3},
    "huge": {"n": 10**401},
}


def answer(method: str, params: dict) -> dict:
    if method == "initialize":
        return {
            "result": {
                "protocolVersion": "2025-11-25",
                "serverInfo": {"name": "nan-numbers", "version": "1.0.0"},
                "capabilities": {"tools": {}},
            }
        }
    if method == "tools/list":
        return {"result": {"tools": TOOLS}}
    if method == "tools/call":
        structured = ANSWERS[params["name"]]
        return {"result": {"content": [{"type": "text", "text": json.dumps(structured)}], "structuredContent": structured}}
    if method == "ping":
        return {"result": {}}
    return {"error": {"code": -32601, "message": f"Method not found: {method}"}}


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        if "id" not in message:  # a notification: nothing to answer
            continue
        reply = {"jsonrpc": "2.0", "id": message["id"], **answer(message.get("method", ""), message.get("params") or {})}
        sys.stdout.write(json.dumps(reply) + "\n")  # allow_nan: the literals go out as they are
        sys.stdout.flush()


if __name__ == "__main__":
    main()
