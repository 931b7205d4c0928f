"""What a model did after each failed call of an episode, read from the episode's steps alone.

A step is one tool call the model asked for, in the order it asked: its tool's name, its arguments
as text, and how it ended (`result`, `tool_error`, `protocol_error`, `timeout`, or `not_sent`
when the host did not send it: arguments that were not JSON, a tool it refused). A failure is a
step that did not end in a result, and its fate is what the model did next:

| fate | the model... |
|---|---|
| `recovered` | later called the same tool with other arguments, and that call returned a result |
| `repeated` | next called the same tool with the same arguments |
| `retried` | next called the same tool with other arguments, and never got a result from it |
| `switched` | next called another tool |
| `gave_up` | answered, with no call after the failure |
| `cut_short` | did nothing more: the episode ended first (out of turns, a budget, the model failed, a reset) |

Pure functions over plain rows (dicts), so that an episode, the history's `episodes()` and an
evaluation read recovery the same way; nothing here calls anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mcp_nb import libraries as lib

if TYPE_CHECKING:
    import pandas as pd

FATES = ("recovered", "repeated", "retried", "switched", "gave_up", "cut_short")
STEP_OUTCOMES = ("result", "tool_error", "protocol_error", "timeout", "not_sent")
FAILURES = {"tool_error": "tool_errors", "protocol_error": "protocol_errors", "timeout": "timeouts", "not_sent": "not_sent"}
# How an episode ended.
STOPS = ("answered", "out_of_turns", "model_failed", "budget", "host_stopped", "cancelled")
EPISODE_COLUMNS = (
    "episode",
    "session",  # the kernel's start, as a call's: a history file holds every session's episodes
    "evaluation",
    "task_id",
    "task",
    "model",
    "variant",
    "repeat",
    "server",
    "stop",
    "detail",
    "answer",
    "passed",
    "turns",
    "calls",
    "failures",
    "tool_errors",
    "protocol_errors",
    "timeouts",
    "not_sent",
    *FATES,
    "tokens",
    "started_at",
    "duration_ms",
    "policy",
)


def fates(steps: Sequence[Mapping[str, Any]], stop: str) -> list[str | None]:
    """Each step's fate (None for a step that returned a result), the episode having ended with `stop`."""
    found: list[str | None] = []
    for i, step in enumerate(steps):
        if step["outcome"] == "result":
            found.append(None)
            continue
        later = steps[i + 1 :]
        name, arguments = step["name"], step["arguments"]
        if any(s["name"] == name and s["outcome"] == "result" and s["arguments"] != arguments for s in later):
            found.append("recovered")
        elif not later:
            found.append("gave_up" if stop == "answered" else "cut_short")
        elif later[0]["name"] != name:
            found.append("switched")
        else:
            found.append("repeated" if later[0]["arguments"] == arguments else "retried")
    return found


def measures(steps: Sequence[Mapping[str, Any]], stop: str) -> dict[str, int]:
    """An episode's counts: calls sent, failures (all, and by how each ended), and each fate."""
    counts = {"calls": 0, "failures": 0, **dict.fromkeys(FAILURES.values(), 0), **dict.fromkeys(FATES, 0)}
    for step, fate in zip(steps, fates(steps, stop), strict=True):
        if step["outcome"] != "not_sent":
            counts["calls"] += 1
        if fate is not None:
            counts["failures"] += 1
            counts[FAILURES[step["outcome"]]] += 1
            counts[fate] += 1
    return counts


def episodes_frame(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per episode (EPISODE_COLUMNS), from episode rows that carry their `steps`."""
    pd = lib.pandas
    records = []
    for row in rows:
        record = {column: row.get(column) for column in EPISODE_COLUMNS}
        record.update(measures(row.get("steps") or (), row["stop"]))
        records.append(record)
    frame = pd.DataFrame(records, columns=list(EPISODE_COLUMNS))
    counted = ["turns", "calls", "failures", *FAILURES.values(), *FATES]
    frame[counted] = frame[counted].fillna(0).astype("int64")
    for column in ("episode", "repeat", "tokens"):
        frame[column] = frame[column].astype("Int64")
    frame["passed"] = frame["passed"].astype("boolean")
    frame["started_at"] = pd.to_datetime(frame["started_at"], unit="s", utc=True)
    frame["stop"] = pd.Categorical(frame["stop"], categories=list(STOPS))
    return frame


def by_model(frame: pd.DataFrame) -> pd.DataFrame:
    """Per model and task: episodes, how they ended, their failures and what followed them, and
    `recovery_rate` (the failures recovered, of all failures; empty when none failed)."""
    pd = lib.pandas
    keys = ["model", "task"]
    measured = ["turns", "calls", "failures", *FATES]
    if frame.empty:
        return pd.DataFrame(
            columns=["episodes", *STOPS, *measured, "recovery_rate"], index=pd.MultiIndex.from_tuples([], names=keys)
        )
    grouped = frame.groupby(keys, observed=True, sort=False, dropna=False)
    table = grouped["stop"].value_counts().unstack("stop", fill_value=0).reindex(columns=list(STOPS), fill_value=0)
    table.insert(0, "episodes", table.sum(axis=1))
    table = table.join(grouped[measured].sum())
    failures = table["failures"].where(table["failures"] > 0)
    table["recovery_rate"] = table["recovered"] / failures
    table.columns.name = None
    return table.astype({c: "int64" for c in ["episodes", *STOPS, *measured]})
