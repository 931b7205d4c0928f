"""History at scale: `to_frame()` and `summary()` on a million calls, recording cost, memory per call.

The records are `Outcome` objects built directly (no server), in a realistic mix:
mostly successful tool calls with small argument dicts and short content, a few
tool errors, protocol errors and timeouts with their messages. Every record gets
objects of its own (arguments, content, structured content, timestamp), as a real
call would, so the memory figure counts what the History really keeps alive.

With `--file`, the history file's targets instead (issue 26): ten million calls recorded by a
history with a file (the default window of 100,000 calls in memory) in one process, whose peak
resident memory must stay within 2 GB, then `History.open(path).to_frame()` of all of them in a
fresh process, within 10 s.

Usage: python benchmarks/bench_history.py [--records 1000000] [--memory-records 100000] [--repeat 3]
       python benchmarks/bench_history.py --file [--records 10000000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from _common import machine, median, write_json

from mcp_nb.records.history import History
from mcp_nb.records.outcome import Outcome

TO_FRAME_TARGET_S = 1.0
FILE_RSS_TARGET_GB = 2.0  # ten million calls recorded with a history file, resident in the kernel
FILE_FRAME_TARGET_S = 10.0  # to_frame() of all ten million read back from the file
NAMES = ("add", "search_books", "get_weather", "lookup_user", "summarize", "translate", "fetch_page", "list_files")
T0 = 1_750_000_000.0  # a fixed epoch, so runs build identical records


def outcome(i: int, rng: random.Random) -> Outcome:
    """Call number `i`: 94% result/ok, 3% tool_error, 2% protocol_error, 1% timeout."""
    name = NAMES[i % len(NAMES)]
    arguments = {"a": i, "b": rng.randrange(100)}  # a fresh dict per call, as `call()` copies them
    started = T0 + i * 0.01
    duration = rng.uniform(0.2, 5.0)
    u = rng.random()
    if u < 0.94:
        text = str(i + arguments["b"])
        return Outcome(
            i,
            "tool",
            name,
            arguments,
            "result",
            "ok",
            text,
            {"result": text},
            False,
            None,
            None,
            None,
            started,
            duration,
            30.0,
            None,
        )
    if u < 0.97:
        cause = ("raised", "crash", "invalid_arguments")[i % 3]
        text = f"Error executing tool {name}: bad input {i}"
        return Outcome(
            i, "tool", name, arguments, "tool_error", cause, text, None, True, None, None, None, started, duration, 30.0, None
        )
    if u < 0.99:
        return Outcome(
            i,
            "tool",
            name,
            arguments,
            "protocol_error",
            "mcp_error",
            None,
            None,
            None,
            -32602,
            f"Invalid params for call {i}",
            None,
            started,
            duration,
            30.0,
            None,
        )
    return Outcome(
        i,
        "tool",
        name,
        arguments,
        "timeout",
        "deadline",
        None,
        None,
        None,
        -32001,
        "Timed out after 30s waiting for 'tools/call'",
        None,
        started,
        30000.0,
        30.0,
        None,
    )


def fill(history: History, n: int, chunk: int = 100_000) -> float:
    """Record `n` outcomes; returns the seconds spent in `record()` alone.

    Outcomes are built a chunk at a time, outside the timed part, so that building
    them is not counted and a million of them never sit in memory at once.
    """
    rng = random.Random(0)
    spent = 0.0
    for start in range(0, n, chunk):
        batch = [outcome(i, rng) for i in range(start, min(n, start + chunk))]
        record = history.record
        t0 = time.perf_counter()
        for o in batch:
            record(o)
        spent += time.perf_counter() - t0
    return spent


def timed(fn, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        gc.collect()  # each repetition starts without the previous one's garbage
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def retained_bytes(n: int) -> tuple[float, float]:
    """Bytes per record a History keeps alive: with fresh per-call objects, and its columns alone."""
    rng = random.Random(1)
    # Outcomes of a real call are built while recording and dropped after; do the same here.
    tracemalloc.start()
    history = History()
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(n):
        history.record(outcome(i, rng))
    gc.collect()
    full = tracemalloc.get_traced_memory()[0] - before

    # Same count, one shared Outcome: what the columns themselves cost (no per-call objects).
    # A result, so no row lands in the timeouts dict.
    shared = outcome(0, random.Random(0))
    assert shared.outcome == "result"
    columns = History()
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(n):
        columns.record(shared)
    gc.collect()
    own = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return full / n, own / n


def peak_rss_gb() -> float:
    """The process's peak resident memory (VmHWM), in GB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024 / 1e9
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9


def record_to_file(path: str, n: int) -> dict:
    """What a kernel with a history file does: record `n` calls; peak memory, and how long."""
    history = History()
    history.keep(path)
    t0, c0 = time.perf_counter(), time.process_time()
    fill(history, n, chunk=20_000)
    recorded_s = time.perf_counter() - t0
    assert history.sync(600), "the history file fell behind"
    written_s, cpu_s = time.perf_counter() - t0, time.process_time() - c0
    in_memory = history.in_memory
    history.close()
    return {
        "records": n,
        "recorded_s": recorded_s,
        "written_s": written_s,
        "cpu_s": cpu_s,
        "peak_rss_gb": peak_rss_gb(),
        "rows_in_memory": in_memory,
    }


