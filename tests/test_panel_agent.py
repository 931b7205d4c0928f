"""The panel's Agent tab, driven through its widgets: a model and a task, Run, the episode shown;
a mistake said in the tab, a Stop that cancels, a model held in a notebook variable."""

from __future__ import annotations

import threading

import pytest
from helpers import wait_until
from mcp.server.mcpserver.exceptions import ToolError

import mcp_nb
from mcp_nb.episodes.episode import log_of
from mcp_nb.widgets.agent_tab import STAND_IN

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def books():
    @mcp_nb.tool()
    def get_author(title: str) -> str:
        """Who wrote a book, by its title."""
        if title != "Dune":
            raise ToolError(f"No book titled {title!r}. Known titles: 'Dune'")
        return "Frank Herbert"


def agent_tab(panel):
    panel.tabs.selected_index = 3
    assert panel.tabs.titles[3] == "Agent"
    return panel.agent_tab


def test_the_stand_in_from_the_panel(books):
    panel = mcp_nb.panel()
    try:
        tab = agent_tab(panel)
        assert tab.model.value == STAND_IN
        tab.task.value = "Who wrote 'Dun'?"
        tab.run_button.click()
        assert wait_until(lambda: "mcp-nb-episode" in tab.view.value and not tab.run_button.disabled), tab.status.value
        assert "Frank Herbert" in tab.view.value and "recovered 1" in tab.view.value and "mcp-nb-outcome" in tab.view.value
        assert "scripted stand-in (written rules, not a language model)" in tab.view.value
        assert [row["answer"] for row in log_of(mcp_nb.history()).rows()] == ["Frank Herbert"]
        assert wait_until(lambda: panel.tabs.titles[1] == "History (2)")  # its calls are the panel's history too
    finally:
        panel.close()


def test_a_task_that_cannot_start_is_said_in_the_tab_and_nothing_runs(books):
    panel = mcp_nb.panel()
    try:
        tab = agent_tab(panel)
        tab.task.value = "   "
        tab.run_button.click()
        assert "The episode cannot start" in tab.status.value and "says nothing" in tab.status.value
        assert len(mcp_nb.history()) == 0 and len(log_of(mcp_nb.history())) == 0 and not tab.run_button.disabled
    finally:
        panel.close()


def test_stop_cancels_the_episode_and_its_call(shell):
    entered, release = threading.Event(), threading.Event()

    @mcp_nb.tool()
    def slow(title: str) -> str:
        entered.set()
        release.wait(10)
        return "late"

    panel = mcp_nb.panel()
    try:
        tab = agent_tab(panel)
        tab.task.value = "Use slow on 'x'"
        tab.run_button.click()
        assert entered.wait(20) and tab.stop_button.layout.display is None
        tab.stop_button.click()
        assert wait_until(lambda: "cancelled" in tab.view.value and not tab.run_button.disabled)
        assert mcp_nb.history().to_frame()["cause"].tolist() == ["cancelled"]
        assert [row["stop"] for row in log_of(mcp_nb.history()).rows()] == ["cancelled"]
    finally:
        release.set()
        panel.close()


def test_a_model_in_a_notebook_variable_is_offered(shell, books):
    shell.user_ns["smol"] = mcp_nb.StandIn(tool="get_author", arguments={"title": "Dune"})
    panel = mcp_nb.panel()
    try:
        tab = agent_tab(panel)
        assert "smol" in tab.model.options
        tab.model.value = "smol"
        tab.task.value = "Who wrote it?"
        tab.run_button.click()
        assert wait_until(lambda: "mcp-nb-episode" in tab.view.value and not tab.run_button.disabled)
        assert "Frank Herbert" in tab.view.value
    finally:
        del shell.user_ns["smol"]
        panel.close()
