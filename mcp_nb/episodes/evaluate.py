"""Many episodes, per task, model and variant, on the one batch core; their rates and confidence intervals.

Every episode is prepared first (the tasks and their checks read, the models checked, the tools
each task offers found, every variant's tools checked), so a refusal comes before anything runs.
Then each variant in turn: its versions of the tools are registered (the kernel's server has one
version of a tool at a time), its episodes run `concurrency` at a time in `batch.core.Lanes` while
the caller's thread waits with `batch.core.wait` (the progress bar, an interrupt, a reset: as for a
sweep), and the tools as they were are registered again, whatever happened.

A variant is another version of one or more tools: `{"terse": {"get_author": get_author_v1},
"helpful": {"get_author": get_author_v2}}`, each value a function or a dict of `add_tool`'s options
with its `function` (a new `description`, say); or the name of a connected server, whose tools the
variant's episodes are given instead. No variant: the tools as they are, named "as registered".

The frame has one row per task, model and variant: how many episodes, how many passed their check
and the rate with its 95% Wilson interval, how many had a failed call and in how many of those the
model recovered (`records/recovery.py`), with the rate and its interval. Wilson's interval, rather
than the normal approximation, because evaluations are small and rates near 0 or 1, where the
normal interval leaves [0, 1] or shrinks to nothing.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp_nb import libraries as lib
from mcp_nb.batch.core import check_concurrency, wait
from mcp_nb.episodes.episode import Episode, next_id
from mcp_nb.episodes.loop import (
    MODEL_TIMEOUT_S,
    Episodes,
    EpisodeRun,
    Shared,
    check_model_timeout,
    check_turns,
    conversation,
    offered_tools,
)
from mcp_nb.episodes.policy import HostPolicy
from mcp_nb.episodes.tasks import Task, tasks_of
from mcp_nb.models.budget import Budget
from mcp_nb.models.function import Model, models_of
from mcp_nb.registering.registry import ANNOTATION_FLAGS
from mcp_nb.views.theme import KIND_FILLS
from mcp_nb.mistakes import BadType, BadValue

if TYPE_CHECKING:
    import pandas as pd

AS_REGISTERED = "as registered"
Z_95 = 1.959963984540054
FLAG_NAMES = {camel: flag for flag, camel in ANNOTATION_FLAGS.items()}
TOOL_OPTIONS = ("function", "description", "title", "read_only", "idempotent", "destructive", "open_world", "input_schema")
COLUMNS = (
    "task_id", "task", "model", "variant", "episodes", "passed", "success_rate", "success_low", "success_high",
    "with_failures", "recovered", "recovery_rate", "recovery_low", "recovery_high", "gave_up", "calls",
    "failed_calls", "mean_turns", "tokens", "median_ms",
)  # fmt: skip
MEASURES = ("success_rate", "recovery_rate")
_evaluations = itertools.count(1)


def wilson(successes: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of `successes` in `n` (NaN, NaN when n is 0)."""
    if n <= 0:
        return math.nan, math.nan
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # At 0 of n and n of n the interval ends at 0 and at 1 exactly (the arithmetic leaves a 1e-17).
    return (0.0 if successes == 0 else max(0.0, centre - half)), (1.0 if successes == n else min(1.0, centre + half))


@dataclass(frozen=True)
class Variant:
    """One variant of an evaluation: versions of the kernel's tools (`tools`), or another server."""

    name: str
    tools: Mapping[str, Mapping[str, Any]] | None = None
    server: str | None = None

    def apply(self, engine: Any) -> Callable[[], None]:
        """Register this variant's tools; returns what registers the tools as they were again."""
        if not self.tools:
            return lambda: None
        registry = engine.registry
        before = {name: (registry.get("tool", name), registry.faults.get(name)) for name in self.tools}
        try:
            for name, options in self.tools.items():
                _register(registry, name, options)
        except BaseException:
            _restore(registry, before)
            raise
        return lambda: _restore(registry, before)


def _register(registry: Any, name: str, options: Mapping[str, Any]) -> None:
    flags = {flag: bool(options[flag]) for flag in ANNOTATION_FLAGS if flag in options}
    registry.add_tool(
        options["function"], name=name, title=options.get("title"), description=options.get("description"),
        annotations=flags, input_schema=options.get("input_schema"),
    )  # fmt: skip


def _restore(registry: Any, before: Mapping[str, tuple[Any, Any]]) -> None:
    for name, (entry, faults) in before.items():
        if entry is None:
            if registry.get("tool", name) is not None:
                registry.remove(name, "tool")
            continue
        registry.add_tool(
            entry.function, name=entry.name, title=entry.title, description=entry.description,
            annotations={FLAG_NAMES[camel]: True for camel in entry.annotations}, input_schema=entry.input_schema,
            inject=faults,
        )  # fmt: skip


