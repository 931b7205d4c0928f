"""The changes tab: what changed for clients in each entry since its first version in this session.

A notebook is edited cell by cell; each re-run `%%mcp_tool` cell replaces its tool, and its card
says what changed since the version it replaced. This tab adds it up: for every tool, resource
and prompt of the kernel's server, the changes from the first version registered in this
session (since the kernel started, or `mcp_nb.reset()`) to the one clients see now, breaking
ones first, by the rules of `mcp_nb.diff`. Computed from the registry when shown (it keeps no
copy of its own); an outside server's changes are for `mcp_nb.diff` and its snapshots.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import ipywidgets as w

from mcp_nb.views.surface import changes_html, verdict
from mcp_nb.views.theme import MUTED
from mcp_nb.widgets.form import close_tree
from mcp_nb.widgets.style import note_html

KERNEL = "kernel"


class ChangesTab:
    """The widget of the tab, and `refresh()` from the registry."""

    def __init__(self, engine: Any, server: Callable[[], str]) -> None:
        self.engine = engine
        self.server = server  # the name of the connection the panel shows
        self.view = w.HTML()
        self.view.add_class("mcp-nb-changes-view")
        self.widget = w.VBox(
            [
                w.HTML(
                    note_html(
                        "What changed for clients since each entry's first version in this session, breaking changes first."
                    )
                ),
                self.view,
            ],
            layout=w.Layout(width="100%", padding="4px 2px"),
        )
        self.widget.add_class("mcp-nb-changes-tab")
        self.visible = False
        self.stale = True

    def changed(self) -> None:
        """The server's offers changed (a cell re-run): redraw now if shown, else when shown."""
        self.stale = True
        if self.visible:
            self.refresh()

    def show(self, visible: bool) -> None:
        self.visible = visible
        if visible and self.stale:
            self.refresh()

    def refresh(self) -> None:
        self.stale = False
        self.view.value = changes_page(self.engine, self.server())

    def close(self) -> None:
        close_tree(self.widget)


def changed_entries(registry: Any) -> list[tuple[str, str, list]]:
    """(kind, key, changes) of every entry that changed since its first version, the ones with a
    breaking change first, then by kind and key."""
    found = []
    for entry in registry.entries():
        rows = registry.changes_since_first(entry.kind, entry.key)
        if rows:
            found.append((entry.kind, entry.key, rows))
    return sorted(found, key=lambda item: (not any(verdict(r.breaking) == "breaking" for r in item[2]), item[0], item[1]))


def changes_page(engine: Any, server: str) -> str:
    if server != KERNEL:
        return note_html(
            f"Changes are followed for the kernel's own server. For {server}, take a snapshot "
            f"(mcp_nb.snapshot('{server}', path='before.json')) and compare later: mcp_nb.diff('before.json', '{server}')."
        )
    entries = changed_entries(engine.registry)
    if not entries:
        return f'<div style="{MUTED}">Nothing changed for clients since each entry was first registered in this session.</div>'
    parts = []
    for kind, key, rows in entries:
        title = f"{kind} {key} since its first version"
        parts.append(
            f'<div class="mcp-nb-entry-changes" style="margin:6px 0"><b>{html.escape(title)}</b>{changes_html(rows)}</div>'
        )
    return "".join(parts)
