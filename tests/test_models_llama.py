"""A real model in the loop: SmolLM2-135M behind llama.cpp's OpenAI-compatible server, on 127.0.0.1.

It is far too small to correct itself, and makes exactly the mistakes a loop must survive (a tool
name that does not exist, arguments that are not JSON, HTML entities and runaway strings in them):
these tests hold the loop's plumbing and its record of a real model's mistakes, not the model's
skill. The figures (its recovery rate) are printed (`pytest -s`) and given in the docs.
"""

from __future__ import annotations

import secrets

import peers
import pytest
from mcp.server.mcpserver.exceptions import ToolError

import mcp_nb
from mcp_nb import OpenAICompatible, agent, evaluate
from mcp_nb.episodes.episode import log_of
from mcp_nb.records.recovery import STOPS

# In the parallel pass, dealt out first (tests/conftest.py): with its context bounded (peers.py),
# a reply costs seconds.
pytestmark = pytest.mark.timeout(900)

BOOKS = {"Dune": "Frank Herbert", "Emma": "Jane Austen", "Ulysses": "James Joyce"}
SYSTEM = "You answer questions by calling the tools you are given."
TASKS = [
    {"task": 'Who wrote the book titled "Dun"?', "check": "Herbert", "id": "dun"},
    {"task": 'Who wrote the book titled "Emm"?', "check": "Austen", "id": "emm"},
    {"task": 'Who wrote the book titled "Ulyses"?', "check": "Joyce", "id": "ulyses"},
]


@pytest.fixture(scope="module")
def smollm2():
    peers.require(peers.LLAMA)
    key = secrets.token_urlsafe(24)
    with peers.llama_server(key) as url:
        yield url, key


@pytest.fixture
def model(smollm2, monkeypatch):
    url, key = smollm2
    monkeypatch.setenv("MCP_NB_TEST_LLAMA_KEY", key)
    return OpenAICompatible("smollm2", url, key="MCP_NB_TEST_LLAMA_KEY", temperature=0, max_tokens=64, options={"seed": 1})


@pytest.fixture
def books():
    @mcp_nb.tool()
    def get_author(title: str) -> str:
        """Who wrote a book, by its exact title."""
        if title not in BOOKS:
            raise ToolError(f"No book titled {title!r}. The catalog's titles are: {', '.join(map(repr, BOOKS))}")
        return BOOKS[title]


def refused(stop: str, detail: str) -> bool:
    """Whether the endpoint refused a request for a reason other than the model's own runaway: a
    reply written to the end of the context (peers.llama_server) is answered with a 400 that says
    so, and is the model's doing; any other HTTP failure (the key, the request's shape) is ours."""
    return stop == "model_failed" and detail.startswith("HTTP") and "maximum context length" not in detail


def test_the_served_model_answers_only_to_its_key(smollm2, books, monkeypatch):
    url, key = smollm2  # given to the server in its environment (peers.llama_server), not its command line
    monkeypatch.setenv("MCP_NB_TEST_LLAMA_KEY", "not-" + key)
    wrong = OpenAICompatible("smollm2", url, key="MCP_NB_TEST_LLAMA_KEY", retries=0)
    episode = agent(TASKS[0]["task"], wrong, system=SYSTEM, max_turns=1, model_timeout=60)
    assert episode.stop == "model_failed" and episode.detail.startswith("HTTP 401"), episode
    assert key not in episode.detail


def test_episodes_with_a_real_model_are_recorded_whatever_it_does(model, books):
    # Two tasks of three turns: each turn of this model costs seconds of both cores (its prompt is
    # the tools' schemas), and what is held here is the loop's record of a real model, not its skill.
    episodes = [agent(t["task"], model, system=SYSTEM, max_turns=3, model_timeout=180) for t in TASKS[:2]]
    for episode in episodes:
        print(episode, end="\n\n")
        assert episode.stop in STOPS and episode.stop != "cancelled"
        assert not refused(episode.stop, episode.detail), episode.detail
        assert episode.tokens is not None and episode.tokens > 0  # llama.cpp reports usage
        for step in episode.steps:
            assert step.told is not None and (step.outcome is not None or step.reason)
    frame = mcp_nb.history().to_frame()
    assert sorted(frame["call_id"]) == sorted(o.call_id for e in episodes for o in e.calls)
    assert sum(len(e.turns) for e in episodes) >= len(episodes)
    failures = [f for e in episodes for f in e.fates() if f is not None]
    print(f"SmolLM2-135M: {len(failures)} failed calls in {len(episodes)} episodes, recovered {failures.count('recovered')}")


def test_a_small_evaluation_with_a_real_model(model, books):
    # "Emm": its two turns cost seconds. "Ulyses" makes the model run away inside a tool call's
    # arguments on its second turn, every time at temperature 0 (half a minute to the context's
    # end, answered with a 400): the loop's record of that is held with stand-ins that never stop.
    table = evaluate(
        TASKS[1:2], {"smollm2": model}, repeats=2, system=SYSTEM, max_turns=2, model_timeout=180, concurrency=1, progress=False
    )
    print(table.to_string())
    assert table["episodes"].tolist() == [2] and not table.attrs["interrupted"]
    for row in log_of(mcp_nb.history()).rows():
        assert not refused(row["stop"], row["detail"] or ""), row["detail"]
    assert table["success_rate"].between(0, 1).all()
    assert (table["success_low"] <= table["success_rate"]).all() and (table["success_rate"] <= table["success_high"]).all()
    assert len(log_of(mcp_nb.history())) == 2
