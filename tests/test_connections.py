"""Outside servers: stdio and streamable HTTP, real peers, the same calls, history and error model."""

import json
import logging
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import peers
import pytest
from helpers import http_served, wait_until
from IPython.core.error import UsageError

import mcp_nb
from mcp_nb.calling.connections import ConnectError
from mcp_nb.calling.mcpservers import ConfigError

BOOKSHOP = peers.BOOKSHOP


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except OSError:
        return False


@pytest.fixture(scope="module")
def bookshop_url():
    with peers.bookshop_http() as url:
        yield url


@pytest.fixture(scope="module")
def everything_url():
    peers.require(peers.EVERYTHING)
    with peers.everything_http() as url:
        yield url


def connect_bookshop(transport: str, url: str | None = None, name: str = "books"):
    if transport == "stdio":
        return mcp_nb.connect(name, [*BOOKSHOP, "stdio"])
    return mcp_nb.connect(name, url)


# -- connecting --------------------------------------------------------------------------------


def test_a_stdio_server_connects_and_says_what_it_is():
    connection = mcp_nb.connect("books", [*BOOKSHOP, "stdio"])
    row = connection.describe()
    assert (row["transport"], row["state"], row["server_name"], row["server_version"]) == (
        "stdio",
        "connected",
        "bookshop",
        "1.0.0",
    )
    assert row["protocol"] in ("2026-07-28", "2025-11-25")
    assert (row["tool"], row["resource"], row["template"], row["prompt"]) == (7, 1, 1, 1)
    assert "server books (stdio, connected)" in repr(connection) and "offers 7 tools" in repr(connection)
    assert 'class="mcp-nb-connection"' in connection._repr_html_()
    table = mcp_nb.servers()
    assert list(table.index) == ["kernel", "books"] and table.loc["books", "state"] == "connected"
    listed = mcp_nb.registered(server="books")
    assert set(listed["name"]) >= {"get_author", "count_books", "slow", "die", "book", "catalog", "review"}


def test_the_same_calls_history_and_outcomes_over_stdio_and_http(bookshop_url):
    for transport in ("stdio", "http"):
        mcp_nb.reset()
        connect_bookshop(transport, bookshop_url)

        def call(name, arguments=None):
            return mcp_nb.call(name, arguments, server="books")

        got = {
            "result": call("get_author", {"title": "Dune"}),
            "raised": call("get_author", {"title": "tool-error"}),
            "crash": call("get_author", {"title": "Emma"}),
            "invalid_arguments": call("get_author", {"title": 3}),
            "unknown_tool": call("nope"),
            "mcp_error": call("get_author", {"title": "mcp-error"}),
            "not_found": mcp_nb.read("books://missing", server="books"),
            "resource_error": mcp_nb.read("books://broken", server="books"),
            "resource crash": mcp_nb.read("books://Emma", server="books"),
            "prompt crash": mcp_nb.get_prompt("review", {"title": "crash"}, server="books"),
        }
        causes = {key: (o.outcome, o.cause) for key, o in got.items()}
        assert causes == {
            "result": ("result", "ok"),
            "raised": ("tool_error", "raised"),
            "crash": ("tool_error", "crash"),
            "invalid_arguments": ("tool_error", "invalid_arguments"),
            "unknown_tool": ("tool_error", "unknown_tool"),
            "mcp_error": ("protocol_error", "mcp_error"),
            "not_found": ("protocol_error", "not_found"),
            "resource_error": ("protocol_error", "resource_error"),
            "resource crash": ("protocol_error", "crash"),
            "prompt crash": ("protocol_error", "crash"),
        }, transport
        assert (got["mcp_error"].code, got["mcp_error"].message, got["mcp_error"].data) == (
            -32050,
            "catalog offline",
            {"title": "mcp-error"},
        )
        assert got["result"].content == "Frank Herbert" and got["result"].server == "books"
        # A prompt without its argument: over stdio the server's own log line tells it; over
        # HTTP nothing does (the Python SDK answers every prompt failure alike).
        missing = mcp_nb.get_prompt("review", {}, server="books")
        assert (missing.code, missing.cause) == (-32603, "invalid_arguments" if transport == "stdio" else "crash")
        frame = mcp_nb.history().to_frame()
        assert set(frame["server"].astype(str)) == {"books"} and len(frame) == 11


