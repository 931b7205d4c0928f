"""A model in the loop: what the loop itself costs per turn, 1,000 stand-in episodes at once, and
an evaluation against any endpoint you point it at.

1. The loop's own cost per turn (target <= 1.05 of the direct calls it makes, the model's time left
   out). Paired blocks inside one coroutine on mcp_nb's loop: `direct` makes N calls of a tool,
   `await engine.prepare("tool", ...).run()` one after another (as a sweep's workers and the loop
   make theirs); `episodes` runs episodes whose model replies at once with the same call, until N
   calls were made, and the time spent inside the model's reply is subtracted. The ratio is the
   median of the per-pair ratios; the order alternates every pair. For an async tool (the strictest:
   its call is the cheapest) and a sync one.
2. 1,000 scripted stand-in episodes at once: `evaluate` of one task repeated 1,000 times at
   concurrency 1,000, each episode a failed call, a recovered one and an answer (2,000 calls).
3. With `--endpoint URL --model NAME` (an OpenAI-compatible endpoint: OpenAI, Ollama, llama.cpp's
   server, vLLM) or `--anthropic --model NAME`: the course's tasks, with a helpful `ToolError` and
   with a crash, evaluated against that model, and its recovery per variant. `--key-env VAR` names
   the environment variable that holds its key (none for a local server).

Usage: python benchmarks/bench_episodes.py [--pairs 40] [--turns 7] [--episodes 1000]
       python benchmarks/bench_episodes.py --endpoint http://127.0.0.1:11434/v1 --model llama3.2 [--repeats 5]
"""

from __future__ import annotations

import argparse
import time

from _common import alternate, machine, median, p10_p90, write_json
from mcp.server.mcpserver.exceptions import ToolError

import mcp_nb
from mcp_nb.episodes import evaluate as evaluation
from mcp_nb.episodes.episode import Episode, next_id
from mcp_nb.episodes.loop import EpisodeRun, Shared, conversation, offered_tools
from mcp_nb.episodes.policy import HostPolicy
from mcp_nb.models.function import Model
from mcp_nb.models.shape import Reply, ToolRequest
from mcp_nb.models.standin import StandIn

TARGET = 1.05
BOOKS = {"Dune": "Frank Herbert", "Emma": "Jane Austen", "Ulysses": "James Joyce"}


def helpful(title: str) -> str:
    """Who wrote a book, by its exact title."""
    if title not in BOOKS:
        raise ToolError(f"No book titled {title!r}. The catalog's titles are: {', '.join(map(repr, BOOKS))}")
    return BOOKS[title]


def crashing(title: str) -> str:
    """Who wrote a book, by its exact title."""
    return BOOKS[title]


async def aecho(text: str) -> str:
    return text


def echo(text: str) -> str:
    return text


class Instant(Model):
    """A model that replies at once with the same call `calls` times, then answers; it times itself."""

    name = "instant"

    def __init__(self, tool: str, calls: int) -> None:
        self.call = Reply(None, (ToolRequest("c", tool, '{"text": "x"}'),), finish="tool_calls")
        self.answer = Reply("done", finish="stop")
        self.calls = calls
        self.inside = 0.0

    async def reply(self, messages, tools, seconds, ids="call"):
        t0 = time.perf_counter()
        made = (len(messages) - 1) // 2
        reply = self.call if made < self.calls else self.answer
        self.inside += time.perf_counter() - t0
        return reply


def loop_cost(tool: str, pairs: int, turns: int, episodes: int) -> dict:
    """Paired blocks on the loop: `episodes` episodes of `turns` calls each, against the same number of direct calls."""
    engine = mcp_nb.engine()
    connection = engine.connection
    specs = offered_tools(connection, [tool])
    policy = HostPolicy()
    calls = turns * episodes

    async def direct() -> float:
        t0 = time.perf_counter()
        for _ in range(calls):
            await engine.prepare("tool", tool, {"text": "x"}, 30.0).run()
        return (time.perf_counter() - t0) / calls

    async def looped() -> float:
        model = Instant(tool, turns)
        shared = Shared()
        shared.sessions[id(model)] = model.reply
        t0 = time.perf_counter()
        for _ in range(episodes):  # each episode made, run and let go, as a face does: its making is the loop's too
            episode = Episode(next_id(), "go", "instant", max_turns=turns + 1, messages=conversation("go", None))
            await EpisodeRun(engine, episode, model, shared, connection, specs, policy, None, 30.0, 60.0).run()
        elapsed = time.perf_counter() - t0 - model.inside
        assert len(episode.calls) == turns and episode.stop == "answered"
        return elapsed / calls

    async def measure() -> dict:
        await direct()
        await looped()  # warm-up
        raws, ours, ratios = await alternate(direct, looped, pairs, engine.history.clear)
        lo, hi = p10_p90(ratios)
        return {"direct_us": median(raws) * 1e6, "episodes_us": median(ours) * 1e6, "ratio": median(ratios), "p10": lo, "p90": hi}

    return engine.loop.run(measure())


