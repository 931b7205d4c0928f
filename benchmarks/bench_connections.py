"""What mcp_nb costs on a real transport: outside servers over stdio and streamable HTTP.

Two figures, each a ratio measured in one run against the SDK's own client:

  per call   `await engine.prepare(..., server=name).run()` on mcp_nb's loop against a raw
             `mcp.Client` loop of `call_tool`, on the same server (the bookshop server of
             notebooks/servers, a separate process), over stdio and over HTTP; paired blocks,
             median of the per-pair ratios (target <= 1.05)
  sweep      1000 calls of server-everything's `get-sum` over HTTP through `mcp_nb.sweep` at
             concurrency 50, against raw `asyncio.gather` of `call_tool` under a semaphore of
             50 on a client of its own (target: at least 0.9 of its throughput)

Needs the peers (`python tests/peers.py install`).

Usage: python benchmarks/bench_connections.py [--pairs 30] [--block 100] [--calls 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from pathlib import Path

import mcp
from _common import alternate, machine, median, write_json

import mcp_nb

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import peers  # noqa: E402

BOOKSHOP = [sys.executable, str(ROOT / "notebooks" / "servers" / "bookshop.py")]
TARGETS = {"per_call": 1.05, "sweep_throughput": 0.9}


def paired(server: str, target: str, pairs: int, block: int) -> dict:
    """mcp_nb's in-loop call and a raw client's, in alternating blocks on mcp_nb's loop."""
    eng = mcp_nb.engine()
    arguments = {"limit": 1}

    async def measure() -> dict:
        async with mcp.Client(target, cache=None) as client:

            async def raw() -> float:
                t0 = time.perf_counter()
                for _ in range(block):
                    await client.call_tool("count_books", arguments)
                return (time.perf_counter() - t0) / block

            async def ours() -> float:
                t0 = time.perf_counter()
                for _ in range(block):
                    await eng.prepare("tool", "count_books", arguments, 30.0, server=server).run()
                return (time.perf_counter() - t0) / block

            await raw()
            await ours()  # a warm-up pair, not kept
            raws, mine, ratios = await alternate(raw, ours, pairs, eng.history.clear)
            return {"raw_us": median(raws) * 1e6, "mcp_nb_us": median(mine) * 1e6, "ratio": median(ratios)}

    return eng.loop.run(measure())


def sweep_throughput(url: str, calls: int, concurrency: int) -> dict:
    grid = [{"a": i, "b": 1} for i in range(calls)]

    async def raw_gather() -> float:
        gate = asyncio.Semaphore(concurrency)
        async with mcp.Client(url, cache=None) as client:

            async def one(arguments: dict) -> None:
                async with gate:
                    await client.call_tool("get-sum", arguments)

            await asyncio.gather(*(one(a) for a in grid[:50]))  # warm-up
            t0 = time.perf_counter()
            await asyncio.gather(*(one(a) for a in grid))
            return time.perf_counter() - t0

    mcp_nb.sweep("get-sum", grid[:50], concurrency=concurrency, server="everything", progress=False)  # warm-up
    mcp_nb.history().clear()
    t0 = time.perf_counter()
    frame = mcp_nb.sweep("get-sum", grid, concurrency=concurrency, server="everything", progress=False)
    ours = time.perf_counter() - t0
    assert (frame["outcome"] == "result").all() and len(frame) == calls
    raw = mcp_nb.engine().loop.run(raw_gather())
    return {
        "raw_s": raw,
        "mcp_nb_s": ours,
        "raw_calls_per_s": calls / raw,
        "mcp_nb_calls_per_s": calls / ours,
        "throughput_ratio": raw / ours,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=30)
    parser.add_argument("--block", type=int, default=100)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=50)
    args = parser.parse_args()
    missing = peers.missing()
    if missing:
        raise SystemExit(f"missing peers: {', '.join(missing)} (python tests/peers.py install)")

    from mcp.client.stdio import StdioServerParameters

    results: dict = {}
    mcp_nb.connect("books-stdio", [*BOOKSHOP, "stdio"])
    results["stdio"] = paired(
        "books-stdio", StdioServerParameters(command=BOOKSHOP[0], args=[BOOKSHOP[1], "stdio"]), args.pairs, args.block
    )
    port = peers.free_port()
    process = subprocess.Popen([*BOOKSHOP, "http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        peers.wait_for_port(port, process)
        url = f"http://127.0.0.1:{port}/mcp"
        mcp_nb.connect("books-http", url)
        results["http"] = paired("books-http", url, args.pairs, args.block)
    finally:
        peers.stop(process)
    with peers.everything_http() as url:
        mcp_nb.connect("everything", url)
        results["sweep"] = sweep_throughput(url, args.calls, args.concurrency)
    mcp_nb.reset()

    print(f"per call, paired: {args.pairs} pairs of {args.block}-call blocks, median of per-pair ratios")
    verdicts = []
    for transport in ("stdio", "http"):
        r = results[transport]
        ok = r["ratio"] <= TARGETS["per_call"]
        verdicts.append(ok)
        print(
            f"  {transport:<6} raw {r['raw_us']:8.1f} us  mcp_nb {r['mcp_nb_us']:8.1f} us  ratio {r['ratio']:.3f}  "
            f"{'PASS' if ok else 'FAIL'} (<= {TARGETS['per_call']})"
        )
    s = results["sweep"]
    ok = s["throughput_ratio"] >= TARGETS["sweep_throughput"]
    verdicts.append(ok)
    print(f"sweep of {args.calls} calls at concurrency {args.concurrency} over HTTP (server-everything)")
    print(
        f"  raw gather {s['raw_calls_per_s']:7.1f} calls/s   mcp_nb.sweep {s['mcp_nb_calls_per_s']:7.1f} calls/s   "
        f"ratio {s['throughput_ratio']:.3f}  {'PASS' if ok else 'FAIL'} (>= {TARGETS['sweep_throughput']})"
    )
    path = write_json(
        "connections.json",
        {
            "benchmark": "connections",
            "machine": machine(),
            "targets": TARGETS,
            "pairs": args.pairs,
            "block": args.block,
            **results,
            "pass": all(verdicts),
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
