"""An evaluation saved into a cases file, and run again as regression cases (the pytest plugin's items).

What is saved is what can be run again anywhere: the tasks and their checks (text an answer
contains, a pattern, or that it answered; a function stays in its notebook), the models as where to
find them (the stand-in; an endpoint and the name of its key's variable; a function model stays in
its notebook), the policy, the turns, the budget, and what was measured per task and model. The
tools are not saved: they are whatever the replay's server offers (`--mcp-notebook`,
`--mcp-server`), as for cases; so an evaluation with variants is saved one variant at a time
(evaluate each version, save each).

A row of a replay is judged against what was saved: the stand-in, written rules, must do exactly
what it did (the same passed and recovered counts); a language model must not do significantly
worse, i.e. its new 95% interval may not lie wholly below the saved one, for the success rate or
for the recovery rate.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp_nb.episodes import evaluate as evaluation
from mcp_nb.episodes.tasks import check_from_spec, check_spec
from mcp_nb.mistakes import BadType, BadValue
from mcp_nb.models.anthropic import Anthropic
from mcp_nb.models.chat_completions import OpenAICompatible
from mcp_nb.models.standin import StandIn
from mcp_nb.records.cases import load_file, save
from mcp_nb.records.saved_evaluations import SavedEvaluation, SavedModel, SavedRow

if TYPE_CHECKING:
    import pandas as pd

SAVED = "saved"  # the frame's attrs key: the evaluation as a file holds it, or why it cannot be saved


def spec_of(found: evaluation.Plan) -> dict[str, Any] | str:
    """The plan as a saved evaluation holds it (without what it measured), or why it cannot be saved."""
    if len(found.variants) != 1 or found.variants[0].name != evaluation.AS_REGISTERED:
        return "an evaluation with variants is saved one variant at a time: evaluate each version of the tools, and save each"
    tasks = []
    for task in found.tasks:
        check = check_spec(task.check)
        if check is None:
            return f"task {task.id!r}'s check is a function, which stays in its notebook: give text or a re.compile(...) pattern"
        tasks.append(
            {"id": task.id, "task": task.text, "check": check, "tools": list(task.tools) if task.tools is not None else None}
        )
    models = {}
    for name, model in found.models:
        spec = model.spec()
        if spec is None:
            return (
                f"the model {name!r} is a function, which stays in its notebook: save an adapter's evaluation, or the stand-in's"
            )
        if spec.get("kind") != "stand-in" and spec.get("key") is None and getattr(model, "key", None) is not None:
            return (
                f"the model {name!r} has a key typed at a prompt: a saved evaluation names the environment variable that holds it"
            )
        models[name] = spec
    return {
        "id": found.evaluation,
        "tasks": tasks,
        "models": models,
        "policy": found.policy.as_dict(),
        "max_turns": found.max_turns,
        "repeats": found.repeats,
        "budget": None if found.budget is None else found.budget.as_dict(),
        "system": found.system,
        "timeout": found.timeout,
        "model_timeout": found.model_timeout,
    }


def save_evaluation(table: pd.DataFrame, path: str | Path) -> Path:
    """Write the evaluation `table` came from into the cases file at `path` (added to its cases and
    evaluations when the file exists; an evaluation of the same id is replaced)."""
    saved = getattr(table, "attrs", {}).get(SAVED) if hasattr(table, "attrs") else None
    if saved is None:
        raise BadType("save_evaluation takes the frame mcp_nb.evaluate(...) returned")
    if isinstance(saved, str):
        raise BadValue(f"this evaluation cannot be saved: {saved}")
    if table.attrs.get("interrupted"):
        raise BadValue("this evaluation was stopped before it ended: run it whole, then save it")
    expect = [
        {
            "task_id": row.task_id,
            "model": row.model,
            "episodes": int(row.episodes),
            "passed": int(row.passed),
            "with_failures": int(row.with_failures),
            "recovered": int(row.recovered),
        }
        for row in table.itertuples()
    ]
    try:
        written = SavedEvaluation.model_validate({**saved, "expect": expect})
    except ValueError as err:
        raise BadValue(f"this evaluation cannot be saved: {err}") from None
    path = Path(path)
    cases, evaluations = [], []
    if path.exists():
        found = load_file(path)
        cases, evaluations = found.cases, [e for e in found.evaluations if e.id != written.id]
    return save(cases, path, [*evaluations, written])


def model_from(spec: SavedModel) -> Any:
    """The model a saved evaluation names, made again (an endpoint's key read from its variable)."""
    if spec.kind == "stand-in":
        return StandIn(spec.tool, spec.arguments, **({"max_calls": spec.max_calls} if spec.max_calls is not None else {}))
    options = {"temperature": spec.temperature, "options": spec.options}
    if spec.kind == "openai-compatible":
        return OpenAICompatible(
            spec.model, spec.base_url or "https://api.openai.com/v1", key=spec.key, max_tokens=spec.max_tokens, **options
        )
    return Anthropic(
        spec.model,
        key=spec.key or "ANTHROPIC_API_KEY",
        **({"base_url": spec.base_url} if spec.base_url else {}),
        **({"max_tokens": spec.max_tokens} if spec.max_tokens else {}),
        **options,
    )


def replay(engine: Any, saved: SavedEvaluation, server: str | None = None) -> pd.DataFrame:
    """Run a saved evaluation again on `server`'s tools (the kernel's by default); returns its frame."""
    tasks = [
        {
            "task": task.task,
            "id": task.id,
            "check": check_from_spec(task.check.model_dump(exclude_none=True)),
            **({"tools": task.tools} if task.tools is not None else {}),
        }
        for task in saved.tasks
    ]
    models = {name: model_from(spec) for name, spec in saved.models.items()}
    budget = {part: value for part, value in (saved.budget or {}).items() if value is not None}
    found = evaluation.plan(
        engine,
        tasks,
        models,
        repeats=saved.repeats,
        policy=saved.policy or None,
        max_turns=saved.max_turns,
        budget=budget or None,
        timeout=saved.timeout,
        model_timeout=saved.model_timeout,
        system=saved.system,
        server=server,
        concurrency=4,
    )
    return evaluation.run(engine, found, progress=False)


def judged(saved: SavedRow, deterministic: bool, now: Any) -> str:
    """Why the replay's row `now` is worse than what was saved ("" when it is not)."""
    if now is None:
        return f"{saved.task_id} with {saved.model}: no episode ran"
    then = {
        "passed": saved.passed,
        "episodes": saved.episodes,
        "with_failures": saved.with_failures,
        "recovered": saved.recovered,
    }
    got = {
        "passed": int(now.passed),
        "episodes": int(now.episodes),
        "with_failures": int(now.with_failures),
        "recovered": int(now.recovered),
    }
    if deterministic:
        if got != then:
            return (
                f"{saved.task_id} with {saved.model} (written rules: it does the same every time) did otherwise: "
                f"passed {got['passed']} of {got['episodes']} (saved: {then['passed']} of {then['episodes']}), recovered in "
                f"{got['recovered']} of {got['with_failures']} episodes with a failed call (saved: {then['recovered']} of {then['with_failures']})"
            )
        return ""
    worse = []
    for what, hits, out_of in (("success", "passed", "episodes"), ("recovery", "recovered", "with_failures")):
        before = evaluation.wilson(then[hits], then[out_of])
        after = evaluation.wilson(got[hits], got[out_of])
        if then[out_of] and got[out_of] and after[1] < before[0]:
            worse.append(
                f"{what} {got[hits]} of {got[out_of]} (95% interval {after[0]:.2f}-{after[1]:.2f}), below the saved "
                f"{then[hits]} of {then[out_of]} ({before[0]:.2f}-{before[1]:.2f})"
            )
    return f"{saved.task_id} with {saved.model} did significantly worse: " + "; ".join(worse) if worse else ""


def row_of(frame: Any, saved: SavedRow) -> Any:
    found = frame[(frame["task_id"] == saved.task_id) & (frame["model"] == saved.model)]
    return None if found.empty else next(found.itertuples())


def item_name(saved: SavedRow) -> str:
    """A row's test item name: its task and model, as a pytest id can show them."""
    return re.sub(r"\s+", " ", f"{saved.task_id} · {saved.model}")
