"""A replay's calls are marked in the history, and saving the history does not save them again.

Before, saving cases after a replay wrote each case twice (30 cases instead of 15, the copies
under new ids): the replayed calls were calls like any other. They are still in the history,
marked `via` "replay", and saved only when asked for.
"""

import json

import mcp_nb
from mcp_nb.records.cases import load


def explore():
    @mcp_nb.tool(read_only=True)
    def get_author(title: str) -> str:
        return {"Dune": "Frank Herbert"}[title]

    mcp_nb.call("get_author", {"title": "Dune"})
    mcp_nb.call("get_author", {"title": "Solaris"})


def test_a_replays_calls_are_marked_in_the_history(tmp_path):
    explore()
    mcp_nb.history().to_cases(tmp_path / "cases.json")
    frame = mcp_nb.replay(tmp_path / "cases.json")
    history = mcp_nb.history().to_frame()
    assert history["via"].astype(str).tolist() == ["kernel", "kernel", "replay", "replay"]
    # The replay's calls run side by side: which of them got the lower id is not the cases' order.
    assert sorted(history["call_id"].tolist()[2:]) == sorted(frame["call_id"].tolist())
    assert "replay" in repr(mcp_nb.history())  # the table names who made each call once a replay made some


def test_saving_after_a_replay_saves_the_same_cases_not_the_replay_again(tmp_path):
    explore()
    first = mcp_nb.history().to_cases(tmp_path / "cases.json")
    mcp_nb.replay(tmp_path / "cases.json")
    mcp_nb.replay(tmp_path / "cases.json")
    again = mcp_nb.history().to_cases(tmp_path / "again.json")
    assert again == first
    (latest,) = mcp_nb.history().to_cases(tmp_path / "last.json", last=1)  # the latest call not a replay's
    assert latest.arguments == {"title": "Solaris"}


def test_the_replayed_calls_are_saved_when_asked_for(tmp_path, shell, capsys):
    explore()
    mcp_nb.history().to_cases(tmp_path / "cases.json")
    mcp_nb.replay(tmp_path / "cases.json")
    cases = mcp_nb.history().to_cases(tmp_path / "all.json", replayed=True)
    assert [c.id for c in cases] == ["get_author-1", "get_author-2", "get_author-3", "get_author-4"]
    shell.run_line_magic("mcp_save_cases", str(tmp_path / "magic.json"))
    assert capsys.readouterr().out.strip() == f"saved 2 cases to {tmp_path / 'magic.json'}"
    shell.run_line_magic("mcp_save_cases", f"{tmp_path / 'magic.json'} --replayed")
    assert capsys.readouterr().out.strip() == f"saved 4 cases to {tmp_path / 'magic.json'}"
    assert len(load(tmp_path / "magic.json")) == 4
    assert len(json.loads((tmp_path / "magic.json").read_text())["cases"]) == 4
