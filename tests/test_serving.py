"""Serving the kernel to real clients: their calls in the history, what they hear when a cell is
re-run, `%mcp_serve`, and stopping (by hand, by `reset()`, at exit)."""

import asyncio
import html
import json
import logging
import socket
import subprocess
import sys
import threading
import time

import mcp_types as types
import peers
import pytest
from IPython.core.error import UsageError
from mcp import MCPError
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from outside import client

import mcp_nb
from mcp_nb.serving import current
from mcp_nb.serving.view import TOKEN_SHOWN


def cell(shell, magic: str, line: str, body: str):
    """Run a cell magic the way a notebook does, returning the ExecutionResult."""
    return shell.run_cell(f"%%{magic} {line}\n{body}")


def bookshop():
    """Tools, a resource template and a prompt with every outcome the error model knows."""

    @mcp_nb.tool()
    def lookup(title: str) -> str:
        if title == "raise":
            raise ToolError("no such book")
        if title == "crash":
            raise KeyError(title)
        if title == "protocol":
            raise MCPError(code=-32010, message="shop closed", data={"reopens": "monday"})
        return title.upper()

    @mcp_nb.resource("books://{title}")
    def book(title: str) -> str:
        if title == "missing":
            raise ResourceNotFoundError("no such book")
        if title == "broken":
            raise ResourceError("shelf broken")
        if title == "crash":
            raise ValueError("bad")
        return f"the text of {title}"

    @mcp_nb.prompt()
    def review(title: str) -> str:
        if title == "crash":
            raise ValueError("bad")
        return f"Review {title}."


CASES = [
    ("tool", "lookup", {"title": "dune"}),
    ("tool", "lookup", {"title": "raise"}),
    ("tool", "lookup", {"title": "crash"}),
    ("tool", "lookup", {"title": "protocol"}),
    ("tool", "lookup", {"title": 42}),
    ("tool", "nowhere", {}),
    ("resource", "books://dune", None),
    ("resource", "books://missing", None),
    ("resource", "books://broken", None),
    ("resource", "books://crash", None),
    ("resource", "nothing://here", None),
    ("prompt", "review", {"title": "dune"}),
    ("prompt", "review", {}),
    ("prompt", "review", {"title": "crash"}),
    ("prompt", "nowhere", {}),
]


async def call_from_outside(session, target, name, arguments):
    try:
        if target == "tool":
            await session.call_tool(name, arguments)
        elif target == "resource":
            await session.read_resource(name)
        else:
            await session.get_prompt(name, arguments)
    except Exception:  # noqa: BLE001 - the client's view does not matter here: the server's record does
        pass


@pytest.mark.parametrize("mode", ["auto", "legacy"], ids=["2026-07-28", "2025-11-25"])
def test_outside_calls_land_in_the_history_classified_as_the_kernels_own(mode):
    bookshop()
    for target, name, arguments in CASES:
        {"tool": mcp_nb.call, "prompt": mcp_nb.get_prompt}.get(target, lambda n, a: mcp_nb.read(n))(name, arguments)
    handle = mcp_nb.serve()

    async def outside():
        async with client(handle.url, handle.token, mode=mode) as session:
            for target, name, arguments in CASES:
                await call_from_outside(session, target, name, arguments)

    asyncio.run(outside())
    handle.stop()
    frame = mcp_nb.history().to_frame()
    kernel, http = frame[frame["via"] == "kernel"], frame[frame["via"] == "http"]
    assert len(kernel) == len(http) == len(CASES)
    seen = lambda rows: [(r.target, r.name, r.outcome, r.cause) for r in rows.itertuples()]  # noqa: E731
    assert seen(http) == seen(kernel)
    # The code is what this client got: a crash in a prompt is -32603 in-process and at 2026-07-28,
    # and code 0 with the exception's text on the 2025 wire.
    crashed = http[(http["name"] == "review") & (http["cause"] == "crash")].iloc[0]
    assert (crashed["code"], crashed["message"]) == (
        (-32603, "Internal server error") if mode == "auto" else (0, "Error rendering prompt review")
    )
    assert set(http["client"].astype(str)) == {"mcp 0.1.0"} and kernel["client"].isna().all()
    assert http["timeout_s"].isna().all()
    crash = http[(http["name"] == "lookup") & (http["cause"] == "crash")].iloc[0]
    assert any(log.traceback and "KeyError" in log.traceback for log in crash["server_logs"])
    assert handle.calls == len(CASES)


