"""What a server may ask of mcp_nb's client besides questions: a completion of the client's
model (sampling) and the folders it may work in (roots). Against server-everything over
stdio, whose `trigger-sampling-request` samples and whose `get-roots-list` lists the roots."""

import asyncio
import time
from pathlib import Path

import peers
import pytest
import warm
from helpers import http_served, wait_until
from IPython.core.error import UsageError

import mcp_nb

SAMPLES = "trigger-sampling-request"


def everything(**options):
    peers.require(peers.EVERYTHING)
    return mcp_nb.connect("everything", peers.everything_stdio(), env=peers.node_env(), **options)


def sample(prompt="Say hi", **options):
    return mcp_nb.call(SAMPLES, {"prompt": prompt, "maxTokens": 50}, server="everything", progress=False, **options)


def test_a_sampling_function_answers_and_the_call_records_the_exchange():
    asked = []

    def model(messages, request):
        asked.append((messages, request.max_tokens, request.system_prompt))
        return {"text": "hi there", "model": "tiny-model"}

    everything(sampling=model)
    outcome = sample()
    assert outcome.outcome == "result" and "hi there" in outcome.content and "tiny-model" in outcome.content
    ((messages, max_tokens, system),) = asked
    assert messages[-1]["role"] == "user" and "Say hi" in messages[-1]["text"] and max_tokens == 50
    (sampled,) = outcome.samplings
    assert (sampled.text, sampled.model, sampled.source, sampled.refused) == ("hi there", "tiny-model", "function", False)
    assert sampled.system_prompt == system and sampled.max_tokens == 50
    row = mcp_nb.history().to_frame().iloc[-1]
    assert row["samplings"][0]["text"] == "hi there" and "Say hi" in row["samplings"][0]["messages"][-1]["text"]
    card = repr(outcome)
    assert "model asked" in card and "replied 'hi there' (the sampling function, model tiny-model)" in card
    assert "The server asked the model:" in outcome._repr_html_()


def test_prepared_replies_are_used_in_order_then_refused():
    everything(sampling=["first", "second"])
    assert "first" in sample().content and "second" in sample().content
    third = sample()
    (refused,) = third.samplings
    assert refused.refused and refused.reason == "all 2 prepared replies were used"
    assert third.outcome == "tool_error" and "sampling refused: all 2 prepared replies were used" in third.content


def test_without_a_sampler_the_server_hears_a_clear_refusal_which_is_recorded():
    everything()
    outcome = sample()
    (refused,) = outcome.samplings
    assert refused.source == "none" and "no model to sample with" in refused.reason
    assert outcome.outcome == "tool_error" and "no model to sample with" in outcome.content
    assert "refused: this notebook's client has no model" in repr(outcome)


@pytest.mark.parametrize(
    "broken, reason",
    [
        (lambda m, r: 1 / 0, "the sampling function raised ZeroDivisionError"),
        (lambda m, r: None, "returned None"),
        (lambda m, r: 42, "a sampling reply is text"),
    ],
)
def test_a_broken_sampling_function_refuses_the_request_and_the_call_goes_on(broken, reason):
    everything(sampling=broken)
    outcome = sample()
    assert outcome.outcome == "tool_error" and reason in outcome.samplings[0].reason


def test_an_async_sampling_function_waits_without_the_deadline_running():
    async def slow_model(messages, request):
        await asyncio.sleep(1.5)
        return "late but fine"

    everything(sampling=slow_model)
    t0 = time.perf_counter()
    outcome = sample(timeout=1.0)  # the model takes longer than the call's deadline: that is the client's time
    assert time.perf_counter() - t0 >= 1.5
    assert outcome.outcome == "result" and "late but fine" in outcome.content
    assert outcome.samplings[0].waited_ms >= 1400


@pytest.mark.parametrize(
    "bad, said", [(42, "sampling is a function"), ([{"txt": "x"}], "has a 'text' string"), ([3], "a sampling reply is")]
)
def test_bad_sampling_is_one_line_and_connects_nothing(bad, said):
    with pytest.raises((TypeError, ValueError), match=said):
        mcp_nb.connect("everything", ["node", "server.js"], sampling=bad)
    assert list(mcp_nb.servers().index) == ["kernel"]


