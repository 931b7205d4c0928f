"""Every parser of user text, as properties: any input either parses or is refused in ONE clear line.

"Refused" means an exception of the parser's own kind (LineError/ArgumentsError, the UsageError
of a magic's argparse parser, CasesError,
ConfigError, the ValueError/TypeError a fault spec or a grid raises, the form's Invalid) whose
message is one printable line; never another traceback (KeyError, AttributeError,
RecursionError, OverflowError...). Where a parser reads something back (a quoted word, a JSON
value, a typed argument, a cases file), what it reads is what was written.

The magics' side of the same rules (a refused line is one UsageError and changes nothing) is
tests/test_magic_lines_properties.py.
"""

from __future__ import annotations

import json
import math
import shlex
from fractions import Fraction

import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from IPython.core.error import UsageError

import mcp_nb
from mcp_nb.batch.sweeps import argument_sets
from mcp_nb.calling.mcpservers import ConfigError, read_config
from mcp_nb.notebook.arguments import ArgumentsError, coerce, parse_pairs, read_call_line
from mcp_nb.notebook.lines import LineError, split
from mcp_nb.notebook.magics import McpMagics
from mcp_nb.records.cases import Case, CasesError, dump, load, save
from mcp_nb.registering.faults import FIELDS, Faults
from mcp_nb.widgets.form import Form, Invalid

# A regular expression in a case file such as "[[a]]" makes `re` warn (a future meaning of nested sets): not the parser's concern.
pytestmark = pytest.mark.filterwarnings("ignore:Possible nested set:FutureWarning")

QUICK = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
FEW = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def one_line(err: BaseException) -> str:
    """The refusal's message, checked to be one line a person can read."""
    text = str(err)
    assert text.strip(), f"{type(err).__name__} with no message"
    assert "\n" not in text and "\r" not in text, f"not one line: {text!r}"
    return text


def nest(depth: int, open_: str = "[", close: str = "]", inner: str = "") -> str:
    return open_ * depth + inner + close * depth


# -- the pieces user text is made of ----------------------------------------------------------------

BIG = "1" * 4400  # JSON, but more digits than Python reads by default (4300)
# Deeper than the JSON decoder's recursion limit, whatever it is: Hypothesis raises it by 2000 while a test runs.
DEEP = nest(100_000)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
json_containers = st.lists(json_values, max_size=3) | st.dictionaries(st.text(max_size=4), json_values, max_size=3)

ATOMS = [
    "a",
    "echo",
    "k=",
    "k=v",
    "n=3",
    "=",
    "==v",
    "a=b=c",
    "'",
    '"',
    "\\",
    "\\ ",
    "#",
    "# c",
    "a#b",
    "{",
    "}",
    "[",
    "]",
    '{"a": 1}',
    '{"a": "b c"}',
    '{"a": 1, "a": 2}',
    "[1, 2]",
    "[]",
    "{}",
    "'a b'",
    '"a \\" b"',
    "'#'",
    '"#"',
    "--timeout",
    "--timeout=5",
    "--retries",
    "--retries=2",
    "--reset-on-progress",
    "--max-timeout",
    "--elicit",
    "--server",
    "--bogus",
    "-x",
    "--",
    "--=",
    "é",
    "ß",
    "日本",
    "💥",
    "\u2028",
    "\x85",
    "\x00",
    "nan",
    "NaN",
    "Infinity",
    "-Infinity",
    "1e999",
    "-0",
    "1_000",
    "0x10",
    "null",
    "None",
    "true",
    "yes",
    '""',
    "''",
    "k=" + BIG,
    '{"a": ' + BIG + "}",
    "k=" + DEEP,
    DEEP,
    nest(30),
    "k=" + nest(30),
    '{"a": ' + DEEP + "}",
    "k=[1,",
    "k={'a': 1}",
    'k={"a": "x y"}',
    "k=\"{'a'}\"",
    "$x",
    "{title}",
]
gaps = st.sampled_from(["", " ", "  ", "\t"])
atom = st.sampled_from(ATOMS) | st.text(max_size=4) | json_values.map(json.dumps)


@st.composite
def lines(draw, most: int = 7) -> str:
    parts = draw(st.lists(st.tuples(atom, gaps), max_size=most))
    return "".join(text + gap for text, gap in parts)


names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.-]{0,10}", fullmatch=True)


# -- magic lines: lines.split ------------------------------------------------------------------------


@QUICK
@given(lines(), st.booleans())
@example("x " + '{"a": ' + BIG + "}", True)
@example("x " + DEEP, True)
def test_any_line_splits_into_words_or_is_one_line_error(line, keep_json):
    try:
        words = split(line, keep_json=keep_json)
    except LineError as err:
        one_line(err)
        return
    assert isinstance(words, list) and all(isinstance(w, str) for w in words)


@QUICK
@given(st.lists(st.text(max_size=6), max_size=6), st.booleans())
def test_quoted_words_split_back_to_the_same_words(words, keep_json):
    line = " ".join(shlex.quote(w) for w in words)
    assert split(line, keep_json=keep_json) == words


@QUICK
@given(lines(), st.text(max_size=12), st.booleans())
def test_a_trailing_comment_is_dropped_whatever_it_says(line, comment, keep_json):
    try:
        words = split(line, keep_json=keep_json)
    except LineError:
        return
    assert split(f"{line} #{comment}", keep_json=keep_json) == words


