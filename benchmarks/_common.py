"""Helpers shared by the benchmark scripts: the machine description and the JSON file."""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
from importlib import metadata
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"  # git-ignored


def machine() -> dict:
    """What the figures were measured on; ratios travel between machines, absolute times do not."""

    def version(dist: str) -> str | None:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return None

    return {
        "cpus": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "mcp": version("mcp"),
        "mcp_nb": version("mcp-notebook"),
        "pandas": version("pandas"),
        "numpy": version("numpy"),
        "cpuidle": cpuidle(),
    }


def cpuidle() -> dict | None:
    """How this machine's idle CPUs wait, read from sysfs on Linux (None elsewhere).

    It decides what a thread hop costs: in a virtual machine whose idle vCPUs halt at
    once (`guest_halt_poll_ns` 0), waking a sleeping thread is a trip through the
    hypervisor, and the sync face's hop costs nearly three times what it does when the
    idle vCPU polls for a while first (see docs/performance.md).
    """
    base = Path("/sys/devices/system/cpu/cpuidle")
    if not base.is_dir():
        return None

    def read(path: Path) -> str | None:
        try:
            return path.read_text().strip()
        except OSError:
            return None

    info = {
        "driver": read(base / "current_driver"),
        "governor": read(base / "current_governor_ro") or read(base / "current_governor"),
    }
    poll = read(Path("/sys/module/haltpoll/parameters/guest_halt_poll_ns"))
    if poll is not None:
        info["guest_halt_poll_ns"] = int(poll)
    return info


def median(values):
    return statistics.median(values)


async def alternate(raw, ours, pairs: int, reset) -> tuple[list[float], list[float], list[float]]:
    """Time `raw` and `ours` (coroutine functions, each returning its seconds per call) in
    `pairs` pairs, the order swapping every pair so a change in the machine's load lands on
    both alike; `reset()` before each pair. Returns (raw times, our times, ratios ours/raw)."""
    raws, mine, ratios = [], [], []
    for i in range(pairs):
        reset()
        if i % 2:
            a, b = await raw(), await ours()
        else:
            b, a = await ours(), await raw()
        raws.append(a)
        mine.append(b)
        ratios.append(b / a)
    return raws, mine, ratios


def p10_p90(values) -> tuple[float, float]:
    ordered = sorted(values)
    return ordered[len(ordered) // 10], ordered[-(len(ordered) // 10) - 1]


def write_json(name: str, payload: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / name
    path.write_text(json.dumps(payload, indent=2) + "\n")
    return path
