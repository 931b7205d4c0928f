"""The SDK boundary: every private attribute and message text mcp_nb relies on, checked by name.

If an `mcp` release moves one of them, these tests fail here, saying which, rather than
as a wrong classification somewhere else.
"""

import asyncio
import logging
import types

import pytest
from mcp import Client, MCPError
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError

import mcp_nb
from mcp_nb import sdk_compat
from mcp_nb.records.trace import EXCEPTIONS


def test_the_installed_sdk_has_everything_where_mcp_nb_looks():
    assert sdk_compat.problems() == []
    assert sdk_compat.checked_release(), f"mcp {sdk_compat.SDK_VERSION} is not one sdk_compat.CHECKED lists"


class Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


def provoke(server, method: str, *args):
    """Make one request to a bare SDK server (no mcp_nb in the way); return the log records and the answer."""
    sdk = logging.getLogger(sdk_compat.SDK_LOGGER)
    handler = Records()
    sdk.addHandler(handler)
    level = sdk.level
    sdk.setLevel(logging.DEBUG)

    async def go():
        async with Client(server, cache=None) as client:
            try:
                return await getattr(client, method)(*args)
            except MCPError as err:
                return err

    try:
        answer = asyncio.run(go())
    finally:
        sdk.removeHandler(handler)
        sdk.setLevel(level)
    return handler.records, answer


@pytest.fixture
def bare():
    server = sdk_compat.new_server("bare")

    @server.tool()
    def crash() -> str:
        raise KeyError("x")

    @server.tool()
    def refuse() -> str:
        raise ToolError("no")

    @server.tool()
    def typed(n: int) -> int:
        return n

    @server.resource("r://missing")
    def missing() -> str:
        raise ResourceNotFoundError("gone")

    @server.resource("r://broken")
    def broken() -> str:
        raise ResourceError("rebuilding")

    @server.resource("r://crash")
    def resource_crash() -> str:
        raise KeyError("x")

    @server.prompt()
    def needs(title: str) -> str:
        return title

    return server


@pytest.mark.parametrize(
    "name, method, args, text",
    [
        ("TOOL_CRASHED", "call_tool", ("crash", {}), sdk_compat.TOOL_CRASHED),
        ("TOOL_FAILED", "call_tool", ("refuse", {}), sdk_compat.TOOL_FAILED),
        ("TOOL_FAILED (unknown tool)", "call_tool", ("nope", {}), sdk_compat.TOOL_FAILED),
        ("TOOL_REJECTED", "call_tool", ("typed", {"n": "x"}), sdk_compat.TOOL_REJECTED),
        ("RESOURCE_FAILED (not found)", "read_resource", ("r://missing",), sdk_compat.RESOURCE_FAILED),
        ("RESOURCE_FAILED (error)", "read_resource", ("r://broken",), sdk_compat.RESOURCE_FAILED),
        ("RESOURCE_CRASHED", "read_resource", ("r://crash",), sdk_compat.RESOURCE_CRASHED),
        ("HANDLER_RAISED", "get_prompt", ("needs", {}), sdk_compat.HANDLER_RAISED),
    ],
)
def test_every_log_text_the_classifier_matches_is_the_sdks(bare, name, method, args, text):
    records, _ = provoke(bare, method, *args)
    templates = [r.msg for r in records]
    assert text in templates, f"sdk_compat.{name} moved: the SDK now logs {templates!r}"


def test_the_result_and_exception_texts_are_the_sdks(bare):
    records, answer = provoke(bare, "call_tool", "nope", {})
    assert answer.content[0].text == sdk_compat.UNKNOWN_TOOL.format(name="nope"), "sdk_compat.UNKNOWN_TOOL moved"
    records, _ = provoke(bare, "get_prompt", "nope", {})
    chain = exception_texts(records)
    assert any(t.startswith(sdk_compat.UNKNOWN_PROMPT) for t in chain), f"sdk_compat.UNKNOWN_PROMPT moved: {chain}"
    records, _ = provoke(bare, "get_prompt", "needs", {})
    chain = exception_texts(records)
    assert any(t.startswith(sdk_compat.MISSING_ARGUMENTS) for t in chain), f"sdk_compat.MISSING_ARGUMENTS moved: {chain}"


