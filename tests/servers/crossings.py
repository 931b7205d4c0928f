"""An outside server (the SDK's MCPServer) for the tests of where two actors meet on one connection
(tests/test_edges_calling_*.py): `crossings.py stdio`, or `crossings.py http PORT` on 127.0.0.1.

- `whoami`: the server's own process id, to tell which process answers;
- `exit_soon(delay)`: answers, then the process exits `delay` seconds later;
- `ask(label, until)` / `sample(label, until, related)`: wait until the file `until` exists (if one is
  named), then ask the client a question (`ctx.elicit`) or its model for a completion
  (`create_message`) on the handshake era's back-channel, say so in the file `until.asked.LABEL`,
  and once `until.done` exists answer what came back, named by `label`;
- `ask_later(delay)` / `sample_later(delay)`: answer at once, and ask `delay` seconds later,
  during no call; what came back is written on stderr;
- `roots()`: the client's roots (`roots/list`), their URIs;
- `nap(seconds)`: answers after `seconds`;
- `touch(uri, times)`: says `uri` changed `times` times (`notifications/resources/updated`,
  to the clients that subscribed), for the watches; `memo://counter` counts its reads;
- `bump(times)`: changes `memo://version` `times` times, saying so each time on both eras;
  `version_reads()`: how often it was read, and the most reads at once.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import warnings
from typing import Any

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


async def _until(path: str) -> None:
    for _ in range(3000):
        if not path or os.path.exists(path):
            return
        await asyncio.sleep(0.02)


async def _asked_then_held(until: str, label: str, asking) -> str:
    """Wait for `until`, ask, say so (the file `until.asked.LABEL`), and answer only once
    `until.done` exists: every call asks while all of them are still in flight."""
    await _until(until)
    said = await asking
    if until:
        open(f"{until}.asked.{label}", "w").close()
        await _until(f"{until}.done")
    return said


async def _asked(ctx: Context, label: str) -> str:
    try:
        answer = await ctx.elicit(f"the question of {label}", Name)
    except Exception as err:  # noqa: BLE001 - the client's refusal, said back
        return f"{label}: refused: {err}"
    name = answer.data.name if answer.action == "accept" else ""
    return f"{label}: {answer.action} {name}".strip()


async def _sampled(session, label: str, related: Any = None) -> str:
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=f"the prompt of {label}"))
    try:
        answer = await session.create_message([message], max_tokens=16, related_request_id=related)
    except Exception as err:  # noqa: BLE001 - the client's refusal, said back
        return f"{label}: refused: {err}"
    return f"{label}: {answer.content.text}"


@server.tool()
async def ask(label: str, ctx: Context, until: str = "") -> str:
    return await _asked_then_held(until, label, _asked(ctx, label))


@server.tool()
async def sample(label: str, ctx: Context, until: str = "", related: bool = True) -> str:
    """`related`: sent as a request of this call's (over HTTP, on its POST's stream), as `ctx.elicit`
    sends a question; else as one of the session's own (over HTTP, on the standalone stream)."""
    return await _asked_then_held(until, label, _sampled(ctx.session, label, ctx.request_id if related else None))


LATER: set = set()  # the questions asked after their call, held until done


@server.tool()
async def ask_later(delay: float, ctx: Context) -> str:
    session = ctx.session
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}

    async def later():
        await asyncio.sleep(delay)
        try:  # the session's own request: the call's context has closed by then
            answer = await session.elicit_form("the question of later", schema)
            said = f"{answer.action} {answer.content}"
        except Exception as err:  # noqa: BLE001 - the client's refusal, said back
            said = f"refused: {err}"
        print("asked later:", said, file=sys.stderr, flush=True)

    LATER.add(asyncio.get_running_loop().create_task(later()))
    return "will ask"


@server.tool()
async def sample_later(delay: float, ctx: Context) -> str:
    session = ctx.session

    async def later():
        await asyncio.sleep(delay)
        print("sampled later:", await _sampled(session, "later"), file=sys.stderr, flush=True)

    LATER.add(asyncio.get_running_loop().create_task(later()))
    return "will sample"


@server.tool()
async def roots(ctx: Context) -> str:
    listed = await ctx.session.list_roots()
    return " ".join(str(root.uri) for root in listed.roots)


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


VERSION = {"now": 0, "reads": 0, "reading": 0, "most": 0}


@server.resource("memo://version")
async def version() -> str:
    """The version `bump` set last; each read takes a moment, and the most read at once is kept."""
    VERSION["reads"] += 1
    VERSION["reading"] += 1
    VERSION["most"] = max(VERSION["most"], VERSION["reading"])
    try:
        await asyncio.sleep(0.005)
        return f"version {VERSION['now']}"
    finally:
        VERSION["reading"] -= 1


@server.tool()
async def bump(times: int, ctx: Context) -> str:
    """Change memo://version `times` times, saying so each time (on both eras)."""
    for _ in range(times):
        VERSION["now"] += 1
        try:
            await ctx.session.send_resource_updated("memo://version")  # the handshake era's subscribers
        except Exception:  # noqa: BLE001 - no back-channel at 2026-07-28
            pass
        await ctx.notify_resource_updated("memo://version")  # 2026-07-28's listen streams
    return f"version {VERSION['now']}"


@server.tool()
def version_reads() -> dict:
    return {"reads": VERSION["reads"], "most_at_once": VERSION["most"]}


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
