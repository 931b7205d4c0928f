"""The panel's part: the Changes tab (each entry's changes since its first version in the session)
and the History tab's comparison of two pinned calls."""

import html
import re

import mcp_nb


def text(markup: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).split())


def test_the_changes_tab_shows_each_tools_changes_since_its_first_version_breaking_first(shell):
    panel = mcp_nb.panel()
    try:
        shell.run_cell("%%mcp_tool --read-only\ndef price(title: str) -> float:\n    return 1.0")
        shell.run_cell("%%mcp_tool --read-only\ndef stock(title: str) -> int:\n    return 1")
        panel.tabs.selected_index = 2
        assert panel.tabs.titles[2] == "Changes"
        assert "Nothing changed for clients" in text(panel.changes_tab.view.value)
        # A second and a third version of price; stock gets a better description.
        shell.run_cell("%%mcp_tool --read-only\ndef price(title: str, currency: str = 'EUR') -> float:\n    return 1.0")
        shell.run_cell("%%mcp_tool\ndef price(title: str, currency: str) -> float:\n    return 1.0")
        shell.run_cell("%%mcp_tool --read-only\ndef stock(title: str) -> int:\n    '''How many are left.'''\n    return 1")
        shown = text(panel.changes_tab.view.value)
        assert shown.index("tool price since its first version") < shown.index("tool stock since its first version")
        assert "new required parameter `currency`" in shown and "readOnlyHint true → false" in shown
        assert "3 changes: 2 breaking, 1 compatible" in shown or "2 changes: 2 breaking" in shown
        assert "description changed" in shown
        # While hidden it waits; shown again, it is up to date.
        panel.tabs.selected_index = 0
        mcp_nb.remove("price")
        panel.tabs.selected_index = 2
        assert "tool price" not in text(panel.changes_tab.view.value)
    finally:
        panel.close()


def test_the_changes_tab_of_an_outside_server_points_to_snapshots():
    panel = mcp_nb.panel()
    try:
        from mcp_nb.widgets.changes_tab import changes_page

        said = text(changes_page(mcp_nb.engine(), "everything"))
        assert "mcp_nb.snapshot('everything', path='before.json')" in said
    finally:
        panel.close()


def test_two_pinned_calls_of_one_tool_are_compared_by_structure():
    @mcp_nb.tool(read_only=True)
    def price(title: str):  # no return annotation: no output schema, the JSON is the text
        return '{"title": "%s", "price": %s, "tags": ["sf"]}' % (title, "9.99" if title == "Dune" else "5")

    @mcp_nb.tool(read_only=True)
    def other() -> str:
        return ""

    panel = mcp_nb.panel()
    try:
        tab = panel.history_tab
        dune, emma, again, else_ = (
            mcp_nb.call(*call)
            for call in (("price", {"title": "Dune"}), ("price", {"title": "Emma"}), ("price", {"title": "Dune"}), ("other",))
        )
        tab.refresh()
        assert tab.compare_button.disabled
        tab.pin(dune.call_id)
        assert tab.compare_button.disabled  # one pinned call: nothing to compare it with
        tab.pin(else_.call_id)
        assert tab.compare_button.disabled  # another tool's call
        tab.pin(else_.call_id)
        tab.pin(emma.call_id)
        assert not tab.compare_button.disabled
        tab.compare_button.click()
        shown = text(tab.comparison.value)
        assert f"tool price : call #{dune.call_id} against call #{emma.call_id} : 3 differences" in shown
        assert "arguments $.title" in shown and "content $.title" in shown and "content $.price" in shown
        assert "content $.tags" not in shown  # the same list: no difference
        tab.pin(emma.call_id)
        tab.pin(again.call_id)
        tab.compare_pinned()
        assert "the same arguments and the same answer" in text(tab.comparison.value)
    finally:
        panel.close()
