"""What the panel's picker and title say of a server's entries: labels and tooltips in one safe,
bounded line each (a server names its tools as it likes), the title's counts and server."""

from __future__ import annotations

from typing import Any

from mcp_nb.mistakes import one_line, visible
from mcp_nb.registering.registry import Registration
from mcp_nb.views.theme import MUTED, escape
from mcp_nb.widgets.style import (
    ERROR,
    kind_label,
)


def entry_key(entry: Registration) -> tuple[str, str]:
    return (entry.kind, entry.key)


NBSP = "\u00a0"  # an <option> collapses ordinary spaces; these keep the columns aligned


NAME_SHOWN = 40  # characters of a name the picker shows; a longer one is shortened in the middle


def picker_label(entry: Registration) -> str:
    return f"{kind_label(entry):<9}".replace(" ", NBSP) + shortened(visible(entry.key, inline=True))  # a server's name for it: one safe line


def shortened(name: str, limit: int = NAME_SHOWN) -> str:
    """`name`, or its start and its end around an ellipsis when it is longer than `limit`.

    A `<select>` cuts an option at its right edge, where long names that share a prefix
    (`report_sales_by_region`, `report_sales_by_product`) differ: both ends stay.
    """
    if len(name) <= limit:
        return name
    head = (limit - 1) // 2
    return name[:head] + "…" + name[-(limit - 1 - head) :]


def picker_tooltip(entry: Registration) -> str:
    """The entry on screen, named in full: a `<select>` cuts its options at its width, and
    gives none of them a tooltip of its own."""
    return f"{kind_label(entry)} {visible(entry.key, inline=True)}"


def server_tooltip(engine, name: str) -> str:
    return f"server: {name}" + (" (the in-kernel server)" if name == engine.connection.name else "")


def title_html(engine, entries: list[Registration], connection: Any = None) -> str:
    counts: dict[str, int] = {}
    for e in entries:
        counts[kind_label(e)] = counts.get(kind_label(e), 0) + 1
    order = ("tool", "resource", "template", "prompt")
    parts = ", ".join(f"{counts[k]} {k}{'s' if counts[k] != 1 else ''}" for k in order if k in counts) or "nothing registered"
    if connection is None or connection.transport == "in-kernel":
        where = f"in-kernel server <code>{escape(str(getattr(engine.server, 'name', 'mcp_nb')))}</code>"
    else:
        row = connection.describe()
        who = " ".join(one_line(p, 100) for p in (row["server_name"], row["server_version"]) if p) or connection.name
        state = "" if row["state"] == "connected" else f' <b style="{ERROR.text}">{escape(row["state"])}</b>'
        where = f"{escape(connection.transport)} server <code>{escape(connection.name)}</code> ({escape(who)}){state}"
    replaced = (
        f' · <b class="mcp-nb-replaced" style="{ERROR.text}">replaced by mcp_nb.reset(): show a new panel</b>'
        if engine.closed
        else ""
    )
    return (
        f'<div style="display:flex;align-items:baseline;gap:10px;margin:0 0 4px">'
        f'<b style="font-size:1.1em">MCP panel</b><span style="{MUTED}">'
        f"{where} · {parts}{replaced}</span></div>"
    )
