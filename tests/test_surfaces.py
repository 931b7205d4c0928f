"""Snapshots and diffs through the API and the magics, against the kernel's server, server-everything
and a served notebook; the registration card of a re-run cell; what bad input does (one line, nothing
changed) and what a snapshot never holds (a secret)."""

from __future__ import annotations

import json
import subprocess
import sys
from contextlib import chdir
from typing import Literal, TypedDict

import peers
import pytest
import warm
from helpers import checkout_env, served_at, write_notebook
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from IPython.core.error import UsageError
from nbformat.v4 import new_code_cell

import mcp_nb
from mcp_nb.records.surface import SurfaceError, dump, load
from mcp_nb.views.surface import DiffReport

FEW = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


class Book(TypedDict):
    title: str


def bookshop():
    """A small kernel server: a tool with an output schema, a resource, a template and a prompt."""

    @mcp_nb.tool(read_only=True, title="Find a book")
    def get_book(title: str, genre: Literal["sf", "fantasy"] = "sf") -> Book:
        """A book of the catalog."""
        return {"title": title}

    @mcp_nb.resource("books://catalog")
    def catalog() -> str:
        return "Dune"

    @mcp_nb.resource("books://{title}")
    def book(title: str) -> str:
        return title

    @mcp_nb.prompt()
    def review(title: str, tone: str = "kind") -> str:
        """Review a book."""
        return title


# -- the document --------------------------------------------------------------------------------------


def test_a_snapshot_holds_everything_a_client_lists_and_is_the_same_file_twice(tmp_path):
    bookshop()
    doc = mcp_nb.snapshot(path=tmp_path / "a.json")
    mcp_nb.snapshot(path=tmp_path / "b.json")
    text = (tmp_path / "a.json").read_text()
    assert text == (tmp_path / "b.json").read_text() == dump(doc)
    assert text.startswith('{\n  "mcp_nb_surface": 1,\n  "server": {')
    assert list(json.loads(text)) == ["mcp_nb_surface", "server", "tools", "resources", "templates", "prompts"]
    assert doc["server"]["name"] == "mcp_nb" and doc["server"]["protocol"] == "2026-07-28"
    assert set(doc["server"]["capabilities"]) == {"tools", "resources", "prompts"}
    tool = doc["tools"]["get_book"]
    assert tool["title"] == "Find a book" and tool["annotations"] == {"readOnlyHint": True}
    assert tool["inputSchema"]["properties"]["genre"]["enum"] == ["sf", "fantasy"] and "outputSchema" in tool
    assert list(tool) == sorted(tool) and list(tool["inputSchema"]) == sorted(tool["inputSchema"])
    assert set(doc["resources"]) == {"books://catalog"} and set(doc["templates"]) == {"books://{title}"}
    assert doc["prompts"]["review"]["arguments"] == {"title": {"required": True}, "tone": {"required": False}}
    assert load(tmp_path / "a.json") == load(doc)


def test_a_re_run_cell_that_changes_nothing_for_clients_says_nothing_and_one_that_does_says_what(shell):
    shell.run_cell("%%mcp_tool --read-only\ndef get_author(title: str) -> str:\n    '''Who wrote it.'''\n    return title")
    same = shell.run_cell(
        "%%mcp_tool --read-only\ndef get_author(title: str) -> str:\n    '''Who wrote it.'''\n    return title.upper()"
    )
    assert same.result.replaced and same.result.changes == ()
    assert "what changed" not in repr(same.result)
    changed = shell.run_cell(
        "%%mcp_tool\ndef get_author(title: str, year: int) -> str:\n    '''Who wrote it.'''\n    return title"
    )
    card = repr(changed.result)
    assert "what changed for clients:" in card
    assert "    breaking: new required parameter `year`" in card
    assert "    breaking: readOnlyHint true → false: the tool may now change things (left out: false by default)" in card
    html = changed.result._repr_html_()
    assert "mcp-nb-changes" in html and "new required parameter `year`" in html and "$.inputSchema.properties.year" in html
    # Three versions: the registry still knows the first one of the session.
    shell.run_cell("%%mcp_tool\ndef get_author(title: str, year: int = 0) -> str:\n    '''Who wrote it.'''\n    return title")
    since = mcp_nb.engine().registry.changes_since_first("tool", "get_author")
    assert {c.rule for c in since} == {"towards-danger", "property-added"}


