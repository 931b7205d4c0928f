"""A Python SDK server over stdio whose tools ask the user: through a resolver (`Elicit`), and through
`ctx.elicit`. The kernel connects to it on protocol 2026-07-28, where only the first can be answered."""

from __future__ import annotations

from typing import Annotated

from mcp.server import MCPServer
from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resolve import Elicit, Resolve
from pydantic import BaseModel


class Name(BaseModel):
    name: str


def ask_name() -> Elicit[Name]:
    return Elicit("Your name?", Name)


server = MCPServer("asker", version="1.0.0")


@server.tool()
def greet(who: Annotated[ElicitationResult[Name], Resolve(ask_name)]) -> str:
    return f"hello {who.data.name}" if who.action == "accept" else f"no name ({who.action})"


@server.tool()
async def ask_directly(ctx: Context) -> str:
    return (await ctx.elicit("Your name?", Name)).action


if __name__ == "__main__":
    server.run("stdio")
