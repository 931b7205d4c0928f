"""A replay's cost: 1,000 cases replayed against the in-kernel server at concurrency 50, against
the same 1,000 calls made by `mcp_nb.sweep` at concurrency 50 (target: at most 1.2 times as long).

The cases are the sweep's own calls saved with `to_cases`, each expecting its content. The
replay is timed as a user runs it: read and check the file, prepare, call, judge, build the
frame. Runs alternate (sweep, replay, replay, sweep, ...) so drift hits both alike; the
ratio is the median of the per-round ratios. The tool is a trivial async tool by default,
where a replay's own work weighs most; `--sleep 0.02` gives each call 20 ms.

Usage: python benchmarks/bench_replay.py [--cases 1000] [--concurrency 50] [--rounds 7] [--sleep 0]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from _common import machine, write_json

import mcp_nb

TARGET = 1.2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--sleep", type=float, default=0.0)
    args = parser.parse_args()

    @mcp_nb.tool(read_only=True)
    async def echo(i: int) -> int:
        if args.sleep:
            await asyncio.sleep(args.sleep)
        return i

    grid = {"i": list(range(args.cases))}
    mcp_nb.sweep("echo", grid, concurrency=args.concurrency, progress=False)
    path = Path(tempfile.mkdtemp()) / "cases.json"
    mcp_nb.history().to_cases(path)
    mcp_nb.replay(path, concurrency=args.concurrency)  # warm-up of both paths

    def sweep() -> float:
        mcp_nb.history().clear()
        started = time.perf_counter()
        frame = mcp_nb.sweep("echo", grid, concurrency=args.concurrency, progress=False)
        elapsed = time.perf_counter() - started
        assert (frame["outcome"] == "result").all() and len(frame) == args.cases
        return elapsed

    def replay() -> float:
        mcp_nb.history().clear()
        started = time.perf_counter()
        frame = mcp_nb.replay(path, concurrency=args.concurrency)
        elapsed = time.perf_counter() - started
        assert frame["passed"].all() and len(frame) == args.cases
        assert len(mcp_nb.history()) == args.cases
        return elapsed

    sweeps, replays, ratios = [], [], []
    for round_ in range(args.rounds):
        if round_ % 2:
            r, s = replay(), sweep()
        else:
            s, r = sweep(), replay()
        sweeps.append(s)
        replays.append(r)
        ratios.append(r / s)
    ratio = statistics.median(ratios)
    print(
        f"{args.cases} calls of a read-only async tool ({args.sleep * 1000:.0f} ms each), concurrency {args.concurrency}, {args.rounds} rounds"
    )
    print(f"  mcp_nb.sweep   median {statistics.median(sweeps):7.3f} s  ({min(sweeps):.3f} – {max(sweeps):.3f})")
    print(f"  mcp_nb.replay  median {statistics.median(replays):7.3f} s  ({min(replays):.3f} – {max(replays):.3f})")
    print(f"  replay / sweep median {ratio:7.3f}    (per round {min(ratios):.3f} – {max(ratios):.3f})")
    print(f"{'PASS' if ratio <= TARGET else 'FAIL'}  replay / sweep <= {TARGET:g}")
    out = write_json(
        "replay.json",
        {
            "benchmark": "replay",
            "machine": machine(),
            "cases": args.cases,
            "concurrency": args.concurrency,
            "sleep_s": args.sleep,
            "rounds": args.rounds,
            "sweep_s": sweeps,
            "replay_s": replays,
            "ratios": ratios,
            "ratio": ratio,
            "target": TARGET,
            "pass": ratio <= TARGET,
        },
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
