"""Cold start: the first minute of a notebook, timed in fresh kernels started with jupyter_client.

A notebook's first cells are `%load_ext mcp_nb`, a `%%mcp_tool` cell and a first call.
Everything those cells import, build or connect for the first time is paid there, once
per kernel, and the first outcome card shows it in its duration. Targets (issue 9):

  first call                                        <= 50 ms
  %load_ext + first %%mcp_tool cell + first call    <= 1.0 s

Each cell's time is the kernel's own: from its `busy` status message to its `idle` one
(both stamped by the kernel), so the ZMQ round trip to this process is not counted. Two
ways of sending the cells, each in its own fresh kernels:

  one by one  each cell is sent when the previous one has finished (a user running cells)
  run all     every cell is queued at once, as JupyterLab's Run All does: nothing
              happens between cells, so work started in the background at load
              competes with the cells that follow

For reference, the same steps are timed with the bare SDK in fresh kernels too (import
`MCPServer`, register the tool with its decorator, open a `Client` and call): what any
notebook that uses the SDK directly pays, with no mcp_nb code at all. Its first cell
(importing the SDK and creating a server) is the floor under mcp_nb's `%load_ext`.

The figure is the median over `--kernels` fresh kernels per way (default 5), the kernels
of every variant interleaved. After the timed cells, an untimed cell reports what the
kernel imported and the first call's own recorded duration (the card's figure). On a
shared machine absolute times follow its load: the load average is printed and stored.

Usage: python benchmarks/bench_coldstart.py [--kernels 5] [--no-sdk]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from _common import machine, write_json
from jupyter_client.manager import start_new_kernel

TARGETS_MS = {"first_call": 50.0, "load_cell_call": 1000.0}
ROOT = Path(__file__).resolve().parent.parent
# The kernels inherit this environment. With this set, a source checkout's modules have no
# cached bytecode and are compiled at each kernel start (installed packages have theirs).
NO_BYTECODE = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))

MCP_NB_CELLS = [
    ("load", "%load_ext mcp_nb"),
    ("cell", '%%mcp_tool\ndef add(a: int, b: int) -> int:\n    """Add two integers."""\n    return a + b\n'),
    ("first_call", "%mcp_call add a=1 b=2"),
    ("second_call", "%mcp_call add a=2 b=3"),
]

# The same notebook written against the SDK alone: the kernel already runs an event loop,
# so the call is a top-level `await` (a `Client` must be entered and left by one task).
SDK_CELLS = [
    ("load", "from mcp import Client\nfrom mcp.server import MCPServer\nserver = MCPServer('bare')"),
    ("cell", '@server.tool()\ndef add(a: int, b: int) -> int:\n    """Add two integers."""\n    return a + b\n'),
    (
        "first_call",
        "async with Client(server, cache=None) as client:\n    result = await client.call_tool('add', {'a': 1, 'b': 2})\nresult",
    ),
    (
        "second_call",
        "async with Client(server, cache=None) as client:\n    result = await client.call_tool('add', {'a': 2, 'b': 3})\nresult",
    ),
]

# Modules whose presence after the first call tells where a cold start went.
WATCHED = ["jsonschema", "rfc3987_syntax", "pandas", "pyarrow", "numpy", "ipywidgets", "pydantic", "mcp"]
PROBE = f"""
import json as _json, sys as _sys
_probe = {{"imported": {{m: m in _sys.modules for m in {WATCHED!r}}}, "modules": len(_sys.modules)}}
if "mcp_nb" in _sys.modules:
    _rows = _sys.modules["mcp_nb"].history().to_frame()
    _probe["recorded_ms"] = [float(v) for v in _rows["duration_ms"]]
    _probe["outcomes"] = list(_rows["outcome"])
print("PROBE " + _json.dumps(_probe))
"""


def run_kernel(cells: list[tuple[str, str]], queued: bool) -> dict:
    """Start a kernel, run `cells`, return each cell's kernel-side time in ms and the probe."""
    t0 = time.perf_counter()
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(ROOT), env=dict(os.environ))
    started_ms = (time.perf_counter() - t0) * 1000
    try:
        sources = [source for _, source in cells] + [PROBE]
        if queued:
            ids = [kc.execute(source) for source in sources]
            spans, probe = collect(kc, ids)
        else:
            spans, probe = {}, None
            ids = []
            for source in sources:
                ids.append(kc.execute(source))
                more, found = collect(kc, ids[-1:])
                spans.update(more)
                probe = probe or found
        times = {label: spans[msg_id] for (label, _), msg_id in zip(cells, ids)}
        return {"kernel_start_ms": started_ms, "cells_ms": times, "probe": probe}
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def collect(kc, ids: list[str]) -> tuple[dict[str, float], dict | None]:
    """Read IOPub until every request in `ids` is idle; a cell that fails stops the run."""
    busy, spans, probe = {}, {}, None
    while len(spans) < len(ids):
        msg = kc.get_iopub_msg(timeout=120)
        parent = msg["parent_header"].get("msg_id")
        if parent not in ids:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "status" and content["execution_state"] == "busy":
            busy[parent] = msg["header"]["date"]
        elif kind == "status" and content["execution_state"] == "idle":
            spans[parent] = (msg["header"]["date"] - busy[parent]).total_seconds() * 1000
        elif kind == "error":
            raise RuntimeError("a cell failed:\n" + "\n".join(content["traceback"]))
        elif kind == "stream" and content["text"].startswith("PROBE "):
            probe = json.loads(content["text"][len("PROBE ") :])
    return spans, probe


