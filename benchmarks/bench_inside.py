"""What recording a call's Context logs and progress costs, as a ratio to the SDK's own client.

One async tool, `inside`, logs 3 messages through its Context and reports 10 progress
events per call. Two variants against the same in-process server, on mcp_nb's loop:

  raw      `await client.call_tool("inside", {}, progress_callback=...)` with a plain
           `mcp.Client(..., logging_callback=..., log_level="debug")` whose callbacks only
           append what they get to a list: the least any client that keeps them can do
  in-loop  `await engine.prepare("tool", "inside", {}, 30.0).run()`: mcp_nb's whole call
           (the Call, the deadline, the logs and progress filed on its trace, classification,
           the Outcome, the history)

Raw and in-loop blocks run back to back inside one coroutine, order alternating, and the
figure is the median of the per-pair ratios (as bench_calls.py's in-loop figure), with the
10th and 90th percentiles as a measure of the noise. Target: <= 1.10.

Usage: python benchmarks/bench_inside.py [--pairs 40] [--pair-calls 200]
"""

from __future__ import annotations

import argparse
import gc
import time

import mcp
from _common import alternate, machine, median, p10_p90, write_json
from mcp.server.mcpserver import Context

import mcp_nb

TARGET = 1.10
LOGS, EVENTS = 3, 10


@mcp_nb.tool()
async def inside(ctx: Context) -> str:
    await ctx.info("starting")
    for i in range(EVENTS):
        await ctx.report_progress(i + 1, EVENTS)
    await ctx.info("halfway there, said late")
    await ctx.info("done")
    return "x"


def paired(pairs: int, n: int) -> dict:
    eng = mcp_nb.engine()
    logs: list = []
    events: list = []

    async def logged(params) -> None:
        logs.append(params)

    async def progressed(progress, total, message) -> None:
        events.append((progress, total, message))

    async def measure() -> dict:
        async with mcp.Client(mcp_nb.server(), cache=None, logging_callback=logged, log_level="debug") as client:

            async def raw_block() -> float:
                t0 = time.perf_counter()
                for _ in range(n):
                    await client.call_tool("inside", {}, progress_callback=progressed)
                return (time.perf_counter() - t0) / n

            async def mcp_nb_block() -> float:
                t0 = time.perf_counter()
                for _ in range(n):
                    await eng.prepare("tool", "inside", {}, 30.0).run()
                return (time.perf_counter() - t0) / n

            await raw_block()
            await mcp_nb_block()  # warm-up pair, not kept
            # Both sides got everything: the raw client by its callbacks, mcp_nb on its records.
            assert len(logs) >= LOGS * n and len(events) >= EVENTS * n, (len(logs), len(events))
            last = eng.history.to_frame().iloc[-1]
            assert last["progress"] == EVENTS and len(last["server_logs"]) == LOGS, last

            def reset() -> None:
                eng.history.clear()
                logs.clear()
                events.clear()
                gc.collect()

            raws, ours, ratios = await alternate(raw_block, mcp_nb_block, pairs, reset)
            eng.history.clear()
            return {
                "raw_us": median(raws) * 1e6,
                "in_loop_us": median(ours) * 1e6,
                "ratio": median(ratios),
                "ratio_p10_p90": p10_p90(ratios),
            }

    return eng.loop.run(measure())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--pair-calls", type=int, default=200)
    args = parser.parse_args()
    figures = paired(args.pairs, args.pair_calls)
    print(f"a call that logs {LOGS} Context messages and reports {EVENTS} progress events, in-process:")
    print(f"  raw SDK client, callbacks that store: {figures['raw_us']:8.1f} µs per call")
    print(f"  mcp_nb, in-loop:                      {figures['in_loop_us']:8.1f} µs per call")
    low, high = figures["ratio_p10_p90"]
    verdict = "PASS" if figures["ratio"] <= TARGET else "FAIL"
    print(f"in-loop/raw {figures['ratio']:.3f} (pairs' p10-p90 {low:.3f}-{high:.3f}), target <= {TARGET}: {verdict}")
    path = write_json(
        "inside.json", {"machine": machine(), "pairs": args.pairs, "pair_calls": args.pair_calls, "target": TARGET, **figures}
    )
    print(f"figures written to {path}")
    mcp_nb.reset()


if __name__ == "__main__":
    main()
