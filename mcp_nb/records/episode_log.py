"""The episodes of a history, kept as plain values: each episode a tuple made once as it ends.

An episode of a model in the loop (`mcp_nb/episodes/`) leaves its calls in the history, each with
its `episode` and `turn`, and leaves itself here: its task, its model, how it ended, and its steps
(the tool calls its model asked for, those the host did not send included). Kept as tuples, as the
history keeps a call as a row, so that an episode's Outcomes die young; each is a row (a dict)
again when read, which is what `records/recovery.py` reads.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

# An episode's values in their order (`Episode.kept`), its steps' last; a step's in theirs.
KEPT_FIELDS = (
    "episode",
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
    "tokens",
    "started_at",
    "duration_ms",
    "policy",
    "steps",
)
STEP_FIELDS = ("turn", "index", "call_id", "name", "arguments", "outcome", "cause", "told", "told_error", "rule")


class Ended(Protocol):
    """An episode as the history keeps it when it ends (`mcp_nb.Episode`): its id, its values."""

    @property
    def id(self) -> int: ...

    def kept(self) -> tuple[Any, ...]: ...


def row_of(kept: tuple[Any, ...]) -> dict[str, Any]:
    """An episode kept as a tuple, as a row: a dict of KEPT_FIELDS, its steps dicts of STEP_FIELDS."""
    row = dict(zip(KEPT_FIELDS, kept))
    row["steps"] = [dict(zip(STEP_FIELDS, step)) for step in row["steps"]]
    return row


class EpisodeLog:
    """The episodes of one history, each recorded once (by its id), from any thread."""

    def __init__(self) -> None:
        self._kept: dict[int, tuple[Any, ...]] = {}
        self._lock = threading.Lock()

    def record(self, episode: Ended) -> tuple[Any, ...] | None:
        """Keep `episode` (anything with `id` and `kept()`), unless one of its id is kept already;
        what was kept, or None when it was kept before."""
        kept = episode.kept()
        with self._lock:
            if episode.id in self._kept:
                return None
            self._kept[episode.id] = kept
        return kept

    def rows(self) -> list[dict[str, Any]]:
        with self._lock:
            kept = list(self._kept.values())
        return [row_of(k) for k in kept]

    def clear(self) -> None:
        with self._lock:
            self._kept = {}

    def __len__(self) -> int:
        return len(self._kept)