@QUICK
@given(names, json_containers, st.booleans(), st.text(max_size=8))
def test_json_after_key_equals_is_kept_exactly_as_typed(key, value, ascii_only, comment):
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert split(f"tool {key}={text} # {comment}", keep_json=True) == ["tool", f"{key}={text}"]
    name, payload, options = read_call_line(CALL, f"tool {key}={text}")
    assert (name, options.timeout, options.server) == ("tool", None, None)
    assert parse_pairs(payload, None, "tool 'tool'") == {key: value}


@QUICK
@given(lines(), st.text(max_size=12))
@example('--input-schema {"type": "object", "description": "a # b"}', "c")
@example("--title {name} [draft] {", "c")
def test_options_lines_keep_json_as_typed_and_read_the_rest_by_the_shells_rules(line, comment):
    """The other magics' lines (`loose`): a word that is JSON is kept as typed, any other word is
    read as a shell reads it, and only quoting can make a line unsplittable."""
    try:
        words = split(line, keep_json=True, loose=True)
    except LineError as err:
        assert "quotation" in one_line(err) or "escaped" in str(err)
        return
    try:
        shell_words = split(line)
    except LineError:
        return  # a quote inside a JSON string, which the shell's rules would read as an open quote
    if not any(c in line for c in "{["):
        assert words == shell_words
    assert split(f"{line} #{comment}", keep_json=True, loose=True) == words


@QUICK
@given(json_containers, st.booleans(), st.sampled_from(["--input-schema", "--title"]), st.booleans())
def test_a_json_value_of_an_option_is_kept_as_typed(value, ascii_only, option, joined):
    text = json.dumps(value, ensure_ascii=ascii_only)
    if joined:
        assert split(f"{option}={text} --quiet # note", keep_json=True, loose=True) == [f"{option}={text}", "--quiet"]
    else:
        assert split(f"{option} {text} --quiet # note", keep_json=True, loose=True) == [option, text, "--quiet"]


# -- %mcp_call lines: read_call_line, parse_pairs, coerce ----------------------------------------------

CALL = McpMagics.mcp_call.parser
READ = McpMagics.mcp_read.parser


@QUICK
@given(lines(), st.booleans())
@example('echo {"a": ' + BIG + "}", True)
@example("echo k=" + DEEP, True)
@example("echo -- --timeout=1 -x", True)
def test_any_call_line_parses_or_is_one_line_error(line, takes_arguments):
    try:
        name, payload, options = read_call_line(CALL if takes_arguments else READ, line, takes_arguments)
    except (LineError, UsageError) as err:
        one_line(err)
        return
    assert isinstance(name, str) and not name.startswith(("{", "["))
    assert not name.startswith("-") or " " in name or name.lstrip("-").replace(".", "", 1).isdigit()  # argparse's positionals
    assert isinstance(payload, (list, dict))
    assert payload == [] or takes_arguments
    assert all(value is None or isinstance(value, (str, bool)) for value in vars(options).values() if not isinstance(value, list))
    if isinstance(payload, list):
        try:
            arguments = parse_pairs(payload, None, "tool")
        except LineError as err:
            one_line(err)
            return
        assert all(isinstance(k, str) and k for k in arguments)


@QUICK
@given(names, st.dictionaries(st.text(max_size=5), json_values, max_size=4), st.booleans())
def test_a_json_object_is_sent_as_decoded_duplicates_and_all(name, arguments, ascii_only):
    text = json.dumps(arguments, ensure_ascii=ascii_only)
    read_name, payload, options = read_call_line(CALL, f"{name} {text} --timeout 5  # note")
    assert (read_name, payload, options.timeout) == (name, arguments, "5")


@QUICK
@given(
    names,
    st.lists(st.tuples(names, st.text(max_size=8)), max_size=4),
    st.lists(st.text(max_size=8), max_size=3),
    st.sampled_from(["", "--timeout 5 ", "--server kernel "]),
)
def test_quoted_pairs_reach_the_call_as_typed_options_or_not(name, pairs, after, before):
    """Any value quoted by the shell's rules is the value, an option-like word, ` -- ` or `#` in it
    included; after `--`, any word is an argument."""
    typed = [f"{k}={v}" for k, v in pairs]
    assume(typed or not after or not after[0].startswith(("{", "[")))  # that would be the JSON object
    line = f"{before}{name} {shlex.join(typed)}" + (f" -- {shlex.join(after)}" if after else "")
    read_name, payload, options = read_call_line(CALL, line)
    assert (read_name, payload) == (name, typed + after)
    assert options.timeout == ("5" if "timeout" in before else None)


# Schemas as a server may publish them: the usual keywords, with values of any shape, refs that
# lead nowhere or back to themselves.
KEYWORDS = ["type", "properties", "anyOf", "oneOf", "enum", "const", "$ref", "items", "required", "default"]
TYPES = ["string", "integer", "number", "boolean", "array", "object", "null", "foo"]
REFS = ["#", "#/$defs/A", "#/$defs/B", "#/$defs/missing", "#/properties", "http://x/y", "#/$defs/A~1b", "#/", ""]


def schema_like(depth: int = 3):
    leaf = (
        st.booleans()
        | st.sampled_from(TYPES).map(lambda t: {"type": t})
        | st.lists(st.sampled_from(TYPES), max_size=3).map(lambda ts: {"type": ts})
        | st.sampled_from(REFS).map(lambda r: {"$ref": r})
        | st.lists(json_scalars, max_size=3).map(lambda e: {"enum": e})
        | json_values
    )
    return leaf if depth == 0 else nested(leaf, schema_like(depth - 1), KEYWORDS, ["k", "n", "A"])


