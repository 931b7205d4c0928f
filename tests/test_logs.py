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


# -- the kernel's logging belongs to the user ------------------------------------------------------

USER_LOGGING = r"""
import logging
import sys
from IPython.core.interactiveshell import InteractiveShell
sh = InteractiveShell.instance()
if sys.argv[1] == "mcp_nb":
    assert sh.run_line_magic("load_ext", "mcp_nb") is None
    sh.run_cell("%%mcp_tool\ndef boom() -> str:\n    raise KeyError('x')\n")
    sh.run_cell("import mcp_nb, sys; o = mcp_nb.call('boom'); print('call:', o.cause, file=sys.stderr)")
for source in [
    "import logging; logging.getLogger('user').warning('a warning before any configuration')",
    "logging.getLogger('user').info('an info line nobody asked for')",
    "logging.basicConfig(level=logging.INFO, format='%(levelname)s %(name)s: %(message)s')",
    "logging.getLogger('user').info('an info line after basicConfig')",
    "logging.getLogger('user').debug('a debug line below the level')",
    "logging.warning('a root warning')",
]:
    assert sh.run_cell(source).success, source
print('root handlers:', len(logging.getLogger().handlers), file=sys.stderr)
"""


def _user_logging(mode: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", USER_LOGGING, mode], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stderr.splitlines()


def test_user_logging_before_and_after_load_ext_is_as_in_plain_ipython():
    plain = _user_logging("plain")
    with_mcp_nb = _user_logging("mcp_nb")
    # Before: basicConfig did nothing after %load_ext (mcp_nb's handler sat on the root
    # logger) and the first warning was dropped; and the crash printed nothing either way.
    assert plain == [
        "a warning before any configuration",
        "INFO user: an info line after basicConfig",
        "WARNING root: a root warning",
        "root handlers: 1",
    ]
    assert with_mcp_nb == ["call: crash", *plain]


def test_the_sdks_records_reach_the_users_handlers_as_their_levels_say(caplog):
    @mcp_nb.tool()
    def boom() -> str:
        raise KeyError("x")

    @mcp_nb.tool()
    def refuse() -> str:
        from mcp.server.mcpserver.exceptions import ToolError

        raise ToolError("no")

    mcp_nb.call("boom")
    crash = [r for r in caplog.records if r.name.startswith("mcp.") and "raised an unexpected exception" in r.getMessage()]
    assert len(crash) == 1
    assert crash[0].exc_info is not None  # seed 001's advice: caplog sees the traceback
    mcp_nb.call("refuse")
    assert not [r for r in caplog.records if "failed" in r.getMessage()]  # INFO is below the root's WARNING
    caplog.set_level(logging.INFO)
    mcp_nb.call("refuse")
    assert [r.getMessage() for r in caplog.records if "failed" in r.getMessage()] == [
        "Tool 'refuse' failed: 'Error executing tool refuse: no'"
    ]


def test_mcp_nb_adds_no_handler_to_the_root_logger_and_keeps_the_users_levels():
    root = logging.getLogger()
    sdk = logging.getLogger("mcp")
    handlers, level = list(root.handlers), sdk.level
    sdk.setLevel(logging.ERROR)  # the user's choice: no INFO lines from the SDK
    try:
        mcp_nb.reset()

        @mcp_nb.tool()
        def refuse() -> str:
            from mcp.server.mcpserver.exceptions import ToolError

            raise ToolError("no")

        o = mcp_nb.call("refuse")
        assert sdk.level == logging.ERROR and list(root.handlers) == handlers
        # Without the SDK's INFO line, how the watched handler ended still tells the cause.
        assert (o.outcome, o.cause, o.server_logs) == ("tool_error", "raised", ())
    finally:
        sdk.setLevel(level)


def test_a_tools_info_records_are_captured_when_the_user_enabled_them(caplog):
    @mcp_nb.tool()
    def chatty() -> str:
        logging.getLogger("bookshop").info("looked it up")
        return "ok"

    assert mcp_nb.call("chatty").server_logs == ()  # not enabled: no record was made, as without mcp_nb
    caplog.set_level(logging.INFO, logger="bookshop")
    o = mcp_nb.call("chatty")
    assert [(r.level, r.logger, r.message) for r in o.server_logs] == [("INFO", "bookshop", "looked it up")]
    assert [r.getMessage() for r in caplog.records if r.name == "bookshop"] == ["looked it up"]  # and still the user's
