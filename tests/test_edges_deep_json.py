"""JSON nested past what any reader takes, from anyone (a person typing, a file, a server, a model,
a client of the served notebook): refused in one line before Python's reader descends into it,
and nothing else that Python runs in that moment fails for want of stack.

Python's json module reads nested arrays and objects by recursion, to the interpreter's limit.
There it raised RecursionError, which every reader caught; but the garbage collector runs where
it likes, and a finalizer or a callback it ran at that depth failed ("Exception ignored in ..."),
its work lost. `mistakes.read_json` now measures the nesting first, without recursion
(`nested_past`), and refuses more than `JSON_DEPTH` levels; every reader of outside JSON reads
through it. `stack_probe` makes the collector run Python at every allocation, so a reader that
still went deep would be caught every time, not once in a hundred runs.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler

import pytest
from helpers import http_served
from hypothesis import example, given, settings
from hypothesis import strategies as st
from IPython.core.error import UsageError
from model_servers import Answer, ModelServer, completion, openai_check
from stack_probe import assert_nothing_failed, python_runs_meanwhile

import mcp_nb
from mcp_nb import OpenAICompatible, agent
from mcp_nb.mistakes import JSON_DEPTH, BadJson, nested_past, read_json
from mcp_nb.records.cases import CasesError
from mcp_nb.records.surface import SurfaceError
from mcp_nb.widgets.form import Form, Invalid

pytestmark = pytest.mark.timeout(180)

DEEP_LIST = "[" * 100_000 + "]" * 100_000
DEEP_OBJECT = '{"a":' * 100_000 + "1" + "}" * 100_000
JUST_TOO_DEEP = "[" * (JSON_DEPTH + 1) + "]" * (JSON_DEPTH + 1)
DEEPS = {"list": DEEP_LIST, "object": DEEP_OBJECT, "just-too-deep": JUST_TOO_DEEP}


# -- the measure ---------------------------------------------------------------------------------------

texts = st.text(alphabet=st.sampled_from(list('[]{}"\\ab:,\u00e9\ud800')), max_size=12)
values = st.recursive(
    st.none() | st.integers() | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=40,
)


def depth(value) -> int:
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(values, st.integers(0, 8), st.booleans())
@example([["[[[", {"\\": ['"[']}]], 2, False)
def test_the_nesting_is_measured_as_the_reader_sees_it_brackets_in_strings_aside(value, limit, as_bytes):
    text = json.dumps(value, ensure_ascii=False)
    given_text = text.encode("utf-8", "surrogatepass") if as_bytes else text
    assert nested_past(given_text, limit) == (depth(value) > limit)


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32-be"])
def test_bytes_in_any_encoding_python_reads_are_measured(encoding):
    assert nested_past(JUST_TOO_DEEP.encode(encoding))
    assert not nested_past(('["\\"' + "[" * 300 + '"]').encode(encoding))


@pytest.mark.parametrize("kind", DEEPS)
def test_text_nested_too_deep_is_refused_before_the_reader_descends(kind):
    with python_runs_meanwhile() as probe:
        with pytest.raises(BadJson, match=rf"nested too deeply \(more than {JSON_DEPTH} levels\)"):
            read_json(DEEPS[kind])
        assert read_json("[" * JSON_DEPTH + "]" * JSON_DEPTH) is not None  # the deepest taken
    assert_nothing_failed(probe)


# -- a person typing -------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", DEEPS)
def test_deep_json_typed_into_a_form_field_is_one_problem(kind):
    form = Form({"type": "object", "properties": {"x": {}}})
    try:
        with python_runs_meanwhile() as probe:
            form.fields["x"].widget.value = DEEPS[kind]
            with pytest.raises(Invalid) as refused:
                form.value()
        assert_nothing_failed(probe)
        ((path, said),) = refused.value.problems
        assert path == ("x",) and said == f"not JSON the form can read: nested too deeply (more than {JSON_DEPTH} levels)"
    finally:
        form.close()


@pytest.mark.parametrize("kind", DEEPS)
def test_deep_json_in_a_magic_is_a_one_line_usage_error_and_changes_nothing(shell, kind):
    shell.run_cell("%%mcp_tool\ndef echo(d: list = []) -> str:\n    return repr(d)\n")
    with python_runs_meanwhile() as probe:
        with pytest.raises(UsageError) as refused:
            shell.run_line_magic("mcp_call", "echo " + json.dumps({"d": 0})[:-2] + DEEPS[kind] + "}")
        with pytest.raises(UsageError):
            shell.run_cell_magic(
                "mcp_tool",
                '--input-schema \'{"type": "object", "properties": {"a": ' + DEEPS[kind] + "}}'",
                "def f(a=None):\n    return 1\n",
            )
    assert_nothing_failed(probe)
    assert "\n" not in str(refused.value) and "nested too deeply" in str(refused.value)
    assert len(mcp_nb.history()) == 0 and list(mcp_nb.registered()["name"]) == ["echo"]


# -- files -------------------------------------------------------------------------------------------------


def test_a_snapshot_a_cases_file_and_a_history_file_nested_too_deep_are_refused_in_one_line(tmp_path):
    snapshot = tmp_path / "surface.json"
    snapshot.write_text('{"mcp_nb_surface": 1, "server": {"name": "x"}, "tools": {"t": ' + DEEP_LIST + "}}")
    cases = tmp_path / "cases.json"
    cases.write_text('{"mcp_nb_cases": 1, "cases": [{"id": "a", "name": "t", "arguments": {"x": ' + DEEP_LIST + "}}]}")
    history = tmp_path / "calls.mcpnb"
    history.mkdir()
    (history / "mcpnb.json").write_text('{"mcp_nb_history": ' + "[" * 20_000 + "]" * 20_000 + "}")
    with python_runs_meanwhile() as probe:
        with pytest.raises(SurfaceError) as surface:
            mcp_nb.diff(str(snapshot), str(snapshot))
        with pytest.raises(CasesError) as case:
            mcp_nb.replay(str(cases))
        with pytest.raises(ValueError) as marker:
            mcp_nb.configure(history_file=str(history))
    assert_nothing_failed(probe)
    for refused in (surface, case, marker):
        assert "\n" not in str(refused.value) and len(str(refused.value)) < 400, refused.value
    assert mcp_nb.settings.history_file is None and len(mcp_nb.history()) == 0


# -- a server ---------------------------------------------------------------------------------------------


class DeepRefusal(BaseHTTPRequestHandler):
    """An MCP endpoint that refuses every request with an error whose JSON body nests too deep."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = ('{"error": {"code": -32001, "message": ' + DEEP_LIST + "}}").encode()
        self.send_response(int(self.path.rsplit("/", 1)[-1]))
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture(scope="module")
def refusing_url():
    with http_served(DeepRefusal) as url:
        yield url


