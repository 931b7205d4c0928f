"""What a saved evaluation is in a cases file: its tasks, its models, its settings, and what it measured.

    {"mcp_nb_cases": 1, "cases": [], "evaluations": [{
      "id": "evaluation-1",
      "tasks": [{"id": "dun", "task": "Who wrote 'Dun'?", "check": {"contains": "Herbert"}}],
      "models": {"scripted stand-in": {"kind": "stand-in"},
                 "gpt": {"kind": "openai-compatible", "model": "gpt-4o-mini", "base_url": "https://api.openai.com/v1",
                         "key": "OPENAI_API_KEY"}},
      "policy": {...}, "max_turns": 8, "repeats": 3,
      "expect": [{"task_id": "dun", "model": "scripted stand-in", "episodes": 3, "passed": 3,
                  "with_failures": 3, "recovered": 3}]}]}

A model is written as where to find it, never with a key: an endpoint's key is the *name* of the
environment variable that holds it. Read through pydantic like the cases, so a file edited by hand
that says something mcp_nb cannot run is refused whole, naming the field. Only the data: the
episodes layer (`mcp_nb/episodes/saved.py`) writes these and runs them again.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

MODEL_KINDS = ("stand-in", "openai-compatible", "anthropic")
_VARIABLE = re.compile(r"[A-Z_][A-Z0-9_]{0,63}\Z")


class SavedCheck(BaseModel):
    """How a task's episode is judged: it answered, its answer contains a text, or matches a pattern."""

    model_config = ConfigDict(extra="forbid")

    answered: Literal[True] | None = None
    contains: str | None = Field(default=None, min_length=1)
    matches: str | None = None

    @field_validator("matches")
    @classmethod
    def _pattern(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as err:
                raise ValueError(f"not a regular expression: {err}") from None
        return value

    @model_validator(mode="after")
    def _one(self) -> SavedCheck:
        given = [k for k in ("answered", "contains", "matches") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("a check is one of answered, contains, matches")
        return self


class SavedTask(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    task: str = Field(min_length=1)
    check: SavedCheck
    tools: list[str] | None = None


class SavedModel(BaseModel):
    """A model as where to find it: the stand-in, or an endpoint and the name of its key's variable."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["stand-in", "openai-compatible", "anthropic"]
    model: str | None = None
    base_url: str | None = None
    key: str | None = None  # the environment variable's name
    temperature: float | None = None
    max_tokens: int | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    tool: str | None = None  # the stand-in's first call, when given
    arguments: dict[str, Any] | None = None
    max_calls: int | None = None

    @field_validator("key")
    @classmethod
    def _named(cls, value: str | None) -> str | None:
        if value is not None and not _VARIABLE.match(value):
            raise ValueError("a key is written as the name of the environment variable that holds it (such as OPENAI_API_KEY)")
        return value

    @model_validator(mode="after")
    def _complete(self) -> SavedModel:
        if self.kind != "stand-in" and not self.model:
            raise ValueError(f"a model of kind {self.kind} names the model the endpoint serves (model)")
        return self

    @property
    def deterministic(self) -> bool:
        return self.kind == "stand-in"


class SavedRow(BaseModel):
    """What the evaluation measured for one task and model."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    model: str
    episodes: int = Field(ge=0)
    passed: int = Field(ge=0)
    with_failures: int = Field(ge=0)
    recovered: int = Field(ge=0)


class SavedEvaluation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    tasks: list[SavedTask] = Field(min_length=1)
    models: dict[str, SavedModel] = Field(min_length=1)
    policy: dict[str, str] = Field(default_factory=dict)
    max_turns: int = Field(default=8, ge=1)
    repeats: int = Field(default=1, ge=1)
    budget: dict[str, float | int | None] | None = None
    system: str | None = None
    timeout: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    model_timeout: float = Field(default=120.0, gt=0, allow_inf_nan=False)
    expect: list[SavedRow] = Field(default_factory=list)

    @model_validator(mode="after")
    def _rows_named(self) -> SavedEvaluation:
        tasks = {task.id for task in self.tasks}
        if len(tasks) != len(self.tasks):
            raise ValueError("two tasks have the same id")
        for row in self.expect:
            if row.task_id not in tasks or row.model not in self.models:
                raise ValueError(f"expect names a task or a model the evaluation has not: {row.task_id!r}, {row.model!r}")
        return self
