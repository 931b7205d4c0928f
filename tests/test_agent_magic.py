"""`%mcp_agent`: an episode from a notebook cell, and a mistake in its line said in one line, changing nothing."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

import mcp_nb
from mcp_nb.episodes.episode import log_of

pytestmark = pytest.mark.timeout(120)

TOOL = """%%mcp_tool
def get_author(title: str) -> str:
    \"\"\"Who wrote a book, by its title.\"\"\"
    from mcp.server.mcpserver.exceptions import ToolError
    if title != "Dune":
        raise ToolError(f"No book titled {title!r}. Known titles: 'Dune'")
    return "Frank Herbert"
"""


def test_the_stand_in_from_a_cell(shell):
    assert shell.run_cell(TOOL).success
    result = shell.run_cell("%mcp_agent --stand-in \"Who wrote 'Dun'?\"")
    episode = result.result
    assert result.success and isinstance(episode, mcp_nb.Episode)
    assert episode.answer == "Frank Herbert" and episode.fates() == ["recovered", None]
    assert [o.call_id for o in episode.calls] == mcp_nb.history().to_frame()["call_id"].tolist()


def test_a_model_from_a_variable_with_its_options(shell):
    assert shell.run_cell(TOOL).success
    shell.user_ns["asked"] = []

    def model(messages, tools):
        shell.user_ns["asked"].append((messages[0], [t["function"]["name"] for t in tools]))
        return "I know it: Frank Herbert."

    shell.user_ns["mine"] = model
    episode = shell.run_cell(
        '%mcp_agent --model mine --tools get_author --max-turns 2 --system "Be brief." Who wrote Dune'
    ).result
    assert episode.answer == "I know it: Frank Herbert." and episode.task == "Who wrote Dune"
    assert shell.user_ns["asked"] == [({"role": "system", "content": "Be brief."}, ["get_author"])]


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ('%mcp_agent "Who wrote Dune?"', "name the model"),
        ('%mcp_agent --stand-in --model m "x"', "name the model"),
        ('%mcp_agent --model nothing_here "x"', "--model nothing_here: no variable of that name"),
        ('%mcp_agent --stand-in --tools nope "x"', "has no tool 'nope'"),
        ('%mcp_agent --stand-in --server elsewhere "x"', "no server named 'elsewhere'"),
        ('%mcp_agent --stand-in --max-turns 0 "x"', "max_turns must be a whole number >= 1"),
        ('%mcp_agent --stand-in --timeout -1 "x"', "timeout"),
        ('%mcp_agent --stand-in --policy lenient "x"', "invalid choice"),
        ("%mcp_agent --stand-in", "the following arguments are required: task"),
    ],
)
def test_a_mistake_is_one_line_and_changes_nothing(shell, line, said):
    assert shell.run_cell(TOOL).success
    shell.user_ns["m"] = lambda messages, tools: "x"
    result = shell.run_cell(line)
    assert isinstance(result.error_in_exec, UsageError), result.error_in_exec
    assert said in str(result.error_in_exec) and "\n" not in str(result.error_in_exec)
    assert len(mcp_nb.history()) == 0 and len(log_of(mcp_nb.history())) == 0
