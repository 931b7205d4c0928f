"""Text no UTF-8 can hold: a lone surrogate ("\\ud800", which a client's or a server's JSON escape,
or a name decoded with surrogateescape, puts in a Python str), beside NULs and texts of megabytes,
in everything mcp_nb writes to disk: the history file (every text column, every nested JSON text,
a name), its exports, a cases file, a surface snapshot. Each is written, the calls after it too,
and reads back as the same str (a plain export shows the surrogate as its escape, `\\ud800`).
"""

from __future__ import annotations

import json
import warnings

import pandas as pd
import pyarrow.feather as feather
import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

import mcp_nb
from mcp_nb.mistakes import BadValue
from mcp_nb import History, Outcome

LONE = "a\ud800b\udfff\x00c"  # a high and a low surrogate, apart, and a NUL


def _outcome(call_id: int, text: str, name: str = "echo", server: str = "kernel", outcome: str = "result") -> Outcome:
    error = outcome == "protocol_error"
    return Outcome(call_id, "tool", name, {"text": text, text: [text]}, outcome, "ok" if not error else "unknown_tool",
                   None if error else text, None if error else {"result": text}, None if error else False,
                   -32602 if error else None, text if error else None, {"said": text} if error else None,
                   1_750_000_000.0 + call_id, 1.0, 30.0, server=server, protocol=text)  # fmt: skip


def _same(live: pd.DataFrame, back: pd.DataFrame) -> None:
    for column in ("name", "server", "arguments", "content", "structured_content", "message", "data", "protocol"):
        assert back[column].astype(object).tolist() == live[column].astype(object).tolist(), column


def _kept(tmp_path) -> History:
    history = History()
    history.keep(tmp_path / "calls")
    return history


def test_every_text_and_name_holding_a_lone_surrogate_is_written_and_read_back_the_same(tmp_path):
    history = _kept(tmp_path)
    history.record(_outcome(1, LONE, name="echo\udc80", server="srv\ud801"))
    history.record(_outcome(2, LONE, outcome="protocol_error"))
    history.record(_outcome(3, "plain"))  # the calls after it are written too
    assert history.sync()
    back = History.open(tmp_path / "calls")
    assert len(back) == 3
    _same(history.to_frame(), back.to_frame())
    assert back.to_frame()["name"].tolist() == ["echo\udc80", "echo", "echo"]


def test_an_arrow_reader_sees_each_surrogate_as_its_escape(tmp_path):
    history = _kept(tmp_path)
    history.record(_outcome(1, LONE, name="echo\udc80"))
    assert history.sync()
    (part,) = (tmp_path / "calls").glob("*.arrow")
    table = feather.read_table(part)  # any Arrow reader, not mcp_nb's
    assert table.column("content").to_pylist() == ["a\\ud800b\\udfff\x00c"]
    assert [str(v) for v in table.column("name").to_pylist()] == ["echo\\udc80"]
    assert json.loads(table.column("arguments")[0].as_py()) == {"text": LONE, LONE: [LONE]}


def test_a_name_whose_escape_is_another_name_keeps_both_apart(tmp_path):
    history = _kept(tmp_path)
    history.record(_outcome(1, "x", name="echo\\ud800"))  # a name that is the other's escape, as text
    history.record(_outcome(2, "y", name="echo\ud800"))
    assert history.sync()
    back = History.open(tmp_path / "calls").to_frame()
    assert back["name"].astype(object).tolist() == ["echo\\ud800", "echo\ud800"]
    assert back.groupby("name", observed=True).size().to_dict() == {"echo\\ud800": 1, "echo\ud800": 1}


def test_parts_with_and_without_exact_texts_merge_and_read_back_the_same(tmp_path):
    history = _kept(tmp_path)
    for i in range(20):  # a part each: 16 of them merged into one, beside parts that had no surrogate
        history.record(_outcome(i, LONE if i in (0, 7) else f"plain {i}", name="echo\udc80" if i == 7 else "echo"))
        assert history.sync()
    parts = sorted(p.name for p in (tmp_path / "calls").glob("*.arrow"))
    assert any(name.endswith(".000000000000-000000000015.arrow") for name in parts), parts  # the merged part
    _same(history.to_frame(), History.open(tmp_path / "calls").to_frame())


# Any str a tool, a client or a server may hand over: surrogates, NULs and control characters included.
ANY_TEXT = st.text(alphabet=st.characters(blacklist_categories=()), max_size=40)


def _no_pair(text: str) -> bool:
    # JSON reads a high surrogate directly followed by a low one as the one character they name
    # (documented: records/surrogates.py); a nested JSON text with such a pair is the one exception.
    return not any("\ud800" <= a <= "\udbff" and "\udc00" <= b <= "\udfff" for a, b in zip(text, text[1:]))


