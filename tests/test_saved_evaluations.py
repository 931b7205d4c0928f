"""Saved evaluations: written into a cases file with no key, refused when they could not be run
elsewhere, and run again by the pytest plugin, one item per task and model, judged against what
was saved."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import warm
from mcp.server.mcpserver.exceptions import ToolError

import mcp_nb
from mcp_nb import OpenAICompatible, StandIn, evaluate, save_evaluation
from mcp_nb.episodes.saved import judged
from mcp_nb.mistakes import Mistake
from mcp_nb.records.cases import load, load_evaluations
from mcp_nb.records.saved_evaluations import SavedRow

pytestmark = pytest.mark.timeout(300)
ROOT = Path(__file__).resolve().parent.parent
BOOKS = {"Dune": "Frank Herbert", "Emma": "Jane Austen"}
TASKS = [
    {"task": "Who wrote 'Dun'?", "check": "Herbert", "id": "dun"},
    {"task": "Who wrote 'Emm'?", "check": "Austen", "id": "emm"},
]


def helpful(title: str) -> str:
    """Who wrote a book, by its title."""
    if title not in BOOKS:
        raise ToolError(f"No book titled {title!r}. Known titles: {', '.join(map(repr, BOOKS))}")
    return BOOKS[title]


def crashing(title: str) -> str:
    """Who wrote a book, by its title."""
    return BOOKS[title]


def test_a_saved_evaluation_holds_its_plan_and_its_figures_and_no_key(tmp_path, monkeypatch):
    monkeypatch.setenv("MCP_NB_TEST_EVAL_KEY", "sk-eval-0123456789SECRET")
    mcp_nb.tool(name="get_author")(helpful)
    table = evaluate(TASKS, StandIn(), repeats=2, progress=False)
    path = save_evaluation(table, tmp_path / "evaluation.json")
    (saved,) = load_evaluations(path)
    assert [(r.task_id, r.passed, r.with_failures, r.recovered) for r in saved.expect] == [("dun", 2, 2, 2), ("emm", 2, 2, 2)]
    assert saved.models["scripted stand-in"].kind == "stand-in" and saved.tasks[0].check.contains == "Herbert"
    assert load(path) == []  # no cases beside it; a cases file's cases stay when an evaluation is added
    # An endpoint is saved as where to find it, its key as the name of its variable.
    spec = table.attrs["saved"]
    endpoint = OpenAICompatible("gpt-test", "http://127.0.0.1:9/v1", key="MCP_NB_TEST_EVAL_KEY")
    assert endpoint.spec()["key"] == "MCP_NB_TEST_EVAL_KEY" and "sk-eval" not in json.dumps(endpoint.spec())
    assert spec["models"] == {"scripted stand-in": {"kind": "stand-in", "tool": None, "arguments": None, "max_calls": 5}}
    assert "sk-eval" not in path.read_text()


@pytest.mark.parametrize(
    ("kwargs", "said"),
    [
        ({"models": lambda messages, tools: "x"}, "is a function, which stays in its notebook"),
        ({"check": lambda episode: True}, "check is a function"),
        ({"variants": {"A": {"get_author": helpful}, "B": {"get_author": crashing}}}, "one variant at a time"),
    ],
)
def test_what_cannot_be_run_elsewhere_is_not_saved(tmp_path, kwargs, said):
    mcp_nb.tool(name="get_author")(helpful)
    given = {"models": StandIn(), **kwargs}
    tasks = [{"task": t["task"], "id": t["id"]} for t in TASKS] if "check" in kwargs else TASKS
    table = evaluate(tasks, given.pop("models"), progress=False, **given)
    with pytest.raises(Mistake, match=said):
        save_evaluation(table, tmp_path / "evaluation.json")
    assert not (tmp_path / "evaluation.json").exists()
    with pytest.raises(Mistake, match="takes the frame"):
        save_evaluation(mcp_nb.history().to_frame(), tmp_path / "evaluation.json")


def test_a_language_model_fails_only_when_it_does_significantly_worse():
    saved = SavedRow(task_id="dun", model="gpt", episodes=10, passed=9, with_failures=10, recovered=9)

    class Now:
        def __init__(self, passed, recovered):
            self.passed, self.episodes, self.with_failures, self.recovered = passed, 10, 10, recovered

    assert judged(saved, False, Now(7, 8)) == ""  # within the noise of ten episodes
    assert "did significantly worse: success 1 of 10" in judged(saved, False, Now(1, 8))
    assert "recovery 0 of 10" in judged(saved, False, Now(9, 0))
    assert "did otherwise" in judged(saved, True, Now(8, 9))  # written rules do the same every time


NOTEBOOK = """%load_ext mcp_nb
from mcp.server.mcpserver.exceptions import ToolError
BOOKS = {{"Dune": "Frank Herbert", "Emma": "Jane Austen"}}
@mcp_nb.tool()
def get_author(title: str) -> str:
    \"\"\"Who wrote a book, by its title.\"\"\"
    if title not in BOOKS:
        {failure}
    return BOOKS[title]
"""


def notebook(path: Path, failure: str) -> None:
    source = NOTEBOOK.format(failure=failure).replace("%load_ext mcp_nb\n", "import mcp_nb\n")
    cells = [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": source}]
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}))


def pytest_run(where: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = str(ROOT)
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # the plugin named by -p, not every one of this environment's
    return subprocess.run(
        warm.python("-m", "pytest", "-p", "mcp_nb_pytest", "-p", "no:cacheprovider", "-rA", "-v", *args),
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def test_the_pytest_plugin_runs_a_saved_evaluation_again_and_catches_a_worse_error_message(tmp_path):
    mcp_nb.tool(name="get_author")(helpful)
    save_evaluation(evaluate(TASKS, StandIn(), repeats=2, progress=False), tmp_path / "evaluation.json")
    notebook(
        tmp_path / "tools.ipynb", "raise ToolError(f\"No book titled {title!r}. Known titles: {', '.join(map(repr, BOOKS))}\")"
    )
    green = pytest_run(tmp_path, "--mcp-cases", "evaluation.json", "--mcp-notebook", "tools.ipynb")
    assert green.returncode == 0, green.stdout + green.stderr
    assert "evaluation.json::evaluation-" in green.stdout and "[dun · scripted stand-in] PASSED" in green.stdout
    assert "2 passed" in green.stdout
    # The tool's error no longer names the titles: the stand-in cannot recover, and the replay says so.
    notebook(tmp_path / "tools.ipynb", 'raise ToolError("not found")')
    red = pytest_run(tmp_path, "--mcp-cases", "evaluation.json", "--mcp-notebook", "tools.ipynb")
    assert red.returncode == 1 and "2 failed" in red.stdout, red.stdout + red.stderr
    assert (
        "dun with scripted stand-in (written rules: it does the same every time) did otherwise: passed 0 of 2 (saved: 2 of 2)"
        in red.stdout
    )
