"""An outside server written with FastMCP (run by the FastMCP venv of tests/peers.py, over stdio),
with one tool, prompt and resource for each way a call can fail. `--mask` starts it with
`mask_error_details=True`, as FastMCP servers that hide their exceptions' texts run."""

from __future__ import annotations

import sys

from fastmcp import FastMCP
from fastmcp.exceptions import PromptError, ResourceError, ToolError
from mcp.types import CallToolResult, TextContent

shop = FastMCP("fastmcp-shop", mask_error_details="--mask" in sys.argv)


@shop.tool
def stock(count: int) -> int:
    return count


@shop.tool(name="stock-by-name")
def stock_by_name(count: int) -> int:  # pydantic titles its errors with the function's name, not the tool's
    return count


@shop.tool
def refuse() -> str:
    raise ToolError("no such book")


@shop.tool
def boom() -> str:
    raise KeyError("secret")


@shop.tool
def flagged() -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text="flagged by hand")], is_error=True)


@shop.tool
def ratio() -> float:
    return float("nan")  # no JSON form: FastMCP refuses the return value


@shop.tool(meta={"owner": "shop"})
def labelled() -> str:
    return "labelled"


@shop.prompt
def greet(name: str) -> str:
    return f"hi {name}"


@shop.prompt
def count(n: int) -> str:
    return f"n={n}"


@shop.prompt
def broken() -> str:
    raise RuntimeError("inner")


@shop.prompt
def declined() -> str:
    raise PromptError("prompt says no")


@shop.resource("shop://fine")
def fine() -> str:
    return "fine"


@shop.resource("shop://empty")
def empty() -> str:
    raise ResourceError("shelf empty")


@shop.resource("shop://crash")
def crash() -> str:
    raise KeyError("secret")


if __name__ == "__main__":
    shop.run("stdio", show_banner=False)
