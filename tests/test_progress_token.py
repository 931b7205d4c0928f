"""A call asks the server for progress (gives the SDK a progress callback) exactly when progress can come.

A kernel tool registered through mcp_nb can report progress only through a Context
parameter, so a call to one without it asks for none (the SDK's progress plumbing costs
about 1.5 % of a trivial call). Every other handler may report progress however it likes,
so its calls always ask: a tool put on the kernel's server directly, an outside server's.
"""

from __future__ import annotations

import asyncio

from mcp.server.mcpserver import Context

import mcp_nb


def test_a_tool_with_a_context_asks_for_progress_and_its_progress_is_recorded():
    @mcp_nb.tool()
    async def counted(ctx: Context) -> str:
        await ctx.report_progress(1, 2, "half")
        return "done"

    outcome = mcp_nb.call("counted", {})
    assert outcome.outcome == "result", outcome
    assert mcp_nb.engine().connection.reports_progress("counted") is True
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
    assert mcp_nb.engine().connection.reports_progress("plain") is False
    assert mcp_nb.engine().connection.reports_progress("aplain") is False


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
    assert mcp_nb.engine().connection.reports_progress("direct") is True
    assert mcp_nb.engine().connection.reports_progress("no-such-tool") is True
