"""The real MCP peers the tests use are in place and answer (tests/peers.py installs them)."""

import asyncio

import peers
from mcp import Client
from mcp.client.stdio import StdioServerParameters


def test_server_everything_over_stdio():
    peers.require(peers.EVERYTHING)
    command, *args = peers.everything_stdio()

    async def tools():
        params = StdioServerParameters(command=command, args=args, env=peers.node_env())
        async with Client(params) as client:
            return [t.name for t in (await client.list_tools()).tools]

    names = asyncio.run(tools())
    assert "echo" in names and "get-sum" in names


def test_server_everything_over_http_listens_on_loopback_only():
    peers.require(peers.EVERYTHING)
    with peers.everything_http() as url:
        assert url.startswith("http://127.0.0.1:")

        async def echo():
            async with Client(url) as client:
                return (await client.call_tool("echo", {"message": "hi"})).content[0].text

        assert "hi" in asyncio.run(echo())


def test_inspector_cli_lists_tools():
    peers.require(peers.EVERYTHING, "@modelcontextprotocol/inspector")
    with peers.everything_http() as url:
        done = peers.inspector_cli(url, "--method", "tools/list")
    assert done.returncode == 0, done.stderr[-2000:]
    assert '"echo"' in done.stdout


def test_the_conformance_suite_lists_its_server_scenarios():
    peers.require("@modelcontextprotocol/conformance")
    done = peers.conformance("list", "--server")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "dns-rebinding-protection" in done.stdout
