"""The history's episodes: each call a model asked for is a row with its `episode` and `turn` (none for
a call no model made), in memory and in a history file, an older file's rows included; the History
keeps the episodes themselves (`episodes()`, `summary(by="episode")`), and `clear()` and `reset()`
forget them with the calls."""

from __future__ import annotations

import pandas as pd
import pytest
from mcp.server.mcpserver.exceptions import ToolError

import mcp_nb
from mcp_nb import StandIn, agent
from mcp_nb.mistakes import BadValue
from mcp_nb.records import disk
from mcp_nb.records.history import COLUMNS, History

pytestmark = pytest.mark.timeout(120)

BOOKS = {"Dune": "Frank Herbert", "Emma": "Jane Austen"}
TASK = "Who wrote 'Dun'?"


def helpful(title: str) -> str:
    """Who wrote a book, by its exact title."""
    if title not in BOOKS:
        raise ToolError(f"No book titled {title!r}. Known titles: {', '.join(map(repr, BOOKS))}")
    return BOOKS[title]


def crashing(title: str) -> str:
    """Who wrote a book, by its exact title."""
    return BOOKS[title]


def two_episodes():
    """A plain call, then the stand-in's episode with the helpful ToolError, then one with the crash."""
    mcp_nb.tool(name="get_author")(helpful)
    plain = mcp_nb.call("get_author", {"title": "Emma"})
    recovered = agent(TASK, StandIn())
    mcp_nb.tool(name="get_author")(crashing)
    gave_up = agent(TASK, StandIn())
    return plain, recovered, gave_up


def numbers(column: pd.Series) -> list:
    return [None if pd.isna(v) else int(v) for v in column]


def test_each_call_a_model_asked_for_has_its_episode_and_turn_and_a_plain_call_none():
    plain, recovered, gave_up = two_episodes()
    frame = mcp_nb.history().to_frame()
    assert list(frame.columns) == list(COLUMNS) and {"episode", "turn"} <= set(COLUMNS)
    assert str(frame["episode"].dtype) == str(frame["turn"].dtype) == "Int64"
    assert frame["call_id"].tolist() == [plain.call_id, *(o.call_id for o in recovered.calls + gave_up.calls)]
    assert numbers(frame["episode"]) == [None, recovered.id, recovered.id, gave_up.id]
    assert numbers(frame["turn"]) == [None, 1, 2, 1]
    assert [o.episode for o in recovered.calls] == [recovered.id] * 2 and plain.episode is None
    chosen = mcp_nb.history().to_frame(columns=["turn"], last=2)
    assert list(chosen.columns) == ["turn"] and numbers(chosen["turn"]) == [2, 1]


def test_episodes_is_one_row_per_episode_with_what_the_model_did_after_each_failure():
    _, recovered, gave_up = two_episodes()
    episodes = mcp_nb.history().episodes()
    assert len(episodes) == 2
    for column in ("task", "model", "turns", "calls", "failures", "tool_errors", "protocol_errors", "timeouts", "not_sent",
                   "recovered", "gave_up", "stop", "duration_ms", "tokens"):  # fmt: skip
        assert column in episodes.columns, column
    first, second = episodes.to_dict("records")
    assert first["episode"] == recovered.id and second["episode"] == gave_up.id
    assert first["task"] == second["task"] == TASK and first["model"] == second["model"] == "scripted stand-in"
    assert (first["stop"], first["turns"], first["calls"], first["failures"], first["tool_errors"]) == ("answered", 3, 2, 1, 1)
    assert (first["recovered"], first["gave_up"], first["answer"]) == (1, 0, "Frank Herbert")
    assert (second["stop"], second["turns"], second["calls"], second["failures"], second["tool_errors"]) == ("answered", 2, 1, 1, 1)
    assert (second["recovered"], second["gave_up"]) == (0, 1) and second["answer"].startswith("I could not do it.")
    assert first["duration_ms"] > 0 and pd.isna(first["tokens"])  # the stand-in reports no tokens
    assert str(episodes["stop"].dtype) == "category" and str(episodes["tokens"].dtype) == "Int64"
    # its calls are the frame's rows of its number
    frame = mcp_nb.history().to_frame()
    assert frame.loc[frame["episode"] == recovered.id, "outcome"].astype(str).tolist() == ["tool_error", "result"]


def test_summary_by_episode_is_per_model_and_task_with_the_recovery_rate():
    two_episodes()
    agent("Who wrote 'Emma'?", StandIn())  # crashing still: no failure, it answers at once
    table = mcp_nb.history().summary(by="episode")
    assert list(table.index.names) == ["model", "task"]
    dun = table.loc[("scripted stand-in", TASK)]
    assert (dun["episodes"], dun["answered"], dun["failures"], dun["recovered"], dun["gave_up"]) == (2, 2, 2, 1, 1)
    assert dun["recovery_rate"] == 0.5
    emma = table.loc[("scripted stand-in", "Who wrote 'Emma'?")]
    assert (emma["episodes"], emma["failures"]) == (1, 0) and pd.isna(emma["recovery_rate"])
    with pytest.raises(BadValue, match="'session' or 'episode'"):
        mcp_nb.history().summary(by="episodes")


def test_an_empty_history_has_no_episodes_and_the_columns_still():
    episodes = mcp_nb.history().episodes()
    assert episodes.empty and {"task", "model", "recovered", "stop"} <= set(episodes.columns)
    assert mcp_nb.history().summary(by="episode").empty
    assert list(mcp_nb.history().to_frame().columns) == list(COLUMNS)


