"""In a real kernel: `await mcp_nb.acall` shows the server's question as a form in the cell, and a
front end's clicks answer it while the cell waits; run as nbval runs it, it is cancelled."""

from __future__ import annotations

import queue
import time

import pytest

SETUP = """
from typing import Annotated
from pydantic import BaseModel
from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver.resolve import Elicit, Resolve
import mcp_nb

class Name(BaseModel):
    name: str

def ask_name() -> Elicit[Name]:
    return Elicit("Your name?", Name)

@mcp_nb.tool()
def greet(who: Annotated[ElicitationResult[Name], Resolve(ask_name)]) -> str:
    return f"hello {who.data.name}" if who.action == "accept" else f"no name ({who.action})"
"""
CALL = (
    "o = await mcp_nb.acall('greet', timeout=5)\nprint(o.content, '|', o.elicitations[0].source, '|', o.elicitations[0].reason)"
)


@pytest.fixture
def kernel():
    from kernels import start_new_kernel  # over ipc: no TCP port to lose

    manager, client = start_new_kernel()
    try:
        reply = client.execute_interactive(SETUP, timeout=120)
        assert reply["content"]["status"] == "ok", reply["content"]
        yield client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def run(client, code: str, act=None, limit: float = 60, person: bool = True) -> str:
    """Execute `code` as a front end where a person sits would (`allow_stdin`, as JupyterLab sends it),
    or as nbval does (`person=False`); `act(message)` sees every iopub message as it comes (the front
    end's part). Returns what the cell printed."""
    sent = client.execute(code, allow_stdin=person)
    printed, deadline = [], time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            message = client.get_iopub_msg(timeout=1)
        except queue.Empty:
            continue
        if act is not None:
            act(message)
        if message["parent_header"].get("msg_id") != sent:
            continue
        if message["msg_type"] == "stream":
            printed.append(message["content"]["text"])
        if message["msg_type"] == "error":
            raise AssertionError(message["content"]["evalue"])
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            return "".join(printed)
    raise AssertionError(f"the cell did not finish within {limit} s")


def comm_message(client, comm_id: str, data: dict) -> None:
    client.shell_channel.send(client.session.msg("comm_msg", {"comm_id": comm_id, "data": data}))


def test_without_a_front_end_the_question_is_cancelled_and_says_why(kernel):
    printed = run(kernel, CALL, person=False)  # as nbval, nbconvert and jupyter execute send a cell
    assert printed.startswith("no name (cancel) | none | nobody could answer")


def test_a_front_end_answers_the_form_in_the_cell(kernel):
    models: dict[str, dict] = {}
    shown = []

    def front_end(message):
        kind = message["msg_type"]
        if kind == "comm_open":
            state = message["content"]["data"].get("state", {})
            models[message["content"]["comm_id"]] = state
        elif kind == "display_data" and "application/vnd.jupyter.widget-view+json" in message["content"]["data"]:
            shown.append(message["parent_header"].get("msg_type"))
            # The form is on screen: type a name into its text field, then click Accept.
            text = next(
                c for c, s in models.items() if s.get("_model_name") == "TextareaModel" or s.get("_model_name") == "TextModel"
            )
            accept = next(
                c for c, s in models.items() if s.get("_model_name") == "ButtonModel" and s.get("description") == "Accept"
            )
            comm_message(kernel, text, {"method": "update", "state": {"value": "Ada"}, "buffer_paths": []})
            comm_message(kernel, accept, {"method": "custom", "content": {"event": "click"}})

    printed = run(kernel, CALL, act=front_end)
    assert printed.strip() == "hello Ada | form | None"
    assert shown == ["execute_request"]  # the form went to the cell that made the call