@hsettings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(ANY_TEXT.filter(_no_pair), min_size=1, max_size=5), name=ANY_TEXT, paired=ANY_TEXT)
def test_any_str_in_any_column_reads_back_from_the_file_as_it_was_recorded(tmp_path_factory, texts, name, paired):
    folder = tmp_path_factory.mktemp("calls")
    history = History()
    history.keep(folder / "calls")
    for i, text in enumerate(texts):
        history.record(_outcome(i, text, name=name or "echo", outcome="protocol_error" if i % 2 else "result"))
    # a plain text column holds any str exactly, a high and a low surrogate side by side included
    history.record(Outcome(99, "tool", name or "echo", None, "result", "ok", paired + "\ud800\udc00", None, False, None, None,
                           None, 1_750_000_000.0, 1.0, 30.0, protocol=paired))  # fmt: skip
    assert history.sync()
    live, back = history.to_frame(), History.open(folder / "calls").to_frame()
    _same(live, back)
    assert back["content"].iloc[-1] == paired + "\ud800\udc00" and len(back["content"].iloc[-1]) == len(paired) + 2


def test_texts_of_megabytes_and_nuls_are_written_whole(tmp_path):
    history = _kept(tmp_path)
    big = ("\x00\ud800ह" * 1_000_000) + "end"
    history.record(_outcome(1, big))
    history.record(_outcome(2, "after"))
    assert history.sync(120)  # megabytes of texts to escape, on a machine others share
    back = History.open(tmp_path / "calls").to_frame()
    assert back["content"].tolist() == [big, "after"]
    assert back["arguments"].iloc[0] == {"text": big, big: [big]}


# -- through the kernel: a tool's result, its error, its logs ---------------------------------------


# The kernel's side in a process of its own: what its tools log (a lone surrogate included) goes to
# its stderr, not into pytest's captured logs, which pytest-xdist cannot send to the controller.
KERNEL = """
import json, logging, sys, mcp_nb
LONE = %r

@mcp_nb.tool()
def echo(text: str) -> str:
    logging.getLogger("echo").warning("heard %%s", text)
    return text

@mcp_nb.tool()
def refuse(text: str) -> str:
    raise ValueError(text)

mcp_nb.configure(history_file=sys.argv[1])
assert mcp_nb.call("echo", {"text": LONE}).content == LONE
mcp_nb.call("refuse", {"text": LONE})
mcp_nb.call("echo", {"text": "after"})
assert mcp_nb.history().sync()
frame = mcp_nb.history().to_frame()
print(json.dumps({"content": frame["content"].tolist(), "arguments": frame["arguments"].tolist(),
                  "outcome": frame["outcome"].astype(str).tolist(),
                  "logs": [[[r.message, r.traceback] for r in logs] for logs in frame["server_logs"]]}))
""" % LONE


