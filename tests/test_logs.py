"""Server logs go into the call records, not into cell output; a switch shows them live."""

import logging
import subprocess
import sys

import mcp_nb


def test_nothing_leaks_to_stderr_by_default():
    # A fresh interpreter, as a kernel is: MCPServer() would otherwise basicConfig the root logger.
    code = (
        "import mcp_nb\n"
        "@mcp_nb.tool()\n"
        "def boom() -> str:\n"
        "    raise KeyError('x')\n"
        "o = mcp_nb.call('boom')\n"
        "print(o.cause, len(o.server_logs))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "crash 1"
    assert done.stderr == ""


def test_live_switch_prints_records(capfd):
    @mcp_nb.tool()
    def boom() -> str:
        raise KeyError("x")

    mcp_nb.call("boom")
    assert "raised an unexpected exception" not in capfd.readouterr().err
    mcp_nb.configure(show_server_logs=True)
    o = mcp_nb.call("boom")
    err = capfd.readouterr().err
    assert "[mcp server] ERROR mcp.server.mcpserver.server: Tool 'boom' raised an unexpected exception" in err
    assert len(o.server_logs) == 1  # still captured
    mcp_nb.configure(show_server_logs=False)
    mcp_nb.call("boom")
    assert "raised" not in capfd.readouterr().err


def test_a_tools_own_log_records_are_captured():
    @mcp_nb.tool()
    def chatty(n: int) -> int:
        logging.getLogger("bookshop").warning("looking up %d", n)
        return n

    o = mcp_nb.call("chatty", {"n": 3})
    assert [(r.level, r.logger, r.message) for r in o.server_logs] == [("WARNING", "bookshop", "looking up 3")]
    other = mcp_nb.call("chatty", {"n": 4})
    assert [r.message for r in other.server_logs] == ["looking up 4"]  # each call only its own
