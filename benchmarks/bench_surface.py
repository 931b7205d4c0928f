"""The cost of a surface snapshot and of a diff, for a server with 1,000 tools (targets: a snapshot
in at most 1 s, a diff of two in at most 0.5 s).

The kernel's server gets `--tools` tools, each with three to five parameters of the kinds
signatures give (strings, integers with bounds, an enum, an optional list, a nested model every
tenth tool) and an output schema (a TypedDict), as a notebook's tools have; plus 20 resources,
10 templates and 20 prompts. Timed, each the median of `--rounds` runs:

- `snapshot`: `mcp_nb.snapshot()`: what the server says of itself through the kernel's client
  session, its listings from its `MCPServer.list_*` methods, and the document built;
- `snapshot, protocol`: the same with every listing read through the session to its last page,
  as an outside server's are (the server serializes them, the client validates them);
- `snapshot to a file`: the same, written with `path=` (sorted, indented text);
- `diff, 10% changed`: `mcp_nb.diff(old, new)` of two documents, a tenth of the tools changed
  (a parameter became required, an enum lost a value, a bound moved, an annotation turned), every
  change judged and the frame built;
- `diff of files`: the same from the two snapshot files (both read and checked);
- `diff, unchanged`: two snapshots of the same server, the common case in CI.

And the diff of a long enum (`--enum`, 10,000 values by default): two documents of one tool
whose parameter's enum lost one value, diffed as `mcp_nb.diff(old, new)` (read, checked, every
value compared, the frame built). Against two references in the same run: the least such a
comparison must do (a set difference of the two lists of values, `set(old) - set(new)`), and
the same diff of an enum twice as long, which a linear comparison takes about twice as long for
(a comparison of every pair, four times). Targets: the diff within 100 times the set difference,
and at most 3 times as long for twice the values.

Usage: python benchmarks/bench_surface.py [--tools 1000] [--rounds 7] [--enum 10000] [--enum-only]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Literal, TypedDict

from _common import machine, write_json
from pydantic import BaseModel

import mcp_nb
from mcp_nb.calling.surface import take

SNAPSHOT_TARGET_S = 1.0
DIFF_TARGET_S = 0.5
ENUM_TO_SET_TARGET = 100.0  # the enum's diff / the set difference of its values
ENUM_DOUBLED_TARGET = 3.0  # the diff of twice the values / the diff of the values: 2 if linear, 4 if by pairs


class Result(TypedDict):
    title: str
    count: int
    score: float


class Address(BaseModel):
    street: str
    city: str
    zip: str | None = None


def register(tools: int, version: int) -> None:
    """`tools` tools; in version 2, every tenth one changed the way a refactor changes one."""
    namespace = {"Literal": Literal, "Result": Result, "Address": Address}
    for i in range(tools):
        changed = version == 2 and i % 10 == 0
        genres = '"sf", "fantasy"' if changed else '"sf", "fantasy", "classic"'
        limit = 50 if changed else 100
        nested = "to: Address, " if i % 10 == 5 else ""
        year = "year: int" if changed else "year: int = 2000"
        source = (
            f"def tool_{i}({nested}title: str, {year}, genre: Literal[{genres}] = 'sf', tags: list[str] | None = None) -> Result:\n"
            f"    '''Tool number {i}: finds what it is asked for.'''\n"
            f"    return {{'title': title, 'count': {limit}, 'score': 0.5}}\n"
        )
        exec(source, namespace)
        mcp_nb.tool(f"tool_{i}", read_only=not changed, input_schema=None)(namespace[f"tool_{i}"])
    for i in range(20):
        exec(f"def shelf_{i}() -> str:\n    return ''\n\ndef prompt_{i}(title: str) -> str:\n    return title\n", namespace)
        mcp_nb.resource(f"books://shelf/{i}")(namespace[f"shelf_{i}"])
        mcp_nb.prompt()(namespace[f"prompt_{i}"])
    for i in range(10):
        exec(f"def template_{i}(title: str) -> str:\n    return title\n", namespace)
        mcp_nb.resource(f"books://{{title}}/part/{i}")(namespace[f"template_{i}"])


def median_time(run, rounds: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times), times


def enum_documents(values: int) -> tuple[dict, dict]:
    """Two snapshots of one tool whose parameter `genre` may be any of `values` values; in the
    second, one value (in the middle) is gone."""
    names = [f"genre-{i:05d}" for i in range(values)]

    def snapshot(allowed: list[str]) -> dict:
        schema = {"type": "object", "properties": {"genre": {"type": "string", "enum": allowed}}, "required": ["genre"]}
        return {
            "mcp_nb_surface": 1,
            "server": {"name": "shelf"},
            "tools": {"find": {"inputSchema": schema}},
            "resources": {},
            "templates": {},
            "prompts": {},
        }

    return snapshot(names), snapshot(names[: values // 2] + names[values // 2 + 1 :])


def enum_diff(values: int, rounds: int) -> dict:
    """The diff of an enum that lost one value, against the set difference of its values and the
    same diff of twice the values, each the median of `rounds`."""
    old, new = enum_documents(values)
    frame = mcp_nb.diff(old, new)
    assert frame["rule"].tolist() == ["enum-value-removed"], frame
    old_values = old["tools"]["find"]["inputSchema"]["properties"]["genre"]["enum"]
    new_values = new["tools"]["find"]["inputSchema"]["properties"]["genre"]["enum"]
    diff, diff_runs = median_time(lambda: mcp_nb.diff(old, new), rounds)
    reference, _ = median_time(lambda: set(old_values) - set(new_values), max(rounds, 51))
    old2, new2 = enum_documents(2 * values)
    doubled, doubled_runs = median_time(lambda: mcp_nb.diff(old2, new2), rounds)
    return {
        "values": values,
        "diff_s": diff,
        "diff_runs": diff_runs,
        "set_difference_s": reference,
        "doubled_diff_s": doubled,
        "doubled_runs": doubled_runs,
        "to_set_difference": diff / reference,
        "doubled_to_diff": doubled / diff,
    }


def report_enum(enum: dict) -> bool:
    values = enum["values"]
    print(f"an enum of {values:,} values that lost one:")
    print(f"  diff                  median {enum['diff_s'] * 1000:8.1f} ms")
    print(f"  set difference        median {enum['set_difference_s'] * 1000:8.3f} ms  (the reference)")
    print(f"  diff of {2 * values:,} values median {enum['doubled_diff_s'] * 1000:8.1f} ms")
    print(f"  diff / set difference {enum['to_set_difference']:.1f}; twice the values / the values {enum['doubled_to_diff']:.2f}")
    ok = enum["to_set_difference"] <= ENUM_TO_SET_TARGET and enum["doubled_to_diff"] <= ENUM_DOUBLED_TARGET
    print(
        f"{'PASS' if ok else 'FAIL'}  the enum's diff within {ENUM_TO_SET_TARGET:g}x the set difference, and at most "
        f"{ENUM_DOUBLED_TARGET:g}x as long for twice the values (linear)"
    )
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--enum", type=int, default=10000, help="values of the long enum (0: no enum diff)")
    parser.add_argument("--enum-only", action="store_true", help="only the enum's diff")
    args = parser.parse_args()
    enum = enum_diff(args.enum, args.rounds) if args.enum else None
    enum_ok = report_enum(enum) if enum is not None else True
    if args.enum_only:
        out = write_json("surface_enum.json", {"benchmark": "surface", "machine": machine(), "enum": enum, "pass": enum_ok})
        print(f"wrote {out}")
        return
    folder = Path(tempfile.mkdtemp())

    started = time.perf_counter()
    register(args.tools, 1)
    registering = time.perf_counter() - started
    mcp_nb.snapshot()  # warm-up: the session opened, the first listing made
    results: dict[str, tuple[float, list[float]]] = {}
    results["snapshot"] = median_time(mcp_nb.snapshot, args.rounds)
    engine = mcp_nb.engine()
    results["snapshot, protocol"] = median_time(
        lambda: engine.loop.run(take(engine.connection, through_session=True)), args.rounds
    )
    results["snapshot to a file"] = median_time(lambda: mcp_nb.snapshot(path=folder / "v1.json"), args.rounds)
    old = mcp_nb.snapshot(path=folder / "v1.json")
    register(args.tools, 2)
    new = mcp_nb.snapshot(path=folder / "v2.json")
    frame = mcp_nb.diff(old, new)
    expected = args.tools // 10
    assert frame.attrs["breaking"] >= 3 * expected, frame.attrs  # required, enum, annotation for each changed tool
    results["diff, 10% changed"] = median_time(lambda: mcp_nb.diff(old, new), args.rounds)
    results["diff of files"] = median_time(lambda: mcp_nb.diff(folder / "v1.json", folder / "v2.json"), args.rounds)
    results["diff, unchanged"] = median_time(lambda: mcp_nb.diff(new, new), args.rounds)
    size = (folder / "v2.json").stat().st_size

    print(f"{args.tools} tools, 20 resources, 10 templates, 20 prompts ({size / 1e6:.1f} MB of snapshot); {args.rounds} rounds")
    print(
        f"  registering them (not timed below): {registering:.1f} s; {len(frame)} changes in the changed version, {frame.attrs['breaking']} breaking"
    )
    for name, (median, times) in results.items():
        print(f"  {name:<20} median {median * 1000:8.1f} ms  ({min(times) * 1000:.1f} – {max(times) * 1000:.1f})")
    snapshot_ok = results["snapshot"][0] <= SNAPSHOT_TARGET_S
    diff_ok = results["diff, 10% changed"][0] <= DIFF_TARGET_S and results["diff of files"][0] <= DIFF_TARGET_S
    print(f"{'PASS' if snapshot_ok else 'FAIL'}  a snapshot <= {SNAPSHOT_TARGET_S:g} s")
    print(f"{'PASS' if diff_ok else 'FAIL'}  a diff of two (documents, or files) <= {DIFF_TARGET_S:g} s")
    out = write_json(
        "surface.json",
        {
            "benchmark": "surface",
            "machine": machine(),
            "tools": args.tools,
            "rounds": args.rounds,
            "snapshot_bytes": size,
            "changes": len(frame),
            "breaking": frame.attrs["breaking"],
            "seconds": {name: {"median": median, "runs": times} for name, (median, times) in results.items()},
            "targets": {
                "snapshot": SNAPSHOT_TARGET_S,
                "diff": DIFF_TARGET_S,
                "enum_to_set_difference": ENUM_TO_SET_TARGET,
                "enum_doubled": ENUM_DOUBLED_TARGET,
            },
            "enum": enum,
            "pass": snapshot_ok and diff_ok and enum_ok,
        },
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
