"""Long names in the panel's pickers are readable (issue 22: "the picker cuts long names with no tooltip").

A `<select>` cuts an option at its width, and a standard widget cannot give each option a
tooltip of its own. So the picker's column widens to fit its names (up to a limit), a name
too long for it is shortened in the middle (its start and its end stay, where long names
differ), each option's value is the full name, and the entry on screen is named in full
three ways: the picker's tooltip, the server picker's tooltip, and the header, which wraps
a long name instead of letting it run out of the panel.
"""

from __future__ import annotations

from pathlib import Path

import warm

import mcp_nb
from mcp_nb.widgets import show
from mcp_nb.widgets.picker import NAME_SHOWN, NBSP

LONG_TOOL = "summarize_the_quarterly_sales_report_for_every_region_and_product_line"
LONG_URI = "reports://quarterly/sales/by-region/by-product-line/{region}/{product_line}/summary"
LONG_PROMPT = "write_a_polite_reminder_to_a_customer_whose_invoice_is_overdue_by_months"
BOOKSHOP = warm.command(
    Path(__file__).parent.parent / "notebooks" / "servers" / "bookshop.py", "stdio"
)  # started warm (tests/warm.py)


def register_long_names() -> None:
    @mcp_nb.tool(name=LONG_TOOL)
    def summarize() -> str:
        return "ok"

    @mcp_nb.resource(LONG_URI)
    def report(region: str, product_line: str) -> str:
        return region

    @mcp_nb.prompt(name=LONG_PROMPT)
    def remind(customer: str) -> str:
        return customer

    @mcp_nb.tool()
    def ping() -> str:
        return "pong"


def test_every_entry_of_the_picker_holds_its_full_name_and_shows_both_ends_of_a_long_one():
    register_long_names()

    @mcp_nb.tool(name=LONG_TOOL.replace("line", "kind"))  # differs from LONG_TOOL in its last word only
    def twin() -> str:
        return "ok"

    panel = show()
    try:
        labels = {value: label for label, value in panel.picker.options}
        assert len(labels) == 5
        # The value of each option is its full (kind, name): the state names every entry in full.
        assert ("tool", LONG_TOOL) in labels and ("resource", LONG_URI) in labels and ("prompt", LONG_PROMPT) in labels
        assert labels[("tool", "ping")].endswith("ping")  # a short name is shown as it is
        for (_, key), label in labels.items():
            shown = label.split(NBSP)[-1]
            assert len(shown) <= NAME_SHOWN
            if len(key) > NAME_SHOWN:
                # A long name keeps its start and its end, where long names differ, around an ellipsis.
                head, tail = shown.split("…")
                assert key.startswith(head) and key.endswith(tail) and len(head) >= 18 and len(tail) >= 18
            else:
                assert shown == key
        assert len(set(labels.values())) == 5  # the twins read apart
    finally:
        panel.close()


def test_the_filter_finds_a_long_name_by_any_part_of_it():
    register_long_names()
    panel = show()
    try:
        panel.filter.value = "every_region"  # the middle of LONG_TOOL, which its label leaves out
        assert [value for _, value in panel.picker.options] == [("tool", LONG_TOOL)]
        panel.filter.value = "by-product-line"
        assert [value for _, value in panel.picker.options] == [("resource", LONG_URI)]
        panel.filter.value = "template"  # the kind column still filters
        assert [value for _, value in panel.picker.options] == [("resource", LONG_URI)]
    finally:
        panel.close()


def test_the_entry_on_screen_is_named_in_full_by_the_pickers_tooltip_and_its_header():
    register_long_names()
    panel = show()
    try:
        for kind, key, said in (
            ("tool", LONG_TOOL, "tool"),
            ("resource", LONG_URI, "template"),
            ("prompt", LONG_PROMPT, "prompt"),
        ):
            panel.select(kind, key)
            assert panel.picker.tooltip == f"{said} {key}"
            assert key in panel.header.value
            assert "overflow-wrap:anywhere" in panel.header.value  # a long name wraps in the header
        # Choosing in the picker itself does the same.
        panel.picker.value = ("tool", "ping")
        assert panel.picker.tooltip == "tool ping"
    finally:
        panel.close()


def test_with_nothing_registered_the_picker_has_no_tooltip():
    panel = show()
    try:
        assert panel.picker.options == () and panel.picker.tooltip in ("", None)
        register_long_names()
        assert panel.picker.tooltip.endswith(LONG_TOOL)
    finally:
        panel.close()


def test_the_pickers_column_widens_for_long_names_up_to_a_limit():
    panel = show()
    try:
        column = panel.picker_box.layout
        assert column.min_width == "250px" and column.width == "auto" and column.max_width == "45%"
        assert panel.picker.layout.width == "auto"
    finally:
        panel.close()


def test_the_server_picker_names_the_chosen_server_in_full():
    name = "the_bookshop_of_the_north_eastern_regional_library_network"
    panel = show()
    try:
        assert panel.servers.tooltip == "server: kernel (the in-kernel server)"
        mcp_nb.connect(name, BOOKSHOP)
        assert name in panel.servers.options
        panel.servers.value = name
        assert panel.servers.tooltip == f"server: {name}"
        mcp_nb.disconnect(name)
        assert panel.servers.tooltip == "server: kernel (the in-kernel server)"
    finally:
        panel.close()
