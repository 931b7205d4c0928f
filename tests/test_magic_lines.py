"""Magic lines reach mcp_nb as typed: split like a shell's, JSON values kept, `# comments` dropped.

Every case runs a cell through `InteractiveShell.run_cell`, as a notebook does, so IPython's
own handling of the line (variable expansion, its splitter) is part of what is tested.
"""

import pytest
from IPython.core.error import UsageError

import mcp_nb

LINE_MAGICS = (
    "mcp_call",
    "mcp_read",
    "mcp_get_prompt",
    "mcp_list",
    "mcp_remove",
    "mcp_history",
    "mcp_panel",
    "mcp_connect",
    "mcp_disconnect",
    "mcp_servers",
    "mcp_serve",
    "mcp_save_cases",
    "mcp_replay",
    "mcp_snapshot",
    "mcp_diff",
    "mcp_agent",
)
CELL_MAGICS = ("mcp_tool", "mcp_resource", "mcp_prompt")


def setup_server(shell):
    """A tool, a static resource, a template and a prompt, and what a user would have bound."""
    shell.user_ns.update(CATALOG={"Dune": "Frank Herbert"}, user="ada", title="Emma")
    assert shell.run_cell("%%mcp_tool --read-only\ndef get_author(title: str) -> str:\n    return CATALOG[title]\n").success
    assert shell.run_cell(
        "%%mcp_tool\ndef echo(s: str = '', d: dict = {}, tags: list[str] = [], n: int = 0) -> dict[str, object]:\n"
        "    return {'s': s, 'd': d, 'tags': tags, 'n': n}\n"
    ).success
    assert shell.run_cell("%%mcp_resource books://catalog\ndef catalog() -> str:\n    return 'the catalog'\n").success
    assert shell.run_cell("%%mcp_prompt\ndef review(q: str) -> str:\n    return 'review ' + q\n").success


def state(shell):
    return (
        mcp_nb.registered().to_dict("records"),
        len(mcp_nb.history()),
        {k: shell.user_ns.get(k) for k in ("get_author", "echo", "catalog", "review", "good")},
    )


def usage_error(result) -> str:
    err = result.error_in_exec or result.error_before_exec
    assert isinstance(err, UsageError), f"expected a UsageError, got {err!r}"
    text = str(err)
    assert text and "\n" not in text, f"not one line: {text!r}"
    return text


# -- lines that cannot be split or parsed: one line, nothing changed (every magic) -----------------

BODY = "def good() -> str:\n    return 'new'\n"
UNSPLITTABLE = [
    '%%mcp_tool --title "unclosed\n' + BODY,
    "%%mcp_tool --title 'unclosed\n" + BODY,
    '%%mcp_tool --inject "latency=1\n' + BODY,
    "%%mcp_tool --name good\\\n" + BODY,
    '%%mcp_resource books://catalog --title "oops\n' + BODY,
    '%%mcp_resource "books://catalog\n' + BODY,
    "%%mcp_prompt --description 'oops\n" + BODY,
    '%mcp_call echo s="unclosed',
    "%mcp_call echo s='unclosed",
    "%mcp_call echo s=x --timeout '3",
    '%mcp_read "books://catalog',
    "%mcp_get_prompt review q='unclosed",
    '%mcp_remove "get_author',
    "%mcp_history --summary 'x",
    '%mcp_list "x',
    "%mcp_panel 'x",
    "%mcp_connect 'books -- python",
    "%mcp_connect books -- python 'x",
    '%mcp_disconnect "books',
    "%mcp_servers 'x",
    "%mcp_serve --host '127.0.0.1",
    "%mcp_save_cases 'cases.json",
    '%mcp_replay "cases.json',
    "%mcp_snapshot 'surface.json",
    '%mcp_diff "surface.json',
    "%mcp_agent --stand-in \"Who wrote 'Dun'?",
]


@pytest.mark.parametrize("source", UNSPLITTABLE, ids=[s.split("\n")[0] for s in UNSPLITTABLE])
def test_a_line_that_cannot_be_split_is_a_one_line_usage_error_and_changes_nothing(shell, source):
    setup_server(shell)
    before = state(shell)
    text = usage_error(shell.run_cell(source))
    assert "quotation" in text or "escaped" in text or "takes no arguments" in text, text
    assert state(shell) == before
    assert mcp_nb.call("get_author", {"title": "Dune"}).content == "Frank Herbert"