def test_the_in_process_timeout_message_is_the_sdks():
    server = sdk_compat.new_server("slow")

    @server.tool()
    async def slow() -> str:
        await asyncio.sleep(5)
        return "late"

    async def go():
        async with Client(server, cache=None) as client:
            try:
                await client.call_tool("slow", {}, read_timeout_seconds=0.05)
            except MCPError as err:
                return err.error.message

    expected = sdk_compat.TIMED_OUT.format(seconds=0.05, method="tools/call")
    assert asyncio.run(go()) == expected, "sdk_compat.TIMED_OUT moved"


def exception_texts(records) -> list[str]:
    """The texts of the exceptions the records carry. A record whose traceback held a value some
    engine of this process names a secret carries them scrubbed instead (registering/log_secrets.py)."""
    texts = []
    for r in records:
        if r.exc_info:
            texts += [str(e) for e in _chain(r.exc_info[1])]
        texts += [text for _, text in getattr(r, EXCEPTIONS, ())]
    return texts


def _chain(exc):
    while exc is not None:
        yield exc
        exc = exc.__cause__ or exc.__context__


def test_a_moved_private_is_named(monkeypatch):
    monkeypatch.setattr(sdk_compat, "new_server", lambda name: types.SimpleNamespace(_resource_manager=None))
    found = sdk_compat.problems()
    assert "MCPServer._tool_manager._tools is gone" in found
    assert "MCPServer._prompt_manager._prompts is gone" in found
    assert "MCPServer._resource_manager._resources is gone" in found
    assert any(line.startswith("MCPServer._lowlevel_server.add_request_handler is gone") for line in found)
    assert any(line.startswith("MCPServer._subscriptions.publish is gone") for line in found)
    with pytest.raises(sdk_compat.SDKMismatch, match=r"does not fit the installed mcp .*_tool_manager\._tools is gone"):
        sdk_compat.check()


def test_an_unchecked_sdk_release_is_checked_before_first_use(monkeypatch):
    monkeypatch.setattr(sdk_compat, "SDK_VERSION", "9.0.0")
    monkeypatch.setattr(sdk_compat, "_verified", False)
    monkeypatch.setattr(sdk_compat, "new_server", lambda name: types.SimpleNamespace())
    mcp_nb.reset()
    with pytest.raises(sdk_compat.SDKMismatch, match="mcp 9.0.0"):
        mcp_nb.engine()


def test_mcp_nbs_server_leaves_the_root_logger_alone():
    root = logging.getLogger()
    before = list(root.handlers), root.level
    sdk_compat.new_server("quiet")
    assert (list(root.handlers), root.level) == before


def test_resource_building_runs_the_sdks_own_checks():
    with pytest.raises(ValueError, match="Mismatch between URI parameters"):
        sdk_compat.build_resource(lambda other: other, "r://{name}")
    with pytest.raises(ValueError, match="no URI template variables"):
        sdk_compat.build_resource(lambda name: name, "r://static")

    def named(name: str) -> str:
        return name

    assert sdk_compat.is_template(sdk_compat.build_resource(named, "r://{name}"))


def test_the_clients_output_schema_texts_are_the_sdks():
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("shelf", Path(__file__).parent / "servers" / "shelf.py")
    shelf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shelf)

    async def refused() -> list[str]:
        texts = []
        async with Client(shelf.server, cache=None) as client:
            for name in ("bad_books", "no_structure"):
                with pytest.raises(RuntimeError) as raised:
                    await client.call_tool(name, {})
                texts.append(str(raised.value))
        return texts

    invalid, missing = asyncio.run(refused())
    assert invalid.startswith(sdk_compat.OUTPUT_INVALID + "bad_books"), f"sdk_compat.OUTPUT_INVALID moved: {invalid}"
    assert missing.endswith(sdk_compat.OUTPUT_MISSING), f"sdk_compat.OUTPUT_MISSING moved: {missing}"
