"""A sweep's speed-up: 1000 calls of an async tool that sleeps 20 ms, at concurrency 50,
against the same 1000 calls one after another (target: at least 20 times faster).

Both go through mcp_nb (`mcp_nb.sweep` with concurrency 50, and with concurrency 1), so
the ratio measures the concurrency alone. The sequential run takes about 20 s.

Usage: python benchmarks/bench_sweeps.py [--calls 1000] [--sleep 0.02] [--concurrency 50]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from _common import machine, write_json

import mcp_nb

TARGET = 20.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--sleep", type=float, default=0.02)
    parser.add_argument("--concurrency", type=int, default=50)
    args = parser.parse_args()

    @mcp_nb.tool()
    async def nap(i: int) -> int:
        await asyncio.sleep(args.sleep)
        return i

    grid = {"i": list(range(args.calls))}
    mcp_nb.sweep("nap", {"i": list(range(50))}, concurrency=10, progress=False)  # warm-up

    def timed(concurrency: int) -> float:
        mcp_nb.history().clear()
        started = time.perf_counter()
        frame = mcp_nb.sweep("nap", grid, concurrency=concurrency, progress=False)
        elapsed = time.perf_counter() - started
        assert (frame["outcome"] == "result").all() and len(frame) == args.calls
        assert len(mcp_nb.history()) == args.calls
        return elapsed

    concurrent = timed(args.concurrency)
    sequential = timed(1)
    speedup = sequential / concurrent
    ideal = min(args.concurrency, args.calls)
    print(f"{args.calls} calls of a tool sleeping {args.sleep * 1000:.0f} ms")
    print(f"  one after another       {sequential:7.2f} s")
    print(f"  concurrency {args.concurrency:<4}        {concurrent:7.2f} s")
    print(f"  speed-up                {speedup:7.1f}x  (ideal {ideal}x)")
    print(f"{'PASS' if speedup >= TARGET else 'FAIL'}  speed-up >= {TARGET:g}")
    path = write_json(
        "sweeps.json",
        {
            "benchmark": "sweeps",
            "machine": machine(),
            "calls": args.calls,
            "sleep_s": args.sleep,
            "concurrency": args.concurrency,
            "sequential_s": sequential,
            "concurrent_s": concurrent,
            "speedup": speedup,
            "target": TARGET,
            "pass": speedup >= TARGET,
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
