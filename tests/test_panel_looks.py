"""How the panel and the registry read: every column visible, nothing shown as NaN, one theme."""

from __future__ import annotations

import re
from pathlib import Path

from helpers import wait_until

import mcp_nb
from mcp_nb.views import theme
from mcp_nb.widgets import show

PACKAGE = Path(mcp_nb.__file__).parent


def test_the_history_list_puts_the_duration_before_the_name_and_arguments():
    @mcp_nb.tool()
    def tag(labels: list[str], note: str = "") -> str:
        return "tagged"

    @mcp_nb.tool()
    def ping() -> str:
        return "pong"

    mcp_nb.call("tag", {"labels": ["a-rather-long-label"] * 6, "note": "and a long note " * 4})
    mcp_nb.call("ping")
    panel = show()
    panel.tabs.selected_index = 1
    assert wait_until(lambda: len(panel.history_tab.calls.options) == 2)
    labels = [label.replace("\u00a0", " ") for label, _ in panel.history_tab.calls.options]
    # The duration sits at the same column in every row, before the variable-length part,
    # so a narrow list cuts off the end of the arguments, never the duration.
    ends = {label.index(" ms") for label in labels}
    assert len(ends) == 1
    for label, name in zip(labels, ("ping", "tag")):
        assert label.index(" ms") < label.index(name)
    panel.close()


def test_registered_says_nothing_as_an_empty_string_never_nan():
    @mcp_nb.tool()
    def bare() -> str:
        return "x"

    @mcp_nb.tool(title="Look up", read_only=True)
    def described(title: str) -> str:
        """Find a book."""
        return title

    @mcp_nb.resource("books://catalog")
    def catalog() -> str:
        return "Dune"

    @mcp_nb.prompt()
    def review(title: str) -> str:
        return title

    frame = mcp_nb.registered()
    assert not frame.isna().any().any(), frame
    assert "NaN" not in frame.to_string() and "NaN" not in frame.to_html()
    rows = frame.set_index("name").to_dict("index")
    assert rows["bare"]["annotations"] == rows["bare"]["parameters"] == rows["bare"]["uri"] == ""
    assert rows["described"]["annotations"] == "readOnlyHint" and rows["described"]["title"] == "Look up"
    assert rows["catalog"]["uri"] == "books://catalog" and rows["review"]["faults"] == ""


def test_the_theme_is_defined_once():
    # Every colour, line and font of the views is written in views/theme.py; the panel's modules
    # only put its declarations together.
    literal = re.compile(r"#[0-9a-fA-F]{3,8}\b|rgba?\(|var\(--|color-mix\(|font-family:")
    for path in PACKAGE.rglob("*.py"):
        if path.relative_to(PACKAGE).as_posix() != "views/theme.py":
            found = literal.findall(path.read_text())
            assert not found, (path.relative_to(PACKAGE), found)
    assert theme.MUTED and theme.BORDER and theme.SURFACE and theme.MONO and theme.ERROR.text