def test_a_typescript_sdk_server_over_both_transports(everything_url):
    peers.require(peers.EVERYTHING)
    for transport in ("stdio", "http"):
        mcp_nb.reset()
        target = peers.everything_stdio() if transport == "stdio" else everything_url
        connection = mcp_nb.connect("everything", target, env=peers.node_env() if transport == "stdio" else None)
        assert connection.describe()["server_name"] == "mcp-servers/everything"
        assert mcp_nb.call("echo", {"message": "hi"}, server="everything").content == "Echo: hi"
        assert mcp_nb.call("echo", {}, server="everything").cause == "invalid_arguments"
        assert mcp_nb.call("nope", server="everything").cause == "unknown_tool"
        assert mcp_nb.read("demo://nope", server="everything").cause == "not_found"
        assert mcp_nb.get_prompt("args-prompt", {}, server="everything").cause == "invalid_arguments"
        slow = mcp_nb.call("trigger-long-running-operation", {"duration": 5, "steps": 5}, timeout=0.5, server="everything")
        assert (slow.outcome, slow.cause, slow.code, slow.message) == (
            "timeout",
            "deadline",
            -32001,
            "Request 'tools/call' timed out",
        )
        assert slow.server_fate == "cancel_requested"  # told to cancel; what it did is not observable
        # Progress notifications arrive while it runs: they break nothing.
        done = mcp_nb.call("trigger-long-running-operation", {"duration": 0.3, "steps": 3}, server="everything")
        assert done.ok, done


def test_key_value_arguments_are_coerced_with_the_remote_schema_and_retries_read_remote_annotations(shell):
    connect_bookshop("stdio")
    shell.run_line_magic("mcp_call", "count_books limit=1 --server books")
    assert mcp_nb.history().to_frame()["arguments"].tolist() == [{"limit": 1}]
    with pytest.raises(ValueError, match="will not retry tool 'count_books'"):
        mcp_nb.call("count_books", {"limit": 1}, server="books", retry=2)


def test_retries_on_a_remote_idempotent_tool(everything_url):
    mcp_nb.connect("everything", everything_url)
    o = mcp_nb.call("echo", {"message": "x"}, server="everything", retry=1)  # echo is readOnly and idempotent
    assert o.ok and o.attempt == 1


def test_a_sweep_on_a_connected_server(everything_url):
    mcp_nb.connect("everything", everything_url)
    frame = mcp_nb.sweep("get-sum", {"a": [1, 2, 3], "b": [10]}, server="everything", progress=False)
    assert frame["content"].tolist() == [f"The sum of {a} and 10 is {a + 10}." for a in (1, 2, 3)]
    assert set(mcp_nb.history().to_frame()["server"].astype(str)) == {"everything"}


# -- what the server says, and its lifecycle -------------------------------------------------------


def test_a_stdio_servers_stderr_goes_on_its_calls_never_into_the_cell(capfd):
    connection = connect_bookshop("stdio")
    o = mcp_nb.call("chatty", {"n": 3}, server="books")
    said = [(log.source, log.message) for log in o.server_logs]
    assert said == [("stderr", f"chatty line {i}") for i in range(3)]
    assert [log.message for log in connection.logs][-3:] == [f"chatty line {i}" for i in range(3)]
    crash = mcp_nb.call("get_author", {"title": "Emma"}, server="books")
    # Where `rich` is installed the server's logging wraps its lines at 80 columns, with the
    # logger's file in a column of its own: read them as one text, the words in order.
    told = " ".join(" ".join(log.message.split()) for log in crash.server_logs)
    assert re.search(r"'get_author' raised an .*unexpected exception", told), told
    captured = capfd.readouterr()
    assert "chatty line" not in captured.out + captured.err
    assert "unexpected exception" not in captured.out + captured.err


