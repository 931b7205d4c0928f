"""An outside server on the SDK's low-level `Server`, over stdio: its tools declare an output schema
and one of them breaks it.

`MCPServer` checks a tool's result against its own output schema before sending it; the low-level
server sends what its handler returns, as a server in any language may. So this is how a client
meets a structured result that does not match the schema the server declared.
"""

from __future__ import annotations

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

BOOKS = {
    "type": "object",
    "properties": {
        "result": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"title": {"type": "string"}, "year": {"type": "integer"}},
                "required": ["title", "year"],
            },
        }
    },
    "required": ["result"],
}
SHELF = [{"title": "Dune", "year": 1965}, {"title": "Emma", "year": 1815}]
ANSWERS = {
    "books": SHELF,  # as declared
    "bad_books": [{"title": "Dune", "year": "soon"}],  # a year that is no integer
    "no_structure": None,  # a schema declared, no structured content sent
}


async def list_tools(ctx, params) -> types.ListToolsResult:
    return types.ListToolsResult(
        tools=[types.Tool(name=name, input_schema={"type": "object"}, output_schema=BOOKS) for name in ANSWERS]
    )


async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    books = ANSWERS[params.name]
    text = types.TextContent(type="text", text=repr(books))
    structured = None if books is None else {"result": books}
    return types.CallToolResult(content=[text], structured_content=structured)


server = Server("shelf", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
