"""Whatever progress a server reports, no face that shows it raises, and the call is recorded.

A server may send any number as a progress count or total: NaN, infinities, negatives, a
count past its total, a total of 0, 10**308, a message of a megabyte. The record keeps what
was sent; the live bar of `mcp_nb.call` and `%mcp_call`, the async face, a sweep and the
panel each show what they can, and the call ends as it would have without them.
"""

from __future__ import annotations

import asyncio
import math

import pytest
from helpers import wait_until
from mcp.server.mcpserver import Context

import mcp_nb
from mcp_nb.views.live import countable
from mcp_nb.widgets import show

NAN, INF = float("nan"), float("inf")
# (progress, total) pairs a server can send: each makes a call of its own
ODD = {
    "nan-count": (NAN, 10.0),
    "nan-total": (1.0, NAN),
    "inf-count": (INF, None),
    "inf-total": (1.0, INF),
    "minus-inf": (-INF, -INF),
    "negative": (-5.0, 10.0),
    "past-total": (50.0, 10.0),
    "zero-total": (3.0, 0.0),
    "huge": (1e308, 1e308),
    "tiny": (5e-324, None),
}


@pytest.fixture
def odd():
    @mcp_nb.tool()
    async def odd(kind: str, ctx: Context) -> str:
        progress, total = ODD[kind]
        await ctx.report_progress(progress, total, "x" * 1_000_000 if kind == "huge" else kind)
        await asyncio.sleep(0.3)  # the bar draws the latest event each tick: this one, first
        await ctx.report_progress(1.0, 2.0, "a plain one after it")
        await asyncio.sleep(0.3)
        return "done"

    return odd


@pytest.mark.parametrize("kind", ODD)
def test_the_sync_face_with_its_live_bar(odd, kind):
    o = mcp_nb.call("odd", {"kind": kind})
    assert (o.outcome, o.content) == ("result", "done")
    sent = o.trace.progress[0]
    assert (sent.progress, sent.total) == pytest.approx(ODD[kind], nan_ok=True)  # recorded as sent


@pytest.mark.parametrize("kind", ["nan-count", "inf-total", "huge", "zero-total"])
def test_the_magic_the_async_face_and_a_sweep(odd, shell, kind):
    cell = shell.run_cell(f"%mcp_call odd kind={kind}")
    assert cell.success and cell.result.content == "done"
    assert asyncio.run(mcp_nb.acall("odd", {"kind": kind})).content == "done"
    swept = mcp_nb.sweep("odd", {"kind": [kind, kind]}, progress=True)
    assert swept["outcome"].tolist() == ["result", "result"]
    assert len(mcp_nb.history()) == 4
    assert mcp_nb.history().to_frame()["progress"].tolist() == [2, 2, 2, 2]  # events per call


@pytest.mark.parametrize("kind", ["nan-count", "nan-total", "minus-inf", "past-total", "huge"])
def test_the_panel_shows_what_it_can(odd, kind):
    panel = show()
    try:
        panel.select("tool", "odd")
        panel._entries[panel._current].form.fields["kind"].widget.value = kind
        call = panel.call_button.click() or panel.last_call
        assert call.future.result(30).content == "done"
        assert wait_until(lambda: panel._call is None)
        assert math.isfinite(panel.progress.value) and math.isfinite(panel.progress.max)
    finally:
        panel.close()


def test_countable_draws_only_finite_counts_from_zero_up():
    assert [countable(v) for v in (NAN, INF, -INF, -1, None, object(), 10**400)] == [None] * 7
    assert [countable(v) for v in (0, 2.5, 7, 1e308)] == [0, 2.5, 7, 1e308]
    assert type(countable(7)) is int  # drawn as "7/10", not "7.0/10.0"


KERNEL_CELL = """
import asyncio, mcp_nb
from mcp.server.mcpserver import Context
nan, inf = float("nan"), float("inf")
ODD = {odd!r}

@mcp_nb.tool()
async def odd(kind: str, ctx: Context) -> str:
    progress, total = ODD[kind]
    await ctx.report_progress(progress, total, kind)
    await asyncio.sleep(0.3)
    await ctx.report_progress(1.0, 2.0, "a plain one after it")
    await asyncio.sleep(0.3)
    return "done"

said = [mcp_nb.call("odd", {{"kind": kind}}).content for kind in ODD]
print(said.count("done"), len(mcp_nb.history()))
"""


def test_in_a_real_kernel_where_the_bar_is_a_widget():
    # In a kernel tqdm draws a widget, whose count must be a number it can hold: this is where
    # a NaN made the cell fail.
    from kernels import start_new_kernel  # over ipc: no TCP port to lose

    manager, client = start_new_kernel()
    try:
        code = KERNEL_CELL.format(odd=ODD)  # its repr reads back with `nan` and `inf` defined
        printed, errors = [], []

        def seen(message):
            if message["msg_type"] == "stream":
                printed.append(message["content"]["text"])
            elif message["msg_type"] == "error":
                errors.append(message["content"]["evalue"])

        reply = client.execute_interactive(code, timeout=120, output_hook=seen)
        assert reply["content"]["status"] == "ok" and not errors, errors
        assert "".join(printed).split()[-2:] == [str(len(ODD)), str(len(ODD))]
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
