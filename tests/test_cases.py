"""Regression cases: the history saved as a cases file, edited, replayed and judged."""

import json
import threading
import time
from pathlib import Path

import pytest
import warm
from helpers import STARTS_WITHIN
from IPython.core.error import UsageError
from mcp import MCPError
from mcp.server.mcpserver.exceptions import ToolError

import mcp_nb
from mcp_nb.records.cases import CasesError, load

ROOT = Path(__file__).resolve().parent.parent
BOOKSHOP = warm.command(ROOT / "notebooks" / "servers" / "bookshop.py", "stdio")  # started warm (tests/warm.py)
CATALOG = {"Dune": "Frank Herbert", "Neuromancer": "William Gibson"}


def bookshop_tools(authors=CATALOG, code=-32050):
    """The bookshop server's get_author, registered in the kernel (the same answers, the same errors)."""

    @mcp_nb.tool(read_only=True)
    def get_author(title: str) -> str:
        if title == "tool-error":
            raise ToolError(f"No book titled {title!r} in the catalog.")
        if title == "mcp-error":
            raise MCPError(code=code, message="catalog offline", data={"title": title})
        return authors[title]


def explore():
    """The calls a user makes while exploring: a result, a tool error, a protocol error, a timeout."""
    bookshop_tools()

    @mcp_nb.tool(read_only=True)
    def price(title: str) -> dict:
        return {"title": title, "price": 12.49, "tags": ["sf", "classic"]}

    @mcp_nb.tool(read_only=True)
    def slow(seconds: float) -> str:
        time.sleep(seconds)
        return "done"

    assert mcp_nb.call("get_author", {"title": "Dune"}).outcome == "result"
    assert mcp_nb.call("get_author", {"title": "tool-error"}).outcome == "tool_error"
    assert mcp_nb.call("get_author", {"title": "mcp-error"}).outcome == "protocol_error"
    assert mcp_nb.call("price", {"title": "Dune"}).outcome == "result"
    assert mcp_nb.call("slow", {"seconds": 1.0}, timeout=0.2).outcome == "timeout"


def by_case(frame):
    return frame.set_index("case")


# -- saving ---------------------------------------------------------------------------------


def test_every_call_becomes_a_case_with_its_expectation(tmp_path):
    explore()
    path = tmp_path / "cases.json"
    cases = mcp_nb.history().to_cases(path)
    document = json.loads(path.read_text())
    assert document["mcp_nb_cases"] == 1
    saved = {c["id"]: c for c in document["cases"]}
    assert list(saved) == ["get_author-1", "get_author-2", "get_author-3", "price-1", "slow-1"]
    assert [c.id for c in cases] == list(saved)
    assert saved["get_author-1"] == {
        "id": "get_author-1",
        "target": "tool",
        "name": "get_author",
        "arguments": {"title": "Dune"},
        "server": "kernel",
        "timeout": 30.0,
        "expect": {"outcome": "result", "cause": "ok", "content": "Frank Herbert"},
    }
    assert saved["get_author-2"]["expect"] == {
        "outcome": "tool_error",
        "cause": "raised",
        "content": "Error executing tool get_author: No book titled 'tool-error' in the catalog.",
    }
    assert saved["get_author-3"]["expect"] == {"outcome": "protocol_error", "cause": "mcp_error", "code": -32050}
    assert saved["slow-1"]["expect"] == {"outcome": "timeout", "cause": "deadline", "code": -32001}
    assert saved["slow-1"]["timeout"] == 0.2
    assert load(path) == cases  # what is written reads back the same


def test_a_retried_call_is_one_case_by_its_final_attempt(tmp_path):
    answered = []

    @mcp_nb.tool(idempotent=True)
    def flaky() -> str:
        answered.append(1)
        if len(answered) == 1:
            time.sleep(STARTS_WITHIN + 0.5)  # the first attempt misses its deadline
        return "fine"

    # The second attempt must answer within its deadline: one a loaded machine starts it well within
    outcome = mcp_nb.call("flaky", timeout=STARTS_WITHIN, retry=mcp_nb.Retry(retries=2, backoff=0.01))
    assert (outcome.outcome, outcome.attempt) == ("result", 2)
    assert len(mcp_nb.history()) == 2
    (case,) = mcp_nb.history().to_cases(tmp_path / "c.json")
    assert (case.expect.outcome, case.retries) == ("result", 1)
    assert by_case(mcp_nb.replay(tmp_path / "c.json")).loc["flaky-1", "passed"]