def test_every_magic_is_covered_by_the_unsplittable_cases():
    covered = {source.split()[0].lstrip("%") for source in UNSPLITTABLE}
    assert covered == set(LINE_MAGICS) | set(CELL_MAGICS)


# -- JSON values keep their JSON -------------------------------------------------------------------

JSON_VALUES = [
    ('d={"k":"v"}', {"d": {"k": "v"}}),
    ('tags=["a","b"]', {"tags": ["a", "b"]}),
    ('d={"k": "v w"} tags=["a b", "c"]', {"d": {"k": "v w"}, "tags": ["a b", "c"]}),
    ('d={"a": [1, {"b": "c d"}], "e": null}', {"d": {"a": [1, {"b": "c d"}], "e": None}}),
    ('d={"k":"#v"}  # the # inside is data', {"d": {"k": "#v"}}),
    ('d=\'{"k": "v"}\'', {"d": {"k": "v"}}),  # a quoted value: the quotes go, the JSON inside stays
    ('s={"k":"v"}', {"s": '{"k":"v"}'}),  # a string parameter gets the text as typed
    ("s={name}", {"s": "{name}"}),  # not JSON: sent as the text it was
    ('s={"a b"} n=2', {"s": '{"a b"}', "n": 2}),
    ('s="two words" n=3', {"s": "two words", "n": 3}),
    ('s=["x",', {"s": '["x",'}),
]


@pytest.mark.parametrize("line, sent", JSON_VALUES, ids=[line for line, _ in JSON_VALUES])
def test_key_value_keeps_json_values_through_the_magic(shell, line, sent):
    setup_server(shell)
    result = shell.run_cell(f"%mcp_call echo {line}")
    assert result.success, result.error_in_exec
    outcome = result.result
    assert outcome.arguments == sent
    assert outcome.outcome == "result", outcome.message
    assert {k: outcome.structured_content[k] for k in sent} == sent


def test_a_prompt_argument_written_as_json_is_sent_as_that_text(shell):
    setup_server(shell)
    outcome = shell.run_cell('%mcp_get_prompt review q={"a": [1, 2]}').result
    assert outcome.arguments == {"q": '{"a": [1, 2]}'}
    assert outcome.content == 'user: review {"a": [1, 2]}'


@pytest.mark.parametrize(
    "line, message",
    [
        ("echo {bad json}", "invalid JSON arguments"),
        ('echo {"s": "x"', "invalid JSON arguments"),
        ('echo {"s": "x"}} ', "invalid JSON arguments"),
        ('echo {"s": "x"} n=1', "unexpected 'n=1' after the JSON object"),
        ('{"s": "x"}', "the name comes first"),
        ("echo s", "expected key=value, got 's'"),
    ],
)
def test_bad_json_and_pairs_are_one_line_usage_errors(shell, line, message):
    setup_server(shell)
    before = state(shell)
    assert message in usage_error(shell.run_cell(f"%mcp_call {line}"))
    assert state(shell) == before


# -- no variable expansion: every magic gets its line as typed -------------------------------------


def test_every_mcp_magic_opts_out_of_variable_expansion(shell):
    magics = shell.magics_manager.magics
    names = {kind: sorted(n for n in magics[kind] if n.startswith("mcp_")) for kind in ("line", "cell")}
    assert names == {"line": sorted(LINE_MAGICS), "cell": sorted(CELL_MAGICS)}
    for kind, found in names.items():
        for name in found:
            assert getattr(magics[kind][name], "_ipython_magic_no_var_expand", False), f"%{name} expands variables"


def test_a_template_variable_named_like_a_builtin_stays_a_template(shell):
    setup_server(shell)
    result = shell.run_cell("%%mcp_resource test://template/{id}/data\ndef data(id: str) -> str:\n    return 'data ' + id\n")
    assert result.success, result.error_in_exec
    assert result.result.uri == "test://template/{id}/data"
    assert mcp_nb.read("test://template/7/data").content == "data 7"


def test_a_template_variable_named_like_a_user_variable_stays_a_template(shell):
    setup_server(shell)
    result = shell.run_cell("%%mcp_resource prefs://{user}\ndef prefs(user: str) -> str:\n    return 'prefs of ' + user\n")
    assert result.success, result.error_in_exec
    assert result.result.uri == "prefs://{user}" and result.result.input_schema is not None
    assert mcp_nb.read("prefs://bob").content == "prefs of bob"
    assert mcp_nb.read("prefs://ada").content == "prefs of ada"  # the template, not a static prefs://ada
    assert [u for u in mcp_nb.registered()["uri"] if u] == ["books://catalog", "prefs://{user}"]
    shell.run_cell("%mcp_remove prefs://{user}")
    assert [u for u in mcp_nb.registered()["uri"] if u] == ["books://catalog"]


