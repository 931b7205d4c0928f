"""A server's question in the panel, in JupyterLab and Chromium: server-everything asks its
elicitation question; its titled choices are dropdowns of their titles, the Accept, Decline
and Cancel buttons show their words whole, and the answer reaches the server. Screenshots in
artifacts/browser/."""

from __future__ import annotations

import peers
import pytest
from browser_pages import OUTCOME, PANEL, call, open_notebook, outcome_badge, pick, run_all, shot

QUESTION = f"{PANEL} .mcp-nb-question-box"


@pytest.fixture(scope="session", autouse=True)
def everything_installed():
    """The notebook connects to server-everything: without it, fail (CI) or skip at once, saying
    what to install, before JupyterLab and Chromium are started for a panel that never comes."""
    peers.require(peers.EVERYTHING)


def test_the_question_form_shows_titles_and_whole_buttons(page, lab, artifacts):
    open_notebook(page, lab, "question_demo.ipynb")
    run_all(page)
    page.wait_for_selector(f"{PANEL} .mcp-nb-picker select", timeout=60_000)
    pick(page, "tool trigger-elicitation-request")
    call(page)
    page.locator(QUESTION).wait_for(state="visible", timeout=20_000)
    shot(page, artifacts, "20-question")

    # The titled single select: a dropdown of the heroes' names, not a text box of "any | any".
    heroes = page.locator(f"{QUESTION} .mcp-nb-field-titledSingleSelectEnum select")
    assert heroes.count() == 1
    names = [" ".join(text.split()) for text in heroes.locator("option").all_inner_texts()]  # <option> keeps its spaces as NBSP
    assert {"Superman", "Green Lantern", "Wonder Woman"} <= set(names), names
    fish = page.locator(f"{QUESTION} .mcp-nb-field-titledMultipleSelectEnum select")
    assert "Tuna" in fish.locator("option").all_inner_texts()
    assert "any | any" not in page.locator(QUESTION).inner_text()

    # Each button shows its whole word: nothing cut to "Acc…".
    for name, word in (("accept", "Accept"), ("decline", "Decline"), ("cancel", "Cancel")):
        button = page.locator(f"{QUESTION} .mcp-nb-question-{name}")
        assert word in button.inner_text()
        assert button.evaluate("el => el.scrollWidth <= el.clientWidth + 1"), f"{word} is cut"

    page.locator(f"{QUESTION} .mcp-nb-question-decline").click()
    outcome_badge(page, "result")
    assert "declined" in page.locator(OUTCOME).inner_text().lower()
    shot(page, artifacts, "21-question-declined")
