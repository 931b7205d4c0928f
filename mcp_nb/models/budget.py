"""How much an episode, or a whole evaluation, may spend: turns, tokens, seconds.

A `Budget` is what the user allows; a `Spending` is what one episode (or one evaluation, shared
by its episodes) has spent so far. The loop asks `reached()` before each turn and after each
reply: a budget reached ends the episode with the stop `budget`, naming which part (a reply that
overspent is kept: it was paid for). Tokens are counted as the model reports them; a model that
reports none spends none, which an episode's `tokens` shows as missing rather than as zero.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from mcp_nb.mistakes import BadType, BadValue

PARTS = ("turns", "tokens", "seconds")


@dataclass(frozen=True)
class Budget:
    """At most `turns` replies of the model, `tokens` tokens (prompt and completion, as reported),
    `seconds` of wall time; None: no limit on that part."""

    turns: int | None = None
    tokens: int | None = None
    seconds: float | None = None

    def __post_init__(self) -> None:
        for part in ("turns", "tokens"):
            value = getattr(self, part)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise BadValue(f"a budget's {part} must be a whole number >= 1 (or None), got {value!r}")
        seconds = self.seconds
        if seconds is not None and (
            isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) or seconds <= 0
        ):
            raise BadValue(f"a budget's seconds must be a positive number (or None), got {seconds!r}")

    @classmethod
    def of(cls, value: Any) -> Budget | None:
        """`budget=` as given: None, a Budget, or a dict of its parts."""
        if value is None or isinstance(value, Budget):
            return value
        if isinstance(value, dict):
            unknown = sorted(set(value) - set(PARTS))
            if unknown:
                raise BadValue(f"a budget has {', '.join(PARTS)}; not {', '.join(map(str, unknown))}")
            return cls(**value)
        raise BadType(
            f"a budget is mcp_nb.Budget(turns=..., tokens=..., seconds=...) or a dict of those, not {type(value).__name__}"
        )

    def as_dict(self) -> dict[str, Any]:
        return {"turns": self.turns, "tokens": self.tokens, "seconds": self.seconds}


@dataclass
class Spending:
    """What has been spent against a budget so far."""

    turns: int = 0
    tokens: int | None = None
    started: float = field(default_factory=time.monotonic)

    def spent(self, tokens: int | None) -> None:
        """One more reply, and the tokens it reports."""
        self.turns += 1
        if tokens is not None:
            self.tokens = (self.tokens or 0) + tokens

    def reached(self, budget: Budget | None) -> str | None:
        """The part of `budget` reached, said as a sentence's end; None while there is some left."""
        if budget is None:
            return None
        if budget.turns is not None and self.turns >= budget.turns:
            return f"turns: {self.turns} of {budget.turns}"
        if budget.tokens is not None and (self.tokens or 0) >= budget.tokens:
            return f"tokens: {self.tokens} of {budget.tokens}"
        if budget.seconds is not None and time.monotonic() - self.started >= budget.seconds:
            return f"seconds: {budget.seconds:g} s"
        return None

    def seconds_left(self, budget: Budget | None) -> float:
        if budget is None or budget.seconds is None:
            return math.inf
        return budget.seconds - (time.monotonic() - self.started)