def summarize(runs: list[dict], labels: list[str]) -> dict:
    cells = {label: [run["cells_ms"][label] for run in runs] for label in labels}
    cells["load_cell_call"] = [sum(run["cells_ms"][k] for k in ("load", "cell", "first_call")) for run in runs]
    return {
        "median_ms": {key: statistics.median(values) for key, values in cells.items()},
        "range_ms": {key: [min(values), max(values)] for key, values in cells.items()},
        "kernel_start_ms": statistics.median(run["kernel_start_ms"] for run in runs),
        "runs": runs,
    }


def report(title: str, summary: dict) -> None:
    print(f"\n{title}  (kernel start, not counted: {summary['kernel_start_ms']:.0f} ms)")
    for key in ("load", "cell", "first_call", "second_call", "load_cell_call"):
        low, high = summary["range_ms"][key]
        line = f"  {key:<16} median {summary['median_ms'][key]:8.1f} ms   range {low:8.1f} – {high:8.1f}"
        if key in TARGETS_MS:
            line += f"   target {TARGETS_MS[key]:g} ms"
        print(line)
    probe = summary["runs"][-1]["probe"] or {}
    if "recorded_ms" in probe:
        recorded = [run["probe"]["recorded_ms"][0] for run in summary["runs"]]
        print(f"  first call's recorded duration (the card): median {statistics.median(recorded):.1f} ms")
    imported = [m for m, present in probe.get("imported", {}).items() if present]
    print(f"  imported by then: {', '.join(imported)} ({probe.get('modules')} modules)")


def _loads(loads: tuple[float, float, float]) -> str:
    return ", ".join(f"{value:.2f}" for value in loads)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, default=5, help="fresh kernels per way of running the cells")
    parser.add_argument("--no-sdk", action="store_true", help="skip the bare-SDK reference")
    args = parser.parse_args()

    load_before = os.getloadavg()
    ways = {"one_by_one": False, "run_all": True}
    flavours = {"mcp_nb": MCP_NB_CELLS} if args.no_sdk else {"mcp_nb": MCP_NB_CELLS, "sdk": SDK_CELLS}
    results: dict[str, dict[str, dict]] = {flavour: {} for flavour in flavours}
    runs: dict[tuple[str, str], list[dict]] = {(f, w): [] for f in flavours for w in ways}
    for _ in range(args.kernels):  # interleaved, so drift on a shared machine hits every variant alike
        for flavour, cells in flavours.items():
            for way, queued in ways.items():
                runs[flavour, way].append(run_kernel(cells, queued))
    for (flavour, way), found in runs.items():
        labels = [label for label, _ in flavours[flavour]]
        results[flavour][way] = summarize(found, labels)
        report(f"{flavour}, cells {way.replace('_', ' ')}:", results[flavour][way])

    floor = None
    if "sdk" in results:
        # What no notebook using the SDK avoids: importing it and creating a server. What
        # mcp_nb adds to a cold start is measured against that, in the same run.
        floor = results["sdk"]["one_by_one"]["median_ms"]["load"]
        print(f"\nthe SDK's own import and MCPServer() (the floor), one by one: median {floor:.1f} ms")
        for way in ways:
            total = results["mcp_nb"][way]["median_ms"]["load_cell_call"]
            print(
                f"  mcp_nb's load + cell + first call, {way.replace('_', ' ')}: {total:.1f} ms, {total - floor:+.1f} ms over the floor"
            )
    load_after = os.getloadavg()
    print(f"load average (1, 5, 15 min) before {_loads(load_before)}, after {_loads(load_after)} on {os.cpu_count()} CPUs")
    if NO_BYTECODE:
        print("PYTHONDONTWRITEBYTECODE is set: modules without a cached .pyc (a source checkout) are compiled in every kernel")
    print()
    verdicts = {}
    for way in ways:
        for key, target in TARGETS_MS.items():
            value = results["mcp_nb"][way]["median_ms"][key]
            verdicts[f"{way}:{key}"] = value <= target
            print(
                f"{'PASS' if value <= target else 'FAIL'}  {key} ({way.replace('_', ' ')}): median {value:.1f} ms <= {target:g} ms"
            )
    path = write_json(
        "coldstart.json",
        {
            "benchmark": "coldstart",
            "machine": machine(),
            "kernels": args.kernels,
            "targets_ms": TARGETS_MS,
            "load_average": {"before": load_before, "after": load_after},
            "sdk_floor_ms": floor,
            "pythondontwritebytecode": NO_BYTECODE,
            "results": results,
            "pass": verdicts,
        },
    )
    print(f"\nresults: {path}")


if __name__ == "__main__":
    main()