@pytest.mark.parametrize("mode", ["auto", "legacy"], ids=["2026-07-28", "2025-11-25"])
def test_an_answered_outside_call_is_in_the_history_when_its_client_has_the_answer(mode):
    """Over HTTP the Outcome is built after the answer has left; whoever reads the history
    then, from any thread, still finds every answered call, and a listener hears each one."""

    @mcp_nb.tool()
    def echo(n: int) -> int:
        return n

    heard = []
    mcp_nb.history().subscribe(lambda o: heard.append(None if o is None else o.arguments["n"]))
    handle = mcp_nb.serve()

    async def outside():
        async with client(handle.url, handle.token, mode=mode) as session:
            for n in range(60):
                await session.call_tool("echo", {"n": n})
                assert len(mcp_nb.history()) == n + 1  # read the moment the answer is in

    asyncio.run(outside())
    assert heard == list(range(60))
    assert list(mcp_nb.history().to_frame()["arguments"].map(lambda a: a["n"])) == list(range(60))
    handle.stop()


def test_a_call_whose_answer_left_on_another_stream_is_heard_without_a_reader():
    """SEP-1699: the tool ends its POST's stream early and answers on the stream the client
    resumes; the listeners still hear the call within moments, nobody reading the history."""

    @mcp_nb.tool()
    async def poll(ctx: Context) -> str:
        await ctx.close_sse_stream()
        await asyncio.sleep(0.2)  # the client reconnects meanwhile
        return "done"

    heard = []
    mcp_nb.history().subscribe(lambda o: heard.append(o))
    handle = mcp_nb.serve()

    async def outside():
        async with client(handle.url, handle.token, mode="legacy") as session:
            result = await session.call_tool("poll", {})
            assert result.content[0].text == "done"
            assert await asyncio.wait_for(_until(lambda: heard), 5)  # the session is still open: no request ends it

    asyncio.run(outside())
    handle.stop()
    assert [(o.name, o.outcome, o.via) for o in heard] == [("poll", "result", "http")]


def test_history_views_say_who_made_an_outside_call():
    @mcp_nb.tool()
    def add(a: int, b: int) -> int:
        return a + b

    mcp_nb.call("add", {"a": 1, "b": 1})
    assert "via" not in repr(mcp_nb.history())  # only the kernel's calls: the views are as before
    handle = mcp_nb.serve()

    async def outside():
        async with client(handle.url, handle.token) as session:
            await session.call_tool("add", {"a": 2, "b": 3})

    asyncio.run(outside())
    handle.stop()
    text = repr(mcp_nb.history())
    assert "via" in text and "http mcp 0.1.0" in text
    assert "http mcp 0.1.0" in mcp_nb.history()._repr_html_()
    frame = mcp_nb.history().to_frame()
    assert list(frame["via"].astype(str)) == ["kernel", "http"]
    from mcp_nb.widgets.history_tab import as_call, call_label

    kernels, outsiders = [call_label(r) for r in frame.itertuples(index=False)]
    assert "←" not in kernels and outsiders.endswith("← http mcp 0.1.0")  # the panel's history list
    from mcp_nb.views.cards import outcome_text

    card = outcome_text(as_call(next(frame.tail(1).itertuples(index=False))))  # the panel's card of a past call
    assert card.splitlines()[0].endswith("(via http from mcp 0.1.0)")


