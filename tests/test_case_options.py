"""Every option a call had is in its case, and its replay against the unchanged tool is green.

A saved case that leaves out what made its call pass (the codes it retried on, the deadline
that reset on progress, the answers to the server's questions) replays as a regression of a
tool that did not change. One test per option: each replays green only when its option was
saved and replayed.
"""

import asyncio
import json
import time
from typing import Annotated

import pytest
from asking import register_askers
from helpers import STARTS_WITHIN
from mcp import MCPError
from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resolve import Elicit, Resolve
from pydantic import BaseModel

import mcp_nb
from mcp_nb import Answer, Retry
from mcp_nb.records.cases import CasesError, load

BUSY = -32050


def saved(tmp_path, **choose):
    """The history written as a cases file: (its path, its one case as JSON)."""
    path = tmp_path / "cases.json"
    cases = mcp_nb.history().to_cases(path, **choose)
    assert load(path) == cases  # what is written reads back the same
    (case,) = json.loads(path.read_text())["cases"]
    return path, case


def replayed(path):
    (row,) = mcp_nb.replay(path).itertuples()
    return row


def busy_every_other_call(**hints):
    """A tool busy (-32050) on every other call: the first call of each pair needs a retry."""
    seen = []

    @mcp_nb.tool(**hints)
    def lookup(title: str) -> str:
        seen.append(title)
        if len(seen) % 2 == 1:
            raise MCPError(code=BUSY, message="catalog busy")
        return title.upper()

    return seen


# -- retries --------------------------------------------------------------------------------------


def test_a_call_retried_on_a_chosen_code_replays_retrying_on_it(tmp_path):
    busy_every_other_call(read_only=True)
    first = mcp_nb.call("lookup", {"title": "dune"}, retry=Retry(codes=(BUSY,), backoff=0.01))
    assert (first.outcome, first.attempt) == ("result", 2)
    path, case = saved(tmp_path)
    assert case["retries"] == 1  # the retries the call took
    assert case["retry"] == {"retries": 3, "codes": [BUSY], "backoff": 0.01}  # the policy it had
    row = replayed(path)
    assert row.passed, row.reason


def test_a_call_retried_on_tool_errors_replays_retrying_on_them(tmp_path):
    seen = []

    @mcp_nb.tool(idempotent=True)
    def flaky() -> str:
        seen.append(1)
        if len(seen) % 2 == 1:
            raise ToolError("try again")
        return "fine"

    assert mcp_nb.call("flaky", retry=Retry(tool_errors=True, backoff=0.01)).ok
    path, case = saved(tmp_path)
    assert case["retry"] == {"retries": 3, "backoff": 0.01, "tool_errors": True}
    row = replayed(path)
    assert row.passed, row.reason


def test_a_forced_retry_of_a_tool_with_side_effects_replays_forced(tmp_path):
    busy_every_other_call()  # no hints: the engine retries it only when forced
    assert mcp_nb.call("lookup", {"title": "dune"}, retry=Retry(codes=(BUSY,), force=True, backoff=0.01)).ok
    path, case = saved(tmp_path)
    assert case["retry"]["force"] is True
    row = replayed(path)  # refused before anything is sent, when the force is left out
    assert row.passed, row.reason


def test_a_call_not_retried_on_its_timeout_replays_not_retrying_it(tmp_path):
    seen = []

    @mcp_nb.tool(read_only=True)
    def stock(title: str) -> int:
        seen.append(title)
        turn = len(seen) % 3  # busy, then slow, then quick: the same on every round
        if turn == 1:
            raise MCPError(code=BUSY, message="warehouse busy")
        if turn == 2:
            time.sleep(0.6)
        return 3

    rule = Retry(codes=(BUSY,), on_timeout=False, backoff=0.01)
    final = mcp_nb.call("stock", {"title": "Dune"}, timeout=0.2, retry=rule)
    assert (final.outcome, final.attempt) == ("timeout", 2)  # the busy answer retried, the timeout not
    path, case = saved(tmp_path)
    assert case["retry"] == {"retries": 3, "codes": [BUSY], "on_timeout": False, "backoff": 0.01}
    time.sleep(0.6)  # the abandoned handler ends before the replay's calls start
    seen.clear()  # the warehouse starts its round again, as a restarted server would
    row = replayed(path)
    assert row.passed, row.reason


