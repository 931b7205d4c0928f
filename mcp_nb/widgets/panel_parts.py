"""The panel's parts, built once: the picker, the call box, the controls and the tabs. A mixin of
`widgets.panel.Panel`, which wires them to what they do."""

from __future__ import annotations

import ipywidgets as w

from mcp_nb.config import settings
from mcp_nb.widgets.agent_tab import AgentTab
from mcp_nb.widgets.authorize import AuthorizationBox
from mcp_nb.widgets.changes_tab import ChangesTab
from mcp_nb.widgets.history_tab import HistoryTab
from mcp_nb.widgets.picker import server_tooltip
from mcp_nb.widgets.question import Asker
from mcp_nb.widgets.style import (
    STYLESHEET,
    section,
)

FORM, RAW = "form", "raw JSON"  # the two ways of writing a call's arguments


def seconds_text(value: float) -> str:
    return f"{value:g}"


class PanelParts:
    """The building of a Panel's widgets (its attributes are the Panel's)."""

    # -- the panel's parts, built once ----------------------------------------------------------------

    def _build_picker(self) -> w.VBox:
        """The left column: the server (and its authorization link while one waits), the filter, the entries."""
        engine = self.engine
        self.servers = w.Dropdown(
            options=list(engine.connections),
            value=self.server,
            tooltip=server_tooltip(engine, self.server),
            layout=w.Layout(width="auto"),
        )
        self.servers.add_class("mcp-nb-servers")
        self.filter = w.Text(placeholder="filter by name", layout=w.Layout(width="auto"))
        self.filter.add_class("mcp-nb-filter")
        # The options hold the full names; the entry on screen is also named by the tooltip.
        self.picker = w.Select(options=[], value=None, rows=18, tooltip="", layout=w.Layout(width="auto"))
        self.picker.add_class("mcp-nb-picker")
        # The column is as wide as its longest name (`NAME_SHOWN` characters at most), from
        # 250px up to 45% of the panel; the tooltip and the header name the chosen entry in full.
        # A connection whose OAuth flow waits for the person: the link, and where its answer goes.
        self.authorize = AuthorizationBox(engine, lambda fn, *args: self._guard.enter("finishing an authorization", fn, *args))
        self.picker_box = w.VBox(
            [
                w.HTML(section("server")),
                self.servers,
                self.authorize.widget,
                w.HTML(section("on the server")),
                self.filter,
                self.picker,
            ],
            layout=w.Layout(width="auto", min_width="250px", max_width="45%", flex="0 1 auto", margin="0 14px 0 0"),
        )
        return self.picker_box

    def _build_call_box(self) -> w.VBox:
        """The right column: the chosen entry, its form or raw JSON, the controls, and what came back."""
        self.header = w.HTML()
        self.header.add_class("mcp-nb-entry")
        self.mode = w.ToggleButtons(options=[FORM, RAW], value=FORM, style={"button_width": "88px"})
        self.mode.add_class("mcp-nb-mode")
        self.form_box = w.Box(layout=w.Layout(width="100%"))
        self.form_box.add_class("mcp-nb-form-box")
        self.raw = w.Textarea(
            placeholder='{"name": "value"}: sent exactly as written, wrong types included',
            rows=8,
            layout=w.Layout(width="auto", display="none"),
        )
        self.raw.add_class("mcp-nb-raw")
        self.uri = w.HTML()
        self.uri.add_class("mcp-nb-uri")
        self.problems = w.HTML()
        self.problems.add_class("mcp-nb-problems")
        controls = self._build_controls()
        self.outcome = w.HTML()
        self.outcome.add_class("mcp-nb-outcome-view")
        # A question the server asks during a call (elicitation) shows here, between the
        # controls and the outcome, until it is answered or the call ends.
        self.question = w.VBox(layout=w.Layout(width="100%", display="none"))
        self.question.add_class("mcp-nb-question-box")
        self.asker = Asker(self._guard.enter, self._place_question, lambda: self._closed, self._guard.settle)
        # What could not be sent shows under the controls, where an outcome would: above them,
        # its box appearing (on Call) and going (on the next keystroke) moved the Call button
        # under a pointer on its way to it.
        call_box = w.VBox(
            [self.header, self.mode, self.form_box, self.raw, self.uri, controls, self.problems, self.question, self.outcome],
            layout=w.Layout(flex="1 1 420px", min_width="0", grid_gap="6px"),
        )
        return call_box

    def _build_controls(self) -> w.HBox:
        """The timeout, the Call and Cancel buttons, and the running call's status and progress."""
        self.timeout = w.Text(value=seconds_text(settings.timeout), layout=w.Layout(width="70px"))
        self.timeout.add_class("mcp-nb-timeout")
        self.reset_on_progress = w.Checkbox(
            value=False,
            description="reset on progress",
            indent=False,
            layout=w.Layout(width="auto"),
            tooltip="each progress event of a tool restarts the deadline (never past 10 timeouts)",
        )
        self.reset_on_progress.add_class("mcp-nb-reset-on-progress")
        # The running call's progress, as the server reports it; shown only while one reports.
        self.progress = w.FloatProgress(value=0.0, min=0.0, max=1.0, layout=w.Layout(width="140px", display="none"))
        self.progress.add_class("mcp-nb-progress")
        self.progress_text = w.HTML()
        self.progress_text.add_class("mcp-nb-progress-text")
        self.call_button = w.Button(description="Call", icon="play", button_style="primary", layout=w.Layout(width="auto"))
        self.call_button.add_class("mcp-nb-call")
        self.cancel_button = w.Button(
            description="Cancel", icon="stop", button_style="warning", layout=w.Layout(width="auto", display="none")
        )
        self.cancel_button.add_class("mcp-nb-cancel")
        self.status = w.HTML()
        self.status.add_class("mcp-nb-status")
        controls = w.HBox(
            [
                w.HTML('<span style="white-space:nowrap">timeout (s)</span>'),
                self.timeout,
                self.reset_on_progress,
                self.call_button,
                self.cancel_button,
                self.status,
                self.progress,
                self.progress_text,
            ],
            layout=w.Layout(align_items="center", grid_gap="8px", flex_flow="row wrap"),
        )
        controls.add_class("mcp-nb-controls")
        return controls

    def _build_tabs(self, call_page: w.HBox) -> None:
        """The Call, History and Changes tabs, under the panel's title and its failure line."""
        engine = self.engine
        self.history_tab = HistoryTab(self.history, self._load_call, self._guard)
        self.history_tab.on_count = self._count_calls
        # -- what changed for clients since each entry's first version (widgets/changes_tab.py)
        self.changes_tab = ChangesTab(engine, lambda: self.server)
        # -- a model in the loop with the tools shown (widgets/agent_tab.py)
        self.agent_tab = AgentTab(engine, lambda: self.server, self._guard)
        self.tabs = w.Tab(
            children=[call_page, self.history_tab.widget, self.changes_tab.widget, self.agent_tab.widget],
            titles=["Call", self._history_title(len(self.history)), "Changes", "Agent"],
        )
        self.tabs.add_class("mcp-nb-tabs")
        self.tabs.observe(self._guard("switching tabs", self._tab_changed), "selected_index")

        self.title = w.HTML()
        self.children = [w.HTML(STYLESHEET), self.title, self.failure, self.tabs]