def test_a_rerun_cell_and_a_removal_are_announced_to_a_2025_client(shell):
    cell(shell, "mcp_tool", "", "def greet(name: str) -> str:\n    return 'hello ' + name\n")
    handle = mcp_nb.serve()
    heard = []

    async def heard_of(kind):
        assert await asyncio.wait_for(_until(lambda: any(isinstance(m, kind) for m in heard)), 10)
        heard.clear()

    async def session_life():
        async def on_message(message):
            heard.append(message)

        async with client(handle.url, handle.token, mode="legacy", message_handler=on_message) as session:
            assert session.protocol_version == "2025-11-25"
            assert session.server_capabilities.tools.list_changed is True
            await session.call_tool("greet", {"name": "a"})
            await asyncio.sleep(0.2)  # the session's notification stream is open
            assert cell(
                shell, "mcp_tool", "", "def greet(name: str, times: int = 1) -> str:\n    return 'hi ' * times + name\n"
            ).success
            await heard_of(types.ToolListChangedNotification)
            listed = {t.name: t for t in (await session.list_tools()).tools}
            assert list(listed["greet"].input_schema["properties"]) == ["name", "times"]
            assert (await session.call_tool("greet", {"name": "b", "times": 2})).content[0].text == "hi hi b"
            shell.run_line_magic("mcp_remove", "greet")
            await heard_of(types.ToolListChangedNotification)
            assert (await session.list_tools()).tools == []

    try:
        asyncio.run(session_life())
    finally:
        handle.stop()


def test_a_rerun_cell_is_announced_on_a_2026_listen_stream(shell):
    cell(shell, "mcp_prompt", "", "def ask(topic: str) -> str:\n    return topic\n")
    handle = mcp_nb.serve()

    async def session_life():
        async with client(handle.url, handle.token) as session:
            assert session.protocol_version == "2026-07-28"
            async with session.listen(prompts_list_changed=True) as events:
                assert cell(
                    shell, "mcp_prompt", "", "def ask(topic: str, tone: str = 'kind') -> str:\n    return topic\n"
                ).success
                event = await asyncio.wait_for(events.__anext__(), 10)
            assert type(event).__name__ == "PromptsListChanged"
            (prompt,) = (await session.list_prompts()).prompts
            assert [a.name for a in prompt.arguments] == ["topic", "tone"]

    try:
        asyncio.run(session_life())
    finally:
        handle.stop()


@pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed:UserWarning")
def test_a_subscribed_resource_is_announced_when_its_cell_is_rerun(shell):
    cell(shell, "mcp_resource", "notes://today", "def today() -> str:\n    return 'v1'\n")
    cell(shell, "mcp_resource", "notes://{day}", "def day(day: str) -> str:\n    return 'v1 ' + day\n")
    handle = mcp_nb.serve()
    updated = []

    async def session_life():
        async def on_message(message):
            if isinstance(message, types.ResourceUpdatedNotification):
                updated.append(str(message.params.uri))

        async with client(handle.url, handle.token, mode="legacy", message_handler=on_message) as session:
            await session.subscribe_resource("notes://today")
            await session.subscribe_resource("notes://monday")
            await asyncio.sleep(0.2)
            cell(shell, "mcp_resource", "notes://today", "def today() -> str:\n    return 'v2'\n")
            assert await asyncio.wait_for(_until(lambda: "notes://today" in updated), 10)
            assert (await session.read_resource("notes://today")).contents[0].text == "v2"
            cell(shell, "mcp_resource", "notes://{day}", "def day(day: str) -> str:\n    return 'v2 ' + day\n")
            assert await asyncio.wait_for(_until(lambda: "notes://monday" in updated), 10)
            await session.unsubscribe_resource("notes://today")
            updated.clear()
            cell(shell, "mcp_resource", "notes://today", "def today() -> str:\n    return 'v3'\n")
            await asyncio.sleep(0.5)
            assert "notes://today" not in updated

    try:
        asyncio.run(session_life())
    finally:
        handle.stop()


@pytest.mark.filterwarnings("ignore:The logging capability is deprecated:UserWarning")
def test_the_log_level_a_client_sets_filters_the_messages_it_gets():
    @mcp_nb.tool()
    async def chatty(ctx: Context) -> str:
        await ctx.info("detail")
        await ctx.warning("careful")
        return "done"

    handle = mcp_nb.serve()
    got = []

    async def session_life():
        async def on_log(params):
            got.append((params.level, params.data))

        async with client(handle.url, handle.token, mode="legacy", logging_callback=on_log) as session:
            await session.call_tool("chatty", {})
            assert got == [("info", "detail"), ("warning", "careful")]
            got.clear()
            await session.set_logging_level("warning")
            await session.call_tool("chatty", {})
            assert got == [("warning", "careful")]

    try:
        asyncio.run(session_life())
    finally:
        handle.stop()