def nested(leaf, inner, keywords: list[str], names: list[str]):
    """`leaf`, or an object of up to 4 of `keywords` whose values are `inner` schemas, lists of
    them, or objects of them under `names`: a schema one level deeper."""
    return leaf | st.dictionaries(
        st.sampled_from(keywords),
        inner | st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(names), inner, max_size=2),
        max_size=4,
    )


@st.composite
def schemas(draw):
    schema = draw(schema_like())
    if isinstance(schema, dict) and draw(st.booleans()):
        schema["$defs"] = {"A": draw(schema_like(2)), "B": {"$ref": "#/$defs/A"}}
    return schema


values_typed = st.sampled_from(
    ["1", "-3", "2.5", "1e999", "nan", "NaN", "true", "yes", "off", "null", "None", '"x"', "[1]", "{}", '{"a":1}', "", BIG, DEEP]
) | st.text(max_size=6)


@QUICK
@given(st.lists(st.tuples(st.sampled_from(["k", "n", "A", "x", ""]), values_typed), max_size=4), schemas())
@example([("k", "1")], {"properties": {"k": {"$ref": "#/properties/k"}}})
@example([("k", "1")], {"properties": {"k": {"anyOf": [{"$ref": "#"}]}}})
@example([("k", "1")], {"properties": {"k": True}})
@example([("k", "1")], {"properties": ["k"]})
@example([("k", "1")], {"properties": {"k": {"type": {"a": 1}, "enum": 3}}})
def test_key_value_pairs_coerce_by_any_schema_or_are_one_line_errors(pairs, schema):
    try:
        arguments = parse_pairs([f"{k}={v}" for k, v in pairs], schema, "tool 'x'")
    except ArgumentsError as err:
        one_line(err)
        return
    assert set(arguments) <= {k for k, _ in pairs}
    for key, text in pairs:
        if key in arguments and isinstance(arguments[key], str):  # what does not coerce is sent as typed
            assert arguments[key] == text or json.loads(text) == arguments[key]


@QUICK
@given(values_typed, schemas())
def test_coercion_never_raises_and_gives_the_text_or_a_json_value(text, prop):
    root = prop if isinstance(prop, dict) else {}
    result = coerce(text, prop, root)
    assert result == text or result is None or isinstance(result, (bool, int, float, list, dict, str))
    if not isinstance(result, str):
        json.dumps(result)  # the value JSON sends


@QUICK
@given(st.data())
def test_a_typed_value_comes_back_as_the_value_it_spells(data):
    kind = data.draw(st.sampled_from(["integer", "number", "boolean", "string", "array", "object"]))
    value, text = {
        "integer": lambda: (n := data.draw(st.integers(-(10**40), 10**40)), str(n)),
        "number": lambda: (x := data.draw(st.floats(allow_nan=False, allow_infinity=False)), repr(x)),
        "boolean": lambda: (
            b := data.draw(st.booleans()),
            data.draw(st.sampled_from(["true", "True", "yes", "on", "1"] if b else ["false", "No", "off", "0"])),
        ),
        "string": lambda: (s := data.draw(st.text(max_size=8)), s),
        "array": lambda: (a := data.draw(st.lists(json_values, max_size=3)), json.dumps(a)),
        "object": lambda: (o := data.draw(st.dictionaries(st.text(max_size=4), json_values, max_size=3)), json.dumps(o)),
    }[kind]()
    prop = {"type": kind}
    if text not in ("null", "None") and data.draw(st.booleans()):  # X | None, as pydantic writes it
        prop = {"anyOf": [{"$ref": "#/$defs/T"}, {"type": "null"}]}
    root = {"$defs": {"T": {"type": kind}}}
    assert json.dumps(coerce(text, prop, root)) == json.dumps(value)
    if "anyOf" in prop:
        assert coerce("null", prop, root) is None


@QUICK
@given(st.lists(json_scalars, min_size=1, max_size=5, unique_by=json.dumps), st.data())
def test_an_enum_value_typed_as_json_is_that_value(choices, data):
    choice = data.draw(st.sampled_from(choices))
    got = coerce(json.dumps(choice), {"enum": choices})
    assert json.dumps(got) in {json.dumps(c) for c in choices}
    assert json.dumps(choice) in (str(got), json.dumps(got))


# -- --inject specs: Faults.parse / Faults.from_spec ---------------------------------------------------

fault_keys = st.sampled_from([*FIELDS, "Latency", "_seen", "_lock", "", " latency ", "speed"])
fault_values = st.sampled_from(
    ["0", "0.5", "1", "1.5", "-0", "-1", "nan", "inf", "1e400", "1e-400", "3600", "3601", "1_0", "0x1", "", " ", BIG, "½"]
) | st.text(max_size=4)


@QUICK
@given(
    st.lists(st.tuples(fault_keys, st.sampled_from(["=", "", "=="]), fault_values), max_size=5),
    st.sampled_from([",", ", ", ",,", ";"]),
)
def test_any_fault_spec_parses_or_is_one_line_error(parts, comma):
    spec = comma.join(f"{k}{eq}{v}" for k, eq, v in parts)
    try:
        faults = Faults.parse(spec)
    except ValueError as err:
        one_line(err)
        return
    assert 0 <= faults.latency <= 3600 and faults.tool_error + faults.crash + faults.protocol_error <= 1 + 1e-9
    assert Faults.from_spec(faults) is faults


probabilities = st.floats(0, 1)


@QUICK
@given(st.floats(0, 3600), probabilities, probabilities, st.one_of(st.none(), st.integers(-(10**30), 10**30)))
def test_a_valid_spec_reads_back_exactly(latency, tool_error, crash, seed):
    crash = min(crash, 1 - tool_error)
    spec = f"latency={latency!r}, tool_error={tool_error!r},crash={crash!r}" + (f",seed={seed}" if seed is not None else "")
    assert Faults.parse(spec) == Faults(latency=latency, tool_error=tool_error, crash=crash, seed=seed)
    assert Faults.parse(spec) == Faults.from_spec({"latency": latency, "tool_error": tool_error, "crash": crash, "seed": seed})


