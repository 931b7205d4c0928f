"""The panel's box for a connection whose OAuth flow waits for the person.

It shows the link to approve at and, for a remote kernel's flow (`OAuth(callback="paste")`),
a box for the address the browser lands on: what `mcp_nb.complete_auth(url)` does from a
cell, done from the panel. Finishing waits for the server (the token, the first listing),
so it runs on a thread of its own; the kernel stays free, and the panel hears the connection
change as it always does.
"""

from __future__ import annotations

import html
import threading
from collections.abc import Callable
from typing import Any

import ipywidgets as w

from mcp_nb.config import connect_seconds
from mcp_nb.mistakes import Mistake
from mcp_nb.views.theme import BORDER, ERROR, MUTED, SURFACE


class AuthorizationBox:
    """Hidden unless the connection it is shown for is authorizing."""

    def __init__(self, engine: Any, hand_over: Callable[..., None]) -> None:
        self.engine = engine
        self._hand_over = hand_over  # runs a function on the kernel's thread (the panel's guard)
        self.link = w.HTML()
        self.link.add_class("mcp-nb-authorize-link")
        self.address = w.Text(placeholder="the address the browser landed on", layout=w.Layout(width="auto", flex="1 1 auto"))
        self.address.add_class("mcp-nb-authorize-address")
        self.complete = w.Button(
            description="Complete", icon="key", button_style="primary", layout=w.Layout(width="auto", flex="0 0 auto")
        )
        self.complete.add_class("mcp-nb-authorize-complete")
        self.said = w.HTML()
        self.said.add_class("mcp-nb-authorize-said")
        self.paste = w.HBox([self.address, self.complete], layout=w.Layout(grid_gap="6px", width="100%"))
        self.widget = w.VBox([self.link, self.paste, self.said], layout=w.Layout(display="none", grid_gap="4px", margin="4px 0"))
        self.widget.add_class("mcp-nb-authorize")
        self.connection: Any = None
        self.finishing: threading.Thread | None = None

    def show_for(self, connection: Any) -> None:
        link = getattr(connection, "authorization_link", None)
        self.connection = connection
        if not link:
            self.widget.layout.display = "none"
            return
        pasted = connection.oauth.callback == "paste"
        then = (
            "then paste the address the browser lands on (its page will not load)"
            if pasted
            else "the notebook hears the approval by itself"
        )
        self.link.value = (
            f'<div style="{BORDER};border-radius:6px;{SURFACE};padding:4px 8px"><b>{html.escape(connection.name)}</b> '
            f'waits for your approval: <a href="{html.escape(link)}" target="_blank" rel="noopener">approve in the browser</a>'
            f' <span style="{MUTED}">({then})</span></div>'
        )
        self.paste.layout.display = "flex" if pasted else "none"
        self.widget.layout.display = "flex"

    def finish(self) -> None:
        """Hand the pasted address to the waiting flow, and wait for the connection off the kernel's thread."""
        url = self.address.value.strip()
        if not url:
            self._say("paste the whole address the browser landed on after approving", error=True)
            return
        try:
            connection = self.engine.hand_back(url)
        except Mistake as err:
            self._say(str(err), error=True)
            return
        self.complete.disabled = True
        self._say("authorizing…")
        self.finishing = threading.Thread(target=self._wait, args=(connection,), name="mcp_nb-authorize", daemon=True)
        self.finishing.start()

    def _wait(self, connection: Any) -> None:
        try:
            self.engine.authorized(connection, connect_seconds())
        except Exception as err:  # noqa: BLE001 - said in the box; the connection is gone (ConnectError) or never came
            self._hand_over(self._done, str(err))
            return
        self._hand_over(self._done, None)

    def _done(self, failure: str | None) -> None:
        self.complete.disabled = False
        self.address.value = ""
        if failure is not None:
            self._say(failure, error=True)
        else:
            self._say("")
            self.widget.layout.display = "none"

    def _say(self, text: str, error: bool = False) -> None:
        style = ERROR.text if error else MUTED
        self.said.value = f'<span style="{style}">{html.escape(text)}</span>' if text else ""