def test_completion_offers_the_values_an_argument_took_in_the_history():
    @mcp_nb.prompt()
    def review(title: str, tone: str = "kind") -> str:
        return title

    for title in ("Dune", "Dracula", "Emma", "Dune"):
        mcp_nb.get_prompt("review", {"title": title})
    handle = mcp_nb.serve()

    async def completions(typed):
        async with client(handle.url, handle.token) as session:
            reference = types.PromptReference(type="ref/prompt", name="review")
            return (await session.complete(reference, {"name": "title", "value": typed})).completion

    try:
        assert asyncio.run(completions("d")).values == ["Dune", "Dracula"]  # latest first, once each
        assert asyncio.run(completions("")).total == 3
        assert asyncio.run(completions("x")).values == []
    finally:
        handle.stop()


def test_mcp_serve_returns_the_running_server_or_says_why_not(shell):
    first = shell.run_line_magic("mcp_serve", "")
    try:
        assert first is current(mcp_nb.engine()) and first.running
        again = shell.run_line_magic("mcp_serve", f"--port {first.port}")
        assert again is first and again.token == first.token  # same options: same server, same token
        with pytest.raises(UsageError, match="already serving at .* with other settings"):
            shell.run_line_magic("mcp_serve", "--dangerously-no-auth")
        with pytest.raises(UsageError, match="dangerously_no_auth is refused on 0.0.0.0"):
            shell.run_line_magic("mcp_serve", "--host 0.0.0.0 --dangerously-no-auth")
        with pytest.raises(UsageError, match="port must be"):
            shell.run_line_magic("mcp_serve", "--port 70000")
    finally:
        shell.run_line_magic("mcp_serve", "--stop")
    assert not first.running and current(mcp_nb.engine()) is None
    _refused_connection(first.port)


