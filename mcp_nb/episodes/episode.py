"""What an episode leaves: the task, each turn of the model, each tool call it asked for, how it ended.

An `Episode` is data first. Each `Step` (a tool call the model asked for) holds the call's Outcome,
the same object the history recorded (or, for a call the host did not send, why not), and what the
model was told of it (`policy.Told`); each `Turn` holds the model's words and what it cost. The
episode shows itself as the conversation (`views/episode.py`), each call's card inline, and turns
into plain rows (`row()`), which is what the history keeps and `records/recovery.py` reads.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcp_nb import libraries as lib
from mcp_nb.episodes.policy import Told, policy_text
from mcp_nb.records.episode_log import STEP_FIELDS, EpisodeLog, row_of
from mcp_nb.records.recovery import fates, measures
from mcp_nb.views.episode import episode_html, episode_text

if TYPE_CHECKING:
    import pandas as pd

    from mcp_nb.records.outcome import Outcome

_ids = itertools.count(1)  # process-wide, as call ids are: unique across mcp_nb.reset()


def next_id() -> int:
    return next(_ids)


@dataclass(eq=False, slots=True)
class Step:
    """One tool call the model asked for. `outcome` is the call's final Outcome, None when the host
    did not send it (`reason` says why); `told` is what the model was told of it, None when the
    host ended the episode instead."""

    turn: int
    index: int
    request_id: str
    name: str
    arguments: str  # as the model wrote them
    outcome: Outcome | None = None
    told: Told | None = None
    reason: str | None = None

    @property
    def kind(self) -> str:
        return "not_sent" if self.outcome is None else self.outcome.outcome

    @property
    def failed(self) -> bool:
        return self.kind != "result"

    def kept(self) -> tuple:
        """The step as plain values, in STEP_FIELDS' order: what an episode's record keeps of it."""
        sent, told = self.outcome, self.told
        if sent is None:
            return (self.turn, self.index, None, self.name, self.arguments, "not_sent", self.reason, *(told or _NOT_TOLD))
        # The arguments as sent (a dict: the same arguments written in another order are equal); the
        # text the model wrote when nothing was sent
        return (self.turn, self.index, sent.call_id, self.name, sent.arguments, sent.outcome, sent.cause, *(told or _NOT_TOLD))

    def row(self) -> dict[str, Any]:
        return dict(zip(STEP_FIELDS, self.kept()))


_NOT_TOLD = (None, None, None)


@dataclass(eq=False, slots=True)
class Turn:
    """One reply of the model: its words, the tools it asked for, and what the reply cost."""

    number: int
    content: str | None
    steps: list[Step] = field(default_factory=list)
    finish: str | None = None
    model_ms: float = 0.0
    tokens: int | None = None


@dataclass(eq=False)
class Episode:
    """One task given to one model with a server's tools, from the task to how it ended.

    `stop`: `answered` (the model replied without a tool call; `answer` is its reply),
    `out_of_turns`, `model_failed` (it raised, timed out, or its reply could not be read:
    `detail`), `budget` (which part in `detail`), `host_stopped` (the policy ends the episode
    after such a call), `cancelled` (an interrupt, a reset). `passed` is the check's verdict in an
    evaluation (None when not judged). `messages` is the conversation as the model was sent it."""

    id: int
    task: str
    model: str
    model_kind: str = "function"
    model_label: str = ""
    server: str = "kernel"
    tools: tuple[str, ...] = ()
    policy: dict[str, str] = field(default_factory=dict)
    max_turns: int = 8
    budget: dict[str, Any] | None = None
    turns: list[Turn] = field(default_factory=list)
    stop: str = "cancelled"
    detail: str | None = None
    answer: str | None = None
    started: float = 0.0
    duration_ms: float = 0.0
    tokens: int | None = None
    evaluation: str | None = None
    variant: str | None = None
    task_id: str | None = None
    repeat: int | None = None
    passed: bool | None = None
    check_error: str | None = None  # why the check itself failed (it raised)
    messages: list[dict[str, Any]] = field(default_factory=list, repr=False)
    traceback: str | None = field(default=None, repr=False)  # the model function's, when it raised (keys taken out)

    @property
    def steps(self) -> list[Step]:
        return [step for turn in self.turns for step in turn.steps]

    @property
    def calls(self) -> list[Outcome]:
        """The Outcomes of the calls made, in order: the same objects the history recorded."""
        return [step.outcome for step in self.steps if step.outcome is not None]

    @property
    def stand_in(self) -> bool:
        return self.model_kind == "stand-in"

    def fates(self) -> list[str | None]:
        """Each step's fate (`records/recovery.py`): None for a result."""
        return fates([s.row() for s in self.steps], self.stop)

    def measures(self) -> dict[str, int]:
        return measures([s.row() for s in self.steps], self.stop)

    def recovery(self) -> pd.DataFrame:
        """One row per failed step: turn, tool, arguments, how it ended, what the model was told, its fate."""
        rows = [s.row() for s in self.steps]
        found = [
            {"turn": r["turn"], "name": r["name"], "arguments": r["arguments"], "outcome": r["outcome"], "cause": r["cause"],
             "told": r["told"], "fate": fate}
            for r, fate in zip(rows, fates(rows, self.stop), strict=True) if fate is not None
        ]  # fmt: skip
        return lib.pandas.DataFrame(found, columns=["turn", "name", "arguments", "outcome", "cause", "told", "fate"])

    def kept(self) -> tuple:
        """The episode as plain values, in KEPT_FIELDS' order, its steps' (`Step.kept`) last: what
        the history keeps of it (a tuple made once as it ends, a row when read)."""
        return (
            self.id, self.evaluation, self.task_id, self.task, self.model, self.variant, self.repeat, self.server, self.stop,
            self.detail, self.answer, self.passed, len(self.turns), self.tokens, self.started, self.duration_ms,
            policy_text(self.policy), tuple(step.kept() for turn in self.turns for step in turn.steps),
        )  # fmt: skip

    def row(self) -> dict[str, Any]:
        """The episode as a row (`recovery.EPISODE_COLUMNS`' own, and its `steps`)."""
        return row_of(self.kept())

    def _repr_html_(self) -> str:
        return episode_html(self)

    def __repr__(self) -> str:
        return episode_text(self)

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(repr(self))


def log_of(history: Any) -> EpisodeLog:
    """The episodes a history keeps (`History.record_episode`, read by `History.episodes()`)."""
    return history.episode_log
