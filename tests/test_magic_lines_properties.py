"""The magics' lines, as properties: any line either runs or is ONE one-line UsageError that changes nothing.

Every cell goes through `InteractiveShell.run_cell`, as a notebook sends it. "Changes
nothing" is checked on what a user could see: the registered tools, resources and prompts
(and their injected faults), the history, and the names bound in the user's namespace. The
parsers underneath are tests/test_parsers_properties.py.
"""

from __future__ import annotations

import json
import shlex

import httpx2
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from IPython.core.error import UsageError

import mcp_nb
from mcp_nb.calling.connections import ServerSpec
from mcp_nb.config import check_timeout
from mcp_nb.records.outcome import Outcome

QUICK = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
FEW = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

BIG = "1" * 4400
DEEP = "[" * 100_000 + "]" * 100_000  # deeper than any recursion limit (Hypothesis raises it by 2000)


def one_line_text(text: str) -> bool:
    """A magic's line is one line of a cell: nothing IPython would split it at."""
    return len(f"x{text}x".splitlines()) == 1


def typed(lines):
    """Lines as a magic receives them: one line, and not ending in `?` (IPython's help, not the magic)."""
    return lines.filter(lambda line: one_line_text(line) and not line.rstrip().endswith("?"))


def usage_error(result) -> str:
    err = result.error_in_exec or result.error_before_exec
    assert isinstance(err, UsageError), f"expected a UsageError, got {type(err).__name__}: {err}"
    text = str(err)
    event("refused: " + " ".join(text.split()[:3]))
    assert text.strip() and "\n" not in text and "\r" not in text, f"not one line: {text!r}"
    return text


def state(shell):
    """What a refused line must leave as it was."""
    engine = mcp_nb.engine()
    return (
        json.dumps(mcp_nb.registered().to_dict("records"), default=str, sort_keys=True),
        {name: faults.describe() for name, faults in engine.registry.faults.items()},
        len(mcp_nb.history()),
        sorted(engine.connections),
        {k: id(v) for k, v in shell.user_ns.items() if not k.startswith("_") and k not in ("In", "Out")},
    )


ODD_SCHEMA = {
    "type": "object",
    "properties": {
        "a": True,
        "b": {"$ref": "#"},
        "c": {"anyOf": [{"$ref": "#/properties/c"}, 3]},
        "e": {"enum": 3, "type": ["integer", 5], "$ref": 7},
        "f": {"$ref": "#/properties/f", "type": {"k": 1}},
    },
}


@pytest.fixture
def server(shell):
    shell.user_ns.update(CATALOG={"Dune": "Frank Herbert"}, answers=["yes"], schema_var={"type": "object"})
    cells = [
        (
            "%%mcp_tool --read-only\n"
            "def echo(s: str = '', n: int = 0, x: float = 0.0, flag: bool = False, tags: list[str] = [], d: dict = {},\n"
            "         c: Literal['a', 'b'] | None = None) -> str:\n"
            "    return repr((s, n, x, flag, tags, d, c))\n"
        ),
        "%%mcp_resource books://catalog\ndef catalog() -> str:\n    return 'the catalog'\n",
        "%%mcp_resource books://{title}\ndef book(title: str) -> str:\n    return CATALOG.get(title, '?')\n",
        "%%mcp_prompt\ndef review(q: str, tone: str = 'kind') -> str:\n    return 'review ' + q\n",
        # A declared schema whose properties have every odd shape a server may publish (--quiet: its card has a test of its own below).
        (
            f"%%mcp_tool --quiet --input-schema {shlex.quote(json.dumps(ODD_SCHEMA))}\n"
            "def odd(a=None, b=None, c=None, e=None, f=None) -> str:\n    return repr((a, b, c, e, f))\n"
        ),
    ]
    assert shell.run_cell("from typing import Literal").success
    for cell in cells:
        assert shell.run_cell(cell).success, cell
    return shell


def words(*choices):
    return st.sampled_from([c for c in choices if one_line_text(c)])