def test_choosing_calls_by_last_name_and_server(tmp_path, shell):
    explore()
    assert [c.id for c in mcp_nb.history().to_cases(tmp_path / "a.json", last=2)] == ["price-1", "slow-1"]
    assert [c.id for c in mcp_nb.history().to_cases(tmp_path / "b.json", name="get_*")] == [
        "get_author-1",
        "get_author-2",
        "get_author-3",
    ]
    assert mcp_nb.history().to_cases(tmp_path / "c.json", server="elsewhere") == []
    shell.run_line_magic("mcp_save_cases", f"{tmp_path / 'd.json'} --last 1 --name 'get_*'")
    assert [c.id for c in load(tmp_path / "d.json")] == ["get_author-1"]
    for line, said in [
        (f"{tmp_path / 'e.json'} --last 0", "last must be a whole number >= 1, got 0"),
        (f"{tmp_path / 'missing' / 'e.json'}", "cannot write"),
    ]:
        with pytest.raises(UsageError, match=said) as caught:
            shell.run_line_magic("mcp_save_cases", line)
        assert "\n" not in str(caught.value)
    assert not (tmp_path / "e.json").exists()


# -- replaying ------------------------------------------------------------------------------


def test_replay_passes_then_names_what_changed_in_the_tool(tmp_path):
    explore()
    path = tmp_path / "cases.json"
    mcp_nb.history().to_cases(path)
    recorded = len(mcp_nb.history())
    green = mcp_nb.replay(path)
    assert green["passed"].all(), green[["case", "reason"]]
    assert list(green.columns[:8]) == ["case", "target", "name", "server", "passed", "expected", "got", "reason"]
    assert len(mcp_nb.history()) == recorded + 5  # replayed calls are recorded like any other

    bookshop_tools(authors={"Dune": "F. Herbert"}, code=-32051)  # the tool changed
    red = by_case(mcp_nb.replay(path))
    assert not red.loc["get_author-1", "passed"]
    assert red.loc["get_author-1", "reason"] == "content: expected 'Frank Herbert', got 'F. Herbert'"
    assert red.loc["get_author-3", "reason"] == "code: expected -32050, got -32051"
    assert red.loc["get_author-2", "passed"] and red.loc["slow-1", "passed"] and red.loc["price-1", "passed"]


def test_a_timeout_case_fails_when_the_tool_became_fast(tmp_path):
    explore()
    path = tmp_path / "cases.json"
    mcp_nb.history().to_cases(path, name="slow")

    @mcp_nb.tool(read_only=True)
    def slow(seconds: float) -> str:
        return "done"

    (row,) = mcp_nb.replay(path).itertuples()
    assert (row.passed, row.expected, row.got) == (False, "timeout (deadline)", "result (ok)")
    assert row.reason == "expected timeout (deadline), got result (ok): done"


def test_partial_checks_a_json_path_a_regex_and_a_tolerance(tmp_path):
    explore()
    path = tmp_path / "cases.json"
    mcp_nb.history().to_cases(path, name="price")
    document = json.loads(path.read_text())
    (case,) = document["cases"]
    del case["expect"]["content"]  # prices move: check what matters, as a user edits the file
    case["expect"]["checks"] = [
        {"path": "$.price", "approx": 12.5, "tolerance": 0.05},
        {"path": "$.tags[0]", "equals": "sf"},
        {"path": "$['title']", "matches": "^Du"},
        {"matches": '"price": 12'},
    ]
    path.write_text(json.dumps(document))
    assert mcp_nb.replay(path)["passed"].all()

    @mcp_nb.tool(read_only=True)
    def price(title: str) -> dict:
        return {"title": title.lower(), "price": 13.0, "tags": []}

    (row,) = mcp_nb.replay(path).itertuples()
    assert not row.passed
    assert row.reason.split("; ") == [
        "$.price ≈ 12.5 ± 0.05: got 13.0",
        "$.tags[0]: not in the result",
        "$['title'] matches /^Du/: got 'dune'",
        'content matches /"price": 12/: got \'{ "title": "dune", "price": 13.0, "tags": [] }\'',
    ]