def test_a_re_run_resource_or_prompt_cell_says_what_changed_too(shell):
    shell.run_cell("%%mcp_prompt\ndef review(title: str, tone: str = 'kind') -> str:\n    return title")
    card = shell.run_cell("%%mcp_prompt\ndef review(title: str) -> str:\n    return title").result
    assert [c.why for c in card.changes] == [
        "argument `tone` removed: calls that send it break"
    ] or "argument `tone` removed" in card.changes[0].why
    shell.run_cell("%%mcp_resource books://catalog --mime-type text/plain\ndef catalog() -> str:\n    return ''")
    card = shell.run_cell(
        "%%mcp_resource books://catalog --mime-type application/json\ndef catalog() -> str:\n    return '{}'"
    ).result
    assert [c.rule for c in card.changes] == ["mime-type-changed"] and card.changes[0].breaking is True


# -- the API and the magics ---------------------------------------------------------------------------


def test_diff_takes_files_dicts_and_live_servers_and_the_magic_shows_a_report(shell, tmp_path):
    bookshop()
    path = tmp_path / "surface.json"
    shell.run_line_magic("mcp_snapshot", str(path))
    before = json.loads(path.read_text())

    @mcp_nb.tool()
    def get_book(title: str, genre: Literal["sf"] = "sf") -> Book:  # noqa: F811 - a new version
        """A book of the catalog."""
        return {"title": title}

    by_file, by_dict = mcp_nb.diff(path), mcp_nb.diff(before, "kernel")
    assert by_file[["where", "rule", "breaking"]].equals(by_dict[["where", "rule", "breaking"]])
    assert by_file.attrs["old"] == "surface.json" and by_file.attrs["new"] == "kernel"
    assert set(by_file["rule"]) == {"towards-danger", "enum-value-removed", "described"}  # described: its title, left out
    assert by_file.attrs["breaking"] == 2
    report = shell.run_line_magic("mcp_diff", str(path))
    assert isinstance(report, DiffReport) and report.breaking
    text = repr(report)
    assert text.startswith("Surface diff (surface.json → kernel): 3 changes: 2 breaking, 1 compatible")
    assert text.index("breaking") < text.index("compatible  tool get_book")
    assert "mcp-nb-surface-diff" in report._repr_html_()
    two = shell.run_line_magic("mcp_diff", f"{path} {path}")
    assert two.frame.empty and "no changes" in repr(two)
    with pytest.raises(mcp_nb.BreakingChanges, match="2 changes at fail_on='breaking'"):
        mcp_nb.diff(path, fail_on="breaking")
    mcp_nb.diff(path, path, fail_on="any")  # nothing changed: nothing raised