# Values anyone may type after key=: quotes, JSON, numbers Python or JSON cannot hold, unicode.
VALUES = words(
    "",
    "x",
    "'two words'",
    '"a \\" b"',
    "'",
    '"',
    "\\",
    "3",
    "-0",
    "2.5",
    "1e999",
    "nan",
    "NaN",
    "Infinity",
    "true",
    "yes",
    "null",
    "None",
    "a",
    "c",
    '{"k": "v w"}',
    "{'k': 1}",
    '{"a": 1, "a": 2}',
    '["a", "b"]',
    "[1,",
    "{name}",
    "$x",
    "é",
    "💥",
    "\x00",
    "#v",
    "a=b",
    BIG,
    DEEP,
    '{"k": ' + BIG + "}",
)
KEYS = words("s", "n", "x", "flag", "tags", "d", "c", "q", "tone", "a", "b", "e", "f", "nosuch", "", "=", "s=")
pairs = st.tuples(KEYS, VALUES).map(lambda kv: f"{kv[0]}={kv[1]}") | VALUES
OPTIONS = {
    "--timeout": ["5", "30", "0", "-1", "nan", "inf", "x", "1e999", "1_0", "''"],
    "--retries": ["0", "2", "-1", "x", "1.5", "99999999999999999999"],
    "--backoff": ["0", "0.01", "nan", "-1", "x"],
    "--server": ["kernel", "nosuch", "''", "'a b'"],
    "--elicit": ["decline", "cancel", "answers", "nosuch", "1a", "x.y", "CATALOG"],
    "--max-timeout": ["60", "1", "nan", "x"],
    "--bogus": ["1"],
}


@st.composite
def option(draw):
    key = draw(st.sampled_from([*OPTIONS, "--reset-on-progress", "--reset-on-progress=1", "--", "-t", "--Timeout"]))
    if key not in OPTIONS:
        return key
    value = draw(st.sampled_from(OPTIONS[key]))
    return draw(st.sampled_from([f"{key} {value}", f"{key}={value}", key]))


tails = st.sampled_from(["", "  # a comment", " #", " # 'unclosed \" quotes", "#nospace"])
JSON_OBJECTS = words(
    '{"s": "v"}', '{"n": "not a number"}', '{"nosuch": 1}', "{}", "[1]", '{"s": ', '{"d": ' + DEEP + "}", "{" + BIG + "}"
)


@st.composite
def call_lines(draw, names):
    parts = [draw(names)]
    if draw(st.integers(0, 4)) == 0:
        parts.append(draw(JSON_OBJECTS))
    parts += draw(st.lists(pairs, max_size=3))
    parts += draw(st.lists(option(), max_size=3))
    return " ".join(parts) + draw(tails)


random_junk = st.text(max_size=12).filter(one_line_text)


def check_call(shell, magic, line):
    before = state(shell)
    result = shell.run_cell(f"%{magic} {line}")
    if result.success:
        assert isinstance(result.result, Outcome)
        assert len(mcp_nb.history()) == before[2] + 1
        assert state(shell)[:2] == before[:2]  # a call registers nothing
    else:
        usage_error(result)
        assert state(shell) == before


@QUICK
@given(typed(call_lines(words("echo", "echo", "odd", "nosuch", "''", "-x", "{}", "[1]", "'a b'", "review")) | random_junk))
@example("odd a=1 b=2 c=3 e=4 f=5")
@example("echo d=" + DEEP)
@example('echo {"d": ' + BIG + "}")
@example("echo s=x --reset-on-progress=1")
def test_any_mcp_call_line_calls_or_is_one_line_usage_error_that_records_nothing(server, line):
    check_call(server, "mcp_call", line)


@FEW
@given(typed(call_lines(words("review", "nosuch", "''", "echo")) | random_junk))
def test_any_mcp_get_prompt_line_gets_or_is_one_line_usage_error_that_records_nothing(server, line):
    check_call(server, "mcp_get_prompt", line)