def test_a_kernel_tools_text_arguments_error_and_logs_with_a_lone_surrogate_reach_the_file(tmp_path):
    import subprocess
    import sys

    from helpers import checkout_env

    done = subprocess.run([sys.executable, "-c", KERNEL, str(tmp_path / "calls")], env=checkout_env(), capture_output=True,
                          text=True, errors="backslashreplace", timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    live = json.loads(done.stdout.splitlines()[-1])
    back = History.open(tmp_path / "calls").to_frame()
    assert back["content"].tolist() == live["content"] and LONE in live["content"][0]
    assert back["arguments"].tolist() == live["arguments"] == [{"text": LONE}, {"text": LONE}, {"text": "after"}]
    assert back["outcome"].astype(str).tolist() == live["outcome"] == ["result", "tool_error", "result"]
    assert [[[r.message, r.traceback] for r in logs] for logs in back["server_logs"]] == live["logs"]
    assert any(LONE in message for message, _ in live["logs"][0])  # what the tool logged
    assert any(LONE in (traceback or "") for _, traceback in live["logs"][1])  # the error, as the tool raised it


def test_a_call_or_read_naming_a_lone_surrogate_is_refused_before_it_is_sent():
    """No UTF-8 holds a lone surrogate, so no request's Mcp-Name header can: one line, nothing sent or recorded."""

    @mcp_nb.resource("note://{key}")
    def note(key: str) -> str:
        return "n" + key

    for refused in (lambda: mcp_nb.read("note://k\udc80"), lambda: mcp_nb.call("echo\udc80")):
        with pytest.raises(BadValue, match="lone surrogate") as said:
            refused()
        assert "\n" not in str(said.value)
    assert len(mcp_nb.history()) == 0
    assert mcp_nb.read("note://fine").content == "nfine"


def test_the_tallies_of_a_history_holding_a_lone_surrogate_name_are_made(lone_history):
    """pandas' text is Arrow's, which cannot hold one: the rows keep the name as Python's str."""
    assert ("kernel", "tool", "echo\udc80") in lone_history.summary().index
    assert ("kernel", "tool", "echo\udc80") in lone_history.health().index
    assert ("kernel", "tool", "echo\udc80") in lone_history.summary(by="session").index


# -- exports -----------------------------------------------------------------------------------


@pytest.fixture
def lone_history():
    history = History()
    history.record(_outcome(1, LONE, name="echo\udc80"))
    history.record(_outcome(2, LONE, outcome="protocol_error"))
    return history


def test_the_exports_write_a_lone_surrogate_as_its_escape(lone_history, tmp_path):
    lone_history.to_parquet(tmp_path / "calls.parquet")
    lone_history.to_csv(tmp_path / "calls.csv")
    lone_history.to_json(tmp_path / "calls.json")
    for frame in (pd.read_parquet(tmp_path / "calls.parquet"), pd.read_csv(tmp_path / "calls.csv", keep_default_na=False),
                  pd.read_json(tmp_path / "calls.json")):  # fmt: skip
        assert frame["content"].iloc[0] == "a\\ud800b\\udfff\x00c"
        assert frame["name"].iloc[0] == "echo\\udc80"
        assert frame["message"].iloc[1] == "a\\ud800b\\udfff\x00c"
        assert json.loads(frame["arguments"].iloc[0]) == {"text": LONE, LONE: [LONE]}  # JSON text: the same str


def test_pandas_own_parquet_of_the_nested_columns_keeps_a_lone_surrogate(lone_history, tmp_path):
    frame = lone_history.to_frame()[["arguments", "structured_content", "data"]]
    frame.to_parquet(tmp_path / "nested.parquet")
    assert pd.read_parquet(tmp_path / "nested.parquet")["arguments"].tolist() == frame["arguments"].tolist()


# -- a cases file, a surface snapshot ----------------------------------------------------------------


def test_a_case_whose_arguments_hold_a_lone_surrogate_is_saved_and_replays(tmp_path):
    @mcp_nb.tool()
    def echo(text: str) -> str:
        return text

    mcp_nb.call("echo", {"text": LONE})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no call left out
        mcp_nb.history().to_cases(tmp_path / "cases.json")
    (tmp_path / "cases.json").read_text(encoding="utf-8")  # UTF-8, as every editor reads it
    (row,) = mcp_nb.replay(tmp_path / "cases.json").itertuples()
    assert row.passed, row.reason
    assert mcp_nb.history().to_frame()["arguments"].tolist() == [{"text": LONE}] * 2


def test_a_snapshot_of_a_server_whose_texts_hold_a_lone_surrogate_is_saved_and_reads_back_the_same(tmp_path):
    @mcp_nb.tool(description="says \ud800 twice\udfff")
    def echo(text: str) -> str:
        return text

    taken = mcp_nb.snapshot(path=tmp_path / "surface.json")
    (tmp_path / "surface.json").read_text(encoding="utf-8")
    assert "\ud800" in json.dumps(taken, ensure_ascii=False)
    assert mcp_nb.diff(tmp_path / "surface.json", taken).empty
    assert mcp_nb.diff(tmp_path / "surface.json").empty


# -- the token file ----------------------------------------------------------------------------------


def test_a_token_file_keeps_what_an_authorization_server_sent_with_a_lone_surrogate(tmp_path):
    import asyncio

    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

    sent = OAuthToken(access_token="t\ud800", token_type="Bearer", scope="read\udfff")
    client = OAuthClientInformationFull(client_id="c", client_name="notebook\ud800", redirect_uris=["http://127.0.0.1:9/callback"])
    stored = mcp_nb.TokenFile("http://127.0.0.1:9/mcp", tmp_path / "tokens")
    asyncio.run(stored.set_tokens(sent))
    asyncio.run(stored.set_client_info(client))
    stored.path.read_text(encoding="utf-8")
    again = mcp_nb.TokenFile("http://127.0.0.1:9/mcp", tmp_path / "tokens")
    assert asyncio.run(again.get_tokens()).scope == "read\udfff"
    assert asyncio.run(again.get_client_info()).client_name == "notebook\ud800"


# -- a notebook rewritten by a command -----------------------------------------------------------


def test_a_student_version_of_a_notebook_holding_a_lone_surrogate_escape_is_written(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    notebook = json.loads((root / "notebooks" / "02-tool-errors.ipynb").read_text(encoding="utf-8"))
    notebook["cells"][0]["source"] = "a lone \ud800 in the lesson"
    source = tmp_path / "lesson.ipynb"
    source.write_text(json.dumps(notebook), encoding="ascii")  # the escape, as any JSON writer may put it
    done = subprocess.run([sys.executable, "-m", "mcp_nb", "student-version", str(source), "-o", str(tmp_path / "out.ipynb")],
                          cwd=root, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    written = json.loads((tmp_path / "out.ipynb").read_text(encoding="utf-8"))
    assert written["cells"][0]["source"] in ("a lone \ud800 in the lesson", ["a lone \ud800 in the lesson"])
