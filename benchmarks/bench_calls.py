"""Cost per call of mcp_nb, as a ratio to a raw `mcp.Client.call_tool` loop on the same server.

Absolute microseconds depend on the machine; a ratio to the SDK's own client,
measured in the same run against the same in-process server, says what mcp_nb
adds. Three variants per tool, interleaved in rounds so that drift on a noisy
machine lands on all of them alike:

  raw      `await client.call_tool(name, {})` with a plain `mcp.Client`, on mcp_nb's loop thread
  sync     `mcp_nb.call(name, {})` from ordinary code: includes the hop to the loop thread and back
  in-loop  `await engine.prepare("tool", name, {}, 30.0).run()` on mcp_nb's loop: what mcp_nb
           adds per call (the Call, trace, deadline, classification, Outcome, history) without
           the hop, as sweeps make calls
  hopped   the raw SDK call, but each one submitted from this thread to the loop thread and
           waited for: the floor for any sync face over a loop thread (read `sync` against it)

Usage: python benchmarks/bench_calls.py [--rounds 7] [--calls 2000]
"""

from __future__ import annotations

import argparse
import gc
import time

import mcp
from _common import alternate, machine, median, p10_p90, write_json

import mcp_nb

TARGETS = {"sync": 1.5, "in-loop": 1.05}  # the in-loop target is the house issue's (docs/performance.md)
VARIANTS = ("raw", "sync", "in-loop", "hopped")


@mcp_nb.tool()
def triv() -> str:
    return "x"


@mcp_nb.tool()
async def atriv() -> str:
    return "x"


TOOLS = ("triv", "atriv")


# Each variant returns seconds per call over `n` calls. The two that run on the loop
# time themselves there, so the hop that starts them is not counted.


def raw(name: str, n: int) -> float:
    async def loop() -> float:
        # A session of its own, like any SDK user's; opened outside the timed part.
        async with mcp.Client(mcp_nb.server(), cache=None) as client:
            for _ in range(20):
                result = await client.call_tool(name, {})
            assert not result.is_error, result
            t0 = time.perf_counter()
            for _ in range(n):
                await client.call_tool(name, {})
            return (time.perf_counter() - t0) / n

    return mcp_nb.engine().loop.run(loop())


def sync(name: str, n: int) -> float:
    call = mcp_nb.call
    t0 = time.perf_counter()
    for _ in range(n):
        call(name, {})
    return (time.perf_counter() - t0) / n


def in_loop(name: str, n: int) -> float:
    eng = mcp_nb.engine()

    async def loop() -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            await eng.prepare("tool", name, {}, 30.0).run()
        return (time.perf_counter() - t0) / n

    return eng.loop.run(loop())


def hop(n: int) -> float:
    """The thread hop alone: an empty coroutine run from this thread (for reading `sync`)."""

    async def nothing() -> None:
        return None

    run = mcp_nb.engine().loop.run
    t0 = time.perf_counter()
    for _ in range(n):
        run(nothing())
    return (time.perf_counter() - t0) / n


def hopped(name: str, n: int) -> float:
    eng = mcp_nb.engine()
    client = eng.loop.run(eng.connection.ready())  # mcp_nb's own session: a plain SDK client, used bare here
    run = eng.loop.run
    t0 = time.perf_counter()
    for _ in range(n):
        run(client.call_tool(name, {}))
    return (time.perf_counter() - t0) / n


def paired_in_loop(name: str, pairs: int, n: int) -> dict:
    """raw and in-loop in alternating blocks of `n` calls inside one coroutine on the loop.

    Both run on mcp_nb's loop without a hop, so they can be paired closely: each pair
    is two blocks back to back (order alternating), and the figure is the median of the
    per-pair ratios. Drift on a noisy machine then hits both sides of a pair alike,
    which block-per-round interleaving cannot promise for blocks seconds apart.
    """
    eng = mcp_nb.engine()

    async def measure() -> dict:
        async with mcp.Client(mcp_nb.server(), cache=None) as client:

            async def raw_block() -> float:
                t0 = time.perf_counter()
                for _ in range(n):
                    await client.call_tool(name, {})
                return (time.perf_counter() - t0) / n

            async def mcp_nb_block() -> float:
                t0 = time.perf_counter()
                for _ in range(n):
                    await eng.prepare("tool", name, {}, 30.0).run()
                return (time.perf_counter() - t0) / n

            await raw_block()
            await mcp_nb_block()  # warm-up pair, not kept
            raws, ours, ratios = await alternate(raw_block, mcp_nb_block, pairs, eng.history.clear)
            eng.history.clear()
            return {
                "raw_us": median(raws) * 1e6,
                "in_loop_us": median(ours) * 1e6,
                "ratio": median(ratios),
                "ratio_p10_p90": p10_p90(ratios),
            }

    return eng.loop.run(measure())


RUN = {"raw": raw, "sync": sync, "in-loop": in_loop, "hopped": hopped}


