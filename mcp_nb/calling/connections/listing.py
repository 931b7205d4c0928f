"""What an outside server offers, read from its lists: its tools, resources, templates and prompts.

Each kind (`KINDS`: its own listing, and its own notice that it changed) is listed when the
server's capabilities say it has it (every kind when the era is
pinned to the stateless one, where the server was never asked). A listing the server answers
with an error, or with what is not a listing, leaves that kind unavailable, and says why (its
words in one bounded line, `mistakes.one_line`): one broken list must not hide the tools. What only the connection can judge
(an HTTP error, a broken transport) is raised to it.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import TypeVar

from mcp import Client, MCPError
from mcp_types import METHOD_NOT_FOUND, ToolAnnotations
from pydantic import BaseModel, ValidationError

from mcp_nb import sdk_compat
from mcp_nb.mistakes import one_line
from mcp_nb.registering.registry import ANNOTATION_FLAGS, Registration, prompt_schema, template_schema

log = logging.getLogger(__package__)

# What a server lists, each kind read by a listing (or two: resources and their templates) of its own.
KINDS = ("tools", "resources", "prompts")

Listing = TypeVar("Listing")
Item = TypeVar("Item")


@dataclasses.dataclass
class Catalog:
    """What a server offers: its entries, each tool's annotations, and the kinds that could not be listed (and why)."""

    entries: list[Registration] = dataclasses.field(default_factory=list[Registration])
    annotations: dict[str, ToolAnnotations | None] = dataclasses.field(default_factory=dict[str, "ToolAnnotations | None"])
    unavailable: dict[str, str] = dataclasses.field(default_factory=dict[str, str])  # the listing's field -> why


async def read(client: Client, every_kind: bool, said: Callable[[str], None], kinds: Collection[str] = KINDS) -> Catalog:
    """Read what the server on `client` offers of `kinds` (what it lacks a capability for is simply
    empty); `every_kind`: list them all, whatever the capabilities say (none were asked for).
    `said(why)` hears at once of each kind that could not be listed."""
    caps = None if every_kind else client.session.server_capabilities
    catalog = Catalog()
    entries = catalog.entries

    def unavailable(field: str, why: str) -> None:
        catalog.unavailable[field] = why
        said(why)

    if "tools" in kinds and (caps is None or caps.tools is not None):
        for tool in await _listed(client.list_tools, "tools", lambda listing: listing.tools, unavailable):
            hints = tool.annotations
            catalog.annotations[tool.name] = hints
            flags = {
                camel: True
                for flag, camel in ANNOTATION_FLAGS.items()
                if hints is not None and getattr(hints, f"{flag}_hint", None)
            }
            entries.append(
                Registration(
                    # A title may live only in the annotations (an older habit servers keep).
                    kind="tool",
                    name=tool.name,
                    title=tool.title or (hints.title if hints is not None else None),
                    description=tool.description,
                    annotations=flags,
                    input_schema=tool.input_schema,
                    output_schema=tool.output_schema,
                    execution=_sent(tool.execution),
                    meta=tool.meta,
                )
            )
    if "resources" in kinds and (caps is None or caps.resources is not None):
        for resource in await _listed(client.list_resources, "resources", lambda listing: listing.resources, unavailable):
            entries.append(
                Registration(
                    kind="resource",
                    name=resource.name,
                    uri=str(resource.uri),
                    title=resource.title,
                    description=resource.description,
                    mime_type=resource.mime_type,
                    meta=resource.meta,
                )
            )
        templates = await _listed(
            client.list_resource_templates, "resource_templates", lambda listing: listing.resource_templates, unavailable
        )
        for template in templates:
            entries.append(
                Registration(
                    kind="resource",
                    name=template.name,
                    uri=template.uri_template,
                    title=template.title,
                    description=template.description,
                    mime_type=template.mime_type,
                    input_schema=template_schema(template.uri_template),
                    meta=template.meta,
                )
            )
    if "prompts" in kinds and (caps is None or caps.prompts is not None):
        for prompt in await _listed(client.list_prompts, "prompts", lambda listing: listing.prompts, unavailable):
            entries.append(
                Registration(
                    kind="prompt",
                    name=prompt.name,
                    title=prompt.title,
                    description=prompt.description,
                    input_schema=prompt_schema(prompt.arguments),
                    meta=prompt.meta,
                )
            )
    return catalog


async def _listed(
    read: Callable[[], Awaitable[Listing]],
    field: str,
    items: Callable[[Listing], Sequence[Item]],
    unavailable: Callable[[str, str], None],
) -> list[Item]:
    """What one listing holds. A server that does not offer the method ("Method not found",
    though its capabilities said otherwise) offers nothing of that kind, as the SDK's own
    client takes it. One that answers with an error, or with a listing that is not one,
    leaves the kind unavailable (`unavailable(field, why)`). An HTTP error (a 401, a lost
    session) or a broken transport is the connection's failure, raised."""
    try:
        return list(items(await read()))
    except MCPError as err:
        if err.code == METHOD_NOT_FOUND:
            log.info("the server does not offer %s (%s): none listed", field, one_line(err))
            return []
        if err.error.message in sdk_compat.HTTP_STATUS_TEXTS:
            raise
        why = f"the server answered {field.replace('_', ' ')}/list with error {err.code}: {one_line(err)}"
    except ValidationError as err:
        count = err.error_count()
        why = (
            f"the server's {field.replace('_', ' ')} listing is not one the protocol allows "
            f"({count} problem{'s' if count != 1 else ''}; first: {_first_problem(err)})"
        )
    unavailable(field, why)
    return []


def _sent(model: BaseModel | None) -> dict[str, object] | None:
    """A listed model as the server sent it (its wire names, what it left out left out)."""
    return None if model is None else model.model_dump(by_alias=True, exclude_none=True, mode="json")


def _first_problem(err: ValidationError) -> str:
    problem = err.errors(include_url=False)[0]
    where = ".".join(str(part) for part in problem.get("loc", ())) or "the answer"
    return one_line(f"{where}: {problem.get('msg', '')}")  # the places are the server's keys: any text at all
