"""`completion/complete` for a served kernel: the values an argument already took in the history.

A client completing a prompt's argument or a resource template's variable gets the
values that argument had in earlier calls (the kernel's own and outside clients'),
the most recent first, those that start with what was typed (ignoring case). A
notebook's history is the one place that knows which values are real.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mcp.shared.uri_template import UriTemplate
from mcp_types import Completion, PromptReference

MAX_VALUES = 100  # the most a completion may carry (the specification's limit)


def install(engine: Any) -> None:
    """Answer `completion/complete` on the engine's server from its history."""

    async def complete(ref, argument, context) -> Completion:
        # A long history's frame takes a while to build: not on the loop, where every call runs.
        frame = await asyncio.to_thread(engine.history.to_frame)
        values = suggestions(frame, ref, argument.name, argument.value)
        return Completion(values=values[:MAX_VALUES], total=len(values), has_more=len(values) > MAX_VALUES)

    engine.server.completion()(complete)


def suggestions(frame, ref: Any, name: str, typed: str) -> list[str]:
    """The distinct earlier values of argument `name` of `ref` that start with `typed`, latest first."""
    if isinstance(ref, PromptReference):
        rows = frame[(frame["target"] == "prompt") & (frame["name"] == ref.name)]
        # Whatever a row holds (a client may have sent arguments of any shape), it never breaks this.
        values = [
            arguments.get(name) if isinstance(arguments, dict) else None for arguments in reversed(rows["arguments"].tolist())
        ]
    else:
        try:
            template = UriTemplate.parse(ref.uri)
        except ValueError:
            return []
        rows = frame[frame["target"] == "resource"]
        values = [(template.match(str(uri)) or {}).get(name) for uri in reversed(rows["name"].astype(str).tolist())]
    prefix = (typed or "").lower()
    seen: dict[str, None] = {}
    for value in values:
        if isinstance(value, str) and value.lower().startswith(prefix):
            seen.setdefault(value, None)
    return list(seen)