@pytest.mark.parametrize("status", [401, 500])
def test_a_server_whose_error_answer_nests_too_deep_is_a_one_line_connect_error(refusing_url, status):
    with python_runs_meanwhile() as probe:
        with pytest.raises(mcp_nb.ConnectError) as refused:
            mcp_nb.connect("deep", f"{refusing_url}/mcp/{status}", timeout=30)
    assert_nothing_failed(probe)
    said = str(refused.value)
    assert f"HTTP {status}" in said and "\n" not in said and len(said) < 600, said
    assert "deep" not in mcp_nb.engine().connections


# -- a model ----------------------------------------------------------------------------------------------


def test_a_model_whose_reply_nests_too_deep_fails_the_episode_in_one_line():
    @mcp_nb.tool()
    def get_author(title: str) -> str:
        """Who wrote a book."""
        return "Frank Herbert"

    script = [
        completion(calls=[("get_author", '{"title": ' + DEEP_LIST + "}")]),  # arguments too deep: said to the model
        Answer(200, ('{"choices": ' + DEEP_LIST + "}").encode()),  # a reply too deep: the model failed
    ]
    with ModelServer(openai_check(), script) as server, python_runs_meanwhile() as probe:
        episode = agent("Who wrote Dune?", OpenAICompatible("smol", f"{server.url}/v1", retries=0))
    assert_nothing_failed(probe)
    assert episode.stop == "model_failed" and "not JSON" in episode.detail and "\n" not in episode.detail, episode
    assert len(episode.detail) < 400
