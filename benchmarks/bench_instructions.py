"""Instructions per call of mcp_nb, as a ratio to a raw `mcp.Client.call_tool` loop: the same
question as `bench_calls.py`'s in-loop figure, answered without the clock.

On a shared two-vCPU machine a wall-clock ratio of two ~200 µs calls moves by more than the
5 % it is judged on: `bench_calls.py`'s paired figure has its pairs' 10th–90th percentiles
0.85 – 1.23 apart, and its median moves by several points from one run to the next. The
instructions a process executes do not depend on the neighbours. Each variant runs in a
process of its own under valgrind's cachegrind (no cache simulation: it only counts), once
with a few calls and once with many; the difference, divided by the difference in calls, is
what one call executes: start-up, imports and warm-up cancel out. Everything the process
does for a call is counted, the cycle collector and the SDK's server side included.

  raw      `await client.call_tool(name, {})` with a plain `mcp.Client(mcp_nb.server(), cache=None)`
  in-loop  `await engine.prepare("tool", name, {}, 30.0).run()` on mcp_nb's loop (as bench_calls.py)
  file     the same as in-loop, with a history file: every instruction its writer thread executes
           (encoding, writing, merging parts) is counted, and the run ends once every call is written
           (`History.sync()`); the history file issue's target, read against in-loop, is 1.05

The history is cleared every 300 calls, as bench_calls.py's pairs clear it (not with a file: the
calls must reach it). The writer writes on a clock (a batch at most half a second after its
first call) or when WRITE_AT calls wait; valgrind runs the process some tens of times slower, so on
the clock its batches would be that many times smaller than at full speed (where a sweep of a
trivial tool fills a batch of WRITE_AT calls in about a third of a second), and how many parts a run writes would
depend on the machine's load: a first version stretched the clock by a measured slowdown, and the
few-call run of one tool counted more instructions than the many-call run. So the child turns the
clock off: a batch is written at WRITE_AT calls, and the rest at the end (`History.sync()`), and
the difference between the two runs is the cost of a part of WRITE_AT calls, spread over them.
Merges (one every 16 parts) are not in that difference: `bench_history_file.py` counts the
writer's whole CPU time, merges included.

`--deadlines` counts the deadline part alone, the same way: what one call's deadline costs on
its own (`Deadlines.start` and `end`, as `Call._send` uses them; every hundredth one held and
resumed, as a question does, and one in a thousand let fall), without a server or a session.

Needs valgrind (`apt-get install valgrind`); about three minutes on two cores (`--deadlines`: seconds).
Usage: python benchmarks/bench_instructions.py [--few 200] [--many 1200] [--variants raw,in-loop,file] [--deadlines]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _common import machine, write_json
from bench_calls import TARGETS, TOOLS  # importing it registers its two tools, `triv` and `atriv`

TARGET = TARGETS["in-loop"]  # bench_calls.py's in-loop target, read in instructions
VARIANTS = ("raw", "in-loop", "file")
CLEAR_EVERY = 300
FILE_TARGET = 1.05  # the history file issue's: a call with a file costs at most 1.05 times one without
CLOCKS = ("LATENCY_S", "QUIET_S")  # the writer's clock, turned off under valgrind (see above)


def turn_the_writers_clock_off() -> None:
    from importlib import import_module

    for name in ("mcp_nb.records.writer", "mcp_nb.records.keeper"):  # the writer; the keeper it replaced, to measure before
        try:
            module = import_module(name)
        except ImportError:
            continue
        for clock in CLOCKS:
            setattr(module, clock, 1e6)


def child(variant: str, tool: str, calls: int) -> None:
    """Run in the measured process: `calls` calls of `tool`, the way `variant` makes them."""
    import tempfile

    import mcp

    import mcp_nb  # the tools are bench_calls.py's, registered when it was imported above

    engine = mcp_nb.engine()
    if variant == "file":
        turn_the_writers_clock_off()
        folder = Path(tempfile.mkdtemp(prefix="mcp_nb-bench-")) / "calls.mcpnb"
        engine.history.keep(folder)
    assert mcp_nb.call(tool, {}).outcome == "result"  # connects mcp_nb's session, lists the tools

    async def run() -> None:
        async with mcp.Client(mcp_nb.server(), cache=None) as client:
            await client.call_tool(tool, {})  # the SDK's own check of a result imports jsonschema: once, here
            for i in range(calls):
                if variant == "raw":
                    await client.call_tool(tool, {})
                else:
                    await engine.prepare("tool", tool, {}, 30.0).run()
                if i % CLEAR_EVERY == CLEAR_EVERY - 1 and variant != "file":
                    engine.history.clear()

    engine.loop.run(run())
    if variant == "file":
        assert engine.history.sync(600), "the history file fell behind"
        assert len(mcp_nb.History.open(folder)) == calls + 1


def deadlines(calls: int) -> None:
    """Run in the measured process: `calls` deadlines set and ended on mcp_nb's deadline heap."""
    import asyncio

    from mcp_nb.calling.deadline import Deadlines

    async def run() -> None:
        heap = Deadlines(asyncio.get_running_loop())
        task = asyncio.ensure_future(asyncio.sleep(3600))
        for i in range(calls):
            deadline = heap.start(0.0 if i % 1000 == 999 else 30.0, task)  # nearly every call ends long before
            if i % 100 == 50:
                heap.resume(deadline, heap.hold(deadline) or 0.0)
            heap.end(deadline)
        task.cancel()

    asyncio.run(run())