def test_roots_are_listed_as_given_and_changes_reach_the_server(tmp_path):
    folder = tmp_path / "project data"
    folder.mkdir()
    connection = everything(roots=[folder, ("file:///srv/shared", "shared")])
    assert connection.roots == [(folder.resolve().as_uri(), "project data"), ("file:///srv/shared", "shared")]
    listed = mcp_nb.call("get-roots-list", server="everything").content
    assert folder.resolve().as_uri() in listed and "file:///srv/shared" in listed and "shared" in listed
    connection.set_roots(["/tmp"])  # the handshake era: the server is told, and reads them again (in its own time)
    assert wait_until(lambda: "file:///tmp" in mcp_nb.call("get-roots-list", server="everything").content)


def test_roots_may_be_a_function_asked_each_time():
    offered = [["/tmp"]]
    connection = everything(roots=lambda: offered[0])
    assert "file:///tmp" in mcp_nb.call("get-roots-list", server="everything").content
    offered[0] = ["file:///elsewhere"]
    connection.roots_changed()  # server-everything keeps the roots it read until it is told
    assert wait_until(lambda: "file:///elsewhere" in mcp_nb.call("get-roots-list", server="everything").content)


@pytest.mark.parametrize("bad, said", [("/tmp", "roots is a list"), ([42], "a root is a path"), ([""], "empty string")])
def test_bad_roots_are_one_line(bad, said):
    with pytest.raises((TypeError, ValueError), match=said):
        mcp_nb.connect("everything", ["node", "server.js"], roots=bad)


def test_roots_cannot_be_offered_later_to_a_connection_that_declared_none():
    connection = everything()
    with pytest.raises(ValueError, match="reconnect with roots="):
        connection.set_roots(["/tmp"])


def test_the_magic_takes_sampling_and_roots(shell):
    peers.require(peers.EVERYTHING)
    shell.user_ns["replies"] = ["from the magic"]
    command = " ".join(peers.everything_stdio())
    env = " ".join(f"--env {k}={v}" for k, v in peers.node_env().items() if k == "PATH")
    shell.run_line_magic("mcp_connect", f"everything --sampling replies --root {Path.cwd()} {env} -- {command}")
    assert "from the magic" in sample().content
    assert Path.cwd().resolve().as_uri() in mcp_nb.call("get-roots-list", server="everything").content
    with pytest.raises(UsageError, match="--sampling nowhere: no variable of that name"):
        shell.run_line_magic("mcp_connect", f"other --sampling nowhere -- {command}")


PLANNER = warm.command(Path(__file__).parent / "servers" / "planner.py")  # started warm (tests/warm.py)


def model_with_tools(messages, request):
    if request.tools:
        return {"text": "let me look", "tool_use": {"name": "lookup", "input": {"title": "Dune"}}}
    return "plain answer"


def test_sampling_with_tools_lets_the_reply_ask_for_one_the_request_offered():
    mcp_nb.connect("planner", PLANNER, sampling=model_with_tools, sampling_tools=True, mode="2025-11-25")
    assert mcp_nb.call("ask", {"question": "hi?"}, server="planner").content == "the model said: plain answer"
    outcome = mcp_nb.call("plan", {"goal": "who wrote Dune?"}, server="planner")
    assert outcome.content == "the model asked for lookup({'title': 'Dune'}); stop reason toolUse"
    (sampled,) = outcome.samplings
    assert (
        sampled.tools == ("lookup",) and sampled.tool_use["name"] == "lookup" and sampled.tool_use["input"] == {"title": "Dune"}
    )
    assert "asking for the tool lookup with" in repr(outcome)
    assert mcp_nb.history().to_frame().iloc[-1]["samplings"][0]["tool_use"]["name"] == "lookup"


