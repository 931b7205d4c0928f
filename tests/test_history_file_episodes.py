"""The episodes of a model in the loop are kept in a history file beside their calls: a kernel that
restarts, another kernel, another machine reads them back (`History.open(path).episodes()`), every
session's, each with its session; written whole, 0600, nothing secret in them; a file that cannot be
read is said in one line and the others are kept."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
import textwrap
import warnings

import pandas as pd
import pytest
from helpers import checkout_env
from test_history_episodes import crashing, helpful

import mcp_nb
from mcp_nb import StandIn, agent
from mcp_nb.records.history import History, HistoryFileWarning

pytestmark = pytest.mark.timeout(120)

SECRET = "hunter2-not-for-disk"
TASK = f"Who wrote 'Dun'? (the catalog is at https://shop:{SECRET}@books.example/api)"


def two_episodes():
    mcp_nb.tool(name="get_author")(helpful)
    recovered = agent(TASK, StandIn())
    mcp_nb.tool(name="get_author")(crashing)
    gave_up = agent(TASK, StandIn())
    return recovered, gave_up


def same_episodes(back: pd.DataFrame, here: pd.DataFrame) -> None:
    """The frames of the same episodes, one read back from a file, the other from memory: equal,
    but for the texts the file's scrub took the secrets out of."""
    assert list(back.columns) == list(here.columns)
    texts = ["task", "detail", "answer"]
    pd.testing.assert_frame_equal(back.drop(columns=texts), here.drop(columns=texts))
    assert back["task"].str.replace("***", SECRET, regex=False).tolist() == here["task"].tolist()


def test_the_episodes_are_read_back_from_the_file_as_the_history_has_them(tmp_path):
    path = tmp_path / "calls.mcpnb"
    mcp_nb.configure(history_file=str(path))
    recovered, gave_up = two_episodes()
    assert mcp_nb.history().sync()
    here = mcp_nb.history().episodes()
    back = History.open(path).episodes()
    assert back["episode"].tolist() == [recovered.id, gave_up.id]
    assert back["stop"].tolist() == ["answered", "answered"] and back["recovered"].tolist() == [1, 0]
    assert back["session"].nunique() == 1 and back["session"].iloc[0] == History.open(path).to_frame()["session"].iloc[0]
    same_episodes(back, here)
    # the calls of each episode are the file's rows with its session and number
    calls = History.open(path).to_frame()
    for episode in back.itertuples():
        mine = calls[(calls["session"] == episode.session) & (calls["episode"] == episode.episode)]
        assert len(mine) == episode.calls
    assert History.open(path).summary(by="episode")["episodes"].sum() == 2


def test_an_episode_file_is_whole_0600_and_holds_no_secret(tmp_path):
    path = tmp_path / "calls.mcpnb"
    mcp_nb.configure(history_file=str(path))
    two_episodes()
    mcp_nb.configure(history_file=None)
    files = sorted(path.glob("*.episode.*.json"))
    assert len(files) == 2
    for file in files:
        assert stat.S_IMODE(file.stat().st_mode) == 0o600
        text = file.read_text(encoding="utf-8")
        assert SECRET not in text and "https://shop:***@books.example" in text
        assert json.loads(text)["mcp_nb_episode"] == 1
    assert not [p for p in path.iterdir() if p.name.endswith(".tmp")]


def test_every_sessions_episodes_after_a_restart(tmp_path):
    path = tmp_path / "calls.mcpnb"
    program = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        import mcp_nb
        from mcp_nb import StandIn, agent
        from tools import helpful
        mcp_nb.configure(history_file={str(path)!r})
        mcp_nb.tool(name="get_author")(helpful)
        print(agent("Who wrote 'Emm'?", StandIn()).id)
        """
    )
    (tmp_path / "tools.py").write_text(
        "from mcp.server.mcpserver.exceptions import ToolError\nBOOKS = {'Dune': 'Frank Herbert', 'Emma': 'Jane Austen'}\n"
        + textwrap.dedent(
            '''
            def helpful(title: str) -> str:
                """Who wrote a book, by its exact title."""
                if title not in BOOKS:
                    raise ToolError(f"No book titled {title!r}. Known titles: {', '.join(map(repr, BOOKS))}")
                return BOOKS[title]
            '''
        )
    )
    kernels = []
    for _ in range(2):  # two kernels, one after the other, on the same file
        done = subprocess.run([sys.executable, "-c", program], env=checkout_env(), capture_output=True, text=True, timeout=90)
        assert done.returncode == 0, done.stderr[-2000:]
        kernels.append(int(done.stdout.split()[-1]))
    back = History.open(path).episodes()
    assert back["episode"].tolist() == kernels and back["session"].nunique() == 2
    assert back["session"].tolist() == sorted(back["session"])  # the sessions in the order they began
    assert back["stop"].tolist() == ["answered"] * 2 and back["recovered"].tolist() == [1, 1]
    calls = History.open(path).to_frame()
    assert calls.groupby("session", observed=True)["episode"].max().tolist() == kernels


@pytest.mark.parametrize(
    "broken",
    ['{"mcp_nb_episode": 1, "kept": [', '{"mcp_nb_episode": 1, "kept": ' + "[" * 100_000 + "]" * 100_000 + "}"],
    ids=["cut-short", "nested-past-any-reader"],
)
def test_an_episode_file_that_cannot_be_read_is_said_once_and_the_others_are_kept(tmp_path, broken):
    path = tmp_path / "calls.mcpnb"
    mcp_nb.configure(history_file=str(path))
    recovered, gave_up = two_episodes()
    mcp_nb.configure(history_file=None)
    first = sorted(path.glob("*.episode.*.json"))[0]
    first.write_text(broken, encoding="utf-8")
    with pytest.warns(HistoryFileWarning, match=r"1 episode file\(s\) left out: .*episode"):
        back = History.open(path).episodes()
    assert back["episode"].tolist() == [gave_up.id]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        History.open(path).to_frame()  # the calls are whole: nothing to say


def test_a_history_in_memory_and_a_file_without_episodes_have_the_same_columns(tmp_path):
    path = tmp_path / "calls.mcpnb"
    mcp_nb.configure(history_file=str(path))
    mcp_nb.tool(name="get_author")(helpful)
    mcp_nb.call("get_author", {"title": "Dune"})
    mcp_nb.configure(history_file=None)
    empty = History.open(path).episodes()
    assert empty.empty and list(empty.columns) == list(mcp_nb.history().episodes().columns)
    assert "session" in empty.columns