@pytest.mark.parametrize(
    "line, said",
    [
        ("mcp_snapshot {dir}/x.json --server nope", "no server named 'nope' is connected"),
        ("mcp_snapshot", "the following arguments are required: path"),
        ("mcp_snapshot {dir}/missing/x.json", "cannot write"),
        ("mcp_diff {dir}/nope.json", "no snapshot file at"),
        ("mcp_diff {dir}/bad.json", "is not JSON"),
        ("mcp_diff {dir}/other.json", "is not a surface snapshot"),
        ("mcp_diff {dir}/later.json", "this mcp_nb reads format 1"),
        ("mcp_diff {dir}/tools.json", "tools is a list, not an object of tools by name"),
        ("mcp_diff 'unclosed", "no closing quotation"),
        ("mcp_replay {dir}/cases.json --mode 2025", "a protocol era is one of"),
        ("mcp_replay {dir}/cases.json --mode 2025-11-25 --mode 2025-11-25", "modes names an era twice"),
    ],
)
def test_bad_input_is_one_line_and_changes_nothing(shell, tmp_path, line, said):
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "other.json").write_text('{"mcp_nb_cases": 1, "cases": []}')
    (tmp_path / "later.json").write_text('{"mcp_nb_surface": 2}')
    (tmp_path / "tools.json").write_text('{"mcp_nb_surface": 1, "tools": []}')
    (tmp_path / "cases.json").write_text('{"mcp_nb_cases": 1, "cases": []}')
    before = sorted(p.name for p in tmp_path.iterdir())
    magic, _, rest = line.format(dir=tmp_path).partition(" ")
    calls = len(mcp_nb.history())
    with pytest.raises(UsageError) as raised:
        shell.run_line_magic(magic, rest)
    message = str(raised.value)
    assert said in message and "\n" not in message
    assert sorted(p.name for p in tmp_path.iterdir()) == before and len(mcp_nb.history()) == calls


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(allow_nan=False, allow_infinity=False, width=16)
    | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
entries = st.dictionaries(
    st.text(min_size=1, max_size=6),
    st.dictionaries(st.sampled_from(["title", "description", "inputSchema", "x"]), json_values, max_size=3),
    max_size=3,
)
documents = st.fixed_dictionaries(
    {
        "mcp_nb_surface": st.just(1),
        "server": st.dictionaries(st.sampled_from(["name", "version", "instructions"]), st.text(max_size=5), max_size=3),
    },
    optional={"tools": entries, "resources": entries, "templates": entries},
)


@FEW
@given(documents)
def test_a_snapshot_file_reads_back_as_written(document):
    read = load(document)
    assert load(json.loads(dump(read))) == read
    assert dump(load(json.loads(dump(read)))) == dump(read)


@FEW
@given(st.one_of(json_values, st.text(max_size=30), st.binary(max_size=30)))
def test_any_file_is_read_as_a_snapshot_or_refused_in_one_line(tmp_path_factory, content):
    path = tmp_path_factory.mktemp("snap") / "s.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content)
    else:
        path.write_text(json.dumps(content))
    try:
        load(path)
    except SurfaceError as err:
        assert "\n" not in str(err)


@FEW
@given(st.lists(st.sampled_from(["kernel", "a.json", "--server", "--nope", "'", '"x y"', "#", "nope", "--", "-h"]), max_size=4))
def test_any_diff_or_snapshot_line_is_done_or_refused_in_one_line(shell, tmp_path_factory, words):
    folder = tmp_path_factory.mktemp("lines")
    mcp_nb.snapshot(path=folder / "a.json")
    line = " ".join(word if word != "a.json" else str(folder / "a.json") for word in words)
    with chdir(folder):  # a line such as `-- --server` names a file to write: here, not in the checkout
        for magic in ("mcp_diff", "mcp_snapshot"):
            try:
                shell.run_line_magic(magic, line)
            except UsageError as err:
                assert "\n" not in str(err).strip()


# -- no secret is written ---------------------------------------------------------------------------


def test_no_token_header_or_url_secret_is_in_a_snapshot_or_a_diff(tmp_path):
    bookshop()
    handle = mcp_nb.serve()
    secret = "k3y-in-the-url-9f2c"
    try:
        mcp_nb.connect("served", f"{handle.url}?api_key={secret}", headers={"Authorization": f"Bearer {handle.token}"})
        doc = mcp_nb.snapshot("served", path=tmp_path / "served.json")
        frame = mcp_nb.diff(tmp_path / "served.json", "served")
        report = repr(DiffReport(mcp_nb.diff({**doc, "tools": {}}, "served")))
    finally:
        handle.stop()
    written = (tmp_path / "served.json").read_text()
    for text in (written, frame.to_json(), report, json.dumps(doc)):
        assert handle.token not in text and secret not in text and "127.0.0.1" not in text
    assert frame.empty and set(doc["tools"]) == {"get_book"}