def test_a_server_that_dies_mid_call_is_reported_then_reconnected():
    connection = connect_bookshop("stdio")
    pid = connection.pid
    o = mcp_nb.call("die", server="books")
    assert (o.outcome, o.cause, o.code) == ("protocol_error", "disconnected", -32000)
    assert "about to exit" in [log.message for log in o.server_logs]
    assert wait_until(lambda: not alive(pid))
    later = mcp_nb.call("get_author", {"title": "Dune"}, server="books")
    assert later.cause == "disconnected" and "server 'books' is not connected" in later.message
    assert mcp_nb.servers().loc["books", "state"] == "lost"
    again = mcp_nb.reconnect("books")
    assert again.state == "connected" and again.pid != pid
    assert mcp_nb.call("get_author", {"title": "Dune"}, server="books").content == "Frank Herbert"


def test_a_stdio_process_never_outlives_its_connection():
    first = mcp_nb.connect("books", [*BOOKSHOP, "stdio-stubborn"])
    pid = first.pid
    assert pid is not None and alive(pid)
    mcp_nb.disconnect("books")
    assert wait_until(lambda: not alive(pid))
    second = connect_bookshop("stdio")
    replaced_pid = second.pid
    third = connect_bookshop("stdio")  # the same name again: replaces, and the old process ends
    assert wait_until(lambda: not alive(replaced_pid)) and alive(third.pid)
    mcp_nb.reset()
    assert wait_until(lambda: not alive(third.pid))


