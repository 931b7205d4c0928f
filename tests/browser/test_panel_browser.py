"""The panel in a real JupyterLab and Chromium: a person's session, step by step.

The notebook (panel_demo.ipynb) registers one tool per outcome type with the magics
and shows the panel. The test fills the form, calls each tool, and reads what the
panel shows. Screenshots of every step are kept in artifacts/browser/.
"""

from __future__ import annotations

import json
import re

from browser_pages import (
    OUTCOME,
    PANEL,
    call,
    choose,
    field,
    open_notebook,
    outcome_badge,
    outcome_text,
    pick,
    run_all,
    set_timeout,
    shot,
    type_in,
)


def open_and_run(page, lab, name: str = "panel_demo.ipynb") -> None:
    open_notebook(page, lab, name)
    run_all(page)
    page.wait_for_selector(f"{PANEL} .mcp-nb-picker select", timeout=60_000)


def run_cell(page, text: str) -> None:
    """Run the notebook cell whose source contains `text` (Shift+Enter in its editor)."""
    cell = page.locator(".jp-CodeCell", has_text=text)
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")


def run_new_cell(page, code: str) -> None:
    """Add a cell below the last one, type `code` into it and run it, as a person would."""
    page.locator(".jp-CodeCell").last.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Escape")  # command mode
    page.keyboard.press("b")  # insert a cell below
    page.keyboard.press("Enter")  # edit it
    page.keyboard.type(code)
    page.keyboard.press("Shift+Enter")


def test_call_sends_what_the_form_shows_though_its_edits_queued_behind_a_busy_kernel(page, lab, artifacts):
    """Typed while a cell runs, a field's changes can reach the kernel after the click on Call:
    ipywidgets holds back a widget's next value while its last is unanswered (the timeout: "5"
    goes, "1" waits), and JupyterLab sends a new field's first message to the main shell, queued
    behind the cell, but the click to the widgets' subshell, heard at once (the title: "Du" and
    "Dune" after the click). Both failed before Call waited for them (callbacks.py, Settle); so
    did the Agent tab's Run, which sent a task typed the same way as it stood before."""
    open_and_run(page, lab, "panel_busy.ipynb")  # its own kernel: the other tests count on theirs
    for n, (tool, edits, outcome, said) in enumerate(
        [
            ("tool reindex", [("timeout", "5"), ("timeout", "1")], "timeout", "-32001 Timed out after 1s"),
            ("tool get_author", [("title", "Du"), ("title", "Dune")], "result", "Frank Herbert"),
        ]
    ):
        pick(page, tool)
        run_new_cell(page, f"import time; print('busy {n}', flush=True); time.sleep(4)")
        page.locator(".jp-CodeCell .jp-OutputArea-output", has_text=f"busy {n}").wait_for()
        for where, text in edits:  # the first is sent and waits in the kernel's queue; the second is held back
            if where == "timeout":
                set_timeout(page, text)
            else:
                field(page, where).fill(text)
        call(page)
        outcome_badge(page, outcome, timeout=30_000)
        assert said in outcome_text(page), outcome_text(page)
        shot(page, artifacts, f"call-after-busy-{outcome}")
        set_timeout(page, "30")
    # The same class of click elsewhere: the Agent tab's Run sends the task as typed.
    page.locator(f"{PANEL} .mcp-nb-tabs .lm-TabBar-tab", has_text="Agent").click()
    task = page.locator(f"{PANEL} .mcp-nb-agent-task textarea")
    task.wait_for()
    run_new_cell(page, "import time; print('busy agent', flush=True); time.sleep(4)")
    page.locator(".jp-CodeCell .jp-OutputArea-output", has_text="busy agent").wait_for()
    task.fill("Who wrote")
    task.fill("Who wrote Dune?")
    page.locator(f"{PANEL} .mcp-nb-agent-run").click()
    page.locator(f"{PANEL} .mcp-nb-agent-view", has_text="Who wrote Dune?").wait_for(timeout=30_000)
    shot(page, artifacts, "run-after-busy-agent")