@pytest.mark.parametrize(
    ("sent", "expected", "passes"),
    [
        (1, True, False),
        (0, False, False),
        (True, 1, False),
        (False, 0, False),
        (1, 1.0, True),
        ([1, True], [1, 1], False),
        ({"a": [0]}, {"a": [False]}, False),
        ({"a": 2.0}, {"a": 2}, True),
        (None, False, False),
        ("1", 1, False),
    ],
)
def test_equals_is_json_equality_true_is_not_1_and_false_is_not_0(tmp_path, sent, expected, passes):
    @mcp_nb.tool(read_only=True)
    def give() -> dict:
        return {"value": sent}

    mcp_nb.call("give")
    path = tmp_path / "cases.json"
    mcp_nb.history().to_cases(path)
    document = json.loads(path.read_text())
    expect = document["cases"][0]["expect"]
    expect.pop("content", None)
    expect.pop("structured", None)
    expect["checks"] = [{"path": "$.value", "equals": expected}]
    path.write_text(json.dumps(document))
    (row,) = mcp_nb.replay(path).itertuples()
    assert row.passed is passes, row.reason


def test_a_changed_multi_line_content_reads_as_a_diff(tmp_path):
    @mcp_nb.tool(read_only=True)
    def poem() -> str:
        return "roses are red\nviolets are blue\nsugar is sweet"

    mcp_nb.call("poem")
    mcp_nb.history().to_cases(tmp_path / "c.json")

    @mcp_nb.tool(read_only=True)
    def poem() -> str:  # noqa: F811 - the tool, changed
        return "roses are red\nviolets are green\nsugar is sweet"

    (row,) = mcp_nb.replay(tmp_path / "c.json").itertuples()
    assert row.reason.splitlines() == [
        "content differs:",
        "--- expected",
        "+++ got",
        "@@ -1,3 +1,3 @@",
        " roses are red",
        "-violets are blue",
        "+violets are green",
        " sugar is sweet",
    ]


def test_tools_that_may_have_side_effects_keep_the_files_order_while_the_rest_overlap(tmp_path):
    seen, lock = [], threading.Lock()
    flight = {"now": 0, "most": 0}

    @mcp_nb.tool()
    def append(n: int) -> int:  # declares no hints: the order of its calls may matter
        time.sleep(0.005 * (12 - n))  # the earlier, the slower: calls that overlapped would end out of order
        seen.append(n)
        return n

    @mcp_nb.tool(read_only=True)
    def look(n: int) -> int:
        with lock:
            flight["now"] += 1
            flight["most"] = max(flight["most"], flight["now"])
        time.sleep(0.05)
        with lock:
            flight["now"] -= 1
        return n

    for n in range(12):
        mcp_nb.call("append", {"n": n})
        mcp_nb.call("look", {"n": n})
    path = tmp_path / "c.json"
    mcp_nb.history().to_cases(path)
    seen.clear()
    flight["most"] = 0
    frame = mcp_nb.replay(path, concurrency=6)
    assert frame["passed"].all()
    assert seen == list(range(12))
    assert flight["most"] > 1  # the read-only calls did overlap (a count, not a time)


def test_the_same_file_against_the_kernel_and_a_connected_server(tmp_path):
    bookshop_tools()
    for title in ("Dune", "Neuromancer", "tool-error", "mcp-error"):
        mcp_nb.call("get_author", {"title": title})
    path = tmp_path / "cases.json"
    mcp_nb.history().to_cases(path)
    assert mcp_nb.replay(path)["passed"].all()

    mcp_nb.connect("books", BOOKSHOP)
    remote = mcp_nb.replay(path, "books")
    assert remote["passed"].all(), remote[["case", "got", "reason"]]
    assert set(remote["server"]) == {"books"}

    started = mcp_nb.replay(path, connect=BOOKSHOP)  # a server started for the replay, then closed
    assert started["passed"].all() and set(started["server"]) == {"replay"}
    assert "replay" not in mcp_nb.engine().connections
    assert set(mcp_nb.history().to_frame()["server"].astype(str)) == {"kernel", "books", "replay"}