def variants_of(variants: Any, engine: Any, server: str | None) -> list[Variant]:
    """`variants=` as given, every part checked before anything runs."""
    if variants is None:
        return [Variant(AS_REGISTERED, server=server)]
    if not isinstance(variants, Mapping) or not variants:
        raise BadType("variants= is a dict: a variant's name -> its tools ({tool name: function}) or a connected server's name")
    found = []
    for name, given in variants.items():
        if not isinstance(name, str) or not name.strip():
            raise BadType(f"a variant is named with text, not {name!r}")
        if isinstance(given, str):
            engine.connection_for(given)  # a connected server, or one line saying which are
            found.append(Variant(name, server=given))
            continue
        if server is not None:
            raise BadValue(f"variant {name!r} gives versions of the kernel's tools, but server={server!r}: a variant of another server is that server's name")
        if not isinstance(given, Mapping) or not given:
            raise BadType(f"variant {name!r} is a dict of tool names to their versions (functions), or a connected server's name")
        tools = {}
        for tool, version in given.items():
            options = {"function": version} if callable(version) else version
            if not isinstance(tool, str) or not isinstance(options, Mapping) or not callable(options.get("function")):
                raise BadType(f"variant {name!r}: {tool!r} must be a function, or a dict of its options with its 'function'")
            unknown = sorted(set(options) - set(TOOL_OPTIONS))
            if unknown:
                raise BadValue(f"variant {name!r}: {tool!r} has {', '.join(unknown)}; a version has {', '.join(TOOL_OPTIONS)}")
            tools[tool] = dict(options)
        found.append(Variant(name, tools=tools))
    return found


@dataclass
class Plan:
    """Everything an evaluation runs, checked: its tasks, models, variants and their settings."""

    tasks: list[Task]
    models: list[tuple[str, Model]]
    variants: list[Variant]
    repeats: int
    policy: HostPolicy
    max_turns: int
    budget: Budget | None
    total: Budget | None
    timeout: float | None
    model_timeout: float
    system: str | None
    concurrency: int
    evaluation: str


def plan(
    engine: Any, tasks: Any, models: Any, *, repeats: int = 1, variants: Any = None, check: Any = None, policy: Any = None,
    max_turns: int = 8, budget: Any = None, total_budget: Any = None, timeout: float | None = None,
    model_timeout: float = MODEL_TIMEOUT_S, system: str | None = None, concurrency: int = 4, server: str | None = None,
) -> Plan:  # fmt: skip
    if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 1:
        raise BadValue(f"repeats must be a whole number >= 1, got {repeats!r}")
    named = models_of(models)
    for _, model in named:
        model.check()
    found = Plan(
        tasks=tasks_of(tasks, check), models=named, variants=variants_of(variants, engine, server), repeats=repeats,
        policy=HostPolicy.of(policy), max_turns=check_turns(max_turns), budget=Budget.of(budget), total=Budget.of(total_budget),
        timeout=timeout, model_timeout=check_model_timeout(model_timeout), system=_system(system),
        concurrency=check_concurrency(concurrency), evaluation=f"evaluation-{next(_evaluations)}",
    )  # fmt: skip
    if timeout is not None:
        engine.prepare("tool", "-", {}, timeout)  # the timeout checked as every call's is: bad, it raises now
    for variant in found.variants:  # each task's tools exist on each variant's server (the kernel's: as it will be)
        connection = engine.connection_for(variant.server)
        for task in found.tasks:
            if task.tools is not None and variant.tools is None:
                offered_tools(connection, task.tools)
    return found


def _system(system: Any) -> str | None:
    if system is not None and not isinstance(system, str):
        raise BadType(f"system= is the system prompt (text), not {type(system).__name__}")
    return system or None


def runs_of(engine: Any, found: Plan, variant: Variant, shared: Shared) -> list[EpisodeRun]:
    """The episodes of one variant (its tools registered already), each task × model × repeat."""
    connection = engine.connection_for(variant.server)
    specs: dict[tuple[str, ...] | None, list] = {}
    runs = []
    for task in found.tasks:
        if task.tools not in specs:
            specs[task.tools] = offered_tools(connection, task.tools)
        for name, model in found.models:
            for repeat in range(1, found.repeats + 1):
                episode = Episode(
                    id=next_id(), task=task.text, model=name, model_kind=model.kind, model_label=model.label,
                    server=connection.name, tools=tuple(s["function"]["name"] for s in specs[task.tools]),
                    policy=found.policy.as_dict(), max_turns=found.max_turns,
                    budget=None if found.budget is None else found.budget.as_dict(), evaluation=found.evaluation,
                    variant=variant.name, task_id=task.id, repeat=repeat, messages=conversation(task.text, found.system),
                )  # fmt: skip
                runs.append(EpisodeRun(
                    engine, episode, model, shared, connection, specs[task.tools], found.policy, found.budget, found.timeout,
                    found.model_timeout, task.check, judged=True,
                ))  # fmt: skip
    return runs


