"""The causes of an outside server's errors for the SDKs servers are written with, not only the
Python SDK's: FastMCP (tests/servers/fastmcp_shop.py, run by FastMCP's own venv), the TypeScript
SDK 2.x (tests/servers/ts_sdk_shop.mjs) and 1.x (server-everything). Each is a real server over
stdio; docs/error-model.md has the table these rows check. And what such a server lists of its
tools (`execution`, `_meta`) is kept on the connection's entries."""

from __future__ import annotations

from pathlib import Path

import peers

import mcp_nb

SERVERS = Path(__file__).parent / "servers"


def _mismatches(server: str, cases: list[tuple[str, str, object, str, str]]) -> list[str]:
    """Every case whose outcome or cause differs, said in one line each (so one run shows them all)."""
    wrong = []
    for target, name, arguments, outcome, cause in cases:
        if target == "tool":
            o = mcp_nb.call(name, arguments or {}, server=server)
        elif target == "prompt":
            o = mcp_nb.get_prompt(name, arguments or {}, server=server)
        else:
            o = mcp_nb.read(name, server=server)
        if (o.outcome, o.cause) != (outcome, cause):
            wrong.append(
                f"{target} {name} {arguments!r}: {o.outcome}/{o.cause}, expected {outcome}/{cause} "
                f"(code {o.code}, message {o.message!r}, content {o.content!r})"
            )
    return wrong


def test_fastmcp_servers_causes():
    peers.require(peers.FASTMCP)
    mcp_nb.connect("fastmcp", peers.fastmcp_command(SERVERS / "fastmcp_shop.py"))
    wrong = _mismatches(
        "fastmcp",
        [
            ("tool", "stock", {"count": 3}, "result", "ok"),
            ("tool", "stock", {"count": "many"}, "tool_error", "invalid_arguments"),
            ("tool", "stock", {}, "tool_error", "invalid_arguments"),
            ("tool", "stock-by-name", {"count": "many"}, "tool_error", "invalid_arguments"),
            ("tool", "nope", {}, "tool_error", "unknown_tool"),
            ("tool", "boom", {}, "tool_error", "crash"),
            # the text is the ToolError's alone; its log line on stderr tells it from a returned error
            ("tool", "refuse", {}, "tool_error", "raised"),
            ("tool", "flagged", {}, "tool_error", "returned"),
            ("tool", "ratio", {}, "tool_error", "non_json_number"),  # NaN: FastMCP refuses to send what JSON cannot carry
            ("prompt", "greet", {"name": "Ann"}, "result", "ok"),
            ("prompt", "greet", {}, "protocol_error", "invalid_arguments"),
            ("prompt", "count", {"n": "many"}, "protocol_error", "invalid_arguments"),
            ("prompt", "nope", {}, "protocol_error", "not_found"),
            ("prompt", "broken", {}, "protocol_error", "crash"),
            ("prompt", "declined", {}, "protocol_error", "mcp_error"),  # a PromptError: its code and text, chosen
            ("resource", "shop://fine", None, "result", "ok"),
            ("resource", "shop://nope", None, "protocol_error", "not_found"),
            ("resource", "shop://empty", None, "protocol_error", "resource_error"),
            ("resource", "shop://crash", None, "protocol_error", "crash"),
        ],
    )
    assert not wrong, "\n".join(wrong)


def test_a_fastmcp_server_that_masks_its_errors():
    peers.require(peers.FASTMCP)
    mcp_nb.connect("masked", [*peers.fastmcp_command(SERVERS / "fastmcp_shop.py"), "--mask"])
    wrong = _mismatches(
        "masked",
        [
            ("tool", "boom", {}, "tool_error", "crash"),
            ("tool", "refuse", {}, "tool_error", "raised"),  # a ToolError's text is never masked
            ("prompt", "broken", {}, "protocol_error", "crash"),
            ("resource", "shop://crash", None, "protocol_error", "crash"),
        ],
    )
    assert not wrong, "\n".join(wrong)
    o = mcp_nb.call("boom", server="masked")
    assert o.content == "Error calling tool 'boom'" and "secret" not in o.content


def test_typescript_sdk_2_servers_causes():
    peers.require(peers.TS_SDK)
    command, env = peers.ts_sdk_command(SERVERS / "ts_sdk_shop.mjs")
    mcp_nb.connect("ts", command, env=env)
    wrong = _mismatches(
        "ts",
        [
            ("tool", "add", {"a": 1, "b": 2}, "result", "ok"),
            ("tool", "add", {"a": "x"}, "tool_error", "invalid_arguments"),
            ("tool", "nope", {}, "protocol_error", "unknown_tool"),  # 2.x answers it as a JSON-RPC error
            # what a handler threw is sent as its bare message, as a returned error would be: nothing tells them apart
            ("tool", "boom", {}, "tool_error", "returned"),
            ("tool", "flagged", {}, "tool_error", "returned"),
            ("prompt", "greet", {}, "protocol_error", "invalid_arguments"),
            ("prompt", "nope", {}, "protocol_error", "not_found"),
            ("resource", "shop://fine", None, "result", "ok"),
            ("resource", "shop://nope", None, "protocol_error", "not_found"),
        ],
    )
    assert not wrong, "\n".join(wrong)


def test_typescript_sdk_1_servers_causes():
    peers.require(peers.EVERYTHING)
    mcp_nb.connect("everything", peers.everything_stdio(), env=peers.node_env())
    wrong = _mismatches(
        "everything",
        [
            ("tool", "echo", {"message": "hi"}, "result", "ok"),
            ("tool", "echo", {}, "tool_error", "invalid_arguments"),
            ("tool", "nope", {}, "tool_error", "unknown_tool"),  # 1.x folds it into an isError result
            ("prompt", "args-prompt", {}, "protocol_error", "invalid_arguments"),
            ("prompt", "nope", {}, "protocol_error", "not_found"),
            ("resource", "demo://nope", None, "protocol_error", "not_found"),
        ],
    )
    assert not wrong, "\n".join(wrong)


def test_an_outside_tools_execution_and_meta_are_kept():
    peers.require(peers.EVERYTHING, peers.FASTMCP, peers.TS_SDK)
    everything = mcp_nb.connect("everything", peers.everything_stdio(), env=peers.node_env())
    assert everything.get("tool", "simulate-research-query").execution == {"taskSupport": "required"}
    assert everything.get("tool", "echo").execution == {"taskSupport": "forbidden"}
    listed = mcp_nb.registered(server="everything").set_index("name")  # what a user reads in the notebook
    assert listed.loc["simulate-research-query", "execution"] == '{"taskSupport":"required"}'
    assert "execution" not in mcp_nb.registered().columns  # the kernel's own entries have none
    fastmcp = mcp_nb.connect("fastmcp", peers.fastmcp_command(SERVERS / "fastmcp_shop.py"))
    labelled = fastmcp.get("tool", "labelled")
    assert labelled.meta["owner"] == "shop" and "fastmcp" in labelled.meta  # the server's own keys too
    assert labelled.execution is None
    assert fastmcp.get("prompt", "greet").meta == {"fastmcp": {"tags": []}}
    assert fastmcp.get("resource", "shop://fine").meta == {"fastmcp": {"tags": []}}
    command, env = peers.ts_sdk_command(SERVERS / "ts_sdk_shop.mjs")
    ts = mcp_nb.connect("ts", command, env=env)
    assert ts.get("tool", "add").meta == {"owner": "shop"} and ts.get("tool", "boom").meta is None
