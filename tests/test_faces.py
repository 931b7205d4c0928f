"""The same calls from a plain thread, from asyncio, and from a cell with top-level await."""

import asyncio
import time

import pytest

import mcp_nb


def register():
    @mcp_nb.tool()
    async def add(a: int, b: int) -> int:
        return a + b

    @mcp_nb.resource("data://answer")
    def answer() -> str:
        return "42"

    @mcp_nb.prompt()
    def ask(q: str) -> str:
        return q


def test_async_faces_from_a_running_loop():
    register()

    async def main():
        results = await asyncio.gather(
            mcp_nb.acall("add", {"a": 1, "b": 2}), mcp_nb.aread("data://answer"), mcp_nb.aget_prompt("ask", {"q": "hi"})
        )
        return [r.content for r in results]

    assert asyncio.run(main()) == ["3", "42", "user: hi"]


def test_top_level_await_in_a_cell(shell):
    register()
    result = shell.run_cell("import mcp_nb\no = await mcp_nb.acall('add', {'a': 2, 'b': 3})\no.content")
    assert result.success and result.result == "5"


def test_reset_cancels_calls_in_flight_and_the_old_engine_refuses_new_ones():
    started = []

    @mcp_nb.tool()
    async def wait_long() -> str:
        started.append(True)
        await asyncio.sleep(60)
        return "never"

    old = mcp_nb.engine()
    call = old.submit("tool", "wait_long")
    deadline = time.monotonic() + 10
    while not started and time.monotonic() < deadline:
        time.sleep(0.01)
    mcp_nb.reset()
    # Once, the future of a call in flight stayed pending forever and nothing was recorded;
    # then it was cancelled. Now it resolves to the recorded Outcome, like every other end.
    outcome = call.future.result(timeout=10)
    assert (outcome.outcome, outcome.cause, outcome.code) == ("timeout", "cancelled", -32800)
    assert old.closed and not mcp_nb.engine().closed
    assert old.history.to_frame()["cause"].astype(str).tolist() == ["cancelled"]
    for face in (lambda: old.run("tool", "wait_long"), lambda: old.submit("tool", "wait_long")):
        with pytest.raises(RuntimeError, match=r"closed by mcp_nb\.reset\(\)"):
            face()
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(old.arun("tool", "wait_long"))
    assert len(old.history) == 1  # refused calls record nothing
    register()
    assert mcp_nb.call("add", {"a": 1, "b": 1}).content == "2"  # the new engine is unaffected


def test_close_listeners_run_once_and_can_be_removed():
    eng = mcp_nb.engine()
    heard, removed = [], []
    eng.on_close(lambda: heard.append(1))
    eng.on_close(removed.append, remove=True)  # removing one never added is fine
    listener = lambda: removed.append(1)  # noqa: E731
    eng.on_close(listener)
    eng.on_close(listener, remove=True)
    eng.on_close(lambda: 1 / 0)  # a broken listener does not stop the reset
    mcp_nb.reset()
    eng.close()
    assert heard == [1] and removed == []


def test_server_is_the_sdk_server():
    from mcp.server import MCPServer

    assert isinstance(mcp_nb.server(), MCPServer)
    register()
    names = [t.name for t in asyncio.run(mcp_nb.server().list_tools())]
    assert names == ["add"]


def test_outcome_views_are_readable_and_stable():
    register()
    o = mcp_nb.call("add", {"a": 1, "b": "x"})
    text = repr(o)
    assert text.startswith(f'Outcome #{o.call_id}: tool_error (invalid_arguments) - tool add {{"a": 1, "b": "x"}}')
    assert "0x" not in text and " ms" not in text
    html = o._repr_html_()
    for part in ("What the model sees", "What the host sees", "What the log says", "mcp-nb-tool_error"):
        assert part in html
    crash = mcp_nb.call("add", {"a": 1})
    assert "rejected arguments: ['b']" in repr(crash)


def test_a_tool_calling_sys_exit_is_a_crash_and_mcp_nb_keeps_working():
    import sys

    @mcp_nb.tool()
    def bye() -> str:
        sys.exit(3)

    @mcp_nb.tool()
    async def abye() -> str:
        raise KeyboardInterrupt

    for name in ("bye", "abye"):
        o = mcp_nb.call(name)
        assert (o.outcome, o.cause) == ("tool_error", "crash")
        assert "HandlerExit" in [kind for kind, _ in o.server_logs[0].exceptions]
    register()
    assert mcp_nb.call("add", {"a": 1, "b": 1}).content == "2"


def test_import_and_call_without_ipython():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "sys.modules['IPython'] = None  # any import of IPython now fails\n"
        "import mcp_nb\n"
        "@mcp_nb.tool()\n"
        "def add(a: int, b: int) -> int:\n"
        "    return a + b\n"
        "print(mcp_nb.call('add', {'a': 2, 'b': 2}).content, len(mcp_nb.history()))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["4", "1"]