@FEW
@given(typed(call_lines(words("books://catalog", "books://Dune", "'books://a b'", "nope", "x://{y}", "''")) | random_junk))
def test_any_mcp_read_line_reads_or_is_one_line_usage_error_that_records_nothing(server, line):
    check_call(server, "mcp_read", line)


# -- %%mcp_tool, %%mcp_resource, %%mcp_prompt: the options line ---------------------------------------------

SPECS = words(
    "latency=0.5",
    "'latency=0.1,tool_error=0.1,seed=1'",
    "tool_error=2",
    "latency=1e400",
    "seed=x",
    "'crash=0.6, tool_error=0.6'",
    "speed=1",
    "latency",
    "''",
    "seed=" + BIG,
    "_seen=1",
    "'latency=nan'",
    "latency=3601",
)
# Input schemas whose properties are schemas of the usual shapes (any other shape: the card test below).
property_schemas = st.recursive(
    st.sampled_from(["string", "integer", "number", "boolean", "null"]).map(lambda t: {"type": t})
    | st.just({"$ref": "#/$defs/A"}),
    lambda inner: (
        st.fixed_dictionaries({"type": st.just("array"), "items": inner})
        | st.lists(inner, min_size=1, max_size=2).map(lambda members: {"anyOf": members})
    ),
    max_leaves=3,
)
input_schemas = st.builds(
    lambda props, required, kind: {"type": kind, "properties": props, "required": required},
    st.dictionaries(st.sampled_from(["a", "b", "zz"]), property_schemas, max_size=2),
    st.lists(st.sampled_from(["a", "b"]), max_size=2, unique=True),
    st.sampled_from(["object", "object", "array"]),
).map(lambda schema: shlex.quote(json.dumps(schema)))
SCHEMAS = (
    words("schema_var", "nosuch", "'{'", "'[1]'", '\'{"type": "object"} x\'', '\'{"type": "object", "required": 3}\'')
    | input_schemas
)
TEXTS = words("'a title'", "'{title} $x'", '"it\'s"', "'#not a comment'", "''", "é", "'unclosed", "\\", "x#y")
NAMES = words("good", "good.v2", "'a b'", "''", "-x", "é", "x" * 200, "Good_1", "'#'")


@st.composite
def cell_option(draw):
    key = draw(
        st.sampled_from(
            [
                "--name",
                "--title",
                "--description",
                "--inject",
                "--input-schema",
                "--read-only",
                "--idempotent",
                "--destructive",
                "--open-world",
                "--quiet",
                "--bogus",
                "--mime-type",
                "extra",
                "--name=ok2",
                "#",
                "--",
            ]
        )
    )
    value = {
        "--name": NAMES,
        "--title": TEXTS,
        "--description": TEXTS,
        "--inject": SPECS,
        "--input-schema": SCHEMAS,
        "--mime-type": TEXTS,
    }
    if key not in value:
        return key
    return draw(st.sampled_from([f"{key} {{}}", f"{key}={{}}", key])).format(draw(value[key]))


BODIES = {
    "good": "def good(a: int = 0, b: str = 'x') -> int:\n    return a\n",
    "two": "def good(a: int = 0) -> int:\n    return a\n\ndef other() -> int:\n    return 1\n",
    "syntax": "def good(a: int = 0) -> int\n    return a\n",
    "lambda": "good = lambda a: a\n",
    "class": "class good:\n    pass\n",
    "rebinds": "def good(a: int = 0) -> int:\n    return a\n\ngood = 3\n",
    "async": "async def good(a: int = 0) -> int:\n    return a\n",
    "title": "def good(title: str) -> str:\n    return title\n",
}
URIS = words("books://x", "books://{title}", "'b://{a}/{b}'", "nope", "a://{", "''", "x://{title}{title}", "b://{a b}")


@st.composite
def cells(draw):
    magic = draw(st.sampled_from(["mcp_tool", "mcp_tool", "mcp_resource", "mcp_prompt"]))
    parts = [draw(URIS)] if magic == "mcp_resource" and draw(st.integers(0, 5)) else []
    parts += draw(st.lists(cell_option(), max_size=4))
    line = " ".join(parts) + draw(tails)
    return magic, line, draw(st.sampled_from(sorted(BODIES)))