# -- real peers ----------------------------------------------------------------------------------------


def test_server_everything_s_surface_and_a_tool_it_no_longer_lists(tmp_path):
    peers.require(peers.EVERYTHING)
    connection = mcp_nb.connect("everything", peers.everything_stdio(), env=peers.node_env())
    doc = mcp_nb.snapshot("everything", path=tmp_path / "everything.json")
    counts = connection.counts()
    assert len(doc["tools"]) == counts["tool"] >= 13 and len(doc["prompts"]) == counts["prompt"]
    assert len(doc["resources"]) == counts["resource"] and len(doc["templates"]) == counts["template"]
    assert doc["server"]["protocol"] == "2025-11-25" and doc["server"]["name"]
    assert "message" in doc["tools"]["echo"]["inputSchema"]["properties"]
    assert mcp_nb.diff(tmp_path / "everything.json", "everything").empty
    # A snapshot of an older server, which also offered a tool it has dropped since:
    older = json.loads((tmp_path / "everything.json").read_text())
    older["tools"]["retired"] = {"inputSchema": {"type": "object"}}
    frame = mcp_nb.diff(older, "everything")
    assert frame[["kind", "name", "rule", "breaking"]].values.tolist() == [["tool", "retired", "removed", True]]


def test_a_server_that_cannot_list_at_an_era_gives_no_snapshot_and_says_why(shell):
    peers.require(peers.EVERYTHING)
    mcp_nb.connect("everything26", peers.everything_stdio(), env=peers.node_env(), mode="2026-07-28")
    with pytest.raises(
        SurfaceError, match=r"^no snapshot of 'everything26': its answer to tools/list is not one the protocol allows"
    ):
        mcp_nb.snapshot("everything26")
    with pytest.raises(UsageError, match="no snapshot of 'everything26'"):
        shell.run_line_magic("mcp_diff", "everything26")