def test_a_case_the_engine_refuses_fails_the_replay_before_anything_is_sent(tmp_path):
    bookshop_tools()
    mcp_nb.call("get_author", {"title": "Dune"})
    path = tmp_path / "c.json"
    mcp_nb.history().to_cases(path)
    before = len(mcp_nb.history())
    with pytest.raises(ValueError, match="^no server named 'nowhere' is connected"):
        mcp_nb.replay(path, "nowhere")
    document = json.loads(path.read_text())
    document["cases"][0]["server"] = "gone"
    path.write_text(json.dumps(document))
    with pytest.raises(CasesError, match="case 'get_author-1': no server named 'gone'"):
        mcp_nb.replay(path)
    assert len(mcp_nb.history()) == before


# -- malformed files ------------------------------------------------------------------------

GOOD = {"id": "ok-1", "name": "get_author", "arguments": {"title": "Dune"}, "expect": {"outcome": "result", "cause": "ok"}}


def with_case(**changes):
    case = json.loads(json.dumps(GOOD))
    for key, value in changes.items():
        if key.startswith("expect_"):
            case["expect"][key[len("expect_") :]] = value
        elif value is None:
            del case[key]
        else:
            case[key] = value
    return {"mcp_nb_cases": 1, "cases": [GOOD, case]}


MALFORMED = [
    ("{not json", "is not JSON: Expecting property name enclosed in double quotes at line 1, column 2"),
    ({"cases": []}, "field mcp_nb_cases: Field required"),
    ({"mcp_nb_cases": 2, "cases": []}, "field mcp_nb_cases: Input should be 1"),
    (with_case(id="b", expect=None), "case 'b' (number 2): field expect: Field required"),
    (
        with_case(id="b", expect_outcome="fine"),
        "case 'b' (number 2): field expect.outcome: Input should be 'result', 'tool_error'",
    ),
    (with_case(id="b", expect_cause="oops"), "case 'b' (number 2): field expect.cause: Input should be 'ok'"),
    (with_case(id="b", timeout=0), "case 'b' (number 2): field timeout: Input should be greater than 0"),
    (with_case(id="b", arguments=[1]), "case 'b' (number 2): field arguments: Input should be a valid dictionary"),
    (with_case(id="b", colour="red"), "case 'b' (number 2): field colour: Extra inputs are not permitted"),
    (with_case(id=None), "case number 2: field id: Field required"),
    (with_case(id="ok-1"), "case 'ok-1' (number 2): field id: the same id as case number 1"),
    (
        with_case(id="b", expect_checks=[{"path": "$.x", "equals": 1, "matches": "x"}]),
        "case 'b' (number 2): field expect.checks[0]: a check has exactly one of equals, matches or approx (this one has equals, matches)",
    ),
    (
        with_case(id="b", expect_checks=[{"matches": "("}]),
        "case 'b' (number 2): field expect.checks[0].matches: not a regular expression",
    ),
    (
        with_case(id="b", expect_checks=[{"path": "price", "equals": 1}]),
        "case 'b' (number 2): field expect.checks[0].path: a JSON path starts with $",
    ),
    (
        with_case(id="b", expect_checks=[{"path": "$.a", "equals": 1, "tolerance": 1}]),
        "field expect.checks[0]: tolerance goes with approx",
    ),
    # A check that no value can pass is refused, not replayed as a regression for ever.
    (
        with_case(id="b", expect_checks=[{"path": "$.a", "approx": float("nan")}]),
        "field expect.checks[0].approx: Input should be a finite number",
    ),
    (
        with_case(id="b", expect_checks=[{"path": "$.a", "approx": 1, "tolerance": float("inf")}]),
        "field expect.checks[0].tolerance: Input should be a finite number",
    ),
]