def test_the_replay_waits_between_attempts_as_the_call_did(tmp_path):
    busy_every_other_call(read_only=True)
    rule = Retry(retries=5, codes=(BUSY,), backoff=0.05, factor=3.0, max_backoff=1.0, jitter=0.001)
    mcp_nb.call("lookup", {"title": "dune"}, retry=rule)
    path, case = saved(tmp_path)
    assert case["retry"] == {"retries": 5, "codes": [BUSY], "backoff": 0.05, "factor": 3.0, "max_backoff": 1.0, "jitter": 0.001}
    row = replayed(path)
    assert row.passed, row.reason
    frame = mcp_nb.history().to_frame()
    second = frame[(frame["call_id"] == row.call_id) & (frame["attempt"] == 2)]
    assert 0.05 <= second["backoff_s"].iloc[0] <= 0.0511  # 50 ms and up to 1 ms of jitter, not the default 100 ms


# -- deadlines that reset on progress ---------------------------------------------------------------


def reporting_tool():
    @mcp_nb.tool(read_only=True)
    async def restock(steps: int, pause: float, ctx: Context) -> str:
        for i in range(steps):
            await asyncio.sleep(pause)
            await ctx.report_progress(i + 1, steps)
        return f"restocked {steps}"


def test_a_call_whose_deadline_reset_on_progress_replays_resetting_it(tmp_path):
    reporting_tool()
    # 2.5 s of work against a 2 s timeout, the first progress 0.5 s after the handler starts: a
    # deadline a loaded machine starts the handler well within (tests/helpers.py)
    arguments = {"steps": 5, "pause": 0.5}
    outcome = mcp_nb.call("restock", arguments, timeout=STARTS_WITHIN, reset_on_progress=True, progress=False)
    assert outcome.ok and outcome.deadline_resets == 5
    path, case = saved(tmp_path)
    assert (case["timeout"], case["reset_on_progress"], case["max_timeout"]) == (
        STARTS_WITHIN,
        True,
        10 * STARTS_WITHIN,
    )  # the ceiling it had: 10 timeouts
    row = replayed(path)
    assert row.passed, row.reason


def test_a_call_stopped_at_its_max_timeout_replays_with_the_same_ceiling(tmp_path):
    reporting_tool()
    # 5 s of work, a progress every 0.25 s: past a 3 s ceiling, each step within the 2 s timeout
    arguments = {"steps": 20, "pause": 0.25}
    outcome = mcp_nb.call("restock", arguments, timeout=STARTS_WITHIN, reset_on_progress=True, max_timeout=3.0, progress=False)
    assert (outcome.outcome, outcome.cause) == ("timeout", "max_timeout")
    path, case = saved(tmp_path)
    assert (case["reset_on_progress"], case["max_timeout"]) == (True, 3.0)
    time.sleep(0.1)
    row = replayed(path)
    assert row.passed, row.reason


# -- the answers to the server's questions ---------------------------------------------------------


def test_an_elicited_call_replays_with_its_recorded_answers(tmp_path):
    register_askers()
    outcome = mcp_nb.call("card", elicit=[Answer.accept(name="Ada"), {"years": 36}])
    assert outcome.content == "Ada 36"
    path, case = saved(tmp_path)
    assert case["elicit"] == [
        {"message": "Your name?", "action": "accept", "content": {"name": "Ada"}},
        {"message": "Your age?", "action": "accept", "content": {"years": 36}},
    ]
    row = replayed(path)
    assert row.passed, row.reason
    replay = mcp_nb.history().to_frame().iloc[-1]
    assert [(e["action"], e["content"]) for e in replay["elicitations"]] == [
        ("accept", {"name": "Ada"}),
        ("accept", {"years": 36}),
    ]


def test_declined_cancelled_and_default_answers_replay_as_they_were_given(tmp_path):
    register_askers()
    mcp_nb.configure(elicit="decline")
    assert mcp_nb.call("greet").content == "no name (decline)"  # answered by the configured default
    mcp_nb.configure(elicit=None)
    assert mcp_nb.call("greet").content == "no name (cancel)"  # nobody answered: cancelled
    assert mcp_nb.call("greet", elicit=lambda message, schema: {"name": "Grace"}).content == "hello Grace"
    path = tmp_path / "cases.json"
    mcp_nb.history().to_cases(path)
    saved_answers = [case["elicit"] for case in json.loads(path.read_text())["cases"]]
    assert saved_answers == [
        [{"message": "Your name?", "action": "decline"}],
        [{"message": "Your name?", "action": "cancel"}],
        [{"message": "Your name?", "action": "accept", "content": {"name": "Grace"}}],
    ]
    mcp_nb.configure(elicit=[{"name": "Someone else"}])  # the replay answers as the call was answered, not as now configured
    frame = mcp_nb.replay(path)
    assert frame["passed"].all(), frame[["case", "reason"]]


