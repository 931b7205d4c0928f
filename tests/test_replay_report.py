"""The replay report's HTML: the why column reads as written, diffs keep their indentation.

JupyterLab right-aligns a table's cells (light and dark themes alike), and a cell with no width
of its own is as narrow as the table can make it: a diff in the why column lost its indentation
and wrapped word by word. Every cell says how it aligns; the why column takes the room left,
keeps its lines as written (pre-wrapped), and a diff is monospace.
"""

import json
from html.parser import HTMLParser

import mcp_nb


class Cells(HTMLParser):
    """Each table cell's style, and the style of every element inside it with the text it holds."""

    def __init__(self):
        super().__init__()
        self.tables, self.rows, self.stack = [], [], []

    def handle_starttag(self, tag, attrs):
        style = dict(attrs).get("style", "") or ""
        if tag == "table":
            self.tables.append(style)
        if tag == "tr":
            self.rows.append([])
        if tag in ("td", "th"):
            self.rows[-1].append({"tag": tag, "style": style, "inside": [], "text": ""})
        elif self.rows and self.rows[-1] and self.stack and "td" in self.stack:
            self.rows[-1][-1]["inside"].append(style)
        self.stack.append(tag)

    def handle_endtag(self, tag):
        while self.stack and self.stack.pop() != tag:
            pass

    def handle_data(self, data):
        if self.rows and self.rows[-1] and "td" in self.stack:
            self.rows[-1][-1]["text"] += data


def declarations(style):
    return {part.strip() for part in style.split(";") if part.strip()}


def report_cells(tmp_path, shell):
    @mcp_nb.tool(read_only=True)
    def poem() -> str:
        return json.dumps({"title": "roses", "lines": ["roses are red", "violets are blue"]}, indent=2)

    @mcp_nb.tool(read_only=True)
    def price() -> str:
        return "9.99"

    mcp_nb.call("poem")
    mcp_nb.call("price")
    mcp_nb.history().to_cases(tmp_path / "cases.json")

    @mcp_nb.tool(read_only=True)
    def poem() -> str:  # noqa: F811 - the tool, changed
        return json.dumps({"title": "roses", "lines": ["roses are red", "violets are green"]}, indent=2)

    @mcp_nb.tool(read_only=True)
    def price() -> str:  # noqa: F811
        return "10.49"

    report = shell.run_line_magic("mcp_replay", str(tmp_path / "cases.json"))
    cells = Cells()
    cells.feed(report._repr_html_())
    body = [row for row in cells.rows if row and row[0]["tag"] == "td"]
    return cells, {row[1]["text"]: row for row in body}


def test_every_cell_of_the_report_is_left_aligned_at_the_top(tmp_path, shell):
    _, rows = report_cells(tmp_path, shell)
    assert set(rows) == {"poem-1", "price-1"}
    for row in rows.values():
        for cell in row:
            assert {"text-align:left", "vertical-align:top"} <= declarations(cell["style"]), cell["style"]


def test_a_diff_in_the_why_column_is_monospace_and_keeps_its_indentation(tmp_path, shell):
    cells, rows = report_cells(tmp_path, shell)
    why = rows["poem-1"][4]
    assert why["text"].splitlines()[:3] == ["content differs:", "--- expected", "+++ got"]
    assert '     "roses are red",' in why["text"].splitlines()  # the diff's own indentation, as written
    (held,) = why["inside"]
    looks = declarations(held)
    assert {"white-space:pre-wrap", "text-align:left"} <= looks
    assert any(look.startswith("font-family:") and "monospace" in look for look in looks)
    assert any(look.startswith("min-width:") for look in declarations(why["style"]))  # never squeezed to a word a line
    assert "width:100%" in declarations(cells.tables[0])  # the why column takes the room the others leave


def test_a_one_line_why_is_pre_wrapped_and_left_aligned_in_the_reports_own_font(tmp_path, shell):
    _, rows = report_cells(tmp_path, shell)
    why = rows["price-1"][4]
    assert why["text"] == "content: expected '9.99', got '10.49'"
    (held,) = why["inside"]
    looks = declarations(held)
    assert {"white-space:pre-wrap", "text-align:left"} <= looks
    assert not any("monospace" in look for look in looks)