def test_clear_and_reset_forget_the_episodes_with_the_calls():
    two_episodes()
    mcp_nb.history().clear()
    assert mcp_nb.history().episodes().empty and len(mcp_nb.history()) == 0
    kept = agent(TASK, StandIn())
    assert mcp_nb.history().episodes()["episode"].tolist() == [kept.id]
    old = mcp_nb.history()
    mcp_nb.reset()
    assert mcp_nb.history().episodes().empty and old.episodes()["episode"].tolist() == [kept.id]


def test_an_episode_that_runs_across_clear_is_kept_with_its_calls_after_the_mark():
    mcp_nb.tool(name="get_author")(helpful)
    asked = []

    def model(messages, tools):  # clears the history between its first call and its second
        asked.append(len(asked))
        if len(asked) == 2:
            mcp_nb.history().clear()
        if len(asked) <= 2:
            title = "Dun" if len(asked) == 1 else "Dune"
            call = {"id": f"c{len(asked)}", "type": "function", "function": {"name": "get_author", "arguments": f'{{"title": "{title}"}}'}}
            return {"role": "assistant", "content": None, "tool_calls": [call]}
        return "Frank Herbert"

    episode = agent(TASK, model)
    frame = mcp_nb.history().to_frame()
    assert frame["call_id"].tolist() == [episode.calls[1].call_id] and numbers(frame["turn"]) == [2]
    row = mcp_nb.history().episodes().to_dict("records")
    assert [(r["episode"], r["calls"], r["recovered"]) for r in row] == [(episode.id, 2, 1)]


def test_the_columns_survive_a_history_file(tmp_path):
    path = tmp_path / "calls.mcpnb"
    mcp_nb.history().keep(path)
    plain, recovered, gave_up = two_episodes()
    assert mcp_nb.history().sync()
    back = History.open(path).to_frame()
    assert str(back["episode"].dtype) == str(back["turn"].dtype) == "Int64"
    assert numbers(back["episode"]) == [None, recovered.id, recovered.id, gave_up.id]
    assert numbers(back["turn"]) == [None, 1, 2, 1]
    assert numbers(History.open(path).to_frame(columns=["episode"])["episode"]) == numbers(back["episode"])


def test_a_file_written_before_the_columns_reads_them_as_none_beside_newer_parts(tmp_path):
    path = tmp_path / "calls.mcpnb"
    history = mcp_nb.history()
    history.keep(path)
    mcp_nb.tool(name="get_author")(helpful)
    before = [mcp_nb.call("get_author", {"title": t}).call_id for t in ("Dune", "Emma")]
    history.close()
    for part in sorted(path.glob("*.arrow")):  # as an mcp_nb before the columns wrote it
        table = disk.read_table(part)
        assert {"episode", "turn"} <= set(table.column_names)
        disk.write_part(path, part.name, table.drop_columns(["episode", "turn"]))
    old = History.open(path).to_frame()
    assert old["call_id"].tolist() == before and numbers(old["episode"]) == numbers(old["turn"]) == [None, None]
    assert str(old["episode"].dtype) == "Int64"
    assert numbers(History.open(path).to_frame(columns=["turn"])["turn"]) == [None, None]
    # a kernel writes on to it: its new parts have the columns, the old ones still have none
    history.keep(path)
    episode = agent(TASK, StandIn())
    assert history.sync()
    both = History.open(path).to_frame()
    assert numbers(both["episode"]) == [None, None, episode.id, episode.id] and numbers(both["turn"]) == [None, None, 1, 2]
    history.close()


def test_the_magic_leaves_its_episode_in_the_history(shell):
    mcp_nb.tool(name="get_author")(helpful)
    result = shell.run_cell(f'%mcp_agent --stand-in "{TASK}"')
    assert result.success
    episode = result.result
    episodes = mcp_nb.history().episodes()
    assert episodes["episode"].tolist() == [episode.id] and episodes["recovered"].tolist() == [1]
    assert numbers(mcp_nb.history().to_frame()["episode"]) == [episode.id, episode.id]


def test_every_target_and_maker_of_a_call_reads_back_as_recorded(tmp_path):
    # The store keeps a call's target and `via` as one code, and its episode and turn as one value
    from mcp_nb.records.outcome import TARGETS, VIAS, Outcome

    made = [(t, v, e) for t in TARGETS for v in VIAS for e in (None, 7)]
    history = History()
    history.keep(tmp_path / "calls.mcpnb")
    for i, (target, via, episode) in enumerate(made):
        history.record(Outcome(i + 1, target, "x", {}, "result", "ok", "", None, False, None, None, None, 1_750_000_000.0 + i, 1.0, 30.0,
                               via=via, episode=episode, turn=None if episode is None else i))  # fmt: skip
    assert history.sync()
    expected = ([t for t, _, _ in made], [v for _, v, _ in made], [e for _, _, e in made], [None if e is None else i for i, (_, _, e) in enumerate(made)])
    for frame in (history.to_frame(), History.open(tmp_path / "calls.mcpnb").to_frame()):
        got = (frame["target"].astype(str).tolist(), frame["via"].astype(str).tolist(), numbers(frame["episode"]), numbers(frame["turn"]))
        assert got == expected
    history.close()


def test_a_frame_written_to_leaves_the_history_as_it_was():
    # The frame's columns were the store's own arrays while the history held one chunk of calls
    mcp_nb.tool(name="get_author")(helpful)
    episode = agent(TASK, StandIn())
    frame = mcp_nb.history().to_frame()
    frame.loc[0, "call_id"] = 999
    frame.loc[0, "episode"] = 999
    frame.loc[1, "turn"] = pd.NA
    frame.loc[0, "duration_ms"] = -1.0
    again = mcp_nb.history().to_frame()
    assert again["call_id"].tolist() == [o.call_id for o in episode.calls]
    assert numbers(again["episode"]) == [episode.id, episode.id] and numbers(again["turn"]) == [1, 2]
    assert (again["duration_ms"] > 0).all()