def test_a_retried_elicited_call_replays_every_attempts_answers(tmp_path):
    seen = []

    class Name(BaseModel):
        name: str

    def ask() -> Elicit[Name]:
        return Elicit(f"Your name? (attempt {len(seen) % 2 + 1})", Name)

    @mcp_nb.tool(read_only=True)
    def greet_busy(who: Annotated[ElicitationResult[Name], Resolve(ask)]) -> str:
        seen.append(who.data.name)
        if len(seen) % 2 == 1:
            raise MCPError(code=BUSY, message="busy")
        return f"hello {who.data.name}"

    outcome = mcp_nb.call("greet_busy", retry=Retry(codes=(BUSY,), backoff=0.01), elicit=[{"name": "Ada"}, {"name": "Grace"}])
    assert (outcome.content, outcome.attempt) == ("hello Grace", 2)
    path, case = saved(tmp_path)
    assert [(asked["message"], asked["content"]) for asked in case["elicit"]] == [
        ("Your name? (attempt 1)", {"name": "Ada"}),
        ("Your name? (attempt 2)", {"name": "Grace"}),
    ]
    row = replayed(path)
    assert row.passed, row.reason


def test_a_different_question_fails_the_case_saying_so(tmp_path):
    register_askers()
    mcp_nb.call("greet", elicit=[{"name": "Ada"}])
    path, _ = saved(tmp_path)

    class FullName(BaseModel):
        name: str

    def ask_full_name() -> Elicit[FullName]:
        return Elicit("Your full name?", FullName)

    @mcp_nb.tool()
    def greet(who: Annotated[ElicitationResult[FullName], Resolve(ask_full_name)]) -> str:
        return f"hello {who.data.name}" if who.action == "accept" else f"no name ({who.action})"

    started = time.perf_counter()
    row = replayed(path)
    assert time.perf_counter() - started < 5  # answered at once, never waited on
    assert not row.passed
    assert row.reason.startswith("question 1: expected 'Your name?', got 'Your full name?' (cancelled); ")


def test_more_or_fewer_questions_than_recorded_fail_the_case_saying_which(tmp_path):
    register_askers()
    mcp_nb.call("greet", elicit=[{"name": "Ada"}])
    mcp_nb.call("card", elicit=[{"name": "Ada"}, {"years": 36}])
    path = tmp_path / "cases.json"
    mcp_nb.history().to_cases(path)
    document = json.loads(path.read_text())
    document["cases"][0]["name"], document["cases"][1]["name"] = "card", "greet"  # each now asks what the other did
    path.write_text(json.dumps(document))
    frame = mcp_nb.replay(path).set_index("case")
    assert frame.loc["greet-1", "reason"].startswith("question 2 'Your age?' is not in the case (cancelled); ")
    assert frame.loc["card-1", "reason"].startswith("question 2 'Your age?' was not asked; ")


class Login(BaseModel):
    user: str
    password: str


def login_tool():
    def ask_login() -> Elicit[Login]:
        return Elicit("Sign in to the catalog", Login)

    @mcp_nb.tool()
    def sign_in(who: Annotated[ElicitationResult[Login], Resolve(ask_login)]) -> str:
        if who.action == "accept" and who.data.password == "s3cret-Pa55":
            return f"signed in as {who.data.user}"
        return "refused"


def test_a_secret_answer_is_never_saved_and_the_replay_reads_it_from_the_environment(tmp_path, monkeypatch):
    login_tool()
    assert mcp_nb.call("sign_in", elicit=[Answer.accept(user="ada", password="s3cret-Pa55")]).content == "signed in as ada"
    path, case = saved(tmp_path)
    assert "s3cret-Pa55" not in path.read_text()
    assert case["elicit"] == [
        {
            "message": "Sign in to the catalog",
            "action": "accept",
            "content": {"user": "ada", "password": {"env": "MCP_NB_PASSWORD"}},
        }
    ]
    monkeypatch.delenv("MCP_NB_PASSWORD", raising=False)
    with pytest.raises(CasesError) as caught:
        mcp_nb.replay(path)
    assert str(caught.value) == (
        "case 'sign_in-1': answer 1's field 'password' is read from the environment variable MCP_NB_PASSWORD, which is not set"
    )
    monkeypatch.setenv("MCP_NB_PASSWORD", "s3cret-Pa55")
    row = replayed(path)
    assert row.passed, row.reason


# -- the file ---------------------------------------------------------------------------------------


