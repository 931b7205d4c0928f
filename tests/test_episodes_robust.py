"""The loop against models and tools that misbehave: each case recorded, none makes a face raise,
no call lost or recorded twice."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from helpers import interrupted_when, wait_until
from mcp.server.mcpserver.exceptions import ToolError

import mcp_nb
from mcp_nb import Budget, HostPolicy, StandIn, agent, evaluate
from mcp_nb.episodes.episode import log_of
from mcp_nb.mistakes import Mistake

pytestmark = pytest.mark.timeout(120)

BOOKS = {"Dune": "Frank Herbert", "Emma": "Jane Austen"}


@pytest.fixture
def books():
    @mcp_nb.tool()
    def get_author(title: str) -> str:
        """Who wrote a book, by its title."""
        if title not in BOOKS:
            raise ToolError(f"No book titled {title!r}. Known titles: {', '.join(map(repr, BOOKS))}")
        return BOOKS[title]


def scripted(*replies):
    """A model function that replies with these, in order, then answers "done"."""
    given = list(replies)

    def model(messages, tools):
        return given.pop(0) if given else {"role": "assistant", "content": "done"}

    return model


def call(name, arguments, id="c1"):
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}],
    }


def recorded_once(episodes):
    """Every call the episodes made is in the history once, and every episode is in the log once."""
    frame = mcp_nb.history().to_frame()
    ids = [o.call_id for e in episodes for o in e.calls]
    assert sorted(frame["call_id"].tolist()) == sorted(ids), (frame["call_id"].tolist(), ids)
    logged = [row["episode"] for row in log_of(mcp_nb.history()).rows()]
    assert sorted(logged) == sorted({e.id for e in episodes})
    for episode in episodes:  # each call says the episode and the turn of the model that asked for it
        assert all((s.outcome.episode, s.outcome.turn) == (episode.id, s.turn) for s in episode.steps if s.outcome is not None)


def test_an_unknown_tool_is_called_and_what_the_server_says_is_told(books):
    episode = agent("Who wrote 'Dune'?", scripted(call("get_author:", '{"title": "Dune"}')))
    step = episode.steps[0]
    assert step.outcome.cause == "unknown_tool" and step.told.text == "Unknown tool: get_author:" and step.told.is_error
    assert episode.stop == "answered" and episode.fates() == ["gave_up"]
    recorded_once([episode])


def test_a_host_that_refuses_an_unknown_tool_sends_nothing_and_names_the_tools(books):
    episode = agent("Who wrote 'Dune'?", scripted(call("get_author:", '{"title": "Dune"}')), policy="transparent")
    step = episode.steps[0]
    assert step.outcome is None and step.kind == "not_sent" and step.reason == "the tool was not offered"
    assert (
        step.told.text == "There is no tool named 'get_author:'; the tools are: get_author."
        and step.told.rule == "unknown_tool: refuse"
    )
    assert len(mcp_nb.history()) == 0
    recorded_once([episode])


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ('{ "title": "Dun&#34; }', "not JSON"),
        ('["Dune"]', "JSON array"),
        ("null", "JSON null"),
        ('{"title": NaN}', "no call can carry"),
        ('{"title": "Du' + chr(1) + 'n"}', "(Invalid control character at line 1, column 14)"),
    ],
)
def test_arguments_that_are_not_a_json_object_are_not_sent_and_the_model_is_told_why(books, arguments, why):
    episode = agent(
        "Who wrote 'Dune'?",
        scripted(call("get_author", arguments), call("get_author", '{"title": "Dune"}', "c2"), "Frank Herbert"),
    )
    first, second = episode.steps
    assert first.outcome is None and why in first.reason and first.told.rule == "bad_arguments: refuse"
    assert second.outcome.cause == "ok" and episode.answer == "Frank Herbert"
    assert episode.fates() == ["recovered", None]
    assert mcp_nb.history().to_frame()["cause"].tolist() == ["ok"]
    recorded_once([episode])


def test_a_host_that_stops_at_unreadable_arguments_ends_the_episode(books):
    episode = agent("Who wrote 'Dune'?", scripted(call("get_author", "{")), policy={"bad_arguments": "stop"})
    assert episode.stop == "host_stopped" and "bad_arguments: stop" in episode.detail and episode.fates() == ["cut_short"]


def test_a_model_that_never_stops_runs_out_of_turns(books):
    def forever(messages, tools):
        return call("get_author", '{"title": "Dune"}', f"c{len(messages)}")

    episode = agent("Who wrote 'Dune'?", forever, max_turns=4)
    assert episode.stop == "out_of_turns" and len(episode.turns) == 4 and len(episode.calls) == 4
    recorded_once([episode])


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_model_that_raises_ends_the_episode_without_raising(books, asynchronous):
    def broken(messages, tools):
        raise ConnectionError("the model's server went away")

    async def broken_async(messages, tools):
        raise ConnectionError("the model's server went away")

    episode = agent("Who wrote 'Dune'?", broken_async if asynchronous else broken)
    assert episode.stop == "model_failed"
    assert (
        episode.detail
        == "the model function 'broken"
        + ("_async" if asynchronous else "")
        + "' raised ConnectionError: the model's server went away"
    )
    assert "ConnectionError" in episode.traceback and episode.turns == []


@pytest.mark.parametrize("reply", [42, {"role": "user", "content": "hi"}, {"tool_calls": "x"}, None])
def test_a_reply_in_another_shape_ends_the_episode_as_the_model_failing(books, reply):
    episode = agent("Who wrote 'Dune'?", lambda messages, tools: reply)
    assert episode.stop == "model_failed" and episode.detail, episode


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_model_that_never_replies_times_out(books, asynchronous):
    release = threading.Event()

    def stuck(messages, tools):
        release.wait(30)
        return "late"

    async def stuck_async(messages, tools):
        await asyncio.sleep(30)

    t0 = time.monotonic()
    episode = agent("Who wrote 'Dune'?", stuck_async if asynchronous else stuck, model_timeout=0.5)
    release.set()
    assert episode.stop == "model_failed" and "did not reply within 0.5 s" in episode.detail
    assert time.monotonic() - t0 < 20


def test_a_tool_that_hangs_times_out_and_the_model_is_told_what_the_policy_says():
    done = threading.Event()

    @mcp_nb.tool()
    def slow(title: str) -> str:
        done.wait(5)
        return "late"

    episode = agent("Use slow on 'x'", scripted(call("slow", '{"title": "x"}')), timeout=0.5)
    step = episode.steps[0]
    assert step.outcome.outcome == "timeout" and step.told.rule == "timeout: generic"
    assert step.told.text == HostPolicy().generic and episode.stop == "answered"
    told = agent("Use slow on 'x'", scripted(call("slow", '{"title": "x"}')), timeout=0.5, policy="transparent")
    assert told.steps[0].told.text == "The tool did not answer within 0.5 s; there is no result."
    ended = agent("Use slow on 'x'", scripted(call("slow", '{"title": "x"}')), timeout=0.5, policy={"timeout": "stop"})
    done.set()
    assert ended.stop == "host_stopped" and ended.detail == "after a timeout (timeout: stop)"


def test_a_reset_during_a_tool_call_ends_the_episode_as_cancelled_and_the_call_is_recorded_once():
    entered, release = threading.Event(), threading.Event()

    @mcp_nb.tool()
    def slow(title: str) -> str:
        entered.set()
        release.wait(10)
        return "late"

    old = mcp_nb.history()
    got = {}
    runner = threading.Thread(target=lambda: got.setdefault("e", agent("go", scripted(call("slow", '{"title": "x"}')))))
    runner.start()
    assert entered.wait(20)
    mcp_nb.reset()
    release.set()
    runner.join(20)
    episode = got["e"]
    assert episode.stop == "cancelled" and episode.detail == "stopped by mcp_nb.reset()"
    assert [o.cause for o in episode.calls] == ["cancelled"]
    assert old.to_frame()["cause"].tolist() == ["cancelled"]
    assert [r["episode"] for r in log_of(old).rows()] == [episode.id]


def test_a_reset_while_the_model_thinks_ends_the_episode_as_cancelled(books):
    thinking, release = threading.Event(), threading.Event()

    def slow_model(messages, tools):
        thinking.set()
        release.wait(10)
        return "late"

    old = mcp_nb.history()
    got = {}
    runner = threading.Thread(target=lambda: got.setdefault("e", agent("go", slow_model)))
    runner.start()
    assert thinking.wait(20)
    mcp_nb.reset()
    release.set()
    runner.join(20)
    assert got["e"].stop == "cancelled" and got["e"].turns == []
    assert len(log_of(old)) == 1


def test_an_interrupted_episode_returns_what_it_did(books):
    entered = threading.Event()

    @mcp_nb.tool()
    def slow(title: str) -> str:
        entered.set()
        time.sleep(5)
        return "late"

    with interrupted_when(entered.is_set):
        episode = agent("go", scripted(call("get_author", '{"title": "Dune"}'), call("slow", '{"title": "x"}', "c2")))
    assert episode.stop == "cancelled" and episode.detail == "interrupted"
    assert [o.cause for o in episode.calls] == ["ok", "cancelled"]
    recorded_once([episode])


def test_a_cancelled_evaluation_returns_its_episodes_and_records_each_once(books):
    started = []

    @mcp_nb.tool()
    def slow(title: str) -> str:
        started.append(title)
        time.sleep(3)
        return "late"

    with interrupted_when(lambda: len(started) >= 2):
        table = evaluate(
            ["Use slow on 'a'", "Use slow on 'b'", "Use slow on 'c'"],
            StandIn(tool="slow", arguments={"title": "t"}),
            repeats=3,
            concurrency=2,
            progress=False,
        )
    assert table.attrs["interrupted"]
    episodes = [e for e in (log_of(mcp_nb.history()).rows())]
    assert 1 <= len(episodes) < 9 and all(row["stop"] in ("cancelled", "answered") for row in episodes)
    frame = mcp_nb.history().to_frame()
    assert frame["call_id"].is_unique and "cancelled" in frame["cause"].tolist()
    assert table["episodes"].sum() == len(episodes)


def test_a_token_budget_ends_the_episode_after_the_reply_that_reached_it(books):
    def costly(messages, tools):
        return {
            "choices": [{"message": call("get_author", '{"title": "Dune"}', f"c{len(messages)}"), "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 80, "completion_tokens": 20},
        }

    episode = agent("Who wrote 'Dune'?", costly, budget=Budget(tokens=250))
    assert (
        episode.stop == "budget" and episode.detail == "tokens: 300 of 250" and len(episode.turns) == 3 and episode.tokens == 300
    )
    timed = agent("Who wrote 'Dune'?", costly, budget={"seconds": 0.001})
    assert timed.stop == "budget" and timed.detail.startswith("seconds")


def test_bad_input_raises_one_line_before_anything_runs(books):
    for kwargs in (
        {"max_turns": 0},
        {"model_timeout": -1},
        {"policy": {"timeout": "shout"}},
        {"budget": {"coins": 3}},
        {"tools": ["nope"]},
        {"server": "nowhere"},
        {"timeout": 0},
        {"policy": "lenient"},
    ):
        with pytest.raises(Mistake) as caught:
            agent("Who wrote 'Dune'?", StandIn(), **kwargs)
        assert "\n" not in str(caught.value), kwargs
    with pytest.raises(Mistake):
        agent("", StandIn())
    with pytest.raises(Mistake):
        agent("x", "not a model")
    assert len(mcp_nb.history()) == 0 and len(log_of(mcp_nb.history())) == 0


def test_many_tool_calls_in_one_reply_are_each_a_step_and_answered_in_order(books):
    reply = {
        "role": "assistant",
        "content": "Looking both up.",
        "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "get_author", "arguments": {"title": "Dune"}}},
            {"id": "b", "type": "function", "function": {"name": "get_author", "arguments": '{"title": "Emm"}'}},
        ],
    }
    episode = agent("Who wrote them?", scripted(reply))
    assert [s.kind for s in episode.steps] == ["result", "tool_error"] and episode.turns[0].content == "Looking both up."
    tools = [m for m in episode.messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tools] == ["a", "b"]
    wait_until(lambda: len(mcp_nb.history()) == 2)
    recorded_once([episode])


def test_the_await_face_from_another_event_loop(books):
    import asyncio

    async def main():
        return await mcp_nb.aagent("Who wrote 'Dun'?", StandIn())

    episode = asyncio.run(main())
    assert episode.answer == "Frank Herbert" and episode.fates() == ["recovered", None]
    recorded_once([episode])
