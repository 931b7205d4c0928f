"""Replays across protocol eras: every case under each era, against the kernel's server,
server-everything and a served kernel; the differences between eras named; answers compared by
structure, not by text."""

import json
import shutil
import sys
from pathlib import Path

import peers
import pytest
from asking import Name, register_askers
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

import mcp_nb
from mcp_nb import Answer
from mcp_nb.batch.replays import ERA_COLUMNS, NOT_REACHED
from mcp_nb.mistakes import BadValue
from mcp_nb.views.replay import ReplayReport

ROOT = Path(__file__).resolve().parent.parent
ERAS = ["2025-11-25", "2026-07-28"]


def by(frame, case, mode):
    return frame[(frame["case"] == case) & (frame["mode"] == mode)].iloc[0]


def test_the_kernel_s_server_answers_most_cases_alike_at_both_eras_and_a_prompt_s_crash_otherwise(tmp_path):
    register_askers()

    @mcp_nb.tool(read_only=True)
    def get_author(title: str) -> str:
        if title == "Solaris":
            raise ToolError("No book titled 'Solaris' in the catalog.")
        return {"Dune": "Frank Herbert"}[title]

    @mcp_nb.prompt()
    def blurb(title: str) -> str:
        raise ValueError("no blurb yet")

    for title in ("Dune", "Solaris", "Emma"):
        mcp_nb.call("get_author", {"title": title})
    mcp_nb.call("get_author", {"title": 42})
    mcp_nb.call("greet", elicit=[Answer.accept(name="Ada")])
    mcp_nb.get_prompt("blurb", {"title": "Dune"})
    mcp_nb.history().to_cases(tmp_path / "cases.json")
    frame = mcp_nb.replay(tmp_path / "cases.json", modes=ERAS)
    assert list(frame.columns) == ERA_COLUMNS and len(frame) == 12
    assert (frame["protocol"] == frame["mode"]).all()  # each call went over the era it was asked for
    assert frame.attrs["modes"] == ERAS and frame.attrs["differing"] == ["blurb-1"]
    alike = frame[frame["case"] != "blurb-1"]
    assert alike["passed"].all() and (alike["era_difference"] == "").all()
    assert set(alike["got"]) == {"result (ok)", "tool_error (raised)", "tool_error (crash)", "tool_error (invalid_arguments)"}
    assert by(frame, "greet-1", "2025-11-25")["got"] == "result (ok)"  # the recorded answer, given at either era
    assert not by(frame, "blurb-1", "2025-11-25")["passed"]  # saved at 2026-07-28: -32603
    assert by(frame, "blurb-1", "2025-11-25")["reason"] == "code: expected -32603, got 0"
    assert by(frame, "blurb-1", "2026-07-28")["passed"]
    assert by(frame, "blurb-1", "2026-07-28")["era_difference"] == (
        "2026-07-28 answers otherwise than 2025-11-25: code: 0 → -32603; message: 'Error rendering prompt blurb' → 'Internal server error'"
    )
    report = ReplayReport(frame)
    assert not report.passed
    text = repr(report)
    assert text.startswith(
        "Replay: 6 cases at 2025-11-25 and 2026-07-28: 11 passed, 1 failed; 1 case answered otherwise at another era"
    )
    assert "  ERAS  blurb-1 @ 2026-07-28  protocol_error (crash)" in text
    assert "eras differ" in report._repr_html_() and "<th" in report._repr_html_()
    history = mcp_nb.history().to_frame()
    replayed = history[history["via"] == "replay"]
    assert sorted(replayed["protocol"].value_counts().to_dict().items()) == [("2025-11-25", 6), ("2026-07-28", 6)]


def test_a_server_s_question_directly_from_its_context_has_a_channel_at_one_era_only(tmp_path):
    @mcp_nb.tool()
    async def ask_directly(ctx: Context) -> str:
        return (await ctx.elicit("Your name?", Name)).action

    mcp_nb.call("ask_directly", elicit=["decline"])  # at 2026-07-28: no back-channel for it
    mcp_nb.history().to_cases(tmp_path / "cases.json")
    frame = mcp_nb.replay(tmp_path / "cases.json", modes=ERAS)
    old, new = by(frame, "ask_directly-1", "2025-11-25"), by(frame, "ask_directly-1", "2026-07-28")
    assert old["got"] == "result (ok)" and not old["passed"]  # the handshake era has the channel, and the answer recorded
    assert new["passed"] and new["era_difference"].startswith(
        "2026-07-28 answers otherwise than 2025-11-25: outcome: 'result' → 'protocol_error'"
    )


def test_the_magic_replays_at_each_era_named(shell, tmp_path):
    @mcp_nb.tool(read_only=True)
    def echo(text: str) -> str:
        return text

    mcp_nb.call("echo", {"text": "hi"})
    mcp_nb.history().to_cases(tmp_path / "cases.json")
    report = shell.run_line_magic("mcp_replay", f"{tmp_path / 'cases.json'} --mode 2025-11-25 --mode 2026-07-28")
    assert report.passed and list(report.frame["mode"]) == ERAS
    assert repr(report).splitlines() == [
        "Replay: 1 case at 2025-11-25 and 2026-07-28: 2 passed, 0 failed",
        "  pass  echo-1 @ 2025-11-25  result (ok)",
        "  pass  echo-1 @ 2026-07-28  result (ok)",
    ]


@pytest.mark.parametrize(
    "modes, said",
    [
        ("2025-11-25", "modes is a list of protocol eras"),
        ([], "modes is a list"),
        (["auto"], "a protocol era is one of"),
        (ERAS + ["2025-11-25"], "names an era twice"),
    ],
)
def test_bad_modes_are_one_line_and_nothing_is_sent(tmp_path, modes, said):
    (tmp_path / "cases.json").write_text(json.dumps([{"id": "a", "name": "x", "expect": {"outcome": "result", "cause": "ok"}}]))
    with pytest.raises(BadValue, match=said):
        mcp_nb.replay(tmp_path / "cases.json", modes=modes)
    assert len(mcp_nb.history()) == 0