python_values = (
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats()
    | st.text(max_size=4)
    | st.sampled_from([Fraction(1, 3), [], {}, (1,), b"1"])
    | st.lists(st.integers(), max_size=2)
)


@QUICK
@given(st.dictionaries(fault_keys, python_values, max_size=4) | python_values)
def test_any_fault_mapping_is_faults_or_one_line_error(spec):
    try:
        faults = Faults.from_spec(spec)
    except (ValueError, TypeError) as err:
        one_line(err)
        return
    assert isinstance(faults, Faults)


@FEW
@given(
    st.sampled_from(["latency", "tool_error", "crash", "protocol_error"]),
    st.sampled_from([10**400, -(10**400), Fraction(10**400, 3)]),
)
@example("latency", 10**400)
def test_a_number_beyond_floats_is_refused_as_a_value_error(key, value):
    with pytest.raises(ValueError):
        Faults.from_spec({key: value})


def test_a_refused_spec_leaves_the_tools_faults_as_they_were():
    @mcp_nb.tool(inject="latency=0.5")
    def slow(a: int = 0) -> int:
        return a

    registry = mcp_nb.engine().registry
    before = registry.faults["slow"]

    @FEW
    @given(st.text(max_size=10) | st.dictionaries(fault_keys, python_values, max_size=3))
    def check(spec):
        try:
            mcp_nb.inject("slow", spec)
        except (ValueError, TypeError) as err:
            one_line(err)
            assert registry.faults["slow"] is before
        else:
            mcp_nb.inject("slow", before)
        tools = mcp_nb.registered()["name"].tolist()
        try:
            mcp_nb.tool("other", inject=spec)(lambda_free)
        except (ValueError, TypeError) as err:
            one_line(err)
            assert mcp_nb.registered()["name"].tolist() == tools  # refused before anything is registered
        else:
            mcp_nb.remove("other")

    check()


def lambda_free(a: int = 0) -> int:
    return a


# -- grids: argument_sets ----------------------------------------------------------------------------

grid_keys = st.text(max_size=3) | st.integers(0, 3) | st.none() | st.tuples(st.text(max_size=2))
grid_options = (
    st.lists(json_scalars, max_size=3)
    | st.tuples(json_scalars)
    | st.sets(st.integers(0, 3), max_size=3)
    | st.text(max_size=3)
    | st.integers()
    | st.none()
    | st.dictionaries(st.text(max_size=2), st.integers(), max_size=2)
    | st.builds(lambda v: iter(v), st.lists(st.integers(), max_size=3))
    | st.builds(pd.Series, st.lists(st.integers(), max_size=3))
)


@st.composite
def frames(draw):
    columns = draw(st.lists(st.text(max_size=2) | st.integers(0, 2), max_size=3))
    rows = draw(st.integers(0, 3))
    cells = st.none() | st.integers(-5, 5) | st.floats(allow_infinity=False) | st.text(max_size=2)
    data = [[draw(cells) for _ in columns] for _ in range(rows)]
    return pd.DataFrame(data, columns=columns) if columns else pd.DataFrame(index=range(rows))


grids = (
    st.dictionaries(grid_keys, grid_options, max_size=3)
    | st.lists(st.dictionaries(grid_keys, json_scalars, max_size=2) | json_scalars, max_size=3)
    | frames()
    | json_scalars
    | st.builds(pd.Series, st.lists(st.integers(), max_size=2))
    | st.builds(lambda v: (x for x in v), st.lists(st.dictionaries(st.text(max_size=2), st.integers(), max_size=2), max_size=3))
)


@QUICK
@given(grids)
def test_any_grid_is_argument_sets_or_one_line_error(grid):
    try:
        sets = argument_sets(grid)
    except (TypeError, ValueError) as err:
        one_line(err)
        return
    assert isinstance(sets, list)
    assert all(isinstance(s, dict) and all(isinstance(k, str) for k in s) for s in sets)


@QUICK
@given(st.dictionaries(st.text(max_size=3), st.lists(json_scalars, max_size=3, unique_by=json.dumps), max_size=3))
def test_a_grid_is_every_combination_once(grid):
    sets = argument_sets(grid)
    assert len(sets) == math.prod(len(v) for v in grid.values())
    assert len({json.dumps(s, sort_keys=True) for s in sets}) == len(sets)
    assert all(list(s) == list(grid) and all(s[k] in grid[k] for k in s) for s in sets)


@QUICK
@given(frames())
def test_a_frame_is_one_call_per_row_empty_cells_left_out(frame):
    try:
        sets = argument_sets(frame)
    except (TypeError, ValueError) as err:
        one_line(err)
        assert frame.columns.duplicated().any() or not all(isinstance(c, str) for c in frame.columns)
        return
    assert len(sets) == len(frame)
    for row, arguments in zip(frame.to_dict("records"), sets, strict=True):
        assert arguments == {k: v for k, v in row.items() if not (v is None or (isinstance(v, float) and math.isnan(v)))}


def test_a_refused_grid_makes_no_call():
    @mcp_nb.tool()
    def add(a: int = 0, b: int = 0) -> int:
        return a + b

    @FEW
    @given(grids)
    def check(grid):
        try:
            argument_sets(grid)
        except (TypeError, ValueError):
            pass
        else:
            return
        before = len(mcp_nb.history())
        with pytest.raises((TypeError, ValueError)) as caught:
            mcp_nb.sweep("add", grid, progress=False)
        one_line(caught.value)
        assert len(mcp_nb.history()) == before

    check()


