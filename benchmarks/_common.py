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
        "mcp_nb": version("mcp_nb"),
        "pandas": version("pandas"),
        "numpy": version("numpy"),
    }


def median(values):
    return statistics.median(values)


def write_json(name: str, payload: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / name
    path.write_text(json.dumps(payload, indent=2) + "\n")
    return path
