"""A call asks for what its tool can use of its request, and only that: progress (the SDK's
progress callback) and, at 2026-07-28, the client's elicitation capability.

A kernel tool registered through mcp_nb reaches its request only through a Context parameter
or a resolver (`Resolve`), so a call to one without either asks for no progress (the SDK's
progress plumbing costs about 1.5 % of a trivial call) and is sent without the elicitation
capability (which the server rebuilds for every request: about 2 %). Every other handler may
reach its request however it likes, so its calls always ask: a tool put on the kernel's server
directly, an outside server's.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resolve import Resolve

import mcp_nb


async def measured(ctx: Context) -> int:
    """A resolver that reaches the request: it reports progress, then gives the value."""
    await ctx.report_progress(1, 1, "resolved")
    return 7


def test_a_tool_with_a_context_asks_for_progress_and_its_progress_is_recorded():
    @mcp_nb.tool()
    async def counted(ctx: Context) -> str:
        await ctx.report_progress(1, 2, "half")
        return "done"

    outcome = mcp_nb.call("counted", {})
    assert outcome.outcome == "result", outcome
    assert mcp_nb.engine().connection.reaches_request("counted") is True
    assert [(e.progress, e.total, e.message) for e in outcome.progress] == [(1.0, 2.0, "half")]


def test_a_tool_without_a_context_asks_for_none_and_every_face_still_works():
    @mcp_nb.tool()
    def plain(x: int) -> int:
        return x + 1

    @mcp_nb.tool()
    async def aplain(x: int) -> int:
        return x + 1

    for name in ("plain", "aplain"):
        assert mcp_nb.call(name, {"x": 1}).content == "2"
        assert asyncio.run(mcp_nb.acall(name, {"x": 2})).content == "3"
        # The deadline that resets on progress still holds for a tool that can send none.
        late = mcp_nb.call(name, {"x": 3}, timeout=5, reset_on_progress=True)
        assert late.outcome == "result" and late.deadline_resets == 0 and late.progress == ()
    assert mcp_nb.engine().connection.reaches_request("plain") is False
    assert mcp_nb.engine().connection.reaches_request("aplain") is False


def test_a_tool_put_on_the_server_directly_always_asks():
    # Not wrapped by mcp_nb: nothing says how it reaches the request, so its calls ask for progress.
    server = mcp_nb.server()

    @server.tool()
    async def direct(ctx: Context) -> str:
        await ctx.report_progress(3, 4)
        return "direct"

    outcome = mcp_nb.call("direct", {})
    assert outcome.outcome == "result", outcome
    assert [(e.progress, e.total) for e in outcome.progress] == [(3.0, 4.0)]
    assert mcp_nb.engine().connection.reaches_request("direct") is True
    assert mcp_nb.engine().connection.reaches_request("no-such-tool") is True


def test_a_tool_whose_resolver_takes_the_context_reaches_its_request():
    # A resolver (`Annotated[T, Resolve(fn)]`) may take the request's Context even when the tool
    # itself takes none: its progress is the call's, so the call asks for it.
    @mcp_nb.tool()
    def weighed(w: Annotated[int, Resolve(measured)]) -> str:
        return f"{w} kg"

    outcome = mcp_nb.call("weighed", {})
    assert outcome.content == "7 kg", outcome
    assert mcp_nb.engine().connection.reaches_request("weighed") is True
    assert [(e.progress, e.message) for e in outcome.progress] == [(1.0, "resolved")]


def test_capabilities_a_tool_cannot_use_are_not_sent_with_its_calls(monkeypatch):
    # At 2026-07-28 every request carries the client's capabilities, rebuilt by the server each
    # time; mcp_nb's session declares elicitation, which only a tool that reaches its request can use.
    from mcp.server.connection import Connection

    seen = []
    made = Connection.from_envelope.__func__

    def spied(cls, protocol_version, client_info, client_capabilities, **kw):
        seen.append(client_capabilities)
        return made(cls, protocol_version, client_info, client_capabilities, **kw)

    monkeypatch.setattr(Connection, "from_envelope", classmethod(spied))

    @mcp_nb.tool()
    def lean() -> str:
        return "lean"

    @mcp_nb.tool()
    async def full(ctx: Context) -> str:
        return "full"

    mcp_nb.call("lean", {})  # the session opens and lists first: only the calls are looked at below
    assert mcp_nb.engine().connection.protocol == "2026-07-28"
    seen.clear()
    assert mcp_nb.call("lean", {}).content == "lean"
    assert seen == [{}], seen
    seen.clear()
    assert mcp_nb.call("full", {}).content == "full"
    assert [sorted(caps) for caps in seen] == [["elicitation"]], seen
    seen.clear()

    @mcp_nb.resource("notes://today")
    def today() -> str:
        return "nothing"

    assert mcp_nb.read("notes://today").content == "nothing"  # any other request keeps every capability
    assert seen and all(sorted(caps) == ["elicitation"] for caps in seen), seen