# -- case files: cases.load ----------------------------------------------------------------------------

GOOD_CASE = {
    "id": "add-1",
    "target": "tool",
    "name": "add",
    "arguments": {"a": 1},
    "server": "kernel",
    "timeout": 5.0,
    "retries": 0,
    "note": "n",
    "expect": {
        "outcome": "result",
        "cause": "ok",
        "content": "1",
        "checks": [{"path": "$.a[0]['b c']", "equals": 1}, {"matches": "^1$"}, {"approx": 1, "tolerance": 0.5}],
    },
}
CASE_KEYS = ["id", "target", "name", "arguments", "server", "timeout", "retries", "note", "expect", "extra", "x\ny"]
EXPECT_KEYS = ["outcome", "cause", "code", "content", "checks", "colour"]
CHECK_KEYS = ["path", "equals", "matches", "approx", "tolerance", "what"]
odd = (
    json_values
    | st.sampled_from(["", "$", "$.", "$[x]", "$['a", "(", "[", "a" * 50, "$.a.b[0]", math.nan, math.inf, -0.0, 10**30, 0, -1])
    | st.just(nest(40))
)


@st.composite
def case_documents(draw):
    """A valid cases document with a few of its fields changed, added or dropped."""
    case = json.loads(json.dumps(GOOD_CASE))
    nodes = {"case": case, "expect": case["expect"], "check": case["expect"]["checks"][0]}
    for _ in range(draw(st.integers(0, 3))):
        where = draw(st.sampled_from(list(nodes)))
        node = nodes[where]
        key = draw(st.sampled_from({"case": CASE_KEYS, "expect": EXPECT_KEYS, "check": CHECK_KEYS}[where]))
        if draw(st.booleans()):
            node.pop(key, None)
        else:
            node[key] = draw(odd)
    cases = [case] + ([dict(case, id=draw(st.sampled_from(["add-1", "add-2"])))] if draw(st.booleans()) else [])
    shape = draw(st.sampled_from(["file", "list", "version", "junk"]))
    if shape == "list":
        return cases
    if shape == "version":
        return {"mcp_nb_cases": draw(odd), "cases": cases}
    if shape == "junk":
        return draw(json_values)
    return {"mcp_nb_cases": 1, "cases": cases}