def child(variant: str, tool: str, calls: int, turns: int) -> None:
    """Run in a measured process: `calls` calls of `tool`, made directly or by episodes of `turns` calls."""
    mcp_nb.tool()(aecho)
    mcp_nb.tool()(echo)
    engine = mcp_nb.engine()
    assert mcp_nb.call(tool, {"text": "x"}).outcome == "result"  # the session opened, the tools listed
    specs = offered_tools(engine.connection, [tool])
    policy = HostPolicy()

    async def run() -> None:
        if variant == "direct":
            for i in range(calls):
                await engine.prepare("tool", tool, {"text": "x"}, 30.0).run()
                if i % 300 == 299:
                    engine.history.clear()
            return
        model = Instant(tool, turns)
        shared = Shared()
        shared.sessions[id(model)] = model.reply
        for i in range(calls // turns):
            episode = Episode(next_id(), "go", "instant", max_turns=turns + 1, messages=conversation("go", None))
            await EpisodeRun(engine, episode, model, shared, engine.connection, specs, policy, None, 30.0, 60.0).run()
            if (i + 1) * turns % 294 == 0:
                engine.history.clear()

    engine.loop.run(run())


def counted(variant: str, tool: str, calls: int, turns: int) -> int:
    """The instructions a whole process making `calls` calls executes (valgrind's cachegrind, counting only)."""
    import os
    import re
    import subprocess
    import sys
    from pathlib import Path

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
        str(turns),
    ]
    done = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ, PYTHONHASHSEED="0"), check=False)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"{variant} {tool} x{calls} failed under valgrind:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def instructions(turns: int, few: int, many: int) -> dict:
    """Instructions per call, made directly and by episodes: the ratio without the clock's noise."""
    from concurrent.futures import ThreadPoolExecutor

    results = {}
    for tool in ("aecho", "echo"):
        jobs = {(v, n): (v, tool, n, turns) for v in ("direct", "episodes") for n in (few, many)}
        with ThreadPoolExecutor(2) as pool:
            counts = dict(zip(jobs, pool.map(lambda args: counted(*args), jobs.values())))
        per = {v: (counts[(v, many)] - counts[(v, few)]) / (many - few) for v in ("direct", "episodes")}
        results[tool] = {"direct": per["direct"], "episodes": per["episodes"], "ratio": per["episodes"] / per["direct"]}
    return results


def thousand(episodes: int) -> dict:
    mcp_nb.tool(name="get_author")(helpful)
    mcp_nb.history().clear()
    t0 = time.perf_counter()
    task = {"task": "Who wrote 'Dun'?", "check": "Herbert", "tools": ["get_author"]}
    table = mcp_nb_evaluate(task, StandIn(), repeats=episodes, concurrency=episodes)
    elapsed = time.perf_counter() - t0
    row = table.iloc[0]
    recorded = len(mcp_nb.history())
    assert row["episodes"] == episodes and row["passed"] == episodes and recorded == 2 * episodes, (row.to_dict(), recorded)
    return {"episodes": episodes, "calls": 2 * episodes, "seconds": elapsed, "per_episode_ms": elapsed / episodes * 1000}


def mcp_nb_evaluate(*args, **kwargs):
    engine = mcp_nb.engine()
    return evaluation.run(engine, evaluation.plan(engine, *args, **kwargs), progress=False)


