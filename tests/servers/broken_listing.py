"""An outside server over stdio, written as bare JSON-RPC (no SDK, so it can answer what no SDK
would): its tools are fine, but it answers `resources/templates/list` without the
`resourceTemplates` the protocol requires (as the conformance suite's http-standard-headers
mock does), and `prompts/list` with an internal error. A client must keep the tools."""

from __future__ import annotations

import json
import sys

TOOL = {"name": "ping", "description": "Answers pong", "inputSchema": {"type": "object"}}


def answer(method: str, params: dict) -> dict:
    if method == "initialize":
        return {
            "result": {
                "protocolVersion": "2025-11-25",
                "serverInfo": {"name": "broken-listing", "version": "1.0.0"},
                "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
            }
        }
    if method == "tools/list":
        return {"result": {"tools": [TOOL]}}
    if method == "tools/call":
        return {"result": {"content": [{"type": "text", "text": "pong"}]}}
    if method == "resources/list":
        return {"result": {"resources": [{"name": "notes", "uri": "memo://notes"}]}}
    if method == "resources/templates/list":
        return {"result": {"templates": []}}  # the field is resourceTemplates
    if method == "prompts/list":
        return {"error": {"code": -32603, "message": "the prompt store is down"}}
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
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