def deep_list(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


EXPECT_OK = {"outcome": "result", "cause": "ok"}


@QUICK
@given(case_documents())
@example([{"id": "a", "name": "t", "arguments": {"x": {1, 2}}, "expect": EXPECT_OK}])
@example([{"id": "a", "name": "t", "x\ny": 1, "expect": EXPECT_OK}])
def test_any_cases_document_loads_or_is_one_line_cases_error(document):
    try:
        cases = load(document)
    except CasesError as err:
        message = one_line(err)
        assert isinstance(document, str) or message.startswith("the cases")  # a string is a path
        return
    assert all(isinstance(c, Case) for c in cases)


@pytest.mark.parametrize("value", [{1, 2}, object(), "deep"], ids=["set", "object", "deep"])
def test_arguments_given_as_python_that_are_not_json_are_one_line_cases_errors(value):
    value = deep_list(5000) if value == "deep" else value  # too deep for hypothesis to print
    with pytest.raises(CasesError, match="field arguments: not JSON") as caught:
        load([{"id": "a", "name": "t", "arguments": {"x": value}, "expect": EXPECT_OK}])
    one_line(caught.value)


contents = (
    case_documents().map(json.dumps)
    | st.text(max_size=20)
    | st.sampled_from(
        [BIG, DEEP, '{"cases": ' + DEEP + "}", '{"mcp_nb_cases": 1, "cases": [' + BIG + "]}", "\ufeff{}", "NaN", ""]
    )
)


@QUICK
@given(contents | st.binary(max_size=10))
@example(b"\xff\xfe\x00")
def test_any_cases_file_loads_or_is_one_line_cases_error(tmp_path, content):
    path = tmp_path / "cases.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    try:
        cases = load(path)
    except CasesError as err:
        assert str(path) in one_line(err)
        return
    assert all(isinstance(c, Case) for c in cases)


relative_paths = st.text(max_size=12).filter(lambda p: not p.startswith(("/", "~")))


@QUICK
@given(relative_paths | st.sampled_from(["", ".", "..", "a\x00b", "a\nb", "x" * 5000, "sub", "sub/"]))
def test_any_path_loads_or_is_one_line_cases_error(tmp_path, monkeypatch, path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir(exist_ok=True)
    with pytest.raises(CasesError) as caught:  # nothing there is a cases file
        load(path)
    one_line(caught.value)


@QUICK
@given(relative_paths | st.sampled_from(["", ".", "sub", "sub/", "a\x00b", "a\nb", "x" * 5000, "no/such/dir/c.json"]))
def test_cases_save_anywhere_or_say_in_one_line_why_not(tmp_path, monkeypatch, path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir(exist_ok=True)
    cases = load([{"id": "a", "name": "t", "expect": EXPECT_OK}])
    try:
        written = save(cases, path)
    except CasesError as err:
        one_line(err)
        return
    assert load(written) == cases


@st.composite
def valid_cases(draw):
    text = st.text(min_size=1, max_size=6)
    cases = []
    for i in range(draw(st.integers(1, 3))):
        expect = {"outcome": draw(st.sampled_from(mcp_nb.OUTCOMES)), "cause": draw(st.sampled_from(mcp_nb.CAUSES))}
        if draw(st.booleans()):
            expect["content"] = draw(st.text(max_size=6))
        if draw(st.booleans()):
            expect["checks"] = [
                draw(
                    st.fixed_dictionaries(
                        {"equals": json_values}, optional={"path": st.sampled_from(["$.a", "$[0]", "$['x y']"])}
                    )
                    | st.fixed_dictionaries({"matches": st.sampled_from(["^a", "b+", r"\d"])})
                    | st.fixed_dictionaries({"approx": st.floats(-1e6, 1e6)}, optional={"tolerance": st.floats(0, 10)})
                )
            ]
        case = {"id": f"{draw(text)}-{i}", "name": draw(text), "expect": expect}
        if draw(st.booleans()):
            case["arguments"] = draw(st.dictionaries(st.text(max_size=4), json_values, max_size=3))
        if draw(st.booleans()):
            case["timeout"] = draw(st.floats(0.001, 1e6))
        cases.append(case)
    return cases


@QUICK
@given(valid_cases())
def test_a_cases_file_reads_back_as_written(tmp_path, cases):
    loaded = load(cases)
    path = tmp_path / "cases.json"
    path.write_text(dump(loaded), encoding="utf-8")
    assert load(path) == loaded
    assert dump(load(path)) == dump(loaded)
    json.loads(dump(loaded), parse_constant=lambda c: pytest.fail(f"{c} in a cases file"))


# -- mcpServers configurations: read_config -----------------------------------------------------------

SERVER_KEYS = [
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "type",
    "disabled",
    "autoApprove",
    "timeout",
    "x\ny",
    "extra",
    "oauth",
]
OAUTH_VALUES = [
    True,
    False,
    {"scopes": ["repo"], "callback": "paste"},
    {"scopes": "a b"},
    {"scopes": [1]},
    {"callback": "popup"},
    {"client_id": "app", "client_secret_env": "MCP_NB_NOT_SET_ANYWHERE"},
    {"client_secret": "s"},
    {"scope": "x"},
    {"client_id": "app", "client_metadata_url": "https://h/cimd.json"},
    {"timeout": 3},
]
server_values = (
    odd
    | st.sampled_from(
        [
            "npx",
            " ",
            "http://h/mcp",
            "https://h",
            "ftp://h",
            "HTTP://h",
            ["-y", "pkg"],
            ["a", 1, 2.5, True],
            [None],
            {"A": "1"},
            {"A": [1]},
            {"A": 1.5},
        ]
    )
    | st.sampled_from(OAUTH_VALUES)
)
server_entries = st.dictionaries(st.sampled_from(SERVER_KEYS), server_values, max_size=4) | json_values
server_names = st.sampled_from(["a", "b", "x y", "", "a\nb"]) | st.text(max_size=3)


@st.composite
def configs(draw):
    servers = draw(st.dictionaries(server_names, server_entries, max_size=3) | json_values)
    key = draw(st.sampled_from(["mcpServers", "servers", "mcp_servers"]))
    return draw(st.sampled_from([{key: servers}, {"mcpServers": servers, "servers": {}}, servers]))


config_names = st.none() | st.lists(server_names, max_size=2) | st.sampled_from(["a", 5, [1], ("a",), {"a": 1}, b"a"])


@QUICK
@given(configs(), config_names)
@example({"mcpServers": {"a": {"url": "http://h", 1: 2, (3,): 4}}}, None)
@example({"mcpServers": {1: {"url": "http://h"}}}, ["b"])
@example({"mcpServers": {"a": {"command": json.loads(nest(200))}}}, None)
@example({"mcpServers": {"a": {"url": "http://h", "oauth": {"scopes": [1]}}}}, None)
@example({"mcpServers": {"a": {"url": "http://h", "oauth": True}}}, None)
@example({"mcpServers": {"a": {"url": "http://h", "oauth": {"client_secret": "s"}}}}, None)
@example({"mcpServers": {"a": {"command": "npx", "oauth": True}}}, None)
def test_any_config_reads_or_is_one_line_config_error(config, names):
    try:
        entries = read_config(config, names)
    except ConfigError as err:
        one_line(err)
        return
    for name, entry in entries.items():
        assert isinstance(name, str) and name
        target = entry["target"]
        if isinstance(target, str):
            assert target.startswith(("http://", "https://")) and set(entry) <= {"target", "headers", "auth"}
            assert "auth" not in entry or isinstance(entry["auth"], mcp_nb.OAuth)
        else:
            assert target and all(isinstance(t, str) for t in target) and target[0].strip()
            assert set(entry) == {"target", "env", "cwd"}


@QUICK
@given(
    configs().map(json.dumps)
    | st.text(max_size=20)
    | st.sampled_from([BIG, DEEP, '{"mcpServers": ' + DEEP + "}"])
    | st.binary(max_size=8)
)
@example(b"\xff\xfe")
def test_any_config_file_reads_or_is_one_line_config_error(tmp_path, content):
    path = tmp_path / "mcp.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    try:
        read_config(path)
    except ConfigError as err:
        one_line(err)


@QUICK
@given(relative_paths | st.sampled_from(["", ".", "sub", "a\x00b", "~no_such_user_xyz/mcp.json", "x" * 5000]))
def test_any_config_path_reads_or_is_one_line_config_error(tmp_path, monkeypatch, path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir(exist_ok=True)
    with pytest.raises(ConfigError) as caught:
        read_config(path)
    one_line(caught.value)


def test_a_config_connects_only_once_every_entry_is_checked(monkeypatch):
    made = []
    # Where connect_config connects, once every entry is checked: noted, never opened.
    monkeypatch.setattr(
        type(mcp_nb.engine()), "open", lambda self, connection, seconds: made.append((connection.name, seconds)) or connection
    )

    @QUICK
    @given(configs(), config_names)
    def check(config, names):
        made.clear()
        try:
            entries = read_config(config, names)
        except ConfigError:
            with pytest.raises(ConfigError) as caught:
                mcp_nb.connect_config(config, names)
            one_line(caught.value)
            assert made == []
        else:
            connected = mcp_nb.connect_config(config, names)
            assert {n: c.name for n, c in connected.items()} == {n: n for n in entries}
            assert [n for n, _ in made] == list(entries)

    check()
    assert list(mcp_nb.engine().connections) == ["kernel"]


# -- schema to form: widgets/form.py -------------------------------------------------------------------

FORM_KEYWORDS = [
    "type",
    "properties",
    "required",
    "items",
    "prefixItems",
    "anyOf",
    "oneOf",
    "allOf",
    "enum",
    "const",
    "$ref",
    "default",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "format",
    "pattern",
    "description",
    "title",
    "additionalProperties",
]
FORM_REFS = ["#", "#/$defs/A", "#/$defs/B", "#/$defs/missing", "#/properties/x", "#/$defs/A~1b", "http://x"]


def form_schema(depth: int = 3):
    leaf = (
        st.booleans()
        | st.sampled_from(TYPES).map(lambda t: {"type": t})
        | st.sampled_from(FORM_REFS).map(lambda r: {"$ref": r})
        | st.lists(json_scalars, max_size=3).map(lambda e: {"enum": e})
        | st.fixed_dictionaries(
            {"type": st.sampled_from(["integer", "number"])},
            optional={k: odd for k in ("minimum", "maximum", "multipleOf", "exclusiveMinimum", "default")},
        )
        | json_values
    )
    return leaf if depth == 0 else nested(leaf, form_schema(depth - 1), FORM_KEYWORDS, ["x", "y", "A"])


@st.composite
def form_schemas(draw):
    properties = draw(st.dictionaries(st.sampled_from(["x", "y", "z", "a b", ""]), form_schema(), min_size=1, max_size=3))
    schema = {"type": "object", "properties": properties}
    if draw(st.booleans()):
        schema["required"] = draw(st.lists(st.sampled_from(["x", "y", "z", 1]), max_size=3) | json_values)
    if draw(st.booleans()):
        schema["$defs"] = {"A": draw(form_schema(2)), "B": {"$ref": "#/$defs/A"}}
    return schema


typed_texts = st.sampled_from(
    ["", " ", "1", "-2", "2.5", "1e999", "nan", "١٢", "true", "null", '"x"', "[1, 2]", '{"a": 1}', "{", BIG, "9" * 400 + ".5"]
) | st.text(max_size=6)


def fill(field, data, typed, depth: int = 0) -> None:
    """Do what a person does with the form: switch objects on, add items, type, pick, tick."""
    state = getattr(field, "state", None)
    if state is not None:
        state.value = data.draw(st.sampled_from(state.options))
    if hasattr(field, "add") and depth < 4 and data.draw(st.booleans()):
        field.add.click()
    inner = getattr(field, "inner", None)
    if inner is not None:
        fill(inner, data, typed, depth + 1)
    for child in list(getattr(field, "fields", {}).values()) + list(getattr(field, "items", None) or []):
        fill(child, data, typed, depth + 1)
    widget, kind = field.widget, type(field.widget).__name__
    if kind in ("Text", "Textarea"):
        widget.value = data.draw(typed)
    elif kind == "Dropdown" and widget.options:
        widget.index = data.draw(st.sampled_from([None, *range(len(widget.options))]))
    elif kind == "SelectMultiple" and widget.options:
        widget.value = tuple(data.draw(st.sets(st.sampled_from(range(len(widget.options))))))
    elif kind == "Checkbox":
        widget.value = data.draw(st.booleans())
    null = getattr(field, "null", None)
    if null is not None:
        null.value = data.draw(st.booleans())


def no_deep_json(text: str) -> bool:
    return text.count("[") < 500 and text.count("{") < 500


def read_and_load(form: Form) -> None:
    """The form reads as arguments or says every problem; any arguments load or are refused with False."""
    attempts = [{"x": 1}, {"x": [1, {"a": None}]}, {"x": nest(20, "[", "]")}, {"zz": 1}, {}]
    try:
        arguments = form.value()
    except Invalid as err:
        assert err.problems and all(message for _, message in err.problems)
    else:
        assert isinstance(arguments, dict)
        attempts.insert(0, arguments)
    for attempt in attempts:
        assert isinstance(form.load(attempt), bool)


@FEW
@given(form_schemas(), st.data())
def test_any_schema_gives_a_form_that_reads_or_says_what_is_wrong(schema, data):
    form = Form(schema)
    try:
        if form.root is not None:
            fill(form.root, data, typed_texts.filter(no_deep_json))
        read_and_load(form)
    finally:
        form.close()


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"x": {"$ref": "#/properties/x"}}},
        {"type": "object", "properties": {"x": {"$ref": "#"}}},
        {"type": "object", "properties": {"x": {"allOf": [{"$ref": "#/properties/x"}]}}},
        {"type": "object", "properties": {"x": {"anyOf": [{"$ref": "#/properties/x"}, {"type": "null"}]}}},
    ],
)
def test_a_schema_that_refers_to_itself_still_gives_a_form(schema):
    form = Form(schema)
    try:
        read_and_load(form)
    finally:
        form.close()


