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


def test_the_peers_kept_for_the_machine_are_linked_into_a_fresh_checkout_and_what_tests_write_stays(tmp_path, monkeypatch):
    """`.ci/run` installs the peers into `.peers/` once per machine and set of pins; a fresh clone
    links the kept copy in (tests/peers.py `keep`, `restore`). What the tests write in `.peers/` as
    they run (Inspector's home, the loopback preload) is neither kept nor cleared."""
    checkout = tmp_path / "checkout" / ".peers"
    monkeypatch.setattr(peers, "PEERS", checkout)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (checkout / "node_modules" / "pkg").mkdir(parents=True)
    (checkout / "node_modules" / "pkg" / "index.js").write_text("module.exports = 1\n")
    (checkout / "package.json").write_text("{}")
    (checkout / "home").mkdir()
    (checkout / "loopback.cjs").write_text("// written by a test")
    peers.keep()
    kept = peers.kept()
    assert kept.parent == tmp_path / "cache" / "mcp_nb" / "peers"
    assert sorted(p.name for p in kept.iterdir()) == ["node_modules", "package.json"]
    assert [p.name for p in kept.parent.iterdir()] == [kept.name]  # nothing staged left beside it

    peers.clear()
    assert sorted(p.name for p in checkout.iterdir()) == ["home", "loopback.cjs"]
    assert not peers.restore()  # linked in, but these are not the pinned peers
    linked = checkout / "node_modules" / "pkg" / "index.js"
    assert linked.read_text() == "module.exports = 1\n"
    assert linked.stat().st_ino == (kept / "node_modules" / "pkg" / "index.js").stat().st_ino
    assert (checkout / "loopback.cjs").read_text() == "// written by a test"
