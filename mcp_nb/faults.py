"""Faults injected into a registered tool on purpose, for teaching and for testing retries.

A fault is raised the way a real one would be (ToolError, an ordinary exception,
MCPError, a slow handler), from inside the handler, so it travels the same path and
is classified the same way: nothing downstream knows it was injected, except the
message. With a seed, each call's fate depends only on the seed, the call's arguments
and how many times those arguments were sent before, so a sweep gives the same
outcomes whatever order its concurrent calls arrive in.
"""

from __future__ import annotations

import json
import random
import threading
from dataclasses import dataclass, field
from typing import Any

INJECTED_CODE = -32050  # an application code (-32000..-32099): "busy, try again"
KINDS = ("tool_error", "crash", "protocol_error")


@dataclass
class Faults:
    latency: float = 0.0  # seconds added before the handler runs
    tool_error: float = 0.0  # probability of raising ToolError
    crash: float = 0.0  # probability of raising an ordinary exception
    protocol_error: float = 0.0  # probability of raising MCPError(INJECTED_CODE)
    seed: int | None = None
    _seen: dict[str, int] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.latency, (int, float)) or isinstance(self.latency, bool) or self.latency < 0:
            raise ValueError(f"latency must be a number of seconds >= 0, got {self.latency!r}")
        for kind in KINDS:
            p = getattr(self, kind)
            if not isinstance(p, (int, float)) or isinstance(p, bool) or not 0 <= p <= 1:
                raise ValueError(f"{kind} must be a probability between 0 and 1, got {p!r}")
        if self.tool_error + self.crash + self.protocol_error > 1:
            raise ValueError("the fault probabilities add up to more than 1")
        if self.seed is not None and (not isinstance(self.seed, int) or isinstance(self.seed, bool)):
            raise ValueError(f"seed must be an integer, got {self.seed!r}")

    @classmethod
    def parse(cls, spec: str) -> Faults:
        """`"latency=0.5,tool_error=0.1,crash=0.05,protocol_error=0.05,seed=1"` to Faults."""
        values: dict[str, Any] = {}
        for part in filter(None, (p.strip() for p in spec.split(","))):
            key, sep, raw = part.partition("=")
            key = key.strip()
            if not sep:
                raise ValueError(f"expected key=value in the fault spec, got {part!r}")
            if key not in ("latency", "seed", *KINDS):
                raise ValueError(f"unknown fault {key!r}; known: latency, tool_error, crash, protocol_error, seed")
            try:
                values[key] = int(raw) if key == "seed" else float(raw)
            except ValueError:
                raise ValueError(f"{key} takes a number, got {raw!r}") from None
        return cls(**values)

    def describe(self) -> str:
        parts = [f"latency={self.latency:g}"] if self.latency else []
        parts += [f"{kind}={getattr(self, kind):g}" for kind in KINDS if getattr(self, kind)]
        if self.seed is not None:
            parts.append(f"seed={self.seed}")
        return ",".join(parts) or "none"

    def draw(self, kwargs: dict[str, Any]) -> str | None:
        """Which fault (if any) this call gets."""
        if self.seed is None:
            u = random.random()
        else:
            key = json.dumps(kwargs, sort_keys=True, default=lambda v: type(v).__name__)
            with self._lock:
                nth = self._seen.get(key, 0)
                self._seen[key] = nth + 1
            u = random.Random(f"{self.seed}:{key}:{nth}").random()
        edge = 0.0
        for kind in KINDS:
            edge += getattr(self, kind)
            if u < edge:
                return kind
        return None


def raise_fault(kind: str | None, tool: str) -> None:
    """Raise the injected fault the way a real handler would."""
    if kind is None:
        return
    if kind == "tool_error":
        from mcp.server.mcpserver.exceptions import ToolError

        raise ToolError(f"injected tool error in {tool}")
    if kind == "protocol_error":
        from mcp import MCPError

        raise MCPError(code=INJECTED_CODE, message=f"injected protocol error in {tool}: busy, try again")
    raise InjectedCrash(f"injected crash in {tool}")


class InjectedCrash(RuntimeError):
    """An ordinary exception, as an unexpected bug would raise."""
