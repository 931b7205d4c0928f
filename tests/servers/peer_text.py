"""An outside server over stdio, written as bare JSON-RPC (no SDK, so it can send what no SDK
would), whose words are as long and as odd as a peer's can be: it answers `prompts/list` with an
error whose message is a megabyte on one line, asks the client a question of many lines with a
terminal's escapes as soon as the session is open (when no call waits, so the client refuses
it and says why), and its tool `mute` writes a megabyte on stderr, without an end of line, then
closes its stderr (which the client takes as the process's end) and answers; `confess` does the
same with the API key its environment gave it."""

from __future__ import annotations

import json
import os
import sys

HUGE = "x" * (1 << 20)
QUESTION = "Pick a colour\n  Traceback (most recent call last):\n    fake frame\n\x1b[31mred\x1b[0m and \u202eevil"


def send(message: dict) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def answer(method: str) -> dict:
    if method == "initialize":
        info = {"name": "peer-text", "version": "1.0.0"}
        return {"result": {"protocolVersion": "2025-11-25", "serverInfo": info, "capabilities": {"tools": {}, "prompts": {}}}}
    if method == "tools/list":
        return {"result": {"tools": [{"name": name, "inputSchema": {"type": "object"}} for name in ("mute", "confess")]}}
    if method == "prompts/list":
        return {"error": {"code": -32603, "message": HUGE}}
    if method == "ping":
        return {"result": {}}
    return {"error": {"code": -32601, "message": f"Method not found: {method}"}}


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method = message.get("method", "")
        if method == "notifications/initialized":
            schema = {"type": "object", "properties": {"colour": {"type": "string"}}}
            send({"id": "asked", "method": "elicitation/create", "params": {"message": QUESTION, "requestedSchema": schema}})
        if "id" not in message or not method:  # a notification, or the client's answer to the question
            continue
        if method == "tools/call":
            confess = message.get("params", {}).get("name") == "confess"
            sys.stderr.write(f"my key is {os.environ.get('PEER_API_KEY', '')}" if confess else "going quiet: " + HUGE)
            sys.stderr.flush()
            os.close(2)
            send({"id": message["id"], "result": {"content": [{"type": "text", "text": "muted"}]}})
            continue
        send({"id": message["id"], **answer(method)})


if __name__ == "__main__":
    main()