def counted(variant: str, tool: str, calls: int) -> int:
    """The instructions a whole process making `calls` calls executes."""
    env = dict(os.environ, PYTHONHASHSEED="0")  # the same dict layouts in every run
    command = [
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=no",
        "--cachegrind-out-file=/dev/null",
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        variant,
        tool,
        str(calls),
    ]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"{variant} {tool} x{calls} failed under valgrind:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--few", type=int, default=200, help="calls in the short run")
    parser.add_argument("--many", type=int, default=1200, help="calls in the long run")
    parser.add_argument(
        "--deadlines", action="store_true", help="count the deadline part alone (Deadlines.start and end per call)"
    )
    parser.add_argument("--variants", default=",".join(VARIANTS), help="which of raw, in-loop, file")
    parser.add_argument("--child", nargs=3, metavar=("VARIANT", "TOOL", "CALLS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        variant, tool, calls = args.child
        if variant == "deadlines":
            deadlines(int(calls))
        else:
            child(variant, tool, int(calls))
        return
    variants = [v for v in VARIANTS if v in args.variants.split(",")]
    try:
        subprocess.run(["valgrind", "--version"], capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        raise SystemExit("bench_instructions.py needs valgrind (apt-get install valgrind)") from None
    if args.deadlines:
        few, many = args.few * 10, args.many * 10  # a deadline costs far less than a call: more of them
        per = (counted("deadlines", "-", many) - counted("deadlines", "-", few)) / (many - few)
        print(f"instructions per deadline (start and end; whole process, ({many} - {few}) deadlines apart): {per:,.0f}")
        path = write_json("instructions_deadlines.json", {"machine": machine(), "few": few, "many": many, "per_deadline": per})
        print(f"\nwrote {path}")
        return

    runs = [(v, t, n) for t in TOOLS for v in variants for n in (args.few, args.many)]
    with ThreadPoolExecutor(max_workers=max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 2)) as pool:
        totals = dict(zip(runs, pool.map(lambda run: counted(*run), runs)))

    results = {}
    print(f"instructions per call (whole process, ({args.many} - {args.few}) calls apart)")
    print(f"{'tool':8s} " + " ".join(f"{v:>12s}" for v in variants) + f" {'in-loop/raw':>12s} {'file/in-loop':>12s}")
    for tool in TOOLS:
        per = {v: (totals[(v, tool, args.many)] - totals[(v, tool, args.few)]) / (args.many - args.few) for v in variants}
        r = results[tool] = {"per_call": per}
        if "raw" in per and "in-loop" in per:
            r["ratio"] = per["in-loop"] / per["raw"]
            r["target"], r["pass"] = TARGET, r["ratio"] <= TARGET
        if "file" in per and "in-loop" in per:
            r["file_ratio"] = per["file"] / per["in-loop"]
            r["file_target"], r["file_pass"] = FILE_TARGET, r["file_ratio"] <= FILE_TARGET
        shown = [f"{r[k]:12.3f}" if k in r else f"{'':12s}" for k in ("ratio", "file_ratio")]
        print(f"{tool:8s} " + " ".join(f"{per[v]:12,.0f}" for v in variants) + " " + " ".join(shown))
    for tool in TOOLS:
        r = results[tool]
        if "ratio" in r:
            print(f"{'PASS' if r['pass'] else 'FAIL'}  {tool:6s} in-loop/raw instructions {r['ratio']:.3f}  (target <= {TARGET})")
        if "file_ratio" in r:
            print(
                f"{'PASS' if r['file_pass'] else 'FAIL'}  {tool:6s} with a history file / without, instructions {r['file_ratio']:.3f}  (target <= {FILE_TARGET})"
            )
    path = write_json("instructions.json", {"machine": machine(), "few": args.few, "many": args.many, "results": results})
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
