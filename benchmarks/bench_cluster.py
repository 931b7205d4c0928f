"""Sweeps on a dask cluster: what two worker processes buy a CPU-bound tool, and what a call costs.

1. Speed-up: 400 calls of a pure-Python `def` tool doing about 20 ms of work, through
   `mcp_nb.sweep` in the kernel at concurrency 2, and on a LocalCluster of 2 worker
   processes (1 thread each) at concurrency 1 per partition, so 2 calls are in flight in
   both (target: the cluster at least 1.6 times faster). In the kernel the SDK's worker
   threads share one GIL; on the cluster each worker process has its own.
2. Overhead: a trivial tool over `--calls` argument sets, on the cluster at several
   partition sizes against the kernel's own sweep; the figure is the time per call.

The cluster is started before anything is timed, and one sweep warms the workers (their
engines are built once per toolbox). Kernel and cluster runs alternate, and the load
average is printed: on a shared 2-core machine, another job's load takes the second core
the cluster needs.

Usage: python benchmarks/bench_cluster.py [--work-ms 20] [--calls 400] [--trivial-calls 1000]
                                          [--sizes 1,10,100,500] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from _common import machine, write_json

import mcp_nb

TARGET = 1.6


def spin(rounds: int) -> int:
    total = 0
    for k in range(rounds):
        total = (total + k * k) % 1_000_003
    return total


def spin_ms(rounds: int, times: int = 5) -> float:
    """The median time of `spin(rounds)`, in ms."""
    took = []
    for _ in range(times):
        started = time.perf_counter()
        spin(rounds)
        took.append((time.perf_counter() - started) * 1000)
    return statistics.median(took)


def calibrate(work_ms: float) -> int:
    rounds = 10_000
    while True:
        started = time.perf_counter()
        spin(rounds)
        took = (time.perf_counter() - started) * 1000
        if took > 5:
            return max(1, int(rounds * work_ms / took))
        rounds *= 4


def timed(name: str, grid, repeat: int, **options) -> list[float]:
    times = []
    for _ in range(repeat):
        mcp_nb.history().clear()
        started = time.perf_counter()
        frame = mcp_nb.sweep(name, grid, progress=False, **options)
        times.append(time.perf_counter() - started)
        assert (frame["outcome"] == "result").all() and len(frame) == len(grid[next(iter(grid))]), frame["cause"].value_counts()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work-ms", type=float, default=20.0)
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--trivial-calls", type=int, default=1000)
    parser.add_argument("--sizes", default="1,10,100,500")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from distributed import Client, LocalCluster

    rounds = calibrate(args.work_ms)

    @mcp_nb.tool(read_only=True)
    def work(i: int) -> int:
        """About `--work-ms` of pure-Python arithmetic."""
        return spin(rounds) + i

    @mcp_nb.tool(read_only=True)
    def trivial(i: int) -> int:
        return i

    load_before = os.getloadavg()
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None)
    client = Client(cluster, set_as_default=False)
    try:
        client.wait_for_workers(2)
        started = time.perf_counter()
        mcp_nb.sweep("work", {"i": list(range(4))}, cluster=client, progress=False)  # builds the workers' engines
        cold = time.perf_counter() - started

        grid = {"i": list(range(args.calls))}
        # One call on a worker, timed alone: the work is the same there.
        per_call_worker = client.submit(spin_ms, rounds, pure=False).result()
        per_call_kernel = spin_ms(rounds)
        # Alternated, so that the load of a shared machine falls on both alike.
        kernel, remote, shares, kernel_cpu = [], [], [], []
        for _ in range(args.repeat):
            kernel += timed("work", grid, 1, concurrency=2)
            before, own = client.run(time.process_time), time.process_time()
            remote += timed("work", grid, 1, concurrency=1, cluster=client)
            after, own = client.run(time.process_time), time.process_time() - own
            # How much of two cores the workers got: on a shared machine, what the other jobs left.
            shares.append(sum(after[w] - before[w] for w in after if w in before) / (2 * remote[-1]))
            kernel_cpu.append(own)
        speedup = statistics.median(kernel) / statistics.median(remote)
        pairs = [k / r for k, r in zip(kernel, remote)]

        trivial_grid = {"i": list(range(args.trivial_calls))}
        local_trivial = timed("trivial", trivial_grid, args.repeat, concurrency=8)
        sizes = [int(s) for s in args.sizes.split(",")]
        per_size = {
            size: timed("trivial", trivial_grid, args.repeat, concurrency=8, cluster=client, partition_size=size)
            for size in sizes
        }
    finally:
        client.close()
        cluster.close()
    load_after = os.getloadavg()

    print(
        f"load average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
        f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f} (2 cores)"
    )
    print(f"one call's work: {per_call_kernel:.1f} ms in the kernel, {per_call_worker:.1f} ms on a worker")
    print(f"first cluster sweep (4 calls, engines built): {cold:.2f} s")
    print(f"{args.calls} calls of the CPU-bound tool, median of {args.repeat}:")
    print(f"  kernel, concurrency 2              {statistics.median(kernel):7.2f} s  {kernel}")
    print(f"  2 workers, concurrency 1 each      {statistics.median(remote):7.2f} s  {remote}")
    print(f"  speed-up                           {speedup:7.2f}x (ideal 2x; per pair {', '.join(f'{p:.2f}' for p in pairs)})")
    print(f"  CPU the workers got, of 2 cores    {', '.join(f'{x:.0%}' for x in shares)}")
    print(f"  CPU the kernel used (scheduler, merging) {', '.join(f'{x:.2f} s' for x in kernel_cpu)}")
    print(f"{'PASS' if speedup >= TARGET else 'FAIL'}  speed-up >= {TARGET:g}")
    local_ms = statistics.median(local_trivial) / args.trivial_calls * 1000
    print(f"{args.trivial_calls} calls of a trivial tool, time per call (median of {args.repeat}):")
    print(f"  kernel sweep, concurrency 8        {local_ms:7.3f} ms")
    rows = {}
    for size, times in per_size.items():
        ms = statistics.median(times) / args.trivial_calls * 1000
        rows[size] = ms
        partitions = -(-args.trivial_calls // size)
        print(
            f"  cluster, partitions of {size:<5} ({partitions:>4} partitions) {ms:7.3f} ms   ({ms / local_ms:5.1f}x the kernel's)"
        )
    path = write_json(
        "cluster.json",
        {
            "benchmark": "cluster",
            "machine": machine(),
            "load_before": load_before,
            "load_after": load_after,
            "work_ms_kernel": per_call_kernel,
            "work_ms_worker": per_call_worker,
            "calls": args.calls,
            "kernel_s": kernel,
            "cluster_s": remote,
            "speedup": speedup,
            "pairs": pairs,
            "worker_cpu_share": shares,
            "kernel_cpu_s": kernel_cpu,
            "target": TARGET,
            "pass": speedup >= TARGET,
            "cold_first_sweep_s": cold,
            "trivial_calls": args.trivial_calls,
            "trivial_kernel_ms_per_call": local_ms,
            "trivial_cluster_ms_per_call": rows,
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
