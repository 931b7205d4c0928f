"""Structured results: the output schema on the registration card, records as a DataFrame, and a
result that breaks its own schema classified as `invalid_output`."""

import re
from pathlib import Path

import pytest
import warm
from pydantic import BaseModel, ValidationError

import mcp_nb
from mcp_nb.records.structured import NotTabular

SHELF = warm.command(Path(__file__).parent / "servers" / "shelf.py")  # started warm (tests/warm.py)


class Book(BaseModel):
    title: str
    year: int


def register():
    @mcp_nb.tool()
    def books() -> list[Book]:
        return [Book(title="Dune", year=1965), Book(title="Emma", year=1815)]

    @mcp_nb.tool()
    def one_book() -> Book:
        return Book(title="Dune", year=1965)

    @mcp_nb.tool()
    def bad_books() -> list[Book]:
        return [{"title": "Dune", "year": "soon"}]

    @mcp_nb.tool()
    def checks_input(year: str) -> str:
        Book(title="x", year=year)  # a ValidationError of the tool's own making: a crash, not its output
        return "fine"


def test_the_registration_card_shows_what_the_tool_returns():
    register()
    card = mcp_nb.engine().registry.get("tool", "books")
    text = repr(card)
    assert "returns (output schema):\n    result: array[Book]\n    Book: title string, year integer" in text
    html = card._repr_html_()
    assert (
        "<th" in html and ">returns</th>" in html and "output schema</summary>" in html and "title string, year integer" in html
    )


def test_a_tool_returning_one_plain_value_shows_no_returns(shell):
    result = shell.run_cell("%%mcp_tool\ndef shout(text: str) -> str:\n    return text.upper()")
    assert result.success
    assert "returns" not in repr(mcp_nb.engine().registry.get("tool", "shout"))


def test_a_list_of_records_becomes_a_frame_from_the_outcome_and_from_the_history():
    register()
    outcome = mcp_nb.call("books")
    frame = outcome.frame()
    assert list(frame.columns) == ["title", "year"] and frame["year"].tolist() == [1965, 1815]
    mcp_nb.call("one_book")
    assert mcp_nb.history().result_frame(outcome.call_id).equals(frame)
    assert mcp_nb.history().result_frame(outcome.call_id, key="result").equals(frame)


@pytest.mark.parametrize(
    "make, said",
    [
        (lambda: mcp_nb.call("one_book").frame(), "not a list of records: an object with fields title, year"),
        (lambda: mcp_nb.call("books").frame(key="shelf"), "has no field 'shelf' (it has: result)"),
        (lambda: mcp_nb.call("nope").frame(), "ended as tool_error (unknown_tool): there is no result to tabulate"),
        (lambda: mcp_nb.history().result_frame(), "the history is empty"),
        (lambda: mcp_nb.call("books") and mcp_nb.history().result_frame(123), "no call #123"),
    ],
)
def test_what_is_not_a_table_says_so_in_one_line(make, said):
    register()
    with pytest.raises(NotTabular, match=re.escape(said)):
        make()
    assert issubclass(NotTabular, ValueError)


def test_plain_records_and_mixed_lists():
    from mcp_nb.records.structured import records

    assert records([{"a": 1}]) == [{"a": 1}]
    with pytest.raises(NotTabular, match="2 lists of records \\(a, b\\): pick one with key="):
        records({"a": [{"x": 1}], "b": [{"y": 2}]})
    with pytest.raises(NotTabular, match="it is a list of int, str"):
        records({"result": [1, "a"]}, key="result")
    with pytest.raises(NotTabular, match="no structured result"):
        records(None)


def test_a_return_that_breaks_the_output_schema_is_invalid_output_not_a_crash():
    register()
    outcome = mcp_nb.call("bad_books")
    assert (outcome.outcome, outcome.cause) == ("tool_error", "invalid_output")
    assert any(kind == "ValidationError" for log in outcome.server_logs for kind, _ in log.exceptions)
    own = mcp_nb.call("checks_input", {"year": "soon"})
    assert (own.outcome, own.cause) == ("tool_error", "crash")  # the handler raised it: a crash
    assert "invalid_output" in mcp_nb.CAUSES and "output schema" in mcp_nb.CAUSE_DOC["invalid_output"]
    with pytest.raises(ValidationError):
        Book(title="x", year="soon")


def test_an_outside_server_that_breaks_its_declared_schema_is_refused_by_the_client():
    mcp_nb.connect("shelf", SHELF)
    good = mcp_nb.call("books", server="shelf")
    assert good.ok and good.frame()["title"].tolist() == ["Dune", "Emma"]
    broken = mcp_nb.call("bad_books", server="shelf")
    assert (broken.outcome, broken.cause) == ("protocol_error", "invalid_output")
    assert "Invalid structured content returned by tool bad_books" in broken.message
    missing = mcp_nb.call("no_structure", server="shelf")
    assert (missing.outcome, missing.cause) == ("protocol_error", "invalid_output")
    assert mcp_nb.history().to_frame()["cause"].tolist() == ["ok", "invalid_output", "invalid_output"]


def test_the_magic_card_of_an_outside_call_is_the_same(shell):
    mcp_nb.connect("shelf", SHELF)
    outcome = shell.run_line_magic("mcp_call", "bad_books --server shelf")
    assert "protocol_error (invalid_output)" in repr(outcome)