def test_a_served_notebook_has_the_surface_of_its_notebook(tmp_path):
    notebook = write_notebook(
        tmp_path,
        new_code_cell("%load_ext mcp_nb"),
        new_code_cell("%%mcp_tool --read-only\ndef get_author(title: str) -> str:\n    '''Who wrote it.'''\n    return title"),
    )
    written = subprocess.run(
        warm.python("-m", "mcp_nb", "snapshot", notebook, "-o", tmp_path / "notebook.json"),
        env=checkout_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert written.returncode == 0, written.stderr
    process = subprocess.Popen(
        [sys.executable, "-m", "mcp_nb", "serve", str(notebook), "--http"], env=checkout_env(), stderr=subprocess.PIPE, text=True
    )
    try:
        url, token, _ = served_at(process)
        mcp_nb.connect("served", url, headers={"Authorization": f"Bearer {token}"})
        frame = mcp_nb.diff(tmp_path / "notebook.json", "served")
        doc = mcp_nb.snapshot("served")
    finally:
        process.terminate()
        process.wait(30)
        process.stderr.close()
    # The same tools; served over HTTP the kernel also offers completions and logging to its clients.
    assert frame[["kind", "rule", "breaking"]].values.tolist() == [["server", "capability-added", False]] * 2, frame[
        ["where", "why"]
    ]
    assert set(frame["where"]) == {"$.capabilities.completions", "$.capabilities.logging"}
    assert set(doc["tools"]) == {"get_author"} and doc["tools"]["get_author"]["annotations"] == {"readOnlyHint": True}
    assert token not in (tmp_path / "notebook.json").read_text()


def test_the_kernel_s_listings_are_what_its_session_carries():
    # The kernel's snapshot reads its MCPServer's list methods instead of the protocol (two thirds
    # of the cost on a thousand tools); both must give the same document.
    from mcp_nb.calling.surface import take

    bookshop()

    @mcp_nb.tool(destructive=True, open_world=True, idempotent=True)
    def order(title: str, copies: int = 1) -> Book:
        """Order copies of a book."""
        return {"title": title}

    eng = mcp_nb.engine()
    direct = eng.loop.run(take(eng.connection))
    through = eng.loop.run(take(eng.connection, through_session=True))
    assert direct == through and dump(direct) == dump(through)
    assert len(direct["tools"]) == 2 and direct["prompts"] and direct["templates"] and direct["resources"]


@FEW
@given(
    st.lists(
        st.sampled_from(["--mode", "2025-11-25", "2026-07-28", "auto", "--server", "kernel", "--concurrency", "2", "'", "#"]),
        max_size=5,
    )
)
def test_any_replay_line_with_eras_is_replayed_or_refused_in_one_line(shell, tmp_path_factory, words):
    folder = tmp_path_factory.mktemp("eras")
    (folder / "cases.json").write_text(
        json.dumps(
            [
                {
                    "id": "a",
                    "name": "echo",
                    "arguments": {"text": "hi"},
                    "expect": {"outcome": "result", "cause": "ok", "content": "hi"},
                }
            ]
        )
    )

    @mcp_nb.tool(read_only=True)
    def echo(text: str) -> str:
        return text

    try:
        report = shell.run_line_magic("mcp_replay", f"{folder / 'cases.json'} " + " ".join(words))
    except UsageError as err:
        assert "\n" not in str(err).strip()
    else:
        assert report.passed, repr(report)


@FEW
@given(st.text(alphabet=st.sampled_from("Ab: \t-=\\x00é"), max_size=12))
@example("0:é")  # found here: httpx raised on a value that is not ASCII, where connect now refuses it in one line
def test_any_header_given_to_mcp_nb_snapshot_is_refused_in_one_line_or_tried(tmp_path_factory, header):
    from mcp_nb.commands import main

    out = tmp_path_factory.mktemp("header") / "s.json"
    try:
        status = main(["snapshot", "--url", "http://127.0.0.1:9/mcp", "--header", header, "-o", str(out)])
    except SystemExit as stop:  # argparse's one line, status 2
        status = stop.code
    assert status in (1, 2) and not out.exists()  # nothing listens on port 9: never written


keywords = st.sampled_from(
    [
        "type",
        "properties",
        "required",
        "enum",
        "const",
        "minimum",
        "maxLength",
        "multipleOf",
        "pattern",
        "anyOf",
        "items",
        "additionalProperties",
        "$ref",
        "$defs",
        "default",
        "format",
        "uniqueItems",
        "title",
    ]
)
schema_values = st.recursive(
    json_values | st.sampled_from(["string", "integer", "number", "null", "#/$defs/A", 0, 2.5, -1]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keywords | st.sampled_from(["a", "b", "A"]), inner, max_size=4),
    max_leaves=12,
)


@FEW
@given(st.dictionaries(keywords, schema_values, max_size=5), st.dictionaries(keywords, schema_values, max_size=5), st.booleans())
def test_any_two_schemas_are_compared_without_raising_and_every_verdict_is_one_of_three(old, new, output):
    side = "outputSchema" if output else "inputSchema"
    before = {"mcp_nb_surface": 1, "tools": {"t": {side: old, "annotations": {"readOnlyHint": True}}}}
    after = {"mcp_nb_surface": 1, "tools": {"t": {side: new}}}
    frame = mcp_nb.diff(before, after)
    assert set(map(repr, frame["breaking"])) <= {"True", "False", "'unknown'"}
    assert (frame["why"].str.len() > 0).all() and frame["where"].str.startswith("$").all()
    assert mcp_nb.diff(before, before).empty
