"""The scripted stand-in: it recovers when a message says how, gives up when it does not, does the
same every time, and never passes itself off as a language model."""

from __future__ import annotations

import pytest
from mcp.server.mcpserver.exceptions import ToolError

import mcp_nb
from mcp_nb import StandIn, agent, evaluate

pytestmark = pytest.mark.timeout(120)

BOOKS = {"Dune": "Frank Herbert", "Emma": "Jane Austen"}


def helpful(title: str) -> str:
    """Who wrote a book, by its title."""
    if title not in BOOKS:
        raise ToolError(f"No book titled {title!r}. Known titles: {', '.join(map(repr, BOOKS))}")
    return BOOKS[title]


def crashing(title: str) -> str:
    """Who wrote a book, by its title."""
    return BOOKS[title]


def test_a_tool_error_that_names_the_problem_is_recovered_from():
    mcp_nb.tool(name="get_author")(helpful)
    episode = agent("Who wrote 'Dun'?", StandIn())
    assert [(o.arguments, o.cause) for o in episode.calls] == [({"title": "Dun"}, "raised"), ({"title": "Dune"}, "ok")]
    assert episode.stop == "answered" and episode.answer == "Frank Herbert" and episode.fates() == ["recovered", None]
    assert episode.recovery()["fate"].tolist() == ["recovered"]


def test_a_crash_is_given_up_on():
    mcp_nb.tool(name="get_author")(crashing)
    episode = agent("Who wrote 'Dun'?", StandIn())
    assert [o.cause for o in episode.calls] == ["crash"]
    assert episode.stop == "answered" and episode.answer == "I could not do it. The tool said: Error executing tool get_author"
    assert episode.fates() == ["gave_up"]


def test_it_does_the_same_every_time():
    mcp_nb.tool(name="get_author")(helpful)
    first, second = (agent("Who wrote 'Emm'?", StandIn()) for _ in range(2))
    assert first.messages == second.messages and first.fates() == second.fates() == ["recovered", None]


def test_it_switches_to_the_nearest_tool_when_told_a_tool_does_not_exist():
    mcp_nb.tool(name="get_author")(helpful)
    episode = agent("Who wrote 'Dune'?", StandIn(tool="get_autor", arguments={"title": "Dune"}))
    assert [(o.name, o.cause) for o in episode.calls] == [("get_autor", "unknown_tool"), ("get_author", "ok")]
    assert episode.fates() == ["switched", None]


def test_an_apostrophe_is_not_a_quote():
    @mcp_nb.tool()
    def get_author(title: str) -> str:
        """Who wrote a book."""
        if title not in BOOKS:
            raise ToolError(f"No book titled {title!r}. The catalog's titles are: {', '.join(map(repr, BOOKS))}")
        return BOOKS[title]

    episode = agent("Who wrote 'Emm'?", StandIn())
    assert [o.arguments["title"] for o in episode.calls] == ["Emm", "Emma"] and episode.answer == "Jane Austen"


def test_it_does_not_try_the_same_arguments_twice_nor_past_its_limit():
    @mcp_nb.tool()
    def get_author(title: str) -> str:
        """Who wrote a book."""
        raise ToolError(f"No book titled {title!r}; did you mean 'Dun'?")

    episode = agent("Who wrote 'Dune'?", StandIn())
    assert [o.arguments["title"] for o in episode.calls] == ["Dune", "Dun"]
    assert episode.answer.startswith("I could not do it.")
    limited = agent("Who wrote 'Dune'?", StandIn(max_calls=1))
    assert len(limited.calls) == 1 and limited.fates() == ["gave_up"]


def test_it_reads_numbers_and_picks_the_tool_the_task_names():
    @mcp_nb.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @mcp_nb.tool()
    def get_author(title: str) -> str:
        return "?"

    episode = agent("Please add 2 and 40.", StandIn())
    assert episode.calls[0].name == "add" and episode.calls[0].arguments == {"a": 2, "b": 40} and episode.answer == "42"


def test_it_is_labelled_as_a_stand_in_everywhere_it_shows():
    mcp_nb.tool(name="get_author")(helpful)
    episode = agent("Who wrote 'Dun'?", StandIn())
    assert episode.stand_in and "scripted stand-in (written rules, not a language model)" in repr(episode)
    assert "scripted stand-in (written rules, not a language model)" in episode._repr_html_()
    assert repr(StandIn()) == "<scripted stand-in (written rules, not a language model)>"
    table = evaluate("Who wrote 'Dun'?", StandIn(), progress=False)
    assert table["model"].tolist() == ["scripted stand-in"]


def test_the_course_comparison_helpful_error_against_a_crash():
    mcp_nb.tool(name="get_author")(helpful)
    table = evaluate(
        [
            {"task": "Who wrote 'Dun'?", "check": "Herbert", "id": "dun"},
            {"task": "Who wrote 'Emm'?", "check": "Austen", "id": "emm"},
        ],
        StandIn(),
        repeats=2,
        variants={"ToolError": {"get_author": helpful}, "crash": {"get_author": crashing}},
        progress=False,
    )
    rates = table.set_index(["task_id", "variant"])["recovery_rate"].to_dict()
    assert rates == {("dun", "ToolError"): 1.0, ("emm", "ToolError"): 1.0, ("dun", "crash"): 0.0, ("emm", "crash"): 0.0}
    assert table["success_rate"].tolist() == [1.0, 1.0, 0.0, 0.0]
    assert mcp_nb.engine().registry.get("tool", "get_author").function is helpful  # as it was before the variants
