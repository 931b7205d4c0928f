"""An API key is read from the environment (or a prompt) and goes into its request's header only:
never into an episode, the history or its file, a case file, a log at DEBUG (every logger, the HTTP
client's included), a saved notebook, a repr or an exception's message."""

from __future__ import annotations

import pickle
from pathlib import Path

import nbformat
import pytest
from kernels import execute
from model_servers import Answer, ModelServer, anthropic_check, completion, message, openai_check

from mcp_nb import Key, OpenAICompatible
from mcp_nb.mistakes import Mistake

KEY = "sk-proj-T0pS3cretKeyValue0123456789"
ENV = "MCP_NB_TEST_SECRET_KEY"


def test_a_key_shows_only_its_variable_and_travels_only_as_its_name(monkeypatch):
    monkeypatch.setenv(ENV, KEY)
    key = Key(ENV)
    assert repr(key) == f"Key({ENV!r})" and KEY not in repr(OpenAICompatible("m", key=ENV))
    assert pickle.loads(pickle.dumps(key)).value() == KEY and KEY.encode() not in pickle.dumps(key)
    monkeypatch.setattr("getpass.getpass", lambda prompt: KEY)
    typed = Key.prompt()
    assert typed.value() == KEY and KEY not in repr(typed)
    with pytest.raises(TypeError, match="stays in this process"):
        pickle.dumps(typed)
    with pytest.raises(Mistake) as refused:
        Key(KEY)  # a key given where its variable's name goes
    assert KEY not in str(refused.value) and "NAME of the environment variable" in str(refused.value)
    monkeypatch.delenv(ENV)
    with pytest.raises(Mistake, match=f"{ENV} is not set"):
        OpenAICompatible("m", key=ENV).check()


@pytest.mark.timeout(300)
def test_after_episodes_with_a_key_no_saved_notebook_case_file_history_file_or_debug_log_holds_it(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV, KEY)  # the kernel started below inherits it, as a user's would
    echoed = {
        "error": {
            "message": f"This request was made with the key {KEY}, which the organisation does not allow",
            "type": "invalid_request_error",
        }
    }
    openai_script = [
        Answer(400, echoed),  # an endpoint that quotes the key in its error
        completion(calls=[("get_author", f'{{"title": "Dune", "note": "{KEY}"}}')]),  # a model that puts it in arguments
        completion(f"Frank Herbert (asked with {KEY})"),  # and in its answer
    ]
    anthropic_script = [message(None, [("get_author", {"title": "Emma"})]), message(f"Jane Austen; key {KEY}")]
    with (
        ModelServer(openai_check(KEY), openai_script) as openai,
        ModelServer(anthropic_check(KEY), anthropic_script) as anthropic,
    ):
        cells = [
            "import logging, sys\nimport mcp_nb\n"
            "logging.basicConfig(level=logging.DEBUG, filename='debug.log')  # every logger, at DEBUG, to a file\n"
            "logging.getLogger().addHandler(logging.StreamHandler(sys.stderr))  # and into the notebook\n"
            "for name in ('httpx2', 'httpcore2', 'httpx', 'httpcore', 'mcp', 'mcp_nb'):\n"
            "    logging.getLogger(name).setLevel(logging.DEBUG)\n"
            "mcp_nb.configure(history_file='history')",
            "from mcp_nb import agent, OpenAICompatible, Anthropic\n"
            "@mcp_nb.tool()\ndef get_author(title: str, note: str = '') -> str:\n"
            "    return {'Dune': 'Frank Herbert', 'Emma': 'Jane Austen'}[title]",
            f"model = OpenAICompatible('gpt-test', '{openai.url}/v1', key={ENV!r})\nmodel",
            "failed = agent('Who wrote Dune?', model)\nfailed",
            "print(failed)\nfailed.detail",
            "episode = agent('Who wrote Dune?', model)\nepisode",
            "print(episode)\nepisode.messages",
            f"claude = Anthropic('claude-test', key={ENV!r}, base_url='{anthropic.url}')\nagent('Who wrote Emma?', claude)",
            "mcp_nb.history()",
            "mcp_nb.history().to_frame()",
            "mcp_nb.history().to_cases('cases.json')",
            "from mcp_nb.episodes.episode import log_of\nfrom mcp_nb.records.recovery import episodes_frame\n"
            "episodes_frame(log_of(mcp_nb.history()).rows())",
            "mcp_nb.history().sync(); logging.shutdown()",
        ]
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in cells])
        execute(notebook, tmp_path)
    saved = tmp_path / "episodes.ipynb"
    nbformat.write(notebook, saved)
    errors = [o for c in notebook.cells for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
    text = saved.read_text()
    assert "model_failed" in text and "Frank Herbert" in text and "Jane Austen" in text  # the episodes are in it
    assert "HTTP 400" in text and "***" in text  # the error, and the answers, with the key taken out
    log = (tmp_path / "debug.log").read_text()
    assert "POST" in log or "HTTP Request" in log or "send_request" in log, log[:2000]  # the HTTP client did log, at DEBUG
    written = [saved, tmp_path / "cases.json", tmp_path / "debug.log", *Path(tmp_path / "history").rglob("*")]
    assert len(written) > 4
    for path in written:
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), f"the key is written in {path.relative_to(tmp_path)}"
    # Nor went it to the tool: what the model wrote as arguments was read with the key taken out.
    assert "sk-proj" not in text


def test_a_key_asked_for_where_nothing_can_be_typed_is_one_line(monkeypatch):
    def no_input(prompt):
        raise EOFError

    monkeypatch.setattr("getpass.getpass", no_input)
    with pytest.raises(Mistake) as refused:
        Key.prompt()
    assert "\n" not in str(refused.value) and "no key was typed" in str(refused.value)
