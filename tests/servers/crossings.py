"""An outside server (the SDK's MCPServer) for the tests of where two actors meet on one connection
(tests/test_edges_calling_*.py): `crossings.py stdio`, or `crossings.py http PORT` on 127.0.0.1.

- `whoami`: the server's own process id, to tell which process answers;
- `exit_soon(delay)`: answers, then the process exits `delay` seconds later;
- `ask(label, wait)` / `sample(label, wait)`: wait, then ask the client a question (`ctx.elicit`)
  or its model for a completion (`create_message`) on the handshake era's back-channel, and say
  what came back, named by `label`;
- `nap(seconds)`: answers after `seconds`;
- `touch(uri, times)`: says `uri` changed `times` times (`notifications/resources/updated`,
  to the clients that subscribed), for the watches; `memo://counter` counts its reads.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import warnings

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

warnings.simplefilter("ignore")  # sampling and subscriptions are deprecated at 2026-07-28; this server speaks both eras

server = MCPServer("crossings")
READS = {"count": 0}


class Name(BaseModel):
    name: str


@server.tool()
def whoami() -> int:
    return os.getpid()


@server.tool()
def exit_soon(delay: float) -> str:
    threading.Timer(delay, os._exit, args=(0,)).start()
    return "bye"


@server.tool()
async def ask(label: str, wait: float, ctx: Context) -> str:
    await asyncio.sleep(wait)
    try:
        answer = await ctx.elicit(f"the question of {label}", Name)
    except Exception as err:  # noqa: BLE001 - the client's refusal, said back
        return f"{label}: refused: {err}"
    name = answer.data.name if answer.action == "accept" else ""
    return f"{label}: {answer.action} {name}".strip()


@server.tool()
async def sample(label: str, wait: float, ctx: Context) -> str:
    await asyncio.sleep(wait)
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=f"the prompt of {label}"))
    try:
        answer = await ctx.session.create_message([message], max_tokens=16)
    except Exception as err:  # noqa: BLE001 - the client's refusal, said back
        return f"{label}: refused: {err}"
    return f"{label}: {answer.content.text}"


@server.tool()
async def nap(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@server.resource("memo://counter")
def counter() -> str:
    READS["count"] += 1
    return f"read {READS['count']}"


@server.tool()
async def touch(uri: str, times: int, ctx: Context) -> str:
    for _ in range(times):
        await ctx.session.send_resource_updated(uri)
    return f"touched {times}"


async def _subscribed(ctx, params) -> types.EmptyResult:
    return types.EmptyResult()


# The handshake era's subscriptions: MCPServer serves `subscriptions/listen` (2026-07-28) only.
server._lowlevel_server.add_request_handler("resources/subscribe", types.SubscribeRequestParams, _subscribed)
server._lowlevel_server.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, _subscribed)


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