def test_a_case_file_written_before_these_fields_still_loads_and_replays(tmp_path):
    busy_every_other_call(read_only=True)
    old = {
        "id": "lookup-1",
        "name": "lookup",
        "arguments": {"title": "dune"},
        "retries": 1,
        "expect": {"outcome": "protocol_error", "cause": "mcp_error", "code": BUSY},
    }
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"mcp_nb_cases": 1, "cases": [old]}))
    (case,) = load(path)
    assert (case.retries, case.retry, case.reset_on_progress, case.max_timeout, case.elicit) == (1, None, False, None, [])
    row = replayed(path)  # one retry, on no code: the busy answer is final, as the old file says
    assert row.passed, row.reason


GOOD = {"id": "ok-1", "name": "lookup", "arguments": {"title": "dune"}, "expect": {"outcome": "result", "cause": "ok"}}

MALFORMED = [
    ({"retry": {"codes": ["busy"]}}, "field retry.codes[0]: Input should be a valid integer"),
    ({"retry": {"sleep": 1}}, "field retry.sleep: Extra inputs are not permitted"),
    ({"retry": {"factor": 0.5}}, "field retry.factor: Input should be greater than or equal to 1"),
    ({"retry": {"on_timeout": "no"}}, "field retry.on_timeout: Input should be a valid boolean"),
    ({"retry": {"retries": 1}, "retries": 2}, "retries (2, the retries the call took) is more than retry.retries (1)"),
    ({"max_timeout": 5}, "max_timeout goes with reset_on_progress: true"),
    ({"reset_on_progress": "yes"}, "field reset_on_progress: Input should be a valid boolean"),
    (
        {"elicit": [{"message": "Your name?", "action": "maybe"}]},
        "field elicit[0].action: Input should be 'accept', 'decline' or 'cancel'",
    ),
    (
        {"elicit": [{"message": "Your name?", "action": "decline", "content": {"name": "Ada"}}]},
        "only an accepted answer carries content",
    ),
    (
        {"elicit": [{"message": "Sign in", "action": "accept", "content": {"password": {"env": ""}}}]},
        "field elicit[0].content: 'password': a secret is written",
    ),
]


@pytest.mark.parametrize("changes,said", MALFORMED, ids=[said[:40] for _, said in MALFORMED])
def test_a_malformed_option_is_refused_naming_the_case_and_the_field(tmp_path, changes, said):
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"mcp_nb_cases": 1, "cases": [{**GOOD, **changes}]}))
    with pytest.raises(CasesError) as caught:
        load(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: case 'ok-1' (number 1): ") and said in message and "\n" not in message, message


# -- in pytest --------------------------------------------------------------------------------------

TOOLS = """
import asyncio
from typing import Annotated
from mcp import MCPError
from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resolve import Elicit, Resolve
from pydantic import BaseModel
import mcp_nb

seen = []

@mcp_nb.tool(read_only=True)
def lookup(title: str) -> str:
    seen.append(title)
    if len(seen) % 2 == 1:
        raise MCPError(code=-32050, message="catalog busy")
    return title.upper()

@mcp_nb.tool(read_only=True)
async def restock(steps: int, pause: float, ctx: Context) -> str:
    for i in range(steps):
        await asyncio.sleep(pause)
        await ctx.report_progress(i + 1, steps)
    return f"restocked {steps}"

class Name(BaseModel):
    name: str

def ask_name() -> Elicit[Name]:
    return Elicit("Your name?", Name)

@mcp_nb.tool()
def greet(who: Annotated[ElicitationResult[Name], Resolve(ask_name)]) -> str:
    return f"hello {who.data.name}" if who.action == "accept" else f"no name ({who.action})"
"""


def test_the_pytest_plugin_replays_every_option_green(tmp_path):
    from test_pytest_plugin import pytest_run

    namespace: dict = {}
    exec(compile(TOOLS, "tools", "exec"), namespace)  # the tools, registered here as the notebook registers them there
    mcp_nb.call("lookup", {"title": "dune"}, retry=Retry(codes=(BUSY,), backoff=0.01))
    mcp_nb.call("restock", {"steps": 5, "pause": 0.5}, timeout=STARTS_WITHIN, reset_on_progress=True, progress=False)
    mcp_nb.call("greet", elicit=[{"name": "Ada"}])
    cases = mcp_nb.history().to_cases(tmp_path / "cases.json")
    assert [c.id for c in cases] == ["lookup-1", "restock-1", "greet-1"]
    cell = {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": []}
    notebook = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [{**cell, "source": "%load_ext mcp_nb"}, {**cell, "source": TOOLS}],
    }
    (tmp_path / "tools.ipynb").write_text(json.dumps(notebook))
    run = pytest_run(tmp_path, "--mcp-cases", "cases.json", "--mcp-notebook", "tools.ipynb", "-v")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "3 passed" in run.stdout