@QUICK
@given(cells())
@example(("mcp_tool", '--input-schema \'{"type": "object", "properties": {"zz": {}}}\'', "good"))
@example(("mcp_tool", "--inject 'latency=0.1,seed=1' --name good.v2", "good"))
def test_any_cell_magic_line_registers_or_is_one_line_usage_error_that_changes_nothing(server, cell):
    magic, line, body = cell
    shell = server
    shell.user_ns["good"] = sentinel = object()
    before = state(shell)
    result = shell.run_cell(f"%%{magic} {line}\n{BODIES[body]}")
    if not result.success:
        usage_error(result)
        assert state(shell) == before
        assert shell.user_ns["good"] is sentinel
        return
    registration = result.result
    if registration is not None:  # --quiet: registered without a card
        assert registration.kind == magic.removeprefix("mcp_")
        assert registration.name in mcp_nb.registered()["name"].tolist()
        repr(registration)
        registration._repr_html_()


junk_property_schemas = st.one_of(
    st.booleans(),
    st.builds(dict, type=st.integers() | st.lists(st.integers(), min_size=1, max_size=2)),
    st.builds(dict, anyOf=st.integers() | st.lists(st.booleans(), min_size=1, max_size=2)),
    st.builds(dict, enum=st.integers()),
    st.builds(lambda ref: {"$ref": ref}, st.integers() | st.none()),
)


@FEW
@given(junk_property_schemas)
@example(True)
def test_a_tool_with_any_declared_input_schema_shows_its_card(server, prop):
    schema = shlex.quote(json.dumps({"type": "object", "properties": {"a": prop}}))
    result = server.run_cell(f"%%mcp_tool --input-schema {schema}\n{BODIES['good']}")
    if result.success:
        repr(result.result)
        result.result._repr_html_()
    else:
        usage_error(result)


@pytest.mark.parametrize("value", ["[" * 1200 + "]" * 1200, DEEP, BIG], ids=["deep-1200", "deep-100000", "big-int"])
def test_an_input_schema_json_cannot_read_is_a_one_line_usage_error(server, value):
    schema = '{"type": "object", "properties": {"a": ' + value + "}}"
    before = state(server)
    with pytest.raises(UsageError):
        server.run_cell_magic("mcp_tool", f"--input-schema '{schema}'", BODIES["good"])
    assert state(server) == before


# -- %mcp_connect ------------------------------------------------------------------------------------

CONNECT = {
    "--header": ["'X-A: 1'", "X-A", "': v'", "'A:'", "'Authorization: Bearer x y'"],
    "--env": ["K=V", "=V", "K", "'K=a b'", "K=", "'K=a -- b'"],
    "--cwd": ["/tmp", "''", "'a b'"],
    "--timeout": ["5", "0", "nan", "x", "1e999", "-2"],
    "--mode": ["auto", "2025-11-25", "2026-07-28", "legacy", "''", "2024-11-05"],
    "--auth": ["oauth", "nowhere", "'a b'", "1x", "not_auth"],
    "--sampling": ["replies", "nowhere", "'a b'", "not_auth"],
    "--root": ["/tmp", "file:///data", "''", "'a b'"],
}


class BearerAuth(httpx2.Auth):
    """What `--auth` names: an httpx2 Auth, as the SDK's providers are."""

    def auth_flow(self, request):
        request.headers["Authorization"] = "Bearer t"
        yield request


@st.composite
def connect_lines(draw):
    parts = [draw(words("srv", "-x", "''", "'a b'", "--header", "é"))]
    for _ in range(draw(st.integers(0, 4))):
        key = draw(st.sampled_from([*CONNECT, "URL", "--bogus", "-v", "--header=X-B:2", "--env=A=1", "--"]))
        if key == "URL":
            parts.append(draw(words("http://h/mcp", "https://x", "ftp://h", "nourl", "'http://a b'")))
        elif key in CONNECT:
            value = draw(st.sampled_from(CONNECT[key]))
            parts.append(draw(st.sampled_from([f"{key} {value}", f"{key}={value}", key])))
        else:
            parts.append(key)
    if draw(st.booleans()):
        parts.append("--")
        parts += draw(st.lists(words("python", "-m", "srv", "'a b'", "--flag", "--", "'unclosed", "#c", "x=1"), max_size=3))
    return " ".join(parts) + draw(tails)