def block(variant: str, name: str, n: int) -> float:
    # Every block starts from an empty history and no pending garbage, so none of them
    # pays for what an earlier block left behind.
    mcp_nb.history().clear()
    gc.collect()
    return RUN[variant](name, n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=2000, help="calls per variant per round")
    parser.add_argument("--pairs", type=int, default=60, help="pairs for the paired in-loop figure")
    parser.add_argument("--pair-calls", type=int, default=300, help="calls per block in a pair")
    args = parser.parse_args()

    # The sanity check doubles as connecting mcp_nb's session and listing the tools.
    for name in TOOLS:
        outcome = mcp_nb.call(name, {})
        assert outcome.outcome == "result" and outcome.content == "x", outcome

    # Warm-up round, not kept: imports, first-use caches, worker threads, allocator.
    for name in TOOLS:
        for variant in VARIANTS:
            block(variant, name, args.calls // 4)

    per_call: dict[str, dict[str, list[float]]] = {t: {v: [] for v in VARIANTS} for t in TOOLS}
    hops: list[float] = []
    for r in range(args.rounds):
        # Rotate the order each round so no variant always runs first (or right after gc).
        order = VARIANTS[r % len(VARIANTS) :] + VARIANTS[: r % len(VARIANTS)]
        for name in TOOLS if r % 2 == 0 else TOOLS[::-1]:
            for variant in order:
                per_call[name][variant].append(block(variant, name, args.calls))
        hops.append(hop(args.calls))
        print(f"round {r + 1}/{args.rounds} done", flush=True)
    mcp_nb.history().clear()

    results = {}
    for name in TOOLS:
        times = per_call[name]
        med = {v: median(times[v]) for v in VARIANTS}
        entry = {
            "median_us": {v: med[v] * 1e6 for v in VARIANTS},
            "rounds_us": {v: [t * 1e6 for t in times[v]] for v in VARIANTS},
        }
        for v, target in TARGETS.items():
            # Paired per-round ratios show how much the noise moves the figure.
            paired = [a / b for a, b in zip(times[v], times["raw"], strict=False)]
            entry[f"{v}/raw"] = {
                "ratio": med[v] / med["raw"],
                "target": target,
                "pass": med[v] / med["raw"] <= target,
                "per_round_min": min(paired),
                "per_round_max": max(paired),
            }
        entry["sync/hopped"] = med["sync"] / med["hopped"]
        entry["hopped/raw"] = med["hopped"] / med["raw"]
        results[name] = entry

    print()
    print(f"{args.rounds} rounds x {args.calls} calls per variant; median per-call time (us)")
    print(f"{'tool':<7}{'raw':>9}{'sync':>9}{'in-loop':>9}   {'sync/raw':>16}   {'in-loop/raw':>16}")
    for name, e in results.items():
        m = e["median_us"]
        cells = [
            f"{e[f'{v}/raw']['ratio']:.2f} ({e[f'{v}/raw']['per_round_min']:.2f}-{e[f'{v}/raw']['per_round_max']:.2f})"
            for v in TARGETS
        ]
        print(f"{name:<7}{m['raw']:9.1f}{m['sync']:9.1f}{m['in-loop']:9.1f}   {cells[0]:>16}   {cells[1]:>16}")
    for name, e in results.items():
        print(
            f"{name:<7}hopped {e['median_us']['hopped']:.1f} us: hopped/raw {e['hopped/raw']:.2f}, "
            f"sync/hopped {e['sync/hopped']:.3f} (what mcp_nb adds to the sync face beyond the hop)"
        )
    print(f"thread hop alone (empty coroutine via loop.run): {median(hops) * 1e6:.1f} us")
    host = machine()
    idle = host["cpuidle"]
    if idle:
        # What a hop costs depends on how idle CPUs wait; say so next to the figure.
        print("idle CPUs here: " + ", ".join(f"{k} {v}" for k, v in idle.items()))
    print()
    print(f"in-loop/raw, paired: {args.pairs} pairs of {args.pair_calls}-call blocks, median of per-pair ratios")
    for name in TOOLS:
        paired = paired_in_loop(name, args.pairs, args.pair_calls)
        results[name]["in-loop/raw paired"] = {
            **paired,
            "target": TARGETS["in-loop"],
            "pass": paired["ratio"] <= TARGETS["in-loop"],
        }
        lo, hi = paired["ratio_p10_p90"]
        print(
            f"{name:<7}raw {paired['raw_us']:.1f} us  in-loop {paired['in_loop_us']:.1f} us  "
            f"ratio {paired['ratio']:.3f}  (10th-90th percentile of pairs {lo:.2f}-{hi:.2f})"
        )
    print("(ratios are of medians; in brackets the range of the per-round ratios)")
    print()
    for name, e in results.items():
        for key in ("sync/raw", "in-loop/raw paired"):
            r = e[key]
            verdict = "PASS" if r["pass"] else "FAIL"
            print(f"{verdict}  {name:<6} {key:<19} {r['ratio']:.3f}  (target <= {r['target']:.2f})")

    path = write_json(
        "calls.json",
        {
            "benchmark": "calls",
            "machine": host,
            "rounds": args.rounds,
            "calls_per_round": args.calls,
            "tools": results,
            "hop_us": {"median": median(hops) * 1e6, "rounds": [h * 1e6 for h in hops]},
        },
    )
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