@pytest.mark.parametrize("default", [[[]], [[[[]]]], [[], []]])
def test_a_self_referring_array_with_a_default_still_gives_a_form(default):
    schema = {"type": "object", "properties": {"x": {"type": "array", "items": {"$ref": "#/properties/x"}, "default": default}}}
    form = Form(schema)
    try:
        read_and_load(form)
    finally:
        form.close()


@FEW
@given(st.integers(10_000, 100_000), st.sampled_from(["[]", "{}"]))
@example(100_000, "[]")
def test_deeply_nested_json_typed_into_a_field_is_refused_in_one_line(depth, brackets):
    form = Form({"type": "object", "properties": {"x": {}}})
    try:
        form.fields["x"].widget.value = (
            nest(depth, brackets[0], brackets[1]) if brackets == "[]" else nest(depth, '{"a":', "}", "1")
        )
        with pytest.raises(Invalid):
            form.value()
    finally:
        form.close()


@settings(FEW, max_examples=15)
@given(st.integers(1, 40))
def test_a_recursive_schema_loads_deep_arguments_or_says_it_cannot(depth):
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/T"}},
        "$defs": {"T": {"type": "array", "items": {"$ref": "#/$defs/T"}}},
    }
    value = deep_list(depth)
    form = Form(schema)
    try:
        assert form.load({"a": value}) is True
        assert form.value() == {"a": value}
    finally:
        form.close()