def test_a_tool_the_request_did_not_offer_is_refused_and_said():
    mcp_nb.connect(
        "planner",
        PLANNER,
        sampling=lambda m, r: {"tool_use": {"name": "rm_rf", "input": {}}},
        sampling_tools=True,
        mode="2025-11-25",
    )
    outcome = mcp_nb.call("plan", {"goal": "x"}, server="planner")
    assert "which the request did not offer (it offered: lookup)" in outcome.samplings[0].reason
    assert outcome.outcome != "result"


def test_without_sampling_tools_the_server_knows_the_model_has_none():
    mcp_nb.connect("planner", PLANNER, sampling=model_with_tools, mode="2025-11-25")
    outcome = mcp_nb.call("plan", {"goal": "x"}, server="planner")
    assert (outcome.outcome, outcome.code) == ("protocol_error", -32602) and "sampling tools" in outcome.message
    with pytest.raises(ValueError, match="give sampling= too"):
        mcp_nb.connect("other", PLANNER, sampling_tools=True)


def test_the_panel_shows_the_exchange_with_the_model():
    from helpers import wait_until

    everything(sampling=lambda messages, request: {"text": "from the panel's model", "model": "tiny"})
    panel = mcp_nb.panel(server="everything")
    try:
        panel.select("tool", SAMPLES)
        panel._entries[panel._current].form.fields["prompt"].widget.value = "Say hi"
        outcome = panel.call().future.result(timeout=30)
        assert outcome.samplings[0].text == "from the panel's model"
        assert wait_until(lambda: "The server asked the model:" in panel.outcome.value)
        assert "from the panel&#x27;s model" in panel.outcome.value or "from the panel's model" in panel.outcome.value
    finally:
        panel.close()


def test_the_guides_chat_completions_adapter_samples_from_an_endpoint_of_that_format():
    """The guide's adapter, as written there, against a chat-completions endpoint on 127.0.0.1
    (this machine has no model to ask: the endpoint answers as such a server does)."""
    import json
    import re
    from http.server import BaseHTTPRequestHandler

    guide = (Path(__file__).resolve().parent.parent / "docs" / "outside-server.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", guide, flags=re.S) if "def chat_completions" in b)
    seen = []

    class Endpoint(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append((self.path, self.headers.get("Authorization"), body))
            text = json.dumps(
                {"model": body["model"], "choices": [{"message": {"role": "assistant", "content": "hello from the endpoint"}}]}
            )
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(text)))
            self.end_headers()
            self.wfile.write(text.encode())

        def log_message(self, *args):
            pass

    with http_served(Endpoint) as url:
        names: dict = {}
        exec(block, names)
        adapter = names["chat_completions"](f"{url}/v1", "test-model", key_variable="MCP_NB_NO_KEY")
        everything(sampling=adapter)
        outcome = sample("Say hi")
        assert outcome.outcome == "result" and "hello from the endpoint" in outcome.content, (outcome.samplings, outcome.content)
        ((path, _, body),) = seen
        assert path == "/v1/chat/completions" and body["model"] == "test-model" and body["max_tokens"] == 50
        assert body["messages"][0]["role"] == "system" and "Say hi" in body["messages"][-1]["content"]
        assert outcome.samplings[0].model == "test-model"
    failed = sample("again")  # the endpoint is gone: the request is refused, and the record says why
    assert failed.samplings[0].refused and "the sampling function raised" in failed.samplings[0].reason


def test_a_sampling_function_that_never_replies_is_refused_in_time():
    from mcp_types import CreateMessageRequestParams, SamplingMessage, TextContent

    from mcp_nb.calling.sampling import Sampler

    async def never(messages, request):
        await asyncio.sleep(3600)

    params = CreateMessageRequestParams(
        messages=[SamplingMessage(role="user", content=TextContent(type="text", text="hi"))], max_tokens=5
    )
    sampled = asyncio.run(Sampler(never).answer(params, within=0.2))
    assert sampled.refused and sampled.reason == "the sampling function did not reply within 0.2 s"
