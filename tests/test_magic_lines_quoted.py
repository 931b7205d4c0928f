"""A quoted value on a magic's line reaches mcp_nb as typed, whatever it holds: ` -- `, `#`, an
option's name, JSON. Lines are read by the shell's quoting rules first and by the magic's argparse
parser after, so nothing is cut before the quotes are read (issue 40: `%mcp_connect` split its line
at the first ` -- ` of the raw text, and `--header 'X-Note: a -- b'` was refused as an unclosed quote).

The round trips quote with `shlex.quote` and go through `InteractiveShell.run_line_magic` (any
text, newlines included) or `run_cell` (one line, as typed in a notebook). What a connect line
makes is the real `RemoteConnection` the engine checks, held back from opening (the one step that
reaches a server); the two lines of the issue connect to real servers.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from IPython.core.error import UsageError

import mcp_nb
from mcp_nb.calling.engine import Engine

QUICK = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
STARTED_WITH = Path(__file__).parent / "servers" / "started_with.py"

# Text a value may hold, the words the old reading cut or took for options first among it.
TRICKY = st.sampled_from(
    ["--", " -- ", "--timeout", "--header", "-x", "#", " # ", "'", '"', "\\", "{", "}", '{"a": 1}', "=", ":"]
)
any_text = st.lists(TRICKY | st.text(max_size=4), max_size=5).map("".join)
one_line_text = any_text.filter(lambda t: len(f"x{t}x".splitlines()) == 1)


def option(name: str, value: str, joined: bool) -> str:
    """`--name VALUE`, quoted; a value that starts with - goes after `=`, as argparse wants it."""
    return f"{name}={shlex.quote(value)}" if joined or value.startswith("-") else f"{name} {shlex.quote(value)}"


# -- %mcp_connect: the two lines of the issue, against real servers ---------------------------------


def test_an_env_value_and_command_arguments_holding_dashes_reach_a_real_stdio_server(shell, tmp_path):
    line = (
        f"started --env 'GREETING=hi -- there' --cwd {shlex.quote(str(tmp_path))} -- {shlex.quote(sys.executable)} "
        f"{shlex.quote(str(STARTED_WITH))} 'a -- b' '#not a comment' --timeout -- x   # a comment -- here"
    )
    connection = shell.run_line_magic("mcp_connect", line)
    try:
        assert connection.state == "connected"
        outcome = shell.run_line_magic("mcp_call", "started_with --server started")
        assert outcome.outcome == "result", outcome.message
        said = outcome.structured_content
        assert said == {
            "argv": ["a -- b", "#not a comment", "--timeout", "--", "x"],
            "greeting": "hi -- there",
            "cwd": str(tmp_path),
        }
    finally:
        mcp_nb.disconnect("started")


def test_a_header_holding_dashes_and_a_hash_reaches_a_real_http_server(shell):
    assert shell.run_cell(
        "%%mcp_tool\n"
        "from mcp.server.mcpserver import Context\n"
        "def note(ctx: Context) -> str:\n"
        "    return ctx.request_context.request.headers.get('x-note', 'no header')\n"
    ).success
    served = mcp_nb.serve()
    try:
        token = shlex.quote(f"Authorization: Bearer {served.token}")
        connection = shell.run_line_magic("mcp_connect", f"served {served.url} --header {token} --header 'X-Note: a -- b # c'")
        assert connection.state == "connected"
        outcome = shell.run_line_magic("mcp_call", "note --server served")
        assert (outcome.outcome, outcome.content) == ("result", "a -- b # c")
    finally:
        mcp_nb.reset()


# -- %mcp_connect: any value, round trip ---------------------------------------------------------------


@pytest.fixture
def held_back(monkeypatch):
    """The connections the engine checked, kept instead of opened."""
    made = []

    def keep(self, connection, seconds):
        made.append(connection)
        return connection

    monkeypatch.setattr(Engine, "open", keep)
    return made


header_names = st.from_regex(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,12}", fullmatch=True)
# What an HTTP header can carry (printable ASCII); a value's outer spaces are not part of it.
header_values = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=20).map(str.strip) | TRICKY.map(str.strip)
env_names = st.text(st.characters(blacklist_characters="=\x00", blacklist_categories=("Cs",)), min_size=1, max_size=8)
no_nul = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=12) | any_text.map(
    lambda t: t.replace("\x00", "")
)
command_words = st.lists(no_nul, max_size=4)


@QUICK
@given(st.dictionaries(header_names, header_values, max_size=3), st.booleans(), any_text, st.booleans())
@example({"X-Note": "a -- b"}, False, "", False)
@example({"X-Note": "--timeout 5 # c"}, False, "# c", True)
def test_any_header_value_reaches_the_connection_unchanged(shell, held_back, headers, joined, path, comment):
    url = "http://127.0.0.1:9/" + path.replace("\x00", "")
    words = [option("--header", f"{name}: {value}", joined) for name, value in headers.items()]
    line = f"remote {shlex.quote(url)} {' '.join(words)}" + ("  # a comment -- with dashes" if comment else "")
    connection = shell.run_line_magic("mcp_connect", line)
    assert (connection.url, connection.headers) == (url, headers)


@QUICK
@given(st.dictionaries(env_names, no_nul, max_size=3), st.booleans(), no_nul.filter(str.strip), command_words, st.booleans())
@example({"GREETING": "hi -- there"}, False, "python", ["server.py"], False)
@example({"K": "--cwd"}, False, "--", ["-- #", "#"], True)
def test_any_env_value_and_command_argument_reach_the_connection_unchanged(
    shell, held_back, env, joined, program, arguments, comment
):
    words = [option("--env", f"{name}={value}", joined) for name, value in env.items()]
    line = f"local {' '.join(words)} -- {shlex.join([program, *arguments])}" + ("  # a comment" if comment else "")
    connection = shell.run_line_magic("mcp_connect", line)
    assert (connection.command, connection.env) == ([program, *arguments], env)


@QUICK
@given(
    no_nul, st.lists(no_nul.filter(lambda root: root.strip() and not root.startswith("~")), min_size=1, max_size=3), st.booleans()
)
def test_any_folder_and_root_reach_the_connection_unchanged(shell, held_back, cwd, roots, joined):
    words = [option("--cwd", cwd, joined), *(option("--root", root, joined) for root in roots)]
    connection = shell.run_line_magic("mcp_connect", f"local {' '.join(words)} --timeout 5 -- server")
    assert (connection.cwd, connection.spec.roots) == (cwd, roots)


@QUICK
@given(st.dictionaries(header_names, header_values, max_size=2), st.dictionaries(env_names, no_nul, max_size=2))
def test_a_typed_connect_line_reads_as_typed_in_a_cell(shell, held_back, headers, env):
    """The same through `run_cell`, as a notebook sends a line."""
    assume(all(len(f"x{v}x".splitlines()) == 1 for v in env.values()) and all(len(f"x{k}x".splitlines()) == 1 for k in env))
    words = [option("--header", f"{name}: {value}", False) for name, value in headers.items()]
    result = shell.run_cell(f"%mcp_connect remote http://127.0.0.1:9/mcp {' '.join(words)}  # -- a note")
    assert result.success, result.error_in_exec
    assert held_back[-1].headers == headers
    words = [option("--env", f"{name}={value}", False) for name, value in env.items()]
    result = shell.run_cell(f"%mcp_connect local {' '.join(words)} -- python -c 'print(1) # -- x'  # -- a note")
    assert result.success, result.error_in_exec
    assert (held_back[-1].env, held_back[-1].command) == (env, ["python", "-c", "print(1) # -- x"])


def test_json_typed_into_a_connect_line_is_kept_as_typed(shell, held_back):
    connection = shell.run_line_magic("mcp_connect", 'local --env CONFIG={"a": [1, 2], "b": "x # y"} -- node x.js {"k": "v w"}')
    assert connection.env == {"CONFIG": '{"a": [1, 2], "b": "x # y"}'}
    assert connection.command == ["node", "x.js", '{"k": "v w"}']


@pytest.mark.parametrize(
    "line, said",
    [
        ("srv", "missing the server"),
        ("srv --", "nothing after --"),
        ("srv http://127.0.0.1:9/mcp -- python x.py", "give a URL or a command after --, not both"),
        ("srv python server.py", "unexpected 'server.py': a command and its arguments go after --"),
        ("srv --header -- python x.py", "argument --header: expected one argument"),
        ("srv --header '-X' http://127.0.0.1:9/mcp", "a value that starts with - is written --header=VALUE"),
        ("srv --header=X http://127.0.0.1:9/mcp", "--header takes 'Name: value', got 'X'"),
        ("srv --env=K -- python x.py", "--env takes KEY=VALUE, got 'K'"),
        (
            "srv --bogus -- python x.py",
            "unknown option --bogus; known: --header, --auth, --mode, --sampling, --root, --env, --cwd, --timeout",
        ),
        ("--header X:1", "the connection's name comes first"),
        ("", "the connection's name comes first"),
    ],
)
def test_a_connect_line_that_says_no_server_is_one_line_and_connects_nothing(shell, held_back, line, said):
    with pytest.raises(UsageError, match=re.escape(said)) as refused:
        shell.run_line_magic("mcp_connect", line)
    assert "\n" not in str(refused.value)
    assert held_back == [] and list(mcp_nb.engine().connections) == ["kernel"]


# -- the calling magics: any value, any option's value ---------------------------------------------------


@pytest.fixture
def echo(shell):
    assert shell.run_cell("%%mcp_tool\ndef echo(s: str = '', t: str = '') -> str:\n    return s + '|' + t\n").success
    assert shell.run_cell("%%mcp_prompt\ndef review(q: str = '') -> str:\n    return q\n").success


@QUICK
@given(any_text, any_text, st.booleans())
@example("--timeout 5", "a -- b # c", False)
@example("-x", "--", True)
def test_any_quoted_argument_reaches_the_tool_unchanged(shell, echo, s, t, after_dashes):
    typed = f"{shlex.quote('s=' + s)} {'-- ' if after_dashes else ''}{shlex.quote('t=' + t)}"
    outcome = shell.run_line_magic("mcp_call", f"echo {typed} --timeout 30" if not after_dashes else f"echo --timeout 30 {typed}")
    assert outcome.arguments == {"s": s, "t": t}
    assert (outcome.outcome, outcome.content) == ("result", f"{s}|{t}")


@QUICK
@given(st.dictionaries(st.sampled_from(["s", "t"]), any_text, max_size=2))
@example({"s": "--timeout 5 -- # x"})
def test_a_json_object_typed_as_is_reaches_the_tool_unchanged(shell, echo, arguments):
    outcome = shell.run_line_magic("mcp_call", f"echo {json.dumps(arguments)}  # -- a comment")
    assert outcome.arguments == arguments and outcome.outcome == "result"
    outcome = shell.run_line_magic("mcp_get_prompt", f"review {json.dumps({'q': arguments.get('s', '')})} --timeout 30")
    assert outcome.arguments == {"q": arguments.get("s", "")} and outcome.outcome == "result"


@pytest.mark.parametrize(
    "line, said",
    [
        ("echo s=x --server='no such'", "no server named 'no such' is connected"),  # once sent as an argument named --server
        ("echo s=x --timeout=", "--timeout takes seconds, got ''"),  # once sent as an argument named --timeout
        ("echo s=x --elicit=", "--elicit : give decline, cancel"),
        ("echo s=x --retries=", "--retries takes a whole number, got ''"),
        ("echo s=x --server -x", "a value that starts with - is written --server=VALUE"),
    ],
)
def test_an_options_value_in_any_form_is_the_options(shell, echo, line, said):
    with pytest.raises(UsageError, match=said):
        shell.run_line_magic("mcp_call", line)
    assert len(mcp_nb.history()) == 0


def test_options_may_come_before_the_name_as_completion_offers_them(shell, echo):
    outcome = shell.run_line_magic("mcp_call", "--server kernel --timeout 30 echo s=a")
    assert (outcome.arguments, outcome.content) == ({"s": "a"}, "a|")
    outcome = shell.run_line_magic("mcp_read", "--timeout 30 echo")  # no such resource: an outcome, not a line error
    assert outcome.name == "echo"


# -- the other magics: titles, descriptions, paths ---------------------------------------------------------


@QUICK
@given(one_line_text, one_line_text, st.booleans())
@example("--name", "a -- b # c", True)
@example("Issue #5 -- draft", '{"k": "v"}', False)
def test_any_title_and_description_reach_the_registration_unchanged(shell, title, description, joined):
    line = f"{option('--title', title, joined)} {option('--description', description, joined)} --read-only"
    result = shell.run_cell(f"%%mcp_tool {line}  # -- a comment\ndef titled() -> str:\n    return ''\n")
    assert result.success, result.error_in_exec
    assert (result.result.title, result.result.description) == (title, description)


@pytest.mark.parametrize("joined", [False, True])
def test_an_input_schema_typed_as_json_is_that_schema(shell, joined):
    schema = {"type": "object", "properties": {"q": {"type": "string", "description": "a -- b # c"}}, "required": ["q"]}
    gap = "=" if joined else " "
    result = shell.run_cell(
        f"%%mcp_tool --input-schema{gap}{json.dumps(schema)} --read-only\ndef ask(q=None) -> str:\n    return q\n"
    )
    assert result.success, result.error_in_exec
    assert result.result.input_schema == schema
    assert mcp_nb.call("ask", {"q": "x"}).content == "x"


file_names = st.text(st.characters(blacklist_characters="/\x00", blacklist_categories=("Cs",)), min_size=1, max_size=10).filter(
    lambda name: name not in (".", "..") and len(f"x{name}x".splitlines()) == 1
) | TRICKY.filter(lambda name: name.strip() not in ("", "--") and "/" not in name)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(file_names)
@example("a -- b # c.json")
@example("--timeout")
def test_any_file_name_reaches_the_file_system_unchanged(shell, echo, tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    quoted = ("-- " if name.startswith("-") else "") + shlex.quote(name)
    for path in tmp_path.iterdir():
        path.unlink()
    assert shell.run_line_magic("mcp_snapshot", quoted) is None
    assert [p.name for p in tmp_path.iterdir()] == [name]
    assert shell.run_line_magic("mcp_diff", quoted).frame.empty  # the same surface: no change
    (tmp_path / name).unlink()
    shell.run_line_magic("mcp_call", "echo s=x")
    shell.run_line_magic("mcp_save_cases", f"--last 1 {quoted}")
    assert [p.name for p in tmp_path.iterdir()] == [name]
    assert len(shell.run_line_magic("mcp_replay", quoted).frame) == 1
