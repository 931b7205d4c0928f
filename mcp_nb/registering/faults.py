"""Faults injected into a registered tool on purpose, for teaching and for testing retries.

A fault is raised the way a real one would be (ToolError, an ordinary exception,
MCPError, a slow handler), from inside the handler, so it travels the same path and
is classified the same way: nothing downstream knows it was injected, except the
message. With a seed, each call's fate depends only on the seed, the call's arguments
and how many times those arguments were sent before, so a sweep gives the same
outcomes whatever order its concurrent calls arrive in.

That count is kept for the SEEN_KEPT argument sets drawn last: a tool swept over millions
of argument sets keeps a bounded memory, and a retry, which comes back to its arguments
before that many others were drawn, still gets its next draw. An argument set forgotten
draws as if it had never been sent.
"""

from __future__ import annotations

import collections
import hashlib
import json
import math
import numbers
import random
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mcp import MCPError
from mcp.server.mcpserver.exceptions import ToolError

from mcp_nb.mistakes import BadType, BadValue

# "Busy, try again": mcp_nb's own convention, not the guides' (they name no busy code). It is an
# application code (-32000..-32099) the SDK does not use itself, and means nothing else here.
INJECTED_CODE = -32050
KINDS = ("tool_error", "crash", "protocol_error")
FIELDS = ("latency", *KINDS, "seed")
# Long enough for any deadline worth teaching with; short enough that the worker thread a
# sync tool sleeps in comes back (time.sleep itself overflows near 1e10 s).
MAX_LATENCY = 3600.0
# The argument sets whose draws a seeded spec counts (a few MB at most: each is a 32-character digest).
SEEN_KEPT = 65_536


@dataclass(frozen=True)
class Faults:
    """Faults to inject, checked when made and never changed after: a value, equal to another
    when it describes the same faults (what a seeded spec has drawn so far is not part of it)."""

    latency: float = 0.0  # seconds added before the handler runs
    tool_error: float = 0.0  # probability of raising ToolError
    crash: float = 0.0  # probability of raising an ordinary exception
    protocol_error: float = 0.0  # probability of raising MCPError(INJECTED_CODE)
    seed: int | None = None
    # digest of an argument set -> its draws so far, the least recently drawn first
    _seen: collections.OrderedDict[str, int] = field(
        default_factory=collections.OrderedDict, init=False, repr=False, compare=False
    )
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        latency = _finite("latency", self.latency)
        if not 0 <= latency <= MAX_LATENCY:
            raise BadValue(f"latency must be seconds between 0 and {MAX_LATENCY:g}, got {self.latency!r}")
        object.__setattr__(self, "latency", latency)
        for kind in KINDS:
            p = _finite(kind, getattr(self, kind))
            if not 0 <= p <= 1:
                raise BadValue(f"{kind} must be a probability between 0 and 1, got {getattr(self, kind)!r}")
            object.__setattr__(self, kind, p)
        # A little slack, so that 0.7 + 0.2 + 0.1 (0.9999999999999999 or 1.0000000000000002) is 1.
        if self.tool_error + self.crash + self.protocol_error > 1 + 1e-9:
            raise BadValue("the fault probabilities add up to more than 1")
        if self.seed is not None:
            if not isinstance(self.seed, numbers.Integral) or isinstance(self.seed, bool):
                raise BadValue(f"seed must be a whole number, got {self.seed!r}")
            object.__setattr__(self, "seed", int(self.seed))

    @classmethod
    def parse(cls, spec: str) -> Faults:
        """`"latency=0.5,tool_error=0.1,crash=0.05,protocol_error=0.05,seed=1"` to Faults."""
        values: dict[str, Any] = {}
        for part in filter(None, (p.strip() for p in spec.split(","))):
            key, sep, raw = part.partition("=")
            key = key.strip()
            if not sep:
                raise BadValue(f"expected key=value in the fault spec, got {part!r}")
            _known(key)
            if key in values:
                raise BadValue(f"{key} is given twice in the fault spec")
            try:
                values[key] = int(raw) if key == "seed" else float(raw)
            except ValueError:
                kind = "a whole number" if key == "seed" else "a number"
                raise BadValue(f"{key} takes {kind}, got {raw.strip()!r}") from None
        return cls(**values)

    @classmethod
    def from_spec(cls, spec: Faults | str | Mapping[str, Any]) -> Faults:
        """Faults from any spelling a user may give: a Faults, a spec string or a dict of the same."""
        if isinstance(spec, Faults):
            return spec
        if isinstance(spec, str):
            return cls.parse(spec)
        if isinstance(spec, Mapping):
            for key in spec:
                _known(key)
            return cls(**spec)
        raise BadType(f"faults must be a spec string, a dict, a Faults or None, got {type(spec).__name__}")

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
                nth = self._count(_digest(key), 1) - 1
            u = random.Random(f"{self.seed}:{key}:{nth}").random()
        edge = 0.0
        for kind in KINDS:
            edge += getattr(self, kind)
            if u < edge:
                return kind
        return None

    def drawn(self) -> dict[str, int]:
        """How many times each argument set (by a digest of its JSON) has drawn a fault, for the
        argument sets drawn last: what another process hosting this tool counts on from."""
        with self._lock:
            return dict(self._seen)

    def count(self, drawn: Mapping[str, int]) -> None:
        """Count draws made elsewhere (`drawn()` of a copy of this spec in another process) as
        this spec's own: the next call here draws what it would have had they been made here."""
        with self._lock:
            for digest, n in drawn.items():
                self._count(digest, n)

    def _count(self, digest: str, n: int) -> int:
        seen = self._seen
        total = seen.pop(digest, 0) + n  # popped and put back: now the most recently drawn
        seen[digest] = total
        while len(seen) > SEEN_KEPT:
            seen.popitem(last=False)
        return total


def _digest(key: str) -> str:
    # The arguments may be large; what is kept of them is this.
    return hashlib.blake2b(key.encode(), digest_size=16).hexdigest()


def raise_fault(kind: str | None, tool: str) -> None:
    """Raise the injected fault the way a real handler would."""
    if kind is None:
        return
    if kind == "tool_error":
        raise ToolError(f"injected tool error in {tool}")
    if kind == "protocol_error":
        raise MCPError(code=INJECTED_CODE, message=f"injected protocol error in {tool}: busy, try again")
    raise InjectedCrash(f"injected crash in {tool}")


class InjectedCrash(RuntimeError):
    """An ordinary exception, as an unexpected bug would raise."""


def _known(key: Any) -> None:
    # Only the public fields: `_seen` and `_lock` are the spec's own bookkeeping.
    if key not in FIELDS:
        raise BadValue(f"unknown fault {key!r}; known: {', '.join(FIELDS)}")


def _finite(name: str, value: Any) -> float:
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise BadValue(f"{name} must be a number, got {value!r}")
    try:
        number = float(value)
    except OverflowError:  # an integer (or fraction) too large for a float: 10**400
        number = math.inf
    if not math.isfinite(number):
        raise BadValue(f"{name} must be a finite number, got {value!r}")
    return number