def test_the_interpreter_exiting_ends_the_stdio_process():
    script = textwrap.dedent(
        f"""
        import mcp_nb
        c = mcp_nb.connect("books", {BOOKSHOP + ["stdio-stubborn"]!r})
        print(c.pid, flush=True)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    pid = int(done.stdout.split()[-1])
    assert wait_until(lambda: not alive(pid))


def test_a_kernel_shutdown_ends_the_stdio_process():
    from kernels import start_new_kernel  # over ipc: no TCP port to lose

    manager, client = start_new_kernel(warm=False)  # started as a kernel is: what ends with it is the point
    outputs: list = []
    try:
        code = f"import mcp_nb\nc = mcp_nb.connect('books', {BOOKSHOP + ['stdio-stubborn']!r})\nprint(c.pid)"
        reply = client.execute_interactive(code, timeout=120, output_hook=outputs.append)
        assert reply["content"]["status"] == "ok", reply["content"]
        text = "".join(m["content"].get("text", "") for m in outputs if m["msg_type"] == "stream")
        pid = int(text.split()[-1])
        assert alive(pid)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=False)
    assert wait_until(lambda: not alive(pid), 20)


# -- bad input: one line, nothing changed ----------------------------------------------------------


def test_connecting_mistakes_are_one_line_errors_that_leave_connections_untouched(bookshop_url):
    keep = mcp_nb.connect("books", bookshop_url)
    cases = [
        (
            lambda: mcp_nb.connect("books", "definitely-not-a-command --flag"),
            ConnectError,
            "no command 'definitely-not-a-command' on PATH",
        ),
        (lambda: mcp_nb.connect("books", "./not-here.py"), ConnectError, "no program at './not-here.py' that can be run"),
        (
            lambda: mcp_nb.connect("other", f"http://127.0.0.1:{peers.free_port()}/mcp", timeout=5),
            ConnectError,
            "could not connect to 'other'",
        ),
        (
            lambda: mcp_nb.connect("hang", [sys.executable, "-c", "import time; time.sleep(60)"], timeout=1),
            ConnectError,
            "did not answer initialize within 1 s; its process was still running, and it wrote nothing on stderr",
        ),
        (  # a server still starting (or stuck) says so: on a loaded machine, the reason in its own words
            lambda: mcp_nb.connect(
                "slow",
                [sys.executable, "-c", "import sys, time; print('loading the model', file=sys.stderr); time.sleep(60)"],
                timeout=1,
            ),
            ConnectError,
            "within 1 s; its process was still running; its stderr ended with: loading the model",
        ),
        (lambda: mcp_nb.connect("kernel", bookshop_url), ValueError, "the kernel's own server"),
        (lambda: mcp_nb.connect("", bookshop_url), ValueError, "non-empty string"),
        (lambda: mcp_nb.connect("x", ""), ValueError, "the command to start is empty"),
        (lambda: mcp_nb.connect("x", bookshop_url, env={"A": "1"}), ValueError, "not a URL"),
        (lambda: mcp_nb.connect("x", "python", headers={"A": "1"}), ValueError, "not a command"),
        (lambda: mcp_nb.connect("x", bookshop_url, timeout=0), ValueError, "positive number"),
        (lambda: mcp_nb.connect("x", bookshop_url, headers={"A": 1}), ValueError, "headers must map names to text"),
        (lambda: mcp_nb.connect("x", bookshop_url, headers={"A": "1\nB: 2"}), ValueError, "headers must map names to text"),
        (lambda: mcp_nb.call("get_author", server="nope"), ValueError, "no server named 'nope' is connected"),
        (lambda: mcp_nb.disconnect("nope"), ValueError, "no server named 'nope'"),
        (lambda: mcp_nb.disconnect("kernel"), ValueError, "cannot be disconnected"),
    ]
    for action, kind, text in cases:
        with pytest.raises(kind, match=text):
            action()
    assert list(mcp_nb.engine().connections) == ["kernel", "books"] and mcp_nb.engine().connections["books"] is keep
    assert mcp_nb.call("get_author", {"title": "Dune"}, server="books").ok
    assert len(mcp_nb.history()) == 1


def test_a_server_that_never_answers_leaves_no_process():
    before = set(os.listdir("/proc"))
    with pytest.raises(ConnectError, match="did not answer initialize"):
        mcp_nb.connect("hang", [sys.executable, "-c", "import time; time.sleep(60)"], timeout=1)
    started = [p for p in set(os.listdir("/proc")) - before if p.isdigit()]
    assert wait_until(lambda: not any(alive(int(p)) and _is_sleeper(int(p)) for p in started))


def test_a_server_slow_to_start_is_said_as_such_without_its_secrets_and_gets_the_connect_timeout(shell):
    slow = "import os, sys, time; print('loading with', os.environ['MODEL_API_KEY'], file=sys.stderr, flush=True); time.sleep(60)"
    with pytest.raises(ConnectError) as caught:
        mcp_nb.connect("slow", [sys.executable, "-c", slow], env={"MODEL_API_KEY": "sk-live-123456789"}, timeout=1)
    said = str(caught.value)
    assert "did not answer initialize within 1 s; its process was still running; its stderr ended with: loading with" in said
    assert "sk-live-123456789" not in said and "connect_timeout" in said
    # The connect_timeout setting is what a connect without timeout= gets; the request deadline stays.
    mcp_nb.configure(connect_timeout=1.5)
    assert mcp_nb.settings.timeout == 30.0
    with pytest.raises(ConnectError, match="within 1.5 s"):
        mcp_nb.connect("slow", [sys.executable, "-c", "import time; time.sleep(60)"])
    assert shell.run_cell("%config McpMagics.connect_timeout = 2").success and mcp_nb.settings.connect_timeout == 2
    failed = shell.run_cell(f"%mcp_connect slow -- {sys.executable} -c 'import time; time.sleep(60)'")
    assert "within 2 s" in str(failed.error_in_exec)
    # None again: connecting follows the timeout setting, as before there was a setting of its own.
    mcp_nb.configure(connect_timeout=None, timeout=1)
    with pytest.raises(ConnectError, match="within 1 s"):
        mcp_nb.connect("slow", [sys.executable, "-c", "import time; time.sleep(60)"])
    for bad in (0, -1, "soon", float("nan")):
        with pytest.raises(ValueError, match="connect_timeout"):
            mcp_nb.configure(connect_timeout=bad)
    assert mcp_nb.settings.connect_timeout is None and list(mcp_nb.engine().connections) == ["kernel"]


@pytest.mark.parametrize("value, expected", [("90", 90.0), (" 2.5 ", 2.5), ("", None), ("0", None), ("later", None)])
def test_the_connect_timeout_starts_from_its_environment_variable(value, expected):
    code = "import mcp_nb; print(mcp_nb.settings.connect_timeout)"
    env = {**os.environ, "MCP_NB_CONNECT_TIMEOUT": value}
    done = subprocess.run([sys.executable, "-W", "default", "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(expected)
    if expected is None and value:  # a value that is no positive number is said, in one line, and not used
        assert "MCP_NB_CONNECT_TIMEOUT must be a positive number" in done.stderr and done.stderr.count("Warning") == 1


def _is_sleeper(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return b"time.sleep(60)" in cmdline.read()
    except OSError:
        return False


def test_http_error_statuses_are_said_with_their_status_and_body():
    import http.server

    class Refuse(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"error": "invalid_token"}')

        do_GET = do_POST

        def log_message(self, *args):
            pass

    with (
        http_served(Refuse) as url,
        pytest.raises(
            ConnectError,
            match=r"HTTP 401: the server asks for credentials and none were sent .*; the server said: invalid_token$",
        ),
    ):
        mcp_nb.connect("locked", f"{url}/mcp", timeout=10)


def test_a_restarted_http_server_gives_an_http_error_with_status_and_body():
    peers.require(peers.EVERYTHING)
    port = peers.free_port()

    def start():
        preload = peers.PEERS / "loopback.cjs"
        preload.write_text(peers.LOOPBACK_PRELOAD)
        process = subprocess.Popen(
            [
                str(peers.node()),
                "-r",
                str(preload),
                str(peers.package_dir(peers.EVERYTHING) / "dist" / "index.js"),
                "streamableHttp",
            ],
            env=peers.node_env(PORT=str(port)),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        peers.wait_for_port(port, process)
        return process

    process = start()
    try:
        mcp_nb.connect("everything", f"http://127.0.0.1:{port}/mcp")
        assert mcp_nb.call("echo", {"message": "a"}, server="everything").ok
        peers.stop(process)
        process = start()  # a new process: it knows nothing of the old session
        o = mcp_nb.call("echo", {"message": "b"}, server="everything")
        assert (o.outcome, o.cause) == ("protocol_error", "http_error")
        assert o.data["status"] == 400 and "session" in o.data["body"].lower()
        assert o.message.startswith("HTTP 400: ")
    finally:
        peers.stop(process)


def test_a_config_file_of_claude_desktop_connects_unchanged(tmp_path, bookshop_url):
    config = {
        "mcpServers": {
            "books": {"command": BOOKSHOP[0], "args": [BOOKSHOP[1], "stdio"], "env": {"BOOKS": "1"}},
            "books-http": {"url": bookshop_url, "headers": {"X-Team": "data"}},
        }
    }
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(json.dumps(config))
    connected = mcp_nb.connect_config(path)
    assert {n: c.transport for n, c in connected.items()} == {"books": "stdio", "books-http": "http"}
    assert mcp_nb.call("get_author", {"title": "Dune"}, server="books-http").ok
    mcp_nb.reset()
    only = mcp_nb.connect_config(config, names=["books-http"])
    assert list(only) == ["books-http"]


@pytest.mark.parametrize(
    "config, message",
    [
        ({}, "no 'mcpServers' object"),
        ({"mcpServers": []}, "no 'mcpServers' object"),
        ({"mcpServers": {"a": "npx"}}, "server 'a': expected an object"),
        ({"mcpServers": {"a": {}}}, "server 'a': needs 'command'"),
        ({"mcpServers": {"a": {"command": "x", "url": "http://h"}}}, "both 'url' and 'command'"),
        ({"mcpServers": {"a": {"command": ""}}}, "'command' must be a non-empty string"),
        ({"mcpServers": {"a": {"command": "x", "args": "y"}}}, "'args' must be a list"),
        ({"mcpServers": {"a": {"command": "x", "env": {"A": ["1"]}}}}, "'env' must be an object of strings"),
        ({"mcpServers": {"a": {"url": "ftp://h"}}}, "'url' must be an http"),
        ({"mcpServers": {"a": {"url": "http://h", "command2": 1}}}, "unexpected field"),
    ],
)
def test_a_malformed_config_is_refused_naming_the_server_and_the_field(config, message):
    with pytest.raises(ValueError, match=message):
        mcp_nb.connect_config(config)
    assert list(mcp_nb.engine().connections) == ["kernel"]


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"kernel": {"command": "x"}}, "server 'kernel': 'kernel' is the kernel's own server"),
        (
            {" padded ": {"command": "x"}},
            "server ' padded ': a server's name must be a non-empty string without surrounding spaces",
        ),
        (
            {"h": {"url": "http://127.0.0.1:9/mcp", "headers": {"X": "a\nb"}}},
            "server 'h': headers must map names to text on one line",
        ),
        (
            {"h": {"url": "http://127.0.0.1:9/mcp", "headers": {"X Team": "a"}}},
            "server 'h': 'X Team' is not a header an HTTP request can carry",
        ),
        (
            {"h": {"url": "http://127.0.0.1:9/mcp", "headers": {"X": "a\rb"}}},
            "server 'h': 'X' is not a header an HTTP request can carry",
        ),
        ({"e": {"command": "x", "env": {"A=B": "1"}}}, "server 'e': env names are non-empty, without '='"),
        (
            {"e": {"command": "x", "env": {"A": "1\u0000"}}},
            "server 'e': env names are non-empty, without '=' or NUL, and values have no NUL",
        ),
        ({"n": {"command": "x\u0000y"}}, "server 'n': the command holds a NUL character"),
    ],
)
def test_every_entry_is_checked_as_connect_checks_it_before_the_first_is_connected(bad, message):
    # The first entry is a good server: it must not be connected when a later one is refused.
    config = {"mcpServers": {"books": {"command": BOOKSHOP[0], "args": [BOOKSHOP[1], "stdio"]}, **bad}}
    with pytest.raises(ConfigError) as refused:
        mcp_nb.connect_config(config, timeout=20)
    assert str(refused.value).startswith(message) and "\n" not in str(refused.value)
    assert list(mcp_nb.engine().connections) == ["kernel"]


def test_a_disabled_entry_is_left_out_unless_asked_for_by_name():
    entry = {"command": BOOKSHOP[0], "args": [BOOKSHOP[1], "stdio"]}
    config = {"mcpServers": {"books": entry, "off": {**entry, "disabled": True}}}
    assert list(mcp_nb.connect_config(config, timeout=20)) == ["books"]
    assert list(mcp_nb.connect_config(config, names=["off"], timeout=20)) == ["off"]
    assert sorted(mcp_nb.engine().connections) == ["books", "kernel", "off"]


def test_a_config_names_unknown_servers_and_bad_files(tmp_path):
    with pytest.raises(ValueError, match="no server named 'b'"):
        mcp_nb.connect_config({"mcpServers": {"a": {"command": "x"}}}, names=["b"])
    with pytest.raises(ValueError, match="no configuration file"):
        mcp_nb.connect_config(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(ValueError, match="is not valid JSON"):
        mcp_nb.connect_config(bad)


# -- the magics --------------------------------------------------------------------------------------


def test_the_magics_connect_call_list_and_disconnect(shell, bookshop_url):
    run = shell.run_cell
    result = run(f"%mcp_connect books -- {' '.join(BOOKSHOP)} stdio")
    assert result.success and result.result.state == "connected"
    result = run(f"%mcp_connect web {bookshop_url} --header 'X-Team: data' --timeout 20  # the HTTP one")
    assert result.success and result.result.transport == "http" and result.result.headers == {"X-Team": "data"}
    assert run("%mcp_call get_author title=Dune --server books").result.content == "Frank Herbert"
    assert run("%mcp_read books://Dune --server web").result.content == "Dune by Frank Herbert"
    assert run("%mcp_get_prompt review title=Dune --server web").result.ok
    assert set(run("%mcp_list --server web").result["name"]) >= {"get_author"}
    assert list(run("%mcp_servers").result.index) == ["kernel", "books", "web"]
    for line, message in [
        ("%mcp_connect", "the connection's name comes first"),
        ("%mcp_connect x", "missing the server"),
        ("%mcp_connect x --", "nothing after --"),
        (f"%mcp_connect x {bookshop_url} -- python", "not both"),
        (f"%mcp_connect x {bookshop_url} --header nocolon", "--header takes 'Name: value'"),
        ("%mcp_connect x --env A -- python", "--env takes KEY=VALUE"),
        ("%mcp_connect x --flag -- python", "unknown option --flag"),
        ("%mcp_connect x -- definitely-not-a-command", "no command 'definitely-not-a-command' on PATH"),
        ("%mcp_call get_author --server nope", "no server named 'nope'"),
        ("%mcp_disconnect", "takes one server name"),
        ("%mcp_disconnect nope", "no server named 'nope'"),
    ]:
        result = run(line)
        assert type(result.error_in_exec).__name__ == "UsageError", line
        assert message in str(result.error_in_exec) and "\n" not in str(result.error_in_exec), line
    assert run("%mcp_disconnect books").success
    assert list(mcp_nb.servers().index) == ["kernel", "web"]


def test_the_summary_groups_by_server(everything_url):
    @mcp_nb.tool()
    def echo(message: str) -> str:
        return message

    mcp_nb.connect("everything", everything_url)
    mcp_nb.call("echo", {"message": "here"})
    mcp_nb.call("echo", {"message": "there"}, server="everything")
    mcp_nb.call("echo", {}, server="everything")
    summary = mcp_nb.history().summary()
    assert summary.loc[("kernel", "tool", "echo")].tolist() == [1, 0, 0, 0, 1]
    assert summary.loc[("everything", "tool", "echo")].tolist() == [1, 1, 0, 0, 2]
    assert summary.loc[("total", "", "")].tolist() == [2, 1, 0, 0, 3]


def test_log_messages_a_server_sends_are_kept_on_the_connection_and_the_calls_waiting():
    peers.require(peers.EVERYTHING)
    connection = mcp_nb.connect("everything", peers.everything_stdio(), env=peers.node_env())
    assert mcp_nb.call("toggle-simulated-logging", server="everything").ok  # one message every 5 s
    assert wait_until(lambda: any(log.source == "notification" for log in connection.logs), 20)
    o = mcp_nb.call("trigger-long-running-operation", {"duration": 6, "steps": 2}, server="everything", timeout=30)
    assert o.ok and any(log.source == "notification" for log in o.server_logs)
    message = next(log for log in connection.logs if log.source == "notification")
    assert message.level in ("DEBUG", "INFO", "NOTICE", "WARNING", "ERROR", "CRITICAL", "ALERT", "EMERGENCY")


def test_a_timeout_tells_the_server_to_cancel_and_the_handler_is_cancelled_there():
    connection = connect_bookshop("stdio")
    o = mcp_nb.call("slow", {"seconds": 30}, timeout=0.5, server="books")
    assert (o.cause, o.message, o.server_fate) == ("deadline", "Request 'tools/call' timed out", "cancel_requested")
    # The server says so on its stderr: the protocol's cancellation reached the handler.
    assert wait_until(lambda: "slow: cancelled by the client" in [log.message for log in connection.logs])


def test_every_stderr_line_a_server_writes_about_a_call_is_on_that_call():
    # A server writes to stderr before it answers: read by a thread of its own, the lines
    # lost the race to the answer 2 times in 100; drained when the answer is in, never.
    connect_bookshop("stdio")
    for _ in range(40):
        o = mcp_nb.call("chatty", {"n": 5}, server="books")
        assert [log.message for log in o.server_logs if log.source == "stderr"] == [f"chatty line {i}" for i in range(5)]


# -- a URL's secrets ---------------------------------------------------------------------------------


def test_a_urls_password_and_secret_parameters_are_never_shown_or_saved(tmp_path, bookshop_url, caplog, shell, capsys):
    caplog.set_level(logging.DEBUG, logger="mcp_nb")
    secret_url = bookshop_url.replace("http://", "http://ann:hunter2-pw@") + "?api_key=k3y-s3cret&team=data"
    connection = mcp_nb.connect("books", secret_url)
    assert mcp_nb.call("get_author", {"title": "Dune"}, server="books").ok  # the secrets still reach the server
    assert connection.target_text() == bookshop_url.replace("http://", "http://ann:***@") + "?api_key=***&team=data"
    mcp_nb.history().to_cases(tmp_path / "cases.json")
    shell.run_line_magic("mcp_servers", "")
    shown = [
        mcp_nb.servers().to_csv(),
        repr(connection),
        connection._repr_html_(),
        mcp_nb.history().to_frame().to_csv(),
        (tmp_path / "cases.json").read_text(),
        caplog.text,
        capsys.readouterr().out,
    ]
    # and where a connection fails: its error, in Python and in the magic
    closed = f"http://ann:hunter2-pw@127.0.0.1:{peers.free_port()}/mcp?token=k3y-s3cret"
    with pytest.raises(ConnectError) as failed:
        mcp_nb.connect("gone", closed, timeout=5)
    shown.append(str(failed.value))
    with pytest.raises(UsageError) as failed:
        shell.run_line_magic("mcp_connect", f"gone {closed} --timeout 5")
    shown.append(str(failed.value))
    assert "ann:***@127.0.0.1" in shown[-1]
    for text in shown:
        assert "hunter2-pw" not in text and "k3y-s3cret" not in text, text[:300]


def test_a_server_that_answers_a_listing_with_method_not_found_still_connects():
    # Its capabilities promise resources; it lists them but has no templates method. The SDK's
    # own client lists and calls such a server: so does a connection, with no templates listed.
    half = [sys.executable, str(Path(__file__).parent / "servers" / "half_listed.py")]
    connection = mcp_nb.connect("half", half, timeout=20)
    assert connection.state == "connected"
    listed = {(r.kind, r.name): r for r in connection.entries()}
    assert set(listed) == {("tool", "query"), ("resource", "schema")}
    assert listed["tool", "query"].title == "Run a query"  # its title, from the annotations
    assert mcp_nb.call("query", server="half").content == "3 rows"


def test_the_history_views_name_each_calls_server_and_list_calls_in_the_order_they_were_made(bookshop_url, shell):
    @mcp_nb.tool()
    def local() -> str:
        return "here"

    mcp_nb.connect("books", bookshop_url)
    mcp_nb.call("local")
    mcp_nb.call("get_author", {"title": "Dune"}, server="books")
    text = repr(mcp_nb.history())
    header, first, second = text.splitlines()[1:4]
    assert header.split()[:2] == ["server", "call_id"]
    assert first.split()[0] == "kernel" and second.split()[0] == "books"
    page = mcp_nb.history()._repr_html_()
    assert ">server</th>" in page and ">books</td>" in page
    assert "books" in repr(shell.run_line_magic("mcp_history", ""))


def test_calls_that_ended_out_of_order_are_listed_by_id():
    import asyncio

    @mcp_nb.tool()
    async def nap(seconds: float) -> float:
        await asyncio.sleep(seconds)
        return seconds

    mcp_nb.sweep("nap", [{"seconds": 0.3}, {"seconds": 0.0}], concurrency=2, progress=False)
    ended = mcp_nb.history().to_frame()["call_id"].tolist()
    assert ended == sorted(ended, reverse=True)  # recorded as they ended: the second first
    rows = repr(mcp_nb.history()).splitlines()[2:4]
    assert [int(row.split()[0]) for row in rows] == sorted(ended)  # shown as they were made
