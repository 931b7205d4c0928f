"""What a history file costs a call: a trivial in-kernel call with the file, as a ratio to one without.

Paired, as `bench_calls.py` pairs raw and mcp_nb: blocks of calls with and without a history
file alternate (the order swapping every pair), each block from an empty history, and the
figure is the median of the per-pair ratios, so a change in the machine's load lands on both
halves of a pair alike. A block with the file counts, inside its time, the wait until the
writer has written every call of the block (`History.sync()`): the last write of a block is
paid by the block, which a real kernel would not pay on its calls at all. So the ratio errs
against the file.

Two ratios per pair: of wall time, and of the CPU time the whole process spent (every thread:
the writer's encoding and writing included, wherever it ran). On a machine shared with other
work, the wall time of a block swings by tens of percent from one block to the next; the CPU
time the process itself spent swings much less, and it counts everything the file costs.

  in-loop  `await engine.prepare("tool", name, {}, 30.0).run()` on mcp_nb's loop (as sweeps call)
  sync     `mcp_nb.call(name, {})` from this thread (as a cell calls)

Usage: python benchmarks/bench_history_file.py [--pairs 30] [--calls 2000]
"""

from __future__ import annotations

import argparse
import gc
import shutil
import tempfile
import time
from pathlib import Path

from _common import machine, median, p10_p90, write_json

import mcp_nb

TARGET = 1.05  # the issue's: a trivial call with a history file costs at most 1.05 times one without


@mcp_nb.tool()
def triv() -> str:
    return "x"


@mcp_nb.tool()
async def atriv() -> str:
    return "x"


TOOLS = ("triv", "atriv")


def in_loop(name: str, n: int, synced: bool) -> tuple[float, float]:
    eng = mcp_nb.engine()

    async def loop() -> tuple[float, float]:
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(n):
            await eng.prepare("tool", name, {}, 30.0).run()
        if synced:
            assert eng.history.sync(60), "the history file fell behind"
        return (time.perf_counter() - t0) / n, (time.process_time() - c0) / n

    return eng.loop.run(loop())


def sync_face(name: str, n: int, synced: bool) -> tuple[float, float]:
    call, history = mcp_nb.call, mcp_nb.history()
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(n):
        call(name, {})
    if synced:
        assert history.sync(60), "the history file fell behind"
    return (time.perf_counter() - t0) / n, (time.process_time() - c0) / n


FACES = {"in-loop": in_loop, "sync": sync_face}


def writer_share(name: str, n: int, folder: Path) -> dict:
    """The writer thread's own CPU time per call (`thread_time` inside the writer), against the whole
    process's CPU per call without a file: a bound on the file's cost that the machine's load
    does not move much, as both are CPU time this process spent."""
    history = mcp_nb.history()
    history.keep(None)
    history.clear()
    without = in_loop(name, n, False)[1]
    history.clear()  # before the file is set: it would write the calls above first
    history.keep(folder)
    writer = history._writer  # the benchmark reads the writer's own accounting (Writer.describe)
    spent = writer.describe()["cpu_s"]
    in_loop(name, n, True)
    per_call = (writer.describe()["cpu_s"] - spent) / n
    history.keep(None)
    return {"writer_cpu_us": per_call * 1e6, "call_cpu_us_without": without * 1e6, "share": per_call / without}


def block(face: str, name: str, n: int, folder: Path | None) -> tuple[float, float]:
    """One block of `n` calls, from an empty history, with a history file at `folder` or none."""
    history = mcp_nb.history()
    # No file while the history is emptied: set on a history that still held the calls of the
    # block before, the writer would write those first (every call of a history the file lacks),
    # and the block with the file would pay for writing two blocks.
    history.keep(None)  # the previous writer's thread ends
    history.clear()
    history.keep(folder)
    gc.collect()
    return FACES[face](name, n, folder is not None)


def pairs(face: str, name: str, count: int, n: int, folder: Path) -> dict:
    without, with_file, ratios, cpu_ratios, cpu_without, cpu_with = [], [], [], [], [], []
    block(face, name, n // 4, folder)  # warm-up pair, not kept
    block(face, name, n // 4, None)
    for i in range(count):
        if i % 2:
            a, b = block(face, name, n, None), block(face, name, n, folder)
        else:
            b, a = block(face, name, n, folder), block(face, name, n, None)
        without.append(a[0])
        with_file.append(b[0])
        ratios.append(b[0] / a[0])
        cpu_without.append(a[1])
        cpu_with.append(b[1])
        cpu_ratios.append(b[1] / a[1])
    mcp_nb.history().keep(None)
    return {
        "without_us": median(without) * 1e6,
        "with_file_us": median(with_file) * 1e6,
        "ratio": median(ratios),
        "ratio_p10_p90": p10_p90(ratios),
        "cpu_without_us": median(cpu_without) * 1e6,
        "cpu_with_file_us": median(cpu_with) * 1e6,
        "cpu_ratio": median(cpu_ratios),
        "cpu_ratio_p10_p90": p10_p90(cpu_ratios),
        "pairs": count,
        "calls_per_block": n,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=30)
    parser.add_argument("--calls", type=int, default=2000, help="calls per block (a few writes of the writer each)")
    parser.add_argument("--faces", default="in-loop,sync")
    args = parser.parse_args()

    for name in TOOLS:
        outcome = mcp_nb.call(name, {})
        assert outcome.outcome == "result" and outcome.content == "x", outcome
    workdir = Path(tempfile.mkdtemp(prefix="mcp_nb-bench-"))
    folder = workdir / "calls.mcpnb"
    results: dict = {}
    try:
        for face in [f for f in args.faces.split(",") if f in FACES]:  # --faces none: the writer's share alone
            for name in TOOLS:
                r = results.setdefault(face, {})[name] = pairs(face, name, args.pairs, args.calls, folder)
                lo, hi = r["ratio_p10_p90"]
                clo, chi = r["cpu_ratio_p10_p90"]
                print(
                    f"{face:<8}{name:<6} wall: without {r['without_us']:7.1f} us, with a history file {r['with_file_us']:7.1f} us, "
                    f"ratio {r['ratio']:.3f} ({lo:.3f}-{hi:.3f});  process CPU: {r['cpu_without_us']:7.1f} / {r['cpu_with_file_us']:7.1f} us, "
                    f"ratio {r['cpu_ratio']:.3f} ({clo:.3f}-{chi:.3f})",
                    flush=True,
                )
        for name in TOOLS:
            w = results.setdefault("writer", {})[name] = writer_share(name, 20 * args.calls, folder)
            print(
                f"writer  {name:<6} the writer thread's CPU {w['writer_cpu_us']:.2f} us per call, against {w['call_cpu_us_without']:.1f} us "
                f"of process CPU per call without a file: {100 * w['share']:.1f} %",
                flush=True,
            )
        written = len(mcp_nb.History.open(folder))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"\n{written:,} calls written to the history file in all")
    print(
        f"median of per-pair ratios (10th-90th percentile of pairs), {args.pairs} pairs of {args.calls}-call blocks; "
        "a block with the file includes its last write"
    )
    for face, by_tool in results.items():
        if face == "writer":
            continue
        for name, r in by_tool.items():
            r["target"], r["pass"] = TARGET, r["ratio"] <= TARGET
            print(
                f"{'PASS' if r['pass'] else 'FAIL'}  {face:<8}{name:<6} wall {r['ratio']:.3f}, process CPU {r['cpu_ratio']:.3f}  (target <= {TARGET:.2f})"
            )
    path = write_json(
        "history_file.json", {"benchmark": "history_file", "machine": machine(), "faces": results, "written": written}
    )
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
