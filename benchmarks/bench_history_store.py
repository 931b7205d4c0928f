"""The two candidate stores for a history file, measured on the same calls: SQLite in WAL mode, and a
folder of parts written atomically (what mcp_nb keeps: records/disk.py; Arrow IPC files since
format 2, Parquet before, the store's kind still named `parquet` here).

For each: the cost of appending (512 calls a write; CPU seconds of the
writing thread per call, and wall time), the calls lost when the writing process is killed
(SIGKILL) while calls arrive at a steady rate, and whether what was written reads back whole,
the time to reopen the file, and `to_frame()` of every call (the same tidy frame, dtypes and
all, as `History.to_frame()`).

The calls are `bench_history.py`'s mix (distinct arguments, content and structured results for
every call). Both stores get the same rows, coded once by a History's store (as the kernel's writer
gets them): the JSON of nested values is made by the same encoder for both. The process killed
records into a `History` with a file (the real writer: WRITE_AT calls or half a second), or, for
SQLite, hands the same rows to a thread that appends them every quarter second.

Usage: python benchmarks/bench_history_store.py [--records 1000000] [--kill-after 3]
"""

from __future__ import annotations

import argparse
import gc
import json
import mmap
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _common import machine, write_json
from bench_history import outcome

from mcp_nb.records import disk, encoding
from mcp_nb.records.frame import Coded, build, fate_of
from mcp_nb.records.history import COLUMNS, History
from mcp_nb.records.redact import scrubber
from mcp_nb.records.store import Store, columns_of

WRITE = 512  # calls a write
SCRUB = scrubber(lambda: ())


# -- the rows, coded once ---------------------------------------------------------------------------


def batch_of(store: Store, rows: list[tuple], first: int) -> encoding.Batch:
    """The rows as the writer encodes them: columns, the names their codes stand for, the fates of timeouts."""
    names, servers, workers, clients = store.vocabularies.lists()
    fates = {seq - first: fate_of(o) for seq, o in store.timeouts.items() if first <= seq < first + len(rows)}
    return encoding.Batch(columns_of(rows), names, servers, workers, clients, first, fates)


def batches(n: int, chunk: int = 100_000):
    """Batches of WRITE calls each, `n` calls in all, made a chunk at a time (never all in memory)."""
    rng = random.Random(0)
    seq = 0
    for start in range(0, n, chunk):
        store = Store()
        rows = [store.add(outcome(i, rng)) for i in range(start, min(n, start + chunk))]
        for at in range(0, len(rows), WRITE):
            part = batch_of(store, rows[at : at + WRITE], at)
            part.first = seq + at
            yield part
        seq += len(rows)


# -- SQLite in WAL mode -----------------------------------------------------------------------------

SQL_COLUMNS = ["session", "seq", "recorded_at", *[c for c in COLUMNS if c not in ("session", "recorded_at")]]


