"""The smallest outside server over stdio, written against the protocol (2025-11-25) with the
standard library only, so that it starts in milliseconds: `whoami` answers the server's own
process id (for the tests that connect many times while something else races); `stray` prints a
line that is no JSON-RPC message on stdout before it answers, as a stray `print` in a server does."""

import json
import os
import sys

NO_ARGUMENTS = {"type": "object", "properties": {}}
TOOLS = [
    {"name": "whoami", "description": "this process's id", "inputSchema": NO_ARGUMENTS},
    {"name": "stray", "description": "a stray print on stdout, then an answer", "inputSchema": NO_ARGUMENTS},
]


def answer(message: dict) -> dict | None:
    method, key = message.get("method"), message.get("id")
    if key is None:  # a notification: nothing to answer
        return None
    if method == "initialize":
        result = {
            "protocolVersion": message["params"].get("protocolVersion", "2025-11-25"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "whoami", "version": "1.0.0"},
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call" and message["params"].get("name") == "whoami":
        result = {"content": [{"type": "text", "text": str(os.getpid())}], "isError": False}
    elif method == "tools/call" and message["params"].get("name") == "stray":
        sys.stdout.write("loading the model... done\n")
        result = {"content": [{"type": "text", "text": "answered"}], "isError": False}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": key, "error": {"code": -32601, "message": f"Method not found: {method}"}}
    return {"jsonrpc": "2.0", "id": key, "result": result}


for line in sys.stdin:
    if line.strip():
        reply = answer(json.loads(line))
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