def test_mcp_serve_on_a_taken_port_is_one_line(shell, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(UsageError, match="cannot listen on 127.0.0.1"):
            shell.run_line_magic("mcp_serve", f"--port {taken.getsockname()[1]}")
    assert current(mcp_nb.engine()) is None
    shell.run_line_magic("mcp_serve", "--stop")
    assert "not serving" in capsys.readouterr().out


def test_outside_calls_of_a_sync_tool_reuse_the_worker_threads():
    # A sync tool runs in one of anyio's worker threads, which live as long as the loop's root
    # task: without one, each call started (and stopped) a thread of its own.
    workers = set()

    @mcp_nb.tool()
    def where() -> str:
        workers.add(threading.current_thread())  # the objects, not their idents, which the OS reuses
        return "here"

    handle = mcp_nb.serve()

    async def outside():
        async with client(handle.url, handle.token) as session:
            for _ in range(20):
                await session.call_tool("where", {})

    try:
        asyncio.run(outside())
    finally:
        handle.stop()
    assert 1 <= len(workers) <= 2


def test_connections_are_accepted_with_nagles_algorithm_off():
    # Otherwise a keep-alive client's next answer waits for its delayed ACK (about 40 ms a call).
    handle = mcp_nb.serve()
    try:
        with socket.create_connection(("127.0.0.1", handle.port)) as connection:
            # With the token, so that the connection stays (a refused one is closed after its answer).
            connection.sendall(
                f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{handle.port}\r\nAuthorization: Bearer {handle.token}\r\n\r\n".encode()
            )
            assert connection.recv(100).startswith(b"HTTP/1.1 4")  # the SDK's answer: no session
            (accepted,) = handle._uvicorn.server_state.connections
            server_side = accepted.transport.get_extra_info("socket")
            assert server_side.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    finally:
        handle.stop()


def test_the_handle_shows_where_and_keeps_the_token_out_of_its_summary():
    handle = mcp_nb.serve()
    try:
        text = repr(handle)
        assert handle.url in text and handle.token not in text and handle.token[:4] in text
        configs = handle.configs()
        # A cell's output is saved with the notebook: the settings it shows have a placeholder
        # where the token goes, and the code that asks gets them whole.
        shown = handle._repr_html_()
        assert handle.token not in shown and handle.token[:4] in shown
        assert html.escape(TOKEN_SHOWN) in shown and "handle.configs()" in shown
        cursor = json.loads(configs["Cursor (~/.cursor/mcp.json)"])["mcpServers"]["mcp_nb"]
        assert cursor == {"url": handle.url, "headers": {"Authorization": f"Bearer {handle.token}"}}
        vscode = json.loads(configs["VS Code (.vscode/mcp.json)"])["servers"]["mcp_nb"]
        assert vscode["type"] == "http" and vscode["headers"]["Authorization"] == f"Bearer {handle.token}"
        claude = json.loads(configs["Claude Desktop (claude_desktop_config.json)"])["mcpServers"]["mcp_nb"]
        assert handle.url in claude["args"] and claude["env"]["MCP_NB_AUTH"] == f"Bearer {handle.token}"
        assert f"'Authorization: Bearer {handle.token}'" in configs["MCP Inspector (command line)"]
    finally:
        handle.stop()
    assert "stopped" in repr(handle)


def test_reset_stops_serving_and_a_call_in_flight_is_recorded_as_cancelled(caplog):
    started = threading.Event()

    @mcp_nb.tool()
    async def slow() -> str:
        started.set()
        await asyncio.sleep(30)
        return "late"

    handle = mcp_nb.serve()
    old = mcp_nb.engine()

    async def outside():
        async with client(handle.url, handle.token) as session:
            await session.call_tool("slow", {})

    caller = threading.Thread(target=lambda: _quietly(outside), daemon=True)
    caller.start()
    assert started.wait(10)
    begun = time.monotonic()
    with caplog.at_level(logging.ERROR):
        mcp_nb.reset()
    assert time.monotonic() - begun < 10
    # Stopped in order (sessions first, on the loop), not cancelled mid-request with everything else.
    assert [r for r in caplog.records if r.name.startswith("uvicorn")] == []
    assert not handle.running
    _refused_connection(handle.port)
    (row,) = old.history.to_frame().itertuples()
    assert (row.outcome, row.cause, row.via) == ("timeout", "cancelled", "http")
    assert "serving was stopped" in row.message
    caller.join(30)


def test_stopping_answers_a_2026_request_in_flight_and_records_its_call_as_cancelled():
    # A 2026-07-28 call is one request, outside any session the SDK would end: the door ends it,
    # and its client is answered (503: nothing was begun) instead of being left hanging.
    import http.client
    from urllib.parse import urlsplit

    started = threading.Event()

    @mcp_nb.tool()
    async def slow() -> str:
        started.set()
        await asyncio.sleep(30)
        return "late"

    handle = mcp_nb.serve()
    where = urlsplit(handle.url)
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "slow", "arguments": {}, "_meta": meta}}
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {handle.token}",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "slow",
    }
    got = {}

    def post():
        connection = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
        connection.request("POST", where.path, json.dumps(body).encode(), headers)
        response = connection.getresponse()
        got["status"], got["text"] = response.status, response.read().decode()
        connection.close()

    caller = threading.Thread(target=post, daemon=True)
    caller.start()
    assert started.wait(10)
    begun = time.monotonic()
    handle.stop()
    caller.join(10)
    assert time.monotonic() - begun < 10
    assert got["status"] == 503, got
    assert json.loads(got["text"]) == {"error": "serving_stopped", "error_description": "serving was stopped"}
    (row,) = mcp_nb.history().to_frame().itertuples()
    assert (row.outcome, row.cause, row.via) == ("timeout", "cancelled", "http")
    assert "serving was stopped" in row.message