def test_titles_descriptions_and_values_keep_braces_and_dollars(shell):
    setup_server(shell)
    card = shell.run_cell(
        "%%mcp_tool --title $user --description '{title} by {user}, $$5'\ndef priced(x: int) -> int:\n    return x\n"
    ).result
    assert (card.title, card.description) == ("$user", "{title} by {user}, $$5")
    card = shell.run_cell("%%mcp_prompt --title {user}\ndef ask(q: str) -> str:\n    return q\n").result
    assert card.title == "{user}"
    card = shell.run_cell("%%mcp_resource notes://x --description $title\ndef notes() -> str:\n    return ''\n").result
    assert card.description == "$title"
    assert shell.run_cell("%mcp_call echo s={user}").result.arguments == {"s": "{user}"}
    assert shell.run_cell("%mcp_call echo s=$user").result.arguments == {"s": "$user"}
    assert shell.run_cell("%mcp_get_prompt review q=$title").result.arguments == {"q": "$title"}
    assert shell.run_cell("%mcp_read books://{title}").result.name == "books://{title}"


# -- trailing comments ------------------------------------------------------------------------------


def test_the_readme_quickstart_line_with_its_comment(shell):
    setup_server(shell)
    outcome = shell.run_cell("%mcp_call get_author title=Dune                 # result (ok): Frank Herbert").result
    assert (outcome.outcome, outcome.arguments, outcome.content) == ("result", {"title": "Dune"}, "Frank Herbert")
    outcome = shell.run_cell('%mcp_call get_author {"title": 42}              # tool_error (invalid_arguments)').result
    assert (outcome.cause, outcome.arguments) == ("invalid_arguments", {"title": 42})


@pytest.mark.parametrize(
    "line, sent",
    [
        ("echo s=a --timeout 5   # with an option", {"s": "a"}),
        ('echo {"s": "a # b"}  # a # in a JSON string is data', {"s": "a # b"}),
        ("echo s='a # b'", {"s": "a # b"}),
        ('echo s="a # b" # but this is a comment', {"s": "a # b"}),
        ("echo s=a#b", {"s": "a#b"}),  # no space before #: part of the value
        ("echo s=\\#1", {"s": "#1"}),  # an escaped #
        ("echo s=a\t# after a tab", {"s": "a"}),
        ("echo # nothing but the name", None),
    ],
)
def test_trailing_comments_are_dropped_outside_quotes_and_json(shell, line, sent):
    setup_server(shell)
    result = shell.run_cell(f"%mcp_call {line}")
    assert result.success, result.error_in_exec
    assert result.result.arguments == sent


def test_every_line_magic_accepts_a_trailing_comment(shell, capsys):
    setup_server(shell)
    assert shell.run_cell("%mcp_read books://catalog   # the catalog").result.content == "the catalog"
    assert shell.run_cell("%mcp_get_prompt review q=x  # a prompt").result.content == "user: review x"
    assert shell.run_cell("%mcp_list   # everything").result["name"].tolist() == ["get_author", "echo", "catalog", "review"]
    assert shell.run_cell("%mcp_history --summary  # counts").success
    assert shell.run_cell("%mcp_history   # the latest").success
    panel = shell.run_cell("%mcp_panel  # the panel").result
    assert panel is not None
    panel.close()
    assert shell.run_cell("%mcp_remove echo  # gone").success
    assert "removed tool echo" in capsys.readouterr().out
    assert shell.run_cell("%mcp_history --clear  # forget").success
    assert len(mcp_nb.history()) == 0


def test_cell_magic_lines_accept_a_trailing_comment(shell):
    card = shell.run_cell("%%mcp_tool --read-only   # cached lookups\ndef look(x: int) -> int:\n    return x\n").result
    assert card.annotations == {"readOnlyHint": True}
    card = shell.run_cell("%%mcp_resource notes://{day}  # one per day\ndef notes(day: str) -> str:\n    return day\n").result
    assert card.uri == "notes://{day}"
    card = shell.run_cell("%%mcp_prompt --title 'Ask #1'  # numbered\ndef ask(q: str) -> str:\n    return q\n").result
    assert card.title == "Ask #1"