def sqlite_open(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(
        "PRAGMA synchronous=NORMAL"
    )  # durable at each commit against a killed process; a checkpoint's fsync for power loss
    db.execute(f"CREATE TABLE IF NOT EXISTS calls ({', '.join(SQL_COLUMNS)})")
    return db


def sqlite_rows(batch: encoding.Batch) -> list[tuple]:
    """The tidy columns of `batch` as rows: the part's table (same encoding), row by row."""
    table = encoding.table(batch, "s", SCRUB)
    columns = []
    for name in SQL_COLUMNS:
        column = table.column(name)
        if name in ("started_at", "recorded_at"):
            columns.append(column.cast("int64").to_pylist())
        else:
            columns.append(column.cast("string").to_pylist() if str(column.type).startswith("dictionary") else column.to_pylist())
    return list(zip(*columns))


def sqlite_append(db: sqlite3.Connection, batch: encoding.Batch) -> None:
    rows = sqlite_rows(batch)
    db.execute("BEGIN")
    db.executemany(f"INSERT INTO calls VALUES ({', '.join('?' * len(SQL_COLUMNS))})", rows)
    db.execute("COMMIT")


def sqlite_frame(path: Path) -> pd.DataFrame:
    """Every row back as `History.to_frame()` gives it: columns transposed, each JSON column decoded in
    one `json.loads` of its texts joined (the trick the Parquet reader uses too), codes for categories."""
    db = sqlite3.connect(path)
    rows = db.execute(f"SELECT {', '.join(SQL_COLUMNS)} FROM calls ORDER BY rowid").fetchall()
    db.close()
    raw = dict(zip(SQL_COLUMNS, map(list, zip(*rows)))) if rows else {c: [] for c in SQL_COLUMNS}
    del rows

    def codes(values, vocabulary=None):
        categorical = pd.Categorical(values, categories=vocabulary)
        return np.asarray(categorical.codes, dtype=np.int64), list(categorical.categories)

    def loads(texts):
        return _objects(json.loads("[" + ",".join("null" if t is None else t for t in texts) + "]"))

    from mcp_nb.records.outcome import CAUSES, FATES, OUTCOMES, TARGETS, VIAS

    names, c = {}, {}
    for column in ("name", "server", "worker", "client", "session"):
        c[column], names[column] = codes(raw[column])
    for column, vocabulary in (("target", TARGETS), ("outcome", OUTCOMES), ("cause", CAUSES), ("via", VIAS)):
        c[column] = codes(raw[column], list(vocabulary))[0]
    for column, stored, vocabulary in (
        ("server_fate", "fate", FATES),
        ("fate_outcome", "fate_outcome", OUTCOMES),
        ("fate_cause", "fate_cause", CAUSES),
    ):
        c[stored] = codes(raw[column], list(vocabulary))[0]
    for column, stored in (("call_id", "call_id"), ("attempt", "attempt"), ("seq", "seq"), ("deadline_resets", "resets")):
        c[stored] = np.array(raw[column], dtype=np.int64)
    for column, stored in (
        ("backoff_s", "backoff"),
        ("duration_ms", "duration"),
        ("timeout_s", "timeout"),
        ("max_timeout_s", "max_timeout"),
        ("fate_after_ms", "fate_after"),
        ("code", "code"),
    ):
        c[stored] = np.array([np.nan if v is None else v for v in raw[column]], dtype=np.float64)
    c["started_ns"], c["recorded_ns"] = np.array(raw["started_at"], dtype=np.int64), np.array(raw["recorded_at"], dtype=np.int64)
    c["is_error"] = np.array([2 if v is None else int(v) for v in raw["is_error"]], dtype=np.int8)
    for column in ("content", "message", "protocol"):
        c[column] = _objects(raw[column])
    c["arguments"], c["structured"], c["data"], c["retry"] = (
        loads(raw[k]) for k in ("arguments", "structured_content", "data", "retry")
    )
    c["logs"], c["elicitations"], c["samplings"] = (
        _objects([tuple(v) for v in loads(raw[k])]) for k in ("server_logs", "elicitations", "samplings")
    )
    c["progress"] = _objects([tuple(v) for v in loads(raw["progress"])])
    return build(Coded(c, names), COLUMNS)


def _objects(values) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


# -- appending, reopening, reading ------------------------------------------------------------------


def append_all(kind: str, path: Path, n: int) -> dict:
    """Write `n` calls, WRITE a write; the writing's CPU time (this thread's) and wall time, per call."""
    db = sqlite_open(path / "calls.sqlite") if kind == "sqlite" else None
    if kind == "parquet":
        disk.create(path / "calls.mcpnb")
    cpu = wall = 0.0
    merged: list[tuple[int, int, int]] = []
    for batch in batches(n):
        c0, w0 = time.thread_time(), time.perf_counter()
        if db is not None:
            sqlite_append(db, batch)
        else:
            first, last = batch.first, batch.first + len(batch) - 1
            disk.write_part(path / "calls.mcpnb", disk.part_name("s", 0, first, last), encoding.table(batch, "s", SCRUB))
            merged.append((first, last, 0))
            _merge(path / "calls.mcpnb", merged)
        cpu += time.thread_time() - c0
        wall += time.perf_counter() - w0
    if db is not None:
        db.close()
    return {"cpu_us_per_call": cpu / n * 1e6, "wall_us_per_call": wall / n * 1e6}


def _merge(folder: Path, parts: list) -> None:
    """The writer's merging (records/writer.py), over this benchmark's parts."""
    from mcp_nb.records.writer import MERGE

    while len(parts) >= MERGE:
        tail = parts[-MERGE:]
        if any(p[2] != tail[0][2] for p in tail):
            return
        names = [disk.part_name("s", 0, a, b) for a, b, _ in tail]
        disk.merge(folder, names, disk.part_name("s", 0, tail[0][0], tail[-1][1]))
        del parts[-MERGE:]
        parts.append((tail[0][0], tail[-1][1], tail[0][2] + 1))


def reopen(kind: str, path: Path) -> tuple[float, int]:
    t0 = time.perf_counter()
    if kind == "sqlite":
        db = sqlite3.connect(path / "calls.sqlite")
        rows = db.execute("SELECT count(*) FROM calls").fetchone()[0]
        db.close()
    else:
        rows = len(History.open(path / "calls.mcpnb"))
    return time.perf_counter() - t0, rows


def frame(kind: str, path: Path) -> tuple[float, pd.DataFrame]:
    gc.collect()
    t0 = time.perf_counter()
    if kind == "sqlite":
        gc.disable()  # as History.to_frame pauses the cycle collector: a million rows' tuples would be walked again and again
        try:
            got = sqlite_frame(path / "calls.sqlite")
        finally:
            gc.enable()
    else:
        got = History.open(path / "calls.mcpnb").to_frame()
    return time.perf_counter() - t0, got


# -- a writer killed --------------------------------------------------------------------------------

WRITER = r"""
import mmap, random, sys, threading, time, os
sys.path.insert(0, {benchmarks!r})
import bench_history_store as b
from mcp_nb.records.history import History
kind, path, counter = sys.argv[1], sys.argv[2], sys.argv[3]
with open(counter, "r+b") as f:
    seen = mmap.mmap(f.fileno(), 8)
rng = random.Random(0)
history = History()
if kind == "parquet":
    history.keep(path)   # the real writer: WRITE_AT calls or a quarter second
    record = history.record
else:
    from collections import deque
    from mcp_nb.records.store import Store
    db, store, queue, done = b.sqlite_open(path), Store(), deque(), [0]
    def record(o):
        queue.append(store.add(o))
    def writer():   # the same batching for SQLite, from a queue as the real writer takes its calls
        while True:
            time.sleep(0.25)
            rows = [queue.popleft() for _ in range(len(queue))]
            if rows:
                b.sqlite_append(db, b.batch_of(store, rows, done[0]))
                done[0] += len(rows)
    threading.Thread(target=writer, daemon=True).start()
i = 0
while True:   # calls recorded at a steady rate, about 4,000 a second
    for _ in range(40):
        record(b.outcome(i, rng))
        i += 1
    seen[:8] = i.to_bytes(8, "little")
    time.sleep(0.01)
"""


def killed(kind: str, path: Path, seconds: float) -> dict:
    counter = path / "counter"
    counter.write_bytes(b"\0" * 8)
    target = path / ("calls.sqlite" if kind == "sqlite" else "calls.mcpnb")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parent.parent), os.environ.get("PYTHONPATH", "")]),
    }
    script = WRITER.format(benchmarks=str(Path(__file__).resolve().parent))
    process = subprocess.Popen([sys.executable, "-c", script, kind, str(target), str(counter)], env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and counter.read_bytes() == b"\0" * 8:  # started recording (imports take a while)
        time.sleep(0.05)
    time.sleep(seconds)
    with open(counter, "r+b") as f:
        recorded = int.from_bytes(mmap.mmap(f.fileno(), 8)[:8], "little")
    process.send_signal(signal.SIGKILL)
    process.wait()
    try:
        if kind == "sqlite":
            db = sqlite3.connect(target)
            ok = db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            kept = db.execute("SELECT count(*) FROM calls").fetchone()[0]
            db.close()
        else:
            import warnings

            with warnings.catch_warnings(record=True) as said:
                warnings.simplefilter("always")
                kept = len(History.open(target).to_frame(columns=["call_id"]))
            ok = not said
    except Exception as err:  # noqa: BLE001 - what a reader of the file would meet
        ok, kept = f"unreadable: {err}", 0
    return {"recorded_before_kill": recorded, "kept": kept, "lost": max(0, recorded - kept), "reads_whole": ok}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--kill-after", type=float, default=3.0)
    parser.add_argument("--stores", default="parquet,sqlite")
    args = parser.parse_args()
    results = {}
    frames = {}
    for kind in args.stores.split(","):
        work = Path(tempfile.mkdtemp(prefix=f"mcp_nb-{kind}-"))
        try:
            r = results[kind] = append_all(kind, work, args.records)
            r["reopen_s"], rows = reopen(kind, work)
            assert rows == args.records, (kind, rows)
            r["to_frame_s"], frames[kind] = frame(kind, work)
            r["bytes"] = sum(f.stat().st_size for f in work.rglob("*") if f.is_file())
            del frames[kind]
            gc.collect()
            shutil.rmtree(work)
            work.mkdir()
            r["killed"] = killed(kind, work, args.kill_after)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        k = r["killed"]
        print(
            f"{kind:<8} append {r['cpu_us_per_call']:6.2f} us CPU / {r['wall_us_per_call']:6.2f} us wall per call   "
            f"reopen {r['reopen_s'] * 1e3:8.1f} ms   to_frame({args.records:,}) {r['to_frame_s']:6.2f} s   {r['bytes'] / 1e6:7.1f} MB   "
            f"killed: {k['lost']} of {k['recorded_before_kill']} lost, reads whole: {k['reads_whole']}",
            flush=True,
        )
    path = write_json(
        f"history_store_{args.records}.json",
        {"benchmark": "history_store", "machine": machine(), "records": args.records, "stores": results},
    )
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
