"""An outside server over stdio (the SDK's MCPServer, on the handshake era) whose tools ask the
client's model for a completion: `ask` plainly, `plan` offering the model a tool (`lookup`),
which it runs when the reply asks for it and reports what happened."""

from __future__ import annotations

import warnings

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer

warnings.simplefilter("ignore")  # sampling is deprecated at 2026-07-28; this server speaks 2025-11-25

server = MCPServer("planner")
LOOKUP = types.Tool(
    name="lookup",
    description="Find a book's author",
    input_schema={"type": "object", "properties": {"title": {"type": "string"}}},
)


@server.tool()
async def ask(question: str, ctx: Context) -> str:
    """Ask the client's model, plainly."""
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=question))
    answer = await ctx.session.create_message([message], max_tokens=64)
    return f"the model said: {answer.content.text}"


@server.tool()
async def plan(goal: str, ctx: Context) -> str:
    """Ask the client's model, offering it the lookup tool."""
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=goal))
    answer = await ctx.session.create_message([message], max_tokens=64, tools=[LOOKUP])
    blocks = answer.content if isinstance(answer.content, list) else [answer.content]
    used = [b for b in blocks if getattr(b, "type", "") == "tool_use"]
    if used:
        return f"the model asked for {used[0].name}({used[0].input}); stop reason {answer.stop_reason}"
    return "the model answered without a tool: " + " ".join(getattr(b, "text", "") for b in blocks)


if __name__ == "__main__":
    server.run("stdio")