@pytest.mark.parametrize("content,said", MALFORMED, ids=[said[:40] for _, said in MALFORMED])
def test_a_malformed_file_is_refused_naming_the_case_and_the_field(tmp_path, shell, content, said):
    path = tmp_path / "cases.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(CasesError) as caught:
        load(path)
    message = str(caught.value)
    assert message.startswith(str(path)) and said in message and "\n" not in message
    with pytest.raises(UsageError) as caught:
        shell.run_line_magic("mcp_replay", str(path))
    assert said in str(caught.value) and "\n" not in str(caught.value)
    assert len(mcp_nb.history()) == 0


# -- the magics and the report ---------------------------------------------------------------


def test_the_magics_save_and_replay_and_the_report_shows_the_failures_first(tmp_path, shell, capsys):
    explore()
    path = tmp_path / "cases.json"
    shell.run_line_magic("mcp_save_cases", str(path))
    assert capsys.readouterr().out.strip() == f"saved 5 cases to {path}"
    bookshop_tools(authors={"Dune": "F. Herbert"})
    report = shell.run_line_magic("mcp_replay", str(path))
    assert not report.passed
    assert len(report.frame) == 5
    text = repr(report)
    assert text.splitlines()[:3] == [
        "Replay: 5 cases: 4 passed, 1 failed",
        "  FAIL  get_author-1  result (ok)  got result (ok)",
        "        content: expected 'Frank Herbert', got 'F. Herbert'",
    ]
    page = report._repr_html_()
    from mcp_nb.views.theme import ERROR, INKS

    assert ERROR.plain in page and INKS["result"].plain in page
    assert "4 passed, 1 failed" in page and "F. Herbert" in page
    assert " ms" not in page and " ms" not in text  # no durations: a report reads the same every run
    with pytest.raises(UsageError, match="no server named 'x'"):
        shell.run_line_magic("mcp_replay", f"{path} --server x")
    with pytest.raises(UsageError, match="concurrency must be a whole number >= 1"):
        shell.run_line_magic("mcp_replay", f"{path} --concurrency 0")


def test_an_outside_clients_calls_are_cases_replayed_from_the_kernel(tmp_path):
    import asyncio

    from outside import client

    bookshop_tools()
    handle = mcp_nb.serve()

    async def outside():
        async with client(handle.url, handle.token) as session:
            await session.call_tool("get_author", {"title": "Dune"})
            await session.call_tool("get_author", {"title": "tool-error"})

    asyncio.run(outside())
    handle.stop()
    assert set(mcp_nb.history().to_frame()["via"].astype(str)) == {"http"}
    cases = mcp_nb.history().to_cases(tmp_path / "c.json")
    assert [(c.id, c.expect.outcome, c.timeout) for c in cases] == [
        ("get_author-1", "result", None),
        ("get_author-2", "tool_error", None),
    ]
    frame = mcp_nb.replay(tmp_path / "c.json")
    assert frame["passed"].all(), frame[["case", "reason"]]


def test_resource_reads_and_prompts_are_cases_too(tmp_path):
    @mcp_nb.resource("books://{title}")
    def book(title: str) -> str:
        return f"the book {title}"

    @mcp_nb.prompt()
    def review(title: str) -> str:
        return f"Review {title}."

    mcp_nb.read("books://Dune")
    mcp_nb.read("nothing://x")
    mcp_nb.get_prompt("review", {"title": "Dune"})
    cases = mcp_nb.history().to_cases(tmp_path / "c.json")
    assert [(c.id, c.target, c.expect.outcome, c.expect.cause) for c in cases] == [
        ("books://Dune-1", "resource", "result", "ok"),
        ("nothing://x-1", "resource", "protocol_error", "not_found"),
        ("review-1", "prompt", "result", "ok"),
    ]
    assert mcp_nb.replay(tmp_path / "c.json")["passed"].all()

    @mcp_nb.prompt()
    def review(title: str) -> str:  # noqa: F811 - the prompt, changed
        return f"Review {title} in one line."

    frame = by_case(mcp_nb.replay(tmp_path / "c.json"))
    assert frame.loc["review-1", "reason"] == "content: expected 'user: Review Dune.', got 'user: Review Dune in one line.'"