@QUICK
@given(typed(connect_lines() | random_junk))
@example("srv -- ")
@example("srv --env 'K=a -- b' -- python srv.py")
@example("srv --")
def test_any_mcp_connect_line_connects_or_is_one_line_usage_error(server, monkeypatch, line):
    made = []

    def connect(name, target, timeout=None, **options):
        """The engine's checks before it opens anything; then, instead of connecting, a note."""
        if timeout is not None:
            check_timeout(timeout, "the connect timeout")
        ServerSpec.of(name, target, **options)
        made.append((name, target, dict(options, **({} if timeout is None else {"timeout": timeout}))))

    monkeypatch.setattr(mcp_nb.api, "connect", connect)
    server.user_ns["oauth"] = BearerAuth()
    server.user_ns["not_auth"] = "Bearer abc"
    server.user_ns["replies"] = ["hello"]
    before = state(server)
    result = server.run_cell(f"%mcp_connect {line}")
    assert state(server) == before  # the stand-in connects nothing
    if not result.success:
        usage_error(result)
        assert made == []
        return
    ((name, target, options),) = made
    assert isinstance(name, str) and not name.startswith("-")
    assert (isinstance(target, str) and target) or (
        isinstance(target, list) and target and all(isinstance(w, str) for w in target)
    )
    assert set(options) <= {"headers", "env", "cwd", "timeout", "mode", "auth", "sampling", "roots"}
    assert options.get("sampling", server.user_ns["replies"]) is server.user_ns["replies"]
    assert all(isinstance(root, str) and root.strip() for root in options.get("roots", ["x"]))
    assert options.get("auth", server.user_ns["oauth"]) is server.user_ns["oauth"]
    assert options.get("mode", "auto") in ("auto", "2025-11-25", "2026-07-28")
    assert all(isinstance(k, str) and k and isinstance(v, str) for k, v in options.get("headers", {}).items())
    assert all(isinstance(k, str) and k and isinstance(v, str) for k, v in options.get("env", {}).items())
    assert isinstance(options.get("timeout", 1.0), float)


# -- the other line magics ------------------------------------------------------------------------------

OTHER = {
    "mcp_list": ["--server kernel", "--server nosuch", "--server", "x"],
    "mcp_remove": ["nosuch", "books://nope", "--kind tool", "--kind nope", "--kind"],
    "mcp_disconnect": ["nosuch", "kernel", "a b"],
    "mcp_servers": ["x", "--all"],
    "mcp_history": ["--summary", "--last 2", "x"],
    "mcp_replay": ["nosuch.json", "--server nosuch", "--concurrency 0", "--concurrency x", "sub"],
    "mcp_save_cases": ["--last 0", "--last x", "--name 'get_*'", "--server", "sub/x/y.json"],
}


@st.composite
def other_lines(draw):
    magic = draw(st.sampled_from(sorted(OTHER)))
    parts = draw(st.lists(st.sampled_from(OTHER[magic]) | words("'", '"', "\\", "--", "-", "é", "''", "#"), max_size=3))
    return magic, " ".join(parts) + draw(typed(tails | random_junk))


@QUICK
@given(other_lines())
@example(("mcp_save_cases", "'\x00'"))
@example(("mcp_save_cases", "sub"))
@example(("mcp_replay", "'\x00'"))
@example(("mcp_replay", "sub"))
def test_any_other_magic_line_runs_or_is_one_line_usage_error_that_changes_nothing(server, tmp_path, monkeypatch, magic_line):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir(exist_ok=True)
    magic, line = magic_line
    before = state(server)
    result = server.run_cell(f"%{magic} {line}")
    if not result.success:
        usage_error(result)
        assert state(server) == before