def test_server_everything_answers_nothing_at_the_era_it_does_not_speak(tmp_path):
    peers.require(peers.EVERYTHING)
    mcp_nb.connect("everything", peers.everything_stdio(), env=peers.node_env())
    mcp_nb.call("echo", {"message": "hi"}, server="everything")
    mcp_nb.call("get-sum", {"a": 1, "b": 2}, server="everything")
    mcp_nb.history().to_cases(tmp_path / "cases.json")
    frame = mcp_nb.replay(tmp_path / "cases.json", modes=ERAS)
    old = frame[frame["mode"] == "2025-11-25"]
    new = frame[frame["mode"] == "2026-07-28"]
    assert old["passed"].all() and (old["protocol"] == "2025-11-25").all()
    assert not new["passed"].any() and set(new["got"]) == {"protocol_error (invalid_response)"}
    assert frame.attrs["differing"] == ["echo-1", "get-sum-1"]
    assert by(frame, "echo-1", "2026-07-28")["era_difference"].startswith(
        "2026-07-28 answers otherwise than 2025-11-25: outcome: 'result' → 'protocol_error'; cause: 'ok' → 'invalid_response'"
    )
    assert mcp_nb.engine().connections["everything"].protocol == "2025-11-25"  # the user's connection, untouched
    assert len(mcp_nb.engine().connections) == 2  # the era's connection was closed again


def test_a_served_kernel_answers_alike_over_http_at_both_eras(tmp_path):
    @mcp_nb.tool(read_only=True)
    def get_author(title: str) -> str:
        if title == "Solaris":
            raise ToolError("not in the catalog")
        return {"Dune": "Frank Herbert"}[title]

    handle = mcp_nb.serve()
    try:
        mcp_nb.connect("served", handle.url, headers={"Authorization": f"Bearer {handle.token}"})
        for title in ("Dune", "Solaris"):
            mcp_nb.call("get_author", {"title": title}, server="served")
        mcp_nb.history().to_cases(tmp_path / "cases.json", server="served")
        frame = mcp_nb.replay(tmp_path / "cases.json", modes=ERAS)
    finally:
        handle.stop()
    assert frame["passed"].all() and frame.attrs["differing"] == [], frame[["case", "mode", "got", "reason", "era_difference"]]
    assert list(frame["protocol"]) == ["2025-11-25", "2025-11-25", "2026-07-28", "2026-07-28"]
    assert set(frame["server"]) == {"served"}


def test_a_server_that_cannot_be_started_at_an_era_fails_its_cases_there_saying_why(tmp_path):
    script = tmp_path / "bookshop.py"
    shutil.copy(ROOT / "notebooks" / "servers" / "bookshop.py", script)
    mcp_nb.connect("shop", [sys.executable, str(script), "stdio"])
    mcp_nb.call("get_author", {"title": "Dune"}, server="shop")
    mcp_nb.history().to_cases(tmp_path / "cases.json")
    script.unlink()  # the running server goes on; a new process of it cannot start
    frame = mcp_nb.replay(tmp_path / "cases.json", modes=["2026-07-28", "2025-11-25"])
    reached, unreached = by(frame, "get_author-1", "2026-07-28"), by(frame, "get_author-1", "2025-11-25")
    assert mcp_nb.engine().connections["shop"].protocol == "2026-07-28" and reached["passed"]
    assert not unreached["passed"] and unreached["got"] == NOT_REACHED
    assert unreached["reason"].startswith("shop could not be reached at 2025-11-25: could not connect to 'shop'")
    assert unreached["era_difference"] == "reached at one era only (2026-07-28)"
    assert str(unreached["call_id"]) == "<NA>"


# -- answers compared by structure ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "expected, got, passes",
    [
        (
            '{"title": "Dune", "tags": ["sf", "classic"], "price": 10}',
            '{ "price": 10.0, "tags": ["sf", "classic"], "title": "Dune" }',
            True,
        ),
        ('{"n": 1e2}', '{"n": 100}', True),
        ('{"ok": 1}', '{"ok": true}', False),
        ('["a", "b"]', '["b", "a"]', False),
        ("Frank Herbert", "Frank  Herbert", False),
    ],
)
def test_json_content_is_judged_as_json_and_text_as_text(tmp_path, expected, got, passes):
    @mcp_nb.tool(read_only=True)
    def answer():
        return got

    case = {"id": "answer", "name": "answer", "expect": {"outcome": "result", "cause": "ok", "content": expected}}
    (tmp_path / "cases.json").write_text(json.dumps([case]))
    frame = mcp_nb.replay(tmp_path / "cases.json", modes=ERAS)
    assert list(frame["passed"]) == [passes, passes] and frame.attrs["differing"] == []
    assert mcp_nb.replay(tmp_path / "cases.json")["passed"].item() is passes


def test_partial_checks_hold_at_each_era(tmp_path):
    @mcp_nb.tool(read_only=True)
    def price(title: str) -> dict:
        return {"title": title, "price": 9.99}

    case = {
        "id": "p",
        "name": "price",
        "arguments": {"title": "Dune"},
        "expect": {"outcome": "result", "cause": "ok", "checks": [{"path": "$.price", "approx": 10, "tolerance": 0.5}]},
    }
    (tmp_path / "cases.json").write_text(json.dumps([case]))
    assert mcp_nb.replay(tmp_path / "cases.json", modes=ERAS)["passed"].all()