def test_the_panel_calls_each_kind_of_tool_and_shows_each_outcome(page, lab, artifacts):
    open_and_run(page, lab)
    # A tool registered by a cell after the panel was shown is listed by itself.
    page.locator(f"{PANEL} .mcp-nb-picker option", has_text="added_after_panel").wait_for()
    shot(page, artifacts, "01-panel")

    # result: fill the form, call, read what the model sees
    pick(page, "tool get_author")
    type_in(page, "title", "Dune")
    call(page)
    outcome_badge(page, "result")
    text = outcome_text(page)
    assert "Frank Herbert (1 copies)" in text  # the optional `copies` went out pre-filled with its default
    assert "nothing to handle: the request succeeded" in text
    assert re.search(r"#\d+ · [\d.]+ ms", text)
    shot(page, artifacts, "02-result")

    # tool_error: the ToolError's message is what the model reads
    pick(page, "tool reserve")
    type_in(page, "title", "Dune")
    call(page)
    outcome_badge(page, "tool_error")
    text = outcome_text(page)
    assert "raised" in text
    assert "Error executing tool reserve: 'Dune' is already reserved." in text
    shot(page, artifacts, "03-tool-error")

    # protocol_error: code, message and data reach the host; the model sees nothing
    pick(page, "tool catalog_status")
    call(page)
    outcome_badge(page, "protocol_error")
    text = outcome_text(page)
    assert "mcp_error" in text
    assert "nothing: there is no result" in text
    assert "-32050 The catalog is offline." in text
    assert '"retry_after_s": 30' in text
    shot(page, artifacts, "04-protocol-error")

    # timeout: the deadline passes while the sync handler runs on; the panel then shows how it ended
    pick(page, "tool reindex")
    set_timeout(page, "1")
    call(page)
    # No wait for the Cancel button here: it shows only for the second before the deadline, and
    # a busy browser may draw the panel after that second has passed (the 8 s call below checks it).
    outcome_badge(page, "timeout")
    text = outcome_text(page)
    assert "deadline" in text
    assert "-32001 Timed out after 1s waiting for 'tools/call'" in text
    assert "still running on the server: the outcome is unknown" in text
    shot(page, artifacts, "05-timeout")
    page.locator(OUTCOME, has_text="completed after the client gave up: result (ok)").wait_for(timeout=15_000)
    shot(page, artifacts, "06-timeout-fate")

    # A call in flight leaves the kernel free: a cell runs meanwhile; then Cancel stops waiting.
    type_in(page, "seconds", "8")
    set_timeout(page, "30")
    call(page)
    cancel = page.locator(f"{PANEL} button.mcp-nb-cancel")
    cancel.wait_for(state="visible")
    run_cell(page, "ticks = globals()")
    page.locator(".jp-CodeCell .jp-OutputArea-output", has_text="tick 2").wait_for(timeout=10_000)
    assert cancel.is_visible()  # the call is still in flight
    shot(page, artifacts, "07-running")
    cancel.click()
    outcome_badge(page, "timeout")
    text = outcome_text(page)
    assert "cancelled" in text and "-32800" in text
    cancel.wait_for(state="hidden")
    page.wait_for_function("() => document.querySelector('.mcp-nb-panel .mcp-nb-status').innerText.trim() === ''")
    shot(page, artifacts, "08-cancelled")

    # raw JSON: sent verbatim, so the schema can be watched rejecting a wrong type
    pick(page, "tool get_author")
    page.locator(f"{PANEL} .mcp-nb-mode button", has_text="raw JSON").click()
    raw = page.locator(f"{PANEL} .mcp-nb-raw textarea")
    raw.wait_for(state="visible")
    assert '"title": "Dune"' in raw.input_value()  # started from what the form held
    broken = '{"title": 42'
    raw.fill(broken)
    call(page)
    page.locator(f"{PANEL} .mcp-nb-problems", has_text="the raw JSON is not valid").wait_for()
    assert raw.input_value() == broken  # the user's text is never rewritten
    shot(page, artifacts, "09-raw-invalid")
    raw.fill('{"title": 42}')
    call(page)
    outcome_badge(page, "tool_error")
    assert "invalid_arguments" in outcome_text(page)
    assert page.locator(f"{PANEL} .mcp-nb-problems").inner_text().strip() == ""
    shot(page, artifacts, "10-raw-invalid-arguments")

    # The form says what cannot be sent, field by field, and sends nothing.
    pick(page, "tool plan_trip")
    nights = " ".join(page.locator(f"{PANEL} .mcp-nb-label", has_text="nights").inner_text().split())
    assert "≥ 1" in nights and "≤" not in nights, nights  # a field with one limit builds, and says it
    type_in(page, "city", "Lisbon")
    type_in(page, "nights", "2.5", problem="'2.5' is not an integer")
    call(page)
    page.locator(f"{PANEL} .mcp-nb-problems", has_text="nights: '2.5' is not an integer").wait_for()
    shot(page, artifacts, "11-form-problems")
    type_in(page, "nights", "3")
    # The other kinds of fields: a null toggle, a multi-select, array rows, a nested model.
    page.locator(f"{PANEL} .mcp-nb-field-budget-null").click()
    page.locator(f"{PANEL} .mcp-nb-field-interests select").select_option(index=[0, 2])
    page.locator(f"{PANEL} .mcp-nb-field-stops-add").click()
    type_in(page, "stops-0", "Sintra")
    page.locator(f"{PANEL} .mcp-nb-field-hotel-state button", has_text="set").click()
    type_in(page, "hotel-name", "Casa Azul")
    shot(page, artifacts, "12-form-kinds")
    call(page)
    outcome_badge(page, "result")
    assert "plan_trip" in outcome_text(page)
    model_sees = " ".join(page.locator(f"{OUTCOME} pre").first.inner_text().split())
    expected = {
        "city": "Lisbon",
        "nights": 3,
        "budget": None,
        "pace": "normal",
        "interests": ["food", "parks"],
        "stops": ["Sintra"],
        "hotel": {"name": "Casa Azul", "stars": 3},
        "refundable": True,
    }
    assert json.loads(model_sees) == expected, model_sees

    # History: counts per name, and a chosen call goes back into the form.
    page.locator(f"{PANEL} .mcp-nb-tabs .lm-TabBar-tab", has_text="History").click()
    counts = page.locator(f"{PANEL} .mcp-nb-history-counts")
    counts.locator("tr", has_text="get_author").wait_for()
    row = " ".join(counts.locator("tr", has_text="get_author").inner_text().split())
    assert row.endswith("1 1 0 0 2"), row  # result, tool_error, protocol_error, timeout, total
    reindex = " ".join(counts.locator("tr", has_text="reindex").inner_text().split())
    assert reindex.endswith("0 0 0 2 2"), reindex
    shot(page, artifacts, "13-history")
    choose(page, f"{PANEL} .mcp-nb-history-calls", "result (ok) tool get_author")
    page.locator(f"{PANEL} .mcp-nb-entry", has_text="get_author").wait_for()
    field(page, "title").wait_for(state="visible")
    assert field(page, "title").input_value() == "Dune"
    assert field(page, "copies").input_value() == "1"
    page.locator(f"{PANEL} .mcp-nb-status", has_text="from the history").wait_for()
    text = outcome_text(page)  # that call's own outcome, read back from the history
    assert "get_author" in text and "Frank Herbert (1 copies)" in text, text
    assert page.locator(f"{OUTCOME} .mcp-nb-badge.mcp-nb-result").count() == 1
    shot(page, artifacts, "14-history-loaded")

    # A bug inside a callback shows in the panel (not only in the browser's log console),
    # and the panel stays on what it showed.
    run_new_cell(page, "import mcp_nb.widgets.panel as _p; _keep = _p.entry_html; _p.entry_html = lambda entry: 1/0")
    choose(page, f"{PANEL} .mcp-nb-tabs .mcp-nb-picker", "tool reserve")
    failure = page.locator(f"{PANEL} .mcp-nb-failure summary")
    failure.wait_for()
    line = " ".join(failure.inner_text().split())
    assert "The panel failed while choosing an entry: ZeroDivisionError: division by zero" in line, line
    assert page.locator(f"{PANEL} .mcp-nb-failure details").get_attribute("open") is None  # the traceback is folded
    assert "get_author" in page.locator(f"{PANEL} .mcp-nb-entry").inner_text()
    selected = page.locator(f"{PANEL} .mcp-nb-picker select").evaluate("s => s.options[s.selectedIndex].text")
    assert "get_author" in selected, selected
    shot(page, artifacts, "15-callback-failed")
    run_new_cell(page, "_p.entry_html = _keep")

    # A reset replaces the server: this panel says so, and Call is off for good.
    run_new_cell(page, "import mcp_nb; mcp_nb.reset()")
    page.locator(f"{PANEL} .mcp-nb-problems", has_text="closed by mcp_nb.reset()").wait_for()
    assert page.locator(f"{PANEL} button.mcp-nb-call").is_disabled()
    page.locator(f"{PANEL} .mcp-nb-replaced").wait_for()
    pick(page, "tool reserve")  # another entry: Call stays off
    assert page.locator(f"{PANEL} button.mcp-nb-call").is_disabled()
    shot(page, artifacts, "16-after-reset")
