"""A server's request to the client (a question, a completion of the client's model) goes to the
call it belongs to, or is refused with a reason: never to a call it was guessed to belong to.

On the handshake era (2025-11-25) a server's request does not name the call it belongs to. Over
streamable HTTP it comes on the stream of that call's own POST; over stdio nothing tells. Before,
mcp_nb gave it to the earliest call waiting on the connection: with two calls in flight, the
second call's question was answered with the first call's `elicit=` answers and recorded on the
first call. And a sampling request that came during no call still ran the user's model (a paid
call nobody asked for), though the docstring said it was refused.

Real servers: tests/servers/crossings.py over stdio and over HTTP on 127.0.0.1.
"""

from __future__ import annotations

import threading
from pathlib import Path

import peers
import pytest
import warm
from helpers import wait_until

import mcp_nb

CROSSINGS = warm.command(Path(__file__).parent / "servers" / "crossings.py")  # started warm (tests/warm.py)
ERA = "2025-11-25"


@pytest.fixture(scope="module")
def crossings_url():
    import subprocess

    port = peers.free_port()
    process = subprocess.Popen([*CROSSINGS, "http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        peers.wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        peers.stop(process)


def connect(transport: str, url: str | None = None, **options):
    if transport == "stdio":
        return mcp_nb.connect("x", [*CROSSINGS, "stdio"], mode=ERA, timeout=60, **options)
    return mcp_nb.connect("x", url, mode=ERA, timeout=60, **options)


def two_calls_at_once(tool: str, flag: Path, connection, extra: dict | None = None, **per_call) -> dict:
    """Calls `tool` as "a" and "b" at once on the connection: both are in flight (waiting on the
    server) before either asks, and both still are when each asks (the server answers neither
    until both have asked). `per_call[label]` holds each call's own options. Returns each call's
    Outcome by label."""
    outcomes: dict = {}

    def run(label: str) -> None:
        arguments = {"label": label, "until": str(flag), **(extra or {})}
        outcomes[label] = mcp_nb.call(tool, arguments, server="x", timeout=60, progress=False, **per_call.get(label, {}))

    threads = [threading.Thread(target=run, args=(label,)) for label in ("a", "b")]
    for thread in threads:
        thread.start()
    try:
        assert wait_until(lambda: len(connection.sending) == 2, 30), "the two calls were never in flight together"
        flag.touch()  # both ask now
        asked = [Path(f"{flag}.asked.{label}") for label in ("a", "b")]
        assert wait_until(lambda: all(path.exists() for path in asked), 30), "the server did not ask for both calls"
    finally:
        flag.touch()
        Path(f"{flag}.done").touch()  # both answer now
        for thread in threads:
            thread.join(90)
    return outcomes


def test_over_stdio_a_question_with_two_calls_waiting_is_refused_with_a_reason_not_given_to_either(tmp_path):
    connection = connect("stdio")
    outcomes = two_calls_at_once(
        "ask", tmp_path / "go", connection, a={"elicit": [{"name": "Ann"}]}, b={"elicit": [{"name": "Bob"}]}
    )
    for label, outcome in outcomes.items():
        assert outcome.elicitations == (), f"{label} recorded a question: {outcome.elicitations}"
        assert outcome.content.startswith(f"{label}: refused:"), outcome.content
        assert "2 calls were waiting" in outcome.content and "does not say which" in outcome.content
        said = [log.message for log in outcome.server_logs if log.logger == "mcp_nb.elicitation"]
        assert said and all("refused" in line for line in said), outcome.server_logs
    # One call alone: its question is its own, answered by its own elicit=.
    alone = mcp_nb.call("ask", {"label": "c"}, server="x", elicit=[{"name": "Cy"}], timeout=60)
    assert alone.content == "c: accept Cy" and [e.message for e in alone.elicitations] == ["the question of c"]


def test_over_http_each_question_goes_to_the_call_whose_request_it_came_with(tmp_path, crossings_url):
    connection = connect("http", crossings_url)
    outcomes = two_calls_at_once(
        "ask", tmp_path / "go", connection, a={"elicit": [{"name": "Ann"}]}, b={"elicit": [{"name": "Bob"}]}
    )
    assert (outcomes["a"].content, outcomes["b"].content) == ("a: accept Ann", "b: accept Bob")
    for label, outcome in outcomes.items():
        (asked,) = outcome.elicitations
        assert (asked.message, asked.source) == (f"the question of {label}", "elicit")


def a_model(asked: list):
    def model(messages, request):
        asked.append(messages[-1]["text"])
        return f"reply to {messages[-1]['text']}"

    return model


def test_over_stdio_a_sampling_request_with_two_calls_waiting_is_refused_and_the_model_never_runs(tmp_path):
    asked: list = []
    connection = connect("stdio", sampling=a_model(asked))
    outcomes = two_calls_at_once("sample", tmp_path / "go", connection)
    assert asked == [], "the model ran for a request nobody could say was whose"
    for label, outcome in outcomes.items():
        assert outcome.samplings == ()
        assert outcome.content.startswith(f"{label}: refused:") and "2 calls were waiting" in outcome.content


def test_over_http_a_sampling_request_on_the_sessions_own_stream_with_two_calls_waiting_is_refused(tmp_path, crossings_url):
    asked: list = []
    connection = connect("http", crossings_url, sampling=a_model(asked))
    outcomes = two_calls_at_once("sample", tmp_path / "go", connection, extra={"related": False})
    assert asked == []
    for label, outcome in outcomes.items():
        assert outcome.samplings == () and "2 calls were waiting" in outcome.content, outcome.content


def test_over_http_each_sampling_request_is_recorded_on_its_own_call(tmp_path, crossings_url):
    asked: list = []
    connection = connect("http", crossings_url, sampling=a_model(asked))
    outcomes = two_calls_at_once("sample", tmp_path / "go", connection)
    assert sorted(asked) == ["the prompt of a", "the prompt of b"]
    for label, outcome in outcomes.items():
        assert outcome.content == f"{label}: reply to the prompt of {label}"
        (sampled,) = outcome.samplings
        assert sampled.messages[-1]["text"] == f"the prompt of {label}" and sampled.text == f"reply to the prompt of {label}"


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_request_that_comes_during_no_call_is_refused_and_no_user_code_runs(transport, request):
    url = request.getfixturevalue("crossings_url") if transport == "http" else None
    asked: list = []
    answered: list = []
    mcp_nb.configure(elicit=lambda message, schema: answered.append(message) or {"name": "Default"})
    connection = connect(transport, url, sampling=a_model(asked))
    assert mcp_nb.call("sample_later", {"delay": 0.2}, server="x").content == "will sample"
    assert mcp_nb.call("ask_later", {"delay": 0.2}, server="x").content == "will ask"
    said = lambda: [entry.message for entry in connection.logs]  # noqa: E731
    assert wait_until(lambda: sum("refused" in line and "no call" in line for line in said()) >= 2, 20), said()
    assert asked == [] and answered == [], "user code ran for a request that came during no call"
    if transport == "stdio":  # the server says on its stderr what it was told
        assert wait_until(lambda: any(line.startswith("sampled later: later: refused:") for line in said()), 10), said()
        assert wait_until(lambda: any(line.startswith("asked later: refused:") for line in said()), 10), said()
