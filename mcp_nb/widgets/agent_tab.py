"""The agent tab: a model in the loop with the tools the panel shows, from a form.

Pick a model (the scripted stand-in, or a variable of the notebook that holds a model adapter:
`mcp_nb.OpenAICompatible(...)`, `mcp_nb.Anthropic(...)`, `mcp_nb.StandIn(...)`), type a task, Run:
the episode runs on mcp_nb's loop while the kernel stays free (as a panel's call does), and shows
here as it ended, each call's card inline. Stop cancels it; the call in flight records itself as
cancelled, as any call does. Every callback goes through the panel's guard, on the kernel's thread.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import ipywidgets as w

from mcp_nb.episodes.faces import prepare
from mcp_nb.episodes.loop import MODEL_TIMEOUT_S
from mcp_nb.mistakes import BadValue, McpNbError, first_line
from mcp_nb.models.function import Model
from mcp_nb.models.standin import LABEL, StandIn
from mcp_nb.views.episode import episode_html
from mcp_nb.widgets.callbacks import Guard
from mcp_nb.widgets.form import close_tree
from mcp_nb.widgets.style import note_html, problems_html

STAND_IN = "the scripted stand-in"
POLICIES = ("guides", "transparent")


def notebook_models() -> dict[str, Model]:
    """The models the notebook holds in variables, by name (a kernel's user namespace; none elsewhere)."""
    ipython = sys.modules.get("IPython")  # a notebook has it loaded; a script has no namespace to read
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return {}
    return {name: value for name, value in list(shell.user_ns.items()) if isinstance(value, Model) and not name.startswith("_")}


class AgentTab:
    """The widget of the tab, and its episode."""

    def __init__(
        self,
        engine: Any,
        server: Callable[[], str | None],
        guard: Guard,
        models: Callable[[], dict[str, Model]] = notebook_models,
    ) -> None:
        self.engine = engine
        self.server = server  # the connection the panel shows: its tools are offered
        self.guard = guard
        self.models = models
        self.model = w.Dropdown(options=[STAND_IN], value=STAND_IN, description="model", layout=w.Layout(width="340px"))
        self.task = w.Textarea(
            placeholder="What the model is asked to do, with the server's tools", layout=w.Layout(width="100%", height="64px")
        )
        self.turns = w.BoundedIntText(value=8, min=1, max=100, description="max turns", layout=w.Layout(width="170px"))
        self.policy = w.Dropdown(options=list(POLICIES), value="guides", description="host tells", layout=w.Layout(width="230px"))
        self.run_button = w.Button(description="Run", button_style="primary", icon="play")
        self.stop_button = w.Button(description="Stop", icon="stop", layout=w.Layout(display="none"))
        self.status = w.HTML()
        self.view = w.HTML()
        for widget, name in (
            (self.task, "task"),
            (self.run_button, "run"),
            (self.stop_button, "stop"),
            (self.view, "view"),
            (self.model, "model"),
        ):
            widget.add_class(f"mcp-nb-agent-{name}")
        self.widget = w.VBox(
            [
                w.HTML(note_html(f"A task for a model, with the tools of the server shown; {STAND_IN} is {LABEL}.")),
                w.HBox([self.model, self.turns, self.policy]),
                self.task,
                w.HBox([self.run_button, self.stop_button]),
                self.status,
                self.view,
            ],
            layout=w.Layout(width="100%", padding="4px 2px"),
        )
        self.widget.add_class("mcp-nb-agent-tab")
        self.batch: Any = None
        self.episode: Any = None
        self.run_button.on_click(guard.settled("running an episode", self.run))  # the task as typed, last keys included
        guard.settle.watch(self.task, self.model, self.turns, self.policy)
        self.stop_button.on_click(guard("stopping the episode", lambda _: self.stop()))

    def show(self, visible: bool) -> None:
        if visible:
            self.refresh_models()

    def refresh_models(self) -> None:
        chosen = self.model.value
        options = [STAND_IN, *sorted(self.models())]
        self.model.options = options
        self.model.value = chosen if chosen in options else STAND_IN

    def _chosen(self) -> Model:
        if self.model.value == STAND_IN:
            return StandIn()
        found = self.models().get(self.model.value)
        if found is None:
            raise BadValue(f"the variable {self.model.value!r} no longer holds a model")
        return found

    def run(self) -> None:
        """Start the episode on mcp_nb's loop and return; it shows here when it ends."""
        if self.batch is not None:
            return
        try:
            run, batch = prepare(
                self.engine,
                self.task.value,
                self._chosen(),
                server=self.server(),
                tools=None,
                max_turns=self.turns.value,
                budget=None,
                policy=self.policy.value,
                timeout=None,
                model_timeout=MODEL_TIMEOUT_S,
                system=None,
            )
        except McpNbError as err:  # the user's to fix: said here in one line, nothing ran
            self.status.value = problems_html("The episode cannot start:", [first_line(err)])
            return
        self.batch, self.episode = batch, run.episode
        self.status.value = note_html(f"episode #{run.episode.id}: the model is working…")
        self.run_button.disabled = True
        self.stop_button.layout.display = None
        future = self.engine.loop.submit(batch.run())
        future.add_done_callback(lambda done: self.guard.enter("showing the episode", self._ended, run, done))

    def stop(self) -> None:
        if self.batch is not None:
            self.batch.stop(cancel=True)

    def _ended(self, run: Any, done: Any) -> None:
        self.batch = None
        self.run_button.disabled = self.engine.closed
        self.stop_button.layout.display = "none"
        episode = run.outcome if run.outcome is not None else run.episode
        self.status.value = ""
        if not done.cancelled() and done.exception() is not None:
            error = done.exception()
            self.status.value = problems_html("The episode failed inside mcp_nb:", [f"{type(error).__name__}: {error}"])
        self.view.value = episode_html(episode)

    def close(self) -> None:
        self.stop()
        close_tree(self.widget)
