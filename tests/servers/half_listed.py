"""An outside server, on the SDK's low-level `Server` over stdio, that lists its resources but
answers `resources/templates/list` with "Method not found", as mcp-server-sqlite 2025.4.25 does;
its one tool keeps its title only in the annotations, as dbhub's do."""

from __future__ import annotations

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


async def list_tools(ctx, params) -> types.ListToolsResult:
    hints = types.ToolAnnotations(title="Run a query", read_only_hint=True)
    return types.ListToolsResult(tools=[types.Tool(name="query", input_schema={"type": "object"}, annotations=hints)])


async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text="3 rows")])


async def list_resources(ctx, params) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=[types.Resource(name="schema", uri="memo://schema")])


server = Server(
    "half-listed", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool, on_list_resources=list_resources
)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
