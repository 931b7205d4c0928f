"""A recorded call that no case can hold leaves out only itself, and says why.

An outside client can send what mcp_nb's own faces refuse: arguments with NaN (JSON parsers
in Python read it, so the SDK does), or a tool named "". The server answers and the call is
recorded, as every call is; saving cases then writes every other call and names each one
left out, with the reason, through every face that saves (the API, the magic, the panel).
"""

from __future__ import annotations

import json

import pytest
from outside import post, raw_session

import mcp_nb
from mcp_nb.records.cases import CallsLeftOut
from mcp_nb.widgets import show

NAN_CALL = b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "double", "arguments": {"x": NaN}}}'
NAMELESS = b'{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "", "arguments": {}}}'


@pytest.fixture
def recorded():
    """Two good calls of the kernel's and the two an outside client sent, all in the history."""

    @mcp_nb.tool()
    def double(x: float) -> float:
        return 2 * x

    assert mcp_nb.call("double", {"x": 1}).ok
    handle = mcp_nb.serve()
    try:
        sent = raw_session(handle)
        for body in (NAN_CALL, NAMELESS):
            status, _, text = post(handle.url, body, sent)
            assert status == 200, text
    finally:
        handle.stop()
    assert mcp_nb.call("double", {"x": 2}).ok
    frame = mcp_nb.history().to_frame()
    assert len(frame) == 4 and frame["via"].tolist().count("http") == 2
    return frame


def test_the_api_saves_every_other_call_and_warns_which_and_why(recorded, tmp_path):
    path = tmp_path / "cases.json"
    with pytest.warns(CallsLeftOut) as warned:
        cases = mcp_nb.history().to_cases(path)
    assert [case.arguments for case in cases] == [{"x": 1}, {"x": 2}]
    assert len(json.loads(path.read_text())["cases"]) == 2
    (warning,) = warned
    said = str(warning.message)
    assert said.startswith(f"2 calls left out of {path}: call #") and "\n" not in said
    assert "(tool 'double'): field arguments" in said and "(tool ''): field name" in said
    assert mcp_nb.replay(path)["passed"].all()  # what was saved replays green


def test_the_magic_prints_each_left_out_call(recorded, tmp_path, shell, capsys):
    path = tmp_path / "cases.json"
    shell.run_line_magic("mcp_save_cases", str(path))
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == f"saved 2 cases to {path}"
    assert [line.split(":")[0] for line in lines[1:]] == [
        f"left out call #{n} (tool {name!r})" for n, name in zip(recorded["call_id"].iloc[1:3], ["double", ""])
    ]


def test_the_panel_says_it_beside_what_it_saved(recorded, tmp_path):
    panel = show()
    try:
        tab = panel.history_tab
        tab.pinned.update(dict.fromkeys(recorded["call_id"].tolist()))
        tab.cases_path.value = str(tmp_path / "cases.json")
        tab.save_pinned()
        assert "saved 2 cases" in tab.cases_status.value and tab.cases_status.value.count("left out call #") == 2
    finally:
        panel.close()
