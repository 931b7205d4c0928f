"""An evaluation's tasks, and the check that says whether an episode did what its task asked.

A task is its text, or a dict: `{"task": "Who wrote 'Dun'?", "check": "Frank Herbert", "id":
"dune", "tools": ["get_author"]}`. A check is:

- None: the episode answered (it ended with the stop `answered`);
- a string: the answer contains it (letter case aside);
- a compiled regular expression (`re.compile(...)`): the answer matches it somewhere;
- a function `(episode) -> bool`: whatever it says (one that raises fails the episode, and says why).

Only the first three can be written into a saved evaluation (`spec()`); a function stays in the
notebook that made it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mcp_nb.mistakes import BadType, BadValue, first_line

TASK_KEYS = ("task", "check", "id", "tools")


@dataclass(frozen=True)
class Task:
    text: str
    id: str
    check: Any = None
    tools: tuple[str, ...] | None = None


def check_check(check: Any) -> Any:
    if check is None or isinstance(check, (str, re.Pattern)) or callable(check):
        if isinstance(check, str) and not check.strip():
            raise BadValue("a check that is text must say what the answer contains")
        return check
    raise BadType(
        f"a check is None, text the answer contains, a re.compile(...) pattern or a function (episode) -> bool, not {type(check).__name__}"
    )


def tasks_of(tasks: Any, check: Any = None) -> list[Task]:
    """`tasks=` as given (one task, or a list), each with its check (`check` where it names none)."""
    check_check(check)
    if isinstance(tasks, (str, Mapping)):
        tasks = [tasks]
    if not isinstance(tasks, Sequence) or not tasks:
        raise BadType("tasks= is a task (text or a dict) or a list of them")
    found, ids = [], set()
    for i, given in enumerate(tasks):
        if isinstance(given, str):
            given = {"task": given}
        if not isinstance(given, Mapping):
            raise BadType(f"task {i} is {type(given).__name__}: a task is text or a dict with 'task'")
        unknown = sorted(set(given) - set(TASK_KEYS))
        if unknown:
            raise BadValue(f"task {i} has {', '.join(map(str, unknown))}; a task has {', '.join(TASK_KEYS)}")
        text = given.get("task")
        if not isinstance(text, str) or not text.strip():
            raise BadValue(f"task {i} says nothing: its 'task' is the text the model is given")
        task_id = given.get("id", f"task-{i + 1}")
        if not isinstance(task_id, str) or not task_id or task_id in ids:
            raise BadValue(f"task {i}'s id must be text, and each task's its own (got {task_id!r})")
        ids.add(task_id)
        tools = given.get("tools")
        if tools is not None and (isinstance(tools, str) or not all(isinstance(t, str) for t in tools)):
            raise BadType(f"task {i}'s tools is a list of tool names")
        found.append(Task(text, task_id, check_check(given.get("check", check)), tuple(tools) if tools is not None else None))
    return found


def judge(check: Any, episode: Any) -> tuple[bool | None, str | None]:
    """Whether the episode passed its task's check, and why not when the check itself failed.
    A cancelled episode is not judged (None)."""
    if episode.stop == "cancelled":
        return None, None
    answered = episode.stop == "answered"
    answer = episode.answer or ""
    if check is None:
        return answered, None
    if isinstance(check, str):
        return answered and check.casefold() in answer.casefold(), None
    if isinstance(check, re.Pattern):
        return answered and check.search(answer) is not None, None
    try:
        return bool(check(episode)), None
    except Exception as err:  # noqa: BLE001 - a check that raises fails the episode, and says why
        return False, f"the check raised {first_line(err, named=True)}"


def check_spec(check: Any) -> dict[str, Any] | None:
    """How a saved evaluation writes a check (None: a function, which cannot be written)."""
    if check is None:
        return {"answered": True}
    if isinstance(check, str):
        return {"contains": check}
    if isinstance(check, re.Pattern):
        return {"matches": check.pattern}
    return None


def check_from_spec(spec: Mapping[str, Any]) -> Any:
    if "contains" in spec:
        return spec["contains"]
    if "matches" in spec:
        return re.compile(spec["matches"])
    return None
