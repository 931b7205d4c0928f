"""`%mcp_call` lines: JSON sent verbatim, key=value coerced with the input schema."""

import pytest
from IPython.core.error import UsageError

import mcp_nb
from mcp_nb.notebook.arguments import coerce, parse_pairs, read_call_line
from mcp_nb.notebook.lines import LineError
from mcp_nb.notebook.magics import McpMagics

CALL = McpMagics.mcp_call.parser

SCHEMA = {
    "type": "object",
    "properties": {
        "n": {"type": "integer"},
        "x": {"type": "number"},
        "flag": {"type": "boolean"},
        "s": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "opt": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "color": {"enum": ["red", "green"]},
        "book": {"$ref": "#/$defs/Book"},
    },
    "$defs": {"Book": {"type": "object", "properties": {"title": {"type": "string"}}}},
}


def test_coercion_by_schema():
    args = parse_pairs(
        ["n=3", "x=2.5", "flag=yes", "s=42", 'tags=["a","b"]', "opt=null", "color=red", 'book={"title":"Dune"}'],
        SCHEMA,
        "tool 't'",
    )
    assert args == {
        "n": 3,
        "x": 2.5,
        "flag": True,
        "s": "42",
        "tags": ["a", "b"],
        "opt": None,
        "color": "red",
        "book": {"title": "Dune"},
    }
    assert type(args["n"]) is int and type(args["s"]) is str


def test_values_that_do_not_coerce_are_sent_as_text():
    assert coerce("abc", {"type": "integer"}) == "abc"
    assert coerce("1.5", {"type": "integer"}) == "1.5"
    assert coerce("7", {"anyOf": [{"type": "integer"}, {"type": "null"}]}) == 7


def test_line_splitting():
    name, payload, options = read_call_line(CALL, 't {"n": "3", "s": 1} --timeout 2')
    assert (name, payload, options.timeout) == ("t", {"n": "3", "s": 1}, "2")
    name, payload, options = read_call_line(CALL, "t n=3 's=two words' --timeout=0.5")
    assert (name, payload, options.timeout) == ("t", ["n=3", "s=two words"], "0.5")
    # options before the name or among the arguments; after `--`, words are arguments whatever they look like
    name, payload, options = read_call_line(CALL, "--server kernel t n=3 --timeout 1 m=4 -- --timeout=9 -x=1")
    assert (name, payload, options.server, options.timeout) == ("t", ["n=3", "m=4", "--timeout=9", "-x=1"], "kernel", "1")


@pytest.mark.parametrize(
    "line, message",
    [
        ("", "the following arguments are required: NAME"),
        ("t {bad json}", "invalid JSON arguments"),
        ("t [1, 2]", "must be an object"),
        (
            "t --wat 3",
            r"unrecognized arguments: --wat 3 \(unknown option --wat; known: --timeout, --retries, --backoff, --server, --reset-on-progress, --max-timeout, --elicit\)",
        ),
        ("t --timeout", "argument --timeout: expected one argument"),
        ('t {"a": 1} b=2', "unexpected 'b=2' after the JSON object"),
    ],
)
def test_bad_lines(line, message):
    with pytest.raises((LineError, UsageError), match=message):
        read_call_line(CALL, line)


def test_magic_coerces_and_sends_json_verbatim(shell):
    @mcp_nb.tool()
    def repeat(s: str, n: int, upper: bool = False) -> str:
        return (s.upper() if upper else s) * n

    o = shell.run_line_magic("mcp_call", "repeat s=ab n=2 upper=true")
    assert (o.arguments, o.content) == ({"s": "ab", "n": 2, "upper": True}, "ABAB")
    o = shell.run_line_magic("mcp_call", 'repeat {"s": "ab", "n": "x"}')
    assert o.arguments == {"s": "ab", "n": "x"} and o.cause == "invalid_arguments"
    o = shell.run_line_magic("mcp_call", "repeat s=ab n=x")  # no integer reading: sent as text, the schema answers
    assert o.arguments == {"s": "ab", "n": "x"} and o.cause == "invalid_arguments"
    # braces and dollars are not expanded as IPython variables
    o = shell.run_line_magic("mcp_call", 'repeat {"s": "$x{y}", "n": 1}')
    assert o.content == "$x{y}"


@pytest.mark.parametrize(
    "line, message",
    [
        ("repeat s=ab bogus=1", "tool 'repeat' has no argument 'bogus' (it takes: s, n)"),
        ("repeat s", "expected key=value, got 's'"),
        ("repeat s=a s=b", "argument 's' is given twice"),
        ("repeat s=a --timeout 0", "timeout must be a positive number of seconds, got 0.0"),
        ("repeat s=a --timeout soon", "--timeout takes seconds, got 'soon'"),
        ("repeat s=a --wat 1", "unknown option --wat"),
        ("repeat s=a --timeout=", "--timeout takes seconds, got ''"),
        ("repeat s=a --server='no such'", "no server named 'no such' is connected"),
    ],
)
def test_bad_magic_lines_are_usage_errors_and_record_nothing(shell, line, message):
    @mcp_nb.tool()
    def repeat(s: str, n: int = 1) -> str:
        return s * n

    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        shell.run_line_magic("mcp_call", line)
    assert len(mcp_nb.history()) == 0


def test_read_takes_no_arguments(shell):
    with pytest.raises(UsageError, match="unrecognized arguments: a=1"):
        shell.run_line_magic("mcp_read", "books://x a=1")
    with pytest.raises(UsageError, match=r"unrecognized arguments: a=1 \(%mcp_read takes no arguments\)"):
        shell.run_line_magic("mcp_read", "books://x -- a=1")
