"""Every magic's options come from its argparse parser, and `%magic?` shows each of them.

The magics are split by domain (registering, calling, connecting, history and cases,
surfaces, serving, a model in the loop) and joined in `McpMagics`, which `%load_ext mcp_nb` registers and
`%config McpMagics` configures.
"""

from __future__ import annotations

import pytest
from IPython.core.magic import Magics

from mcp_nb.config import MAX_DEPTH
from mcp_nb.notebook.magics import MAGICS, McpMagics
from mcp_nb.notebook.options import actions, option_names

MCP_MAGICS = sorted(
    [("line", name) for name in McpMagics.magics["line"]] + [("cell", name) for name in McpMagics.magics["cell"]],
    key=lambda m: m[1],
)


def test_there_are_nineteen_magics_each_in_one_domain():
    assert len(MCP_MAGICS) == 19
    owners = {}
    for domain in MAGICS:
        assert issubclass(domain, Magics)
        for kind in ("line", "cell"):
            for name in domain.magics[kind]:
                assert name not in owners, f"%{name} is in {owners[name].__name__} and {domain.__name__}"
                owners[name] = domain
    assert sorted(owners) == sorted(name for _, name in MCP_MAGICS)


@pytest.mark.parametrize("kind, name", MCP_MAGICS, ids=[name for _, name in MCP_MAGICS])
def test_every_option_the_parser_knows_is_in_the_magics_help(shell, capsys, kind, name):
    parser = getattr(McpMagics, name).parser  # every magic has one: its options are argparse's
    capsys.readouterr()
    result = shell.run_cell(f"{'%%' if kind == 'cell' else '%'}{name}?")
    assert result.success, result.error_in_exec
    shown = capsys.readouterr().out
    known = option_names(parser)
    for option in known:
        assert option in shown, f"%{name}? does not show {option}"
    for action in actions(parser):
        if not action.option_strings:
            assert (action.metavar or action.dest) in shown, f"%{name}? does not show {action.metavar or action.dest}"
        if action.help:
            assert action.help.replace("%%", "%").split()[0] in shown


def test_the_settings_keep_their_names_and_their_link_to_configure(shell):
    import mcp_nb

    magics = [c for c in shell.configurables if type(c).__name__ == "McpMagics"]
    assert len(magics) == 1 and isinstance(magics[0], McpMagics)
    assert {
        "timeout",
        "history_file",
        "history_rows",
        "history_window",
        "max_depth",
        "show_server_logs",
        "stable_output",
        "elicit",
    } <= set(magics[0].trait_names(config=True))
    try:
        shell.run_line_magic("config", "McpMagics.max_depth = 4")
        assert mcp_nb.settings.max_depth == 4
        mcp_nb.configure(max_depth=6)
        assert magics[0].max_depth == 6
    finally:
        mcp_nb.configure(max_depth=MAX_DEPTH)
