"""What a server suggests for an argument (`completion/complete`): the values a prompt's or a
resource template's argument may take, given what is typed and the other arguments so far.
Asked by the magics' tab completion and the panel's fields; a server that cannot suggest
suggests nothing."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from mcp_types import PromptReference, ResourceTemplateReference

log = logging.getLogger("mcp_nb")
SUGGEST_WITHIN_S = 1.0  # the longest anyone typing waits for a server's suggestions


async def suggested(connection: Any, entry: Any, field: str, typed: str, context: dict[str, str] | None = None) -> list[str]:
    """The server's suggestions for `field` of `entry` (a prompt or a resource template)."""
    if entry.kind not in ("prompt", "resource") or not getattr(connection, "is_open", False):
        return []

    ref = (
        PromptReference(type="ref/prompt", name=entry.name)
        if entry.kind == "prompt"
        else (ResourceTemplateReference(type="ref/resource", uri=entry.uri))
    )
    others = {k: v for k, v in (context or {}).items() if k != field and isinstance(v, str)}

    async def ask() -> list[str]:
        client = await connection.ready()
        answer = await client.complete(ref, {"name": field, "value": typed}, context_arguments=others or None)
        return [str(value) for value in answer.completion.values]

    try:
        return await asyncio.wait_for(ask(), SUGGEST_WITHIN_S)
    except Exception:  # noqa: BLE001 - a server that cannot suggest suggests nothing
        log.debug("completion/complete for %s %r failed", entry.kind, field, exc_info=True)
        return []