# -- a notebook's solution markup: commands.student ------------------------------------------------

MARKUP_LINES = [
    "### BEGIN SOLUTION",
    "### END SOLUTION",
    "    ### BEGIN SOLUTION",
    "  # END SOLUTION",
    "BEGIN SOLUTION here",
    "x = 1",
    "",
    "    return x",
    "# a comment",
    "é",
    "END",
    "BEGIN",
    "solution",
    "\t",
]
SOLUTION_META = {
    "nbgrader": {"solution": True, "grade": False, "grade_id": "a", "schema_version": 3, "locked": False, "task": False}
}
markup_cells = st.lists(
    st.tuples(
        st.sampled_from(["code", "markdown"]),
        st.lists(st.sampled_from(MARKUP_LINES) | st.text(max_size=6), max_size=6),
        st.booleans(),  # marked as a solution
    ),
    max_size=5,
)


@QUICK
@given(markup_cells)
@example([("code", ["x = 1", "    ### BEGIN SOLUTION", "    return x", "    ### END SOLUTION", "y"], True)])
@example([("markdown", ["BEGIN SOLUTION here", "answer", "END SOLUTION"], True), ("code", ["x = 1"], False)])
def test_any_solution_markup_strips_or_is_one_line_error(cells):
    from mcp_nb.commands.student import BEGIN, CODE_STUB, END, TEXT_STUB, student_version

    notebook = {
        "cells": [
            {
                "cell_type": kind,
                "source": "\n".join(lines),
                "metadata": dict(SOLUTION_META) if solution else {},
                **(
                    {"outputs": [{"output_type": "stream", "name": "stdout", "text": "old"}], "execution_count": 1}
                    if kind == "code"
                    else {}
                ),
            }
            for kind, lines, solution in cells
        ]
    }
    original = json.loads(json.dumps(notebook))
    try:
        stripped, solutions = student_version(notebook)
    except ValueError as err:
        one_line(err)
        return
    assert solutions == sum(solution for _, _, solution in cells)
    for before, after, (kind, lines, solution) in zip(original["cells"], stripped["cells"], cells):
        text = "".join(after["source"])
        stub = CODE_STUB if kind == "code" else TEXT_STUB
        if not solution:
            assert text == before["source"]  # a cell that is no solution keeps every line
        elif any(BEGIN in line for line in lines):
            assert not any(BEGIN in line or END in line for line in text.split("\n"))
            assert stub in text
            # every line outside a region is kept, in order
            outside, inside = [], False
            for line in lines:
                if BEGIN in line:
                    inside = True
                elif END in line:
                    inside = False
                elif not inside:
                    outside.append(line)
            assert [line for line in text.split("\n") if line.strip() != stub] == [
                line for line in outside if line.strip() != stub
            ]
        else:
            assert text == stub  # a solution cell without a region loses all its source
        if kind == "code":
            assert after["outputs"] == [] and after["execution_count"] is None


# -- roots= and sampling= of connect: what a user writes for them -------------------------------------------

root_items = st.text(max_size=12) | st.sampled_from(["/tmp", "file:///data", "C:\\\\data", "~", "git://h/r", "", " "]) | odd
roots_values = (
    st.lists(root_items | st.tuples(root_items, st.none() | st.text(max_size=5)), max_size=4)
    | odd
    | st.sampled_from(["/tmp", b"/tmp", 5])
)


@QUICK
@given(roots_values)
def test_any_roots_value_is_listed_or_one_line_error(value):
    from mcp_nb.calling.roots import check_roots, current

    try:
        check_roots(value)
        listed = current(value)
    except (TypeError, ValueError) as err:
        one_line(err)
        return
    for uri, name in listed:
        assert isinstance(uri, str) and uri and (name is None or isinstance(name, str))


@QUICK
@given(
    st.lists(
        odd | st.text(max_size=8) | st.dictionaries(st.sampled_from(["text", "model", "tool_use", "x"]), odd, max_size=3),
        max_size=3,
    )
    | odd
)
def test_any_sampling_value_is_taken_or_one_line_error(value):
    from mcp_nb.calling.sampling import check_sampling

    try:
        check_sampling(value)
    except (TypeError, ValueError) as err:
        one_line(err)
