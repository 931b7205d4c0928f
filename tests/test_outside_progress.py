"""Progress an outside client's call received is counted in the history, as the kernel's own calls'
progress is: the `progress` column says how many events the client got, and the kernel's own call
of the same tool still counts each event once."""

import asyncio

import pytest
from mcp.server.mcpserver import Context
from outside import client

import mcp_nb

STEPS = 5


@pytest.fixture
def served():
    @mcp_nb.tool()
    async def restock(steps: int, ctx: Context) -> str:
        """Reports progress `steps` times."""
        for i in range(steps):
            await ctx.report_progress(i + 1, steps, f"book {i + 1}")
        return f"restocked {steps}"

    handle = mcp_nb.serve()
    yield handle
    handle.stop()


async def call_with_progress(handle, mode: str, steps: int = STEPS) -> list[tuple]:
    """Call `restock` as an outside client that asks for progress; returns the events it received."""
    received = []

    async def heard(progress, total, message):
        received.append((progress, total, message))

    async with client(handle.url, handle.token, mode=mode) as session:
        result = await session.call_tool("restock", {"steps": steps}, progress_callback=heard)
    assert result.content[0].text == f"restocked {steps}"
    return received


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_an_outside_calls_progress_is_counted_as_the_client_received_it(served, mode):
    received = asyncio.run(call_with_progress(served, mode))
    assert len(received) == STEPS
    (row,) = mcp_nb.history().to_frame().itertuples()
    assert (row.name, row.via, row.progress) == ("restock", "http", len(received))
    events = mcp_nb.history().progress(row.call_id)
    assert list(zip(events["progress"], events["total"], events["message"])) == [(float(p), float(t), m) for p, t, m in received]


def test_an_outside_call_without_a_progress_callback_counts_none(served):
    async def without():
        async with client(served.url, served.token, mode="legacy") as session:
            return await session.call_tool("restock", {"steps": 3})

    assert asyncio.run(without()).content[0].text == "restocked 3"
    (row,) = mcp_nb.history().to_frame().itertuples()
    assert (row.via, row.progress) == ("http", 0)  # no token: the server sent nothing


def test_the_kernels_own_call_still_counts_each_event_once(served):
    asyncio.run(call_with_progress(served, "legacy"))
    o = mcp_nb.call("restock", {"steps": STEPS})
    assert o.ok, o
    assert len(o.progress) == STEPS
    frame = mcp_nb.history().to_frame()
    assert frame["via"].tolist() == ["http", "kernel"]
    assert frame["progress"].tolist() == [STEPS, STEPS]
