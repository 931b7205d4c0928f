"""History at scale: `to_frame()` and `summary()` on a million calls, recording cost, memory per call.

The records are `Outcome` objects built directly (no server), in a realistic mix:
mostly successful tool calls with small argument dicts and short content, a few
tool errors, protocol errors and timeouts with their messages. Every record gets
objects of its own (arguments, content, structured content, timestamp), as a real
call would, so the memory figure counts what the History really keeps alive.

Usage: python benchmarks/bench_history.py [--records 1000000] [--memory-records 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import random
import time
import tracemalloc

from mcp_nb.records.history import History
from mcp_nb.records.outcome import Outcome
from _common import machine, median, write_json

TO_FRAME_TARGET_S = 1.0
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
        return Outcome(i, "tool", name, arguments, "result", "ok", text, {"result": text}, False,
                       None, None, None, started, duration, 30.0, None)  # fmt: skip
    if u < 0.97:
        cause = ("raised", "crash", "invalid_arguments")[i % 3]
        text = f"Error executing tool {name}: bad input {i}"
        return Outcome(i, "tool", name, arguments, "tool_error", cause, text, None, True,
                       None, None, None, started, duration, 30.0, None)  # fmt: skip
    if u < 0.99:
        return Outcome(i, "tool", name, arguments, "protocol_error", "mcp_error", None, None, None,
                       -32602, f"Invalid params for call {i}", None, started, duration, 30.0, None)  # fmt: skip
    return Outcome(i, "tool", name, arguments, "timeout", "deadline", None, None, None,
                   -32001, "Timed out after 30s waiting for 'tools/call'", None, started, 30000.0, 30.0, None)  # fmt: skip


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--memory-records", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

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
    print(f"{'PASS' if passed else 'FAIL'}  to_frame() on {args.records:,} records: best {best:.3f} s (target <= {TO_FRAME_TARGET_S:.1f} s)")

    path = write_json(
        "history.json",
        {
            "benchmark": "history",
            "machine": machine(),
            "records": args.records,
            "outcome_mix": mix,
            "record_us_per_record": record_s / args.records * 1e6,
            "to_frame_s": {"best": best, "median": median(to_frame), "runs": to_frame,
                           "target": TO_FRAME_TARGET_S, "pass": passed},  # fmt: skip
            "summary_s": {"best": min(summary), "median": median(summary), "runs": summary},
            "memory": {"records": args.memory_records, "bytes_per_record": per_record,
                       "columns_bytes_per_record": columns_only},  # fmt: skip
        },
    )
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