def run(engine: Any, found: Plan, progress: bool = True) -> pd.DataFrame:
    """Run the planned evaluation in this thread's wait (see the module); returns its frame."""
    shared = Shared(found.total)
    episodes: list[Episode] = []
    stopped = False
    total = len(found.tasks) * len(found.models) * found.repeats
    for variant in found.variants:
        restore = variant.apply(engine)
        try:
            batch = Episodes(engine, runs_of(engine, found, variant, shared), shared, [m for _, m in found.models], found.concurrency)
            label = None if not progress else "evaluate" + ("" if variant.name == AS_REGISTERED else f" {variant.name}")
            stopped = wait(batch, total, label, "evaluation" + ("" if variant.name == AS_REGISTERED else f" of {variant.name!r}"), "episodes finished")
            episodes += batch.episodes()
        finally:
            if not engine.closed:
                restore()
        if stopped or engine.closed:
            stopped = True
            break
    return frame(episodes, found, stopped)


def frame(episodes: Sequence[Episode], found: Plan, interrupted: bool) -> pd.DataFrame:
    """One row per task, model and variant (COLUMNS), in the order they were planned."""
    pd = lib.pandas
    groups: dict[tuple[str, str, str], list[Episode]] = {}
    for variant in found.variants:
        for task in found.tasks:
            for name, _ in found.models:
                groups[(task.id, name, variant.name)] = []
    texts = {task.id: task.text for task in found.tasks}
    for episode in episodes:
        groups.setdefault((episode.task_id, episode.model, episode.variant), []).append(episode)
    rows = []
    for (task_id, model, variant), made in groups.items():
        judged = [e for e in made if e.passed is not None]
        passed = sum(1 for e in judged if e.passed)
        fates = [[f for f in e.fates() if f is not None] for e in made]
        with_failures = sum(1 for f in fates if f)
        recovered = sum(1 for f in fates if "recovered" in f)
        tokens = [e.tokens for e in made if e.tokens is not None]
        rows.append({
            "task_id": task_id, "task": texts.get(task_id), "model": model, "variant": variant, "episodes": len(made),
            "passed": passed, "success_rate": passed / len(judged) if judged else math.nan,
            **dict(zip(("success_low", "success_high"), wilson(passed, len(judged)), strict=True)),
            "with_failures": with_failures, "recovered": recovered,
            "recovery_rate": recovered / with_failures if with_failures else math.nan,
            **dict(zip(("recovery_low", "recovery_high"), wilson(recovered, with_failures), strict=True)),
            "gave_up": sum(1 for f in fates if "gave_up" in f), "calls": sum(len(e.calls) for e in made),
            "failed_calls": sum(len(f) for f in fates),
            "mean_turns": sum(len(e.turns) for e in made) / len(made) if made else math.nan,
            "tokens": sum(tokens) if tokens else None,
            "median_ms": float(pd.Series([e.duration_ms for e in made]).median()) if made else math.nan,
        })  # fmt: skip
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    table["tokens"] = table["tokens"].astype("Int64")
    table.attrs.update(
        evaluation=found.evaluation, episodes=len(episodes), interrupted=interrupted, repeats=found.repeats,
        max_turns=found.max_turns, policy=found.policy.as_dict(), variants=[v.name for v in found.variants],
        models=[name for name, _ in found.models],
    )  # fmt: skip
    return table


def plot(table: pd.DataFrame, measure: str = "success_rate", ax: Any = None) -> Any:
    """A horizontal bar per row of an evaluation's frame, `measure` with its 95% interval; returns the axes."""
    if measure not in MEASURES:
        raise BadValue(f"measure is one of {', '.join(MEASURES)}, not {measure!r}")
    if not isinstance(table, lib.pandas.DataFrame) or not set(COLUMNS) <= set(table.columns):
        raise BadType("plot takes the frame mcp_nb.evaluate(...) returned")
    try:
        pyplot = lib.pyplot
    except ImportError:
        raise ImportError("plotting an evaluation needs matplotlib: pip install matplotlib") from None
    low, high = measure.replace("rate", "low"), measure.replace("rate", "high")
    labels = [f"{r.task_id} · {r.model}" + ("" if r.variant == AS_REGISTERED else f" · {r.variant}") for r in table.itertuples()]
    values = table[measure].fillna(0.0).to_numpy()
    errors = [(values - table[low].fillna(0.0)).clip(lower=0).to_numpy(), (table[high].fillna(0.0) - values).clip(lower=0).to_numpy()]
    if ax is None:
        _, ax = pyplot.subplots(figsize=(8, 0.45 * len(table) + 1.4), layout="constrained")
    positions = range(len(table))
    ax.barh(list(positions), values, xerr=errors, capsize=3, color=KIND_FILLS["tool"], alpha=0.8)  # the theme's colour of a tool
    ax.set_yticks(list(positions), labels)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel(f"{measure.replace('_', ' ')} (bars: 95% Wilson interval)")
    ax.set_title(table.attrs.get("evaluation", "evaluation"))
    return ax