def test_the_kernel_stays_free_while_an_outside_call_runs():
    started, release = threading.Event(), threading.Event()

    @mcp_nb.tool()
    def blocking() -> str:
        started.set()
        release.wait(30)
        return "released"

    @mcp_nb.tool()
    def quick() -> str:
        return "quick"

    handle = mcp_nb.serve()
    results = []

    async def outside():
        async with client(handle.url, handle.token) as session:
            results.append((await session.call_tool("blocking", {})).content[0].text)

    caller = threading.Thread(target=lambda: asyncio.run(outside()))
    caller.start()
    try:
        assert started.wait(10)
        assert mcp_nb.call("quick").content == "quick"  # while the outside call is still running
        assert results == []
    finally:
        release.set()
        caller.join(30)
        handle.stop()
    assert results == ["released"]


def test_the_inspector_cli_is_a_client_like_any_other():
    peers.require("@modelcontextprotocol/inspector")

    @mcp_nb.tool()
    def add(a: int, b: int) -> int:
        return a + b

    handle = mcp_nb.serve()
    try:
        header = f"Authorization: Bearer {handle.token}"
        listed = peers.inspector_cli(handle.url, "--transport", "http", "--header", header, "--method", "tools/list")
        assert listed.returncode == 0, listed.stderr[-2000:]
        assert '"add"' in listed.stdout
        called = peers.inspector_cli(
            handle.url,
            "--transport",
            "http",
            "--header",
            header,
            "--method",
            "tools/call",
            "--tool-name",
            "add",
            "--tool-arg",
            "a=2",
            "b=3",
        )
        assert called.returncode == 0, called.stderr[-2000:]
        refused = peers.inspector_cli(handle.url, "--transport", "http", "--method", "tools/list")
        assert refused.returncode != 0
    finally:
        handle.stop()
    (row,) = mcp_nb.history().to_frame().itertuples()
    assert (row.name, row.outcome, row.content, row.via) == ("add", "result", "5", "http")
    assert "inspector" in str(row.client).lower()
    assert handle.refused.get("token", 0) >= 1


def test_leaving_the_interpreter_stops_serving(tmp_path):
    script = "import mcp_nb\nhandle = mcp_nb.serve()\nprint(handle.port, flush=True)\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=_env())
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "Exception" not in done.stderr
    _refused_connection(int(done.stdout.strip()))


# -- helpers ----------------------------------------------------------------------------------------


async def _until(predicate, every: float = 0.02) -> bool:
    while not predicate():
        await asyncio.sleep(every)
    return True


def _quietly(coroutine_function):
    try:
        asyncio.run(coroutine_function())
    except BaseException:  # noqa: BLE001 - the server went away under this client, on purpose
        pass


def _refused_connection(port: int) -> None:
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


def _env():
    import os
    from pathlib import Path

    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_an_answered_call_no_door_settles_is_still_heard_within_moments():
    """The recorder's own promise, apart from any door: a call recorded for later is settled
    on the loop shortly after, so views hear it even when no response ever ends."""
    from types import SimpleNamespace

    from mcp_nb.serving.record import SETTLE_WITHIN_S, Recorder

    engine = mcp_nb.engine()
    heard = []
    engine.history.subscribe(heard.append)
    recorder = Recorder(engine, "http", SimpleNamespace(seen=lambda session: None), later=True)
    session = SimpleNamespace(client_params=None)
    ctx = SimpleNamespace(method="tools/call", params={"name": "echo", "arguments": {"n": 1}}, session=session)
    wire = {"content": [{"type": "text", "text": "1"}], "isError": False}

    async def answered(_ctx):
        await asyncio.sleep(0.05)  # the handler's own time
        return wire

    async def main():
        assert await recorder(ctx, answered) is wire
        assert heard == []  # built after the answer, not on its path
        await asyncio.sleep(SETTLE_WITHIN_S + 0.3)
        return list(heard)

    settled = asyncio.run(main())
    assert [(o.name, o.outcome, o.content, o.via) for o in settled] == [("echo", "result", "1", "http")]
    # The duration is the call's, not the wait until it was recorded.
    assert 50 <= settled[0].duration_ms < 50 + SETTLE_WITHIN_S * 1000
