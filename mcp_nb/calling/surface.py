"""A snapshot of a live server's surface: what it lists, read through a connection's session.

The kernel's own server is listed the way any other is, through its client session, so a
snapshot is what a client sees, whoever serves it: the kernel, a stdio process, a URL (a
served notebook among them). A kind the server declares no capability for is not asked for;
a listing is read to its last page.

A listing the server cannot give (an error, an answer that is not a listing, a connection that
is gone) ends the snapshot with one line saying which and why: half a snapshot would read, in a
diff, as everything else removed.

The kernel's own server is asked through the same session for what it says of itself (its
name, version, capabilities, era), and its listings are what its `MCPServer.list_*` methods
return, the very models its session would carry to the client: on a thousand tools the trip
through the protocol (the server serializing them, the client validating them again and caching
each output schema) cost two thirds of a snapshot (docs/performance.md, "Surfaces").
tests/test_surfaces.py checks that both ways give the same document.
"""

from __future__ import annotations

from typing import Any

from mcp import MCPError
from mcp_types import METHOD_NOT_FOUND
from pydantic import ValidationError

from mcp_nb.calling.era import MODERN_ERA
from mcp_nb.mistakes import one_line
from mcp_nb.records.surface import SurfaceError, document

PAGES = 1000  # a paginator that never ends cannot hang a snapshot
# kind -> (the client's method, the result's field, the capability that offers it)
LISTINGS = {
    "tool": ("list_tools", "tools", "tools", "tools/list"),
    "resource": ("list_resources", "resources", "resources", "resources/list"),
    "template": ("list_resource_templates", "resource_templates", "resources", "resources/templates/list"),
    "prompt": ("list_prompts", "prompts", "prompts", "prompts/list"),
}


async def take(connection: Any, through_session: bool = False) -> dict[str, Any]:
    """The snapshot document of the server behind `connection` (opened if need be).
    `through_session`: the kernel's listings too through the protocol, as an outside client reads them."""
    try:
        client = await connection.ready()
    except Exception as err:  # noqa: BLE001 - a connection that is gone, said in one line
        raise SurfaceError(f"no snapshot of {connection.name!r}: {one_line(err)}") from None
    session = client.session
    # An era pinned at the stateless one adopts it without asking the server (no server/discover):
    # what it offers is unknown, so every kind is listed, as the connection's own lists are.
    pinned = connection.mode == MODERN_ERA
    capabilities = None if pinned else session.server_capabilities
    listed: dict[str, list[dict[str, Any]]] = {}
    own = None if through_session else getattr(connection, "server", None)
    for kind, (method, field, capability, wire) in LISTINGS.items():
        if capabilities is not None and getattr(capabilities, capability, None) is None:
            listed[kind] = []  # not offered: nothing to ask for
            continue
        if own is not None:
            items = await getattr(own, method)()  # the kernel's MCPServer: what its list handler sends
        else:
            items = await _all(connection.name, getattr(client, method), field, wire)
        listed[kind] = [_wire(item) for item in items]
    info = session.server_info
    server: dict[str, Any] = dict(_wire(info) or {})
    server["instructions"] = session.instructions
    server["capabilities"] = _wire(capabilities)  # None when pinned: never asked, so not written
    server["protocol"] = session.protocol_version
    return document(server, listed)


async def _all(name: str, read: Any, field: str, method: str) -> list[Any]:
    items: list[Any] = []
    cursor = None
    for _ in range(PAGES):
        try:
            page = await read(cursor=cursor)
        except MCPError as err:
            if err.code == METHOD_NOT_FOUND:
                return items  # offered, then not answered: nothing of that kind, as the SDK's own client takes it
            raise SurfaceError(f"no snapshot of {name!r}: it answered {method} with error {err.code}: {one_line(err)}") from None
        except ValidationError as err:
            raise SurfaceError(
                f"no snapshot of {name!r}: its answer to {method} is not one the protocol allows ({err.error_count()} problems)"
            ) from None
        except Exception as err:  # noqa: BLE001 - the connection failed under the listing
            said = one_line(err)  # a peer's words may be in it: one bounded line
            raise SurfaceError(
                f"no snapshot of {name!r}: {method} failed: {type(err).__name__}" + (f": {said}" if said else "")
            ) from None
        items.extend(getattr(page, field))
        cursor = getattr(page, "next_cursor", None)
        if not cursor:
            return items
    raise SurfaceError(f"no snapshot of {name!r}: {method} went on for more than {PAGES} pages")


def _wire(model: Any) -> Any:
    """A protocol model as the wire carries it (its JSON names, what was left out left out)."""
    return None if model is None else model.model_dump(by_alias=True, exclude_none=True, mode="json")