def against(args) -> dict:
    from mcp_nb.models.anthropic import Anthropic
    from mcp_nb.models.chat_completions import OpenAICompatible

    if args.anthropic:
        model = Anthropic(
            args.model, key=args.key_env or "ANTHROPIC_API_KEY", **({"base_url": args.endpoint} if args.endpoint else {})
        )
    else:
        model = OpenAICompatible(args.model, args.endpoint, key=args.key_env, temperature=0)
    mcp_nb.tool(name="get_author")(helpful)
    tasks = [
        {"task": 'Who wrote the book titled "Dun"?', "check": "Herbert", "id": "dun"},
        {"task": 'Who wrote the book titled "Emm"?', "check": "Austen", "id": "emm"},
        {"task": 'Who wrote the book titled "Ulyses"?', "check": "Joyce", "id": "ulyses"},
    ]
    t0 = time.perf_counter()
    table = mcp_nb_evaluate(
        tasks,
        {args.model: model},
        repeats=args.repeats,
        variants={"ToolError": {"get_author": helpful}, "crash": {"get_author": crashing}},
        system="You answer questions by calling the tools you are given.",
        max_turns=4,
        concurrency=args.concurrency,
        model_timeout=args.model_timeout,
    )
    elapsed = time.perf_counter() - t0
    print(table.to_string())
    by_variant = table.groupby("variant").agg(
        with_failures=("with_failures", "sum"),
        recovered=("recovered", "sum"),
        passed=("passed", "sum"),
        episodes=("episodes", "sum"),
    )
    print(by_variant.to_string())
    return {
        "model": args.model,
        "seconds": elapsed,
        "rows": table.drop(columns=["task"]).to_dict("records"),
        "by_variant": by_variant.reset_index().to_dict("records"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--turns", type=int, default=7, help="calls per episode in the loop's cost")
    parser.add_argument("--per-block", type=int, default=20, help="episodes per block in the loop's cost")
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--endpoint", help="an OpenAI-compatible endpoint's base URL (or Anthropic's, with --anthropic)")
    parser.add_argument("--anthropic", action="store_true")
    parser.add_argument("--model")
    parser.add_argument("--key-env", help="the environment variable that holds the endpoint's key")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--model-timeout", type=float, default=120.0)
    parser.add_argument("--instructions", action="store_true", help="the loop's cost in instructions (valgrind), not the clock")
    parser.add_argument("--few", type=int, default=210, help="with --instructions: calls in the short run")
    parser.add_argument("--many", type=int, default=1260, help="with --instructions: calls in the long run")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        variant, tool, calls, turns = args.child
        child(variant, tool, int(calls), int(turns))
        return
    if args.instructions:
        found = instructions(args.turns, args.few, args.many)
        for tool, measured in found.items():
            print(
                f"  {tool:<6} direct {measured['direct']:,.0f} instructions/call  in episodes {measured['episodes']:,.0f}  "
                f"ratio {measured['ratio']:.3f}  {'PASS' if measured['ratio'] <= TARGET else 'FAIL'} <= {TARGET}"
            )
        path = write_json(
            "episodes_instructions.json",
            {"benchmark": "episodes_instructions", "machine": machine(), "turns": args.turns, **found},
        )
        print(f"figures written to {path}")
        return

    if args.endpoint or args.anthropic:
        if not args.model:
            parser.error("--model names the model the endpoint serves")
        result = against(args)
        path = write_json("episodes_endpoint.json", {"benchmark": "episodes_endpoint", "machine": machine(), **result})
        print(f"figures written to {path}")
        return

    mcp_nb.tool()(aecho)
    mcp_nb.tool()(echo)
    results = {}
    print(
        f"the loop's own cost per turn: {args.pairs} pairs of {args.per_block} episodes x {args.turns} calls, the model's time left out"
    )
    for tool in ("aecho", "echo"):
        measured = loop_cost(tool, args.pairs, args.turns, args.per_block)
        results[tool] = measured
        print(
            f"  {tool:<6} direct {measured['direct_us']:7.1f} us/call  in episodes {measured['episodes_us']:7.1f} us/call  "
            f"ratio {measured['ratio']:.3f}  (10th-90th percentile {measured['p10']:.2f}-{measured['p90']:.2f})  "
            f"{'PASS' if measured['ratio'] <= TARGET else 'FAIL'} <= {TARGET}"
        )
    many = thousand(args.episodes)
    print(
        f"{many['episodes']} stand-in episodes at once ({many['calls']} calls): {many['seconds']:.2f} s, {many['per_episode_ms']:.2f} ms an episode"
    )
    path = write_json(
        "episodes.json", {"benchmark": "episodes", "machine": machine(), "loop": results, "thousand": many, "target": TARGET}
    )
    print(f"figures written to {path}")


if __name__ == "__main__":
    main()