def frame_from_file(path: str, repeat: int) -> dict:
    """`to_frame()` of every call of the file, in a fresh process (as a new kernel reopens it)."""
    times, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        history = History.open(path)
        frame = history.to_frame()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        rows = len(frame)
        mix = frame["outcome"].value_counts().to_dict()
        del frame, history
        gc.collect()
    return {
        "to_frame_s": times,
        "to_frame_cpu_s": cpu,
        "rows": rows,
        "outcome_mix": {str(k): int(v) for k, v in mix.items()},
        "peak_rss_gb": peak_rss_gb(),
    }


def file_targets(n: int, repeat: int) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="mcp_nb-bench-"))
    path = str(workdir / "calls.mcpnb")
    here = str(Path(__file__).resolve().parent)

    def child(call: str) -> dict:
        code = f"import sys, json; sys.path.insert(0, {here!r}); import bench_history as b; print(json.dumps({call}))"
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        return json.loads(done.stdout.strip().splitlines()[-1])

    try:
        recorded = child(f"b.record_to_file({path!r}, {n})")
        size = sum(f.stat().st_size for f in Path(path).iterdir())
        files = len(list(Path(path).glob("*.arrow")))
        read = child(f"b.frame_from_file({path!r}, {repeat})")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    best = min(read["to_frame_s"])
    rss_ok, frame_ok = recorded["peak_rss_gb"] <= FILE_RSS_TARGET_GB, best <= FILE_FRAME_TARGET_S
    print(
        f"{n:,} calls recorded with a history file in {recorded['recorded_s']:.1f} s (written by {recorded['written_s']:.1f} s, "
        f"{recorded['cpu_s']:.1f} s of the process's CPU); "
        f"{recorded['rows_in_memory']:,} kept in memory; {files} parts, {size / 1e6:.0f} MB"
    )
    print(f"peak resident memory while recording: {recorded['peak_rss_gb']:.2f} GB")
    print(
        f"History.open(path).to_frame() of {read['rows']:,} calls: {', '.join(f'{t:.2f}' for t in read['to_frame_s'])} s "
        f"(CPU {', '.join(f'{t:.2f}' for t in read['to_frame_cpu_s'])} s) "
        f"(peak resident memory of that process {read['peak_rss_gb']:.2f} GB)"
    )
    print()
    print(
        f"{'PASS' if rss_ok else 'FAIL'}  {n:,} calls recorded with a history file: peak {recorded['peak_rss_gb']:.2f} GB (target <= {FILE_RSS_TARGET_GB:.0f} GB)"
    )
    print(
        f"{'PASS' if frame_ok else 'FAIL'}  to_frame() of {n:,} calls from the file: best {best:.2f} s (target <= {FILE_FRAME_TARGET_S:.0f} s)"
    )
    path_json = write_json(
        "history_file_10m.json" if n >= 10_000_000 else f"history_file_{n}.json",
        {
            "benchmark": "history file",
            "machine": machine(),
            "records": n,
            "recording": recorded,
            "reading": read,
            "parts": files,
            "bytes": size,
            "targets": {"peak_rss_gb": FILE_RSS_TARGET_GB, "to_frame_s": FILE_FRAME_TARGET_S},
            "pass": {"peak_rss": rss_ok, "to_frame": frame_ok},
        },
    )
    print(f"\nwrote {path_json}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=None, help="1,000,000 (10,000,000 with --file)")
    parser.add_argument("--memory-records", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--file",
        action="store_true",
        help="the history file's targets: memory at ten million calls, and to_frame() from the file",
    )
    args = parser.parse_args()
    if args.file:
        file_targets(args.records or 10_000_000, args.repeat)
        return
    args.records = args.records or 1_000_000

    history = History()
    record_s = fill(history, args.records)
    assert len(history) == args.records
    frame = history.to_frame()  # once untimed, to check it and to warm pandas' first-use paths
    mix = frame["outcome"].value_counts().to_dict()
    del frame

    to_frame = timed(history.to_frame, args.repeat)
    summary = timed(history.summary, args.repeat)
    per_record, columns_only = retained_bytes(args.memory_records)

    best = min(to_frame)
    passed = best <= TO_FRAME_TARGET_S
    print(f"{args.records:,} records; outcome mix: {', '.join(f'{k} {v:,}' for k, v in mix.items())}")
    print(f"record()        {record_s / args.records * 1e6:8.2f} us per record ({record_s:.2f} s in all)")
    print(f"to_frame()      best {best:6.3f} s   median {median(to_frame):6.3f} s   (of {args.repeat})")
    print(f"summary()       best {min(summary):6.3f} s   median {median(summary):6.3f} s   (includes its to_frame)")
    print(f"memory          {per_record:8.0f} bytes per record retained ({args.memory_records:,} records, tracemalloc)")
    print(f"  of which      {columns_only:8.0f} bytes are the History's own columns (the rest: arguments, content...)")
    print()
    print(
        f"{'PASS' if passed else 'FAIL'}  to_frame() on {args.records:,} records: best {best:.3f} s (target <= {TO_FRAME_TARGET_S:.1f} s)"
    )

    path = write_json(
        "history.json",
        {
            "benchmark": "history",
            "machine": machine(),
            "records": args.records,
            "outcome_mix": mix,
            "record_us_per_record": record_s / args.records * 1e6,
            "to_frame_s": {
                "best": best,
                "median": median(to_frame),
                "runs": to_frame,
                "target": TO_FRAME_TARGET_S,
                "pass": passed,
            },
            "summary_s": {"best": min(summary), "median": median(summary), "runs": summary},
            "memory": {"records": args.memory_records, "bytes_per_record": per_record, "columns_bytes_per_record": columns_only},
        },
    )
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
