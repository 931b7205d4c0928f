"""Inside a call: what a handler says through its Context, its progress, and deadlines that reset on it.

Through every face: the API, the magics (`InteractiveShell`), the panel's widgets, and real
outside servers (server-everything over stdio, the bookshop over stdio). The deadlines here
are long against the gaps between progress events (a loaded machine must not decide the
outcome); no test asserts on how long anything took.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import warnings
from pathlib import Path

import peers
import pytest
import warm
from helpers import STARTS_WITHIN, wait_until
from IPython.core.error import UsageError
from mcp.server.mcpserver import Context
from mcp.shared.exceptions import MCPDeprecationWarning

import mcp_nb
from mcp_nb.registering import context as context_logs
from mcp_nb.views.cards import outcome_html
from mcp_nb.widgets import show

BOOKSHOP = warm.command(
    Path(__file__).resolve().parent.parent / "notebooks" / "servers" / "bookshop.py", "stdio"
)  # started warm (tests/warm.py)


@pytest.fixture
def tools():
    @mcp_nb.tool()
    async def shelve(title: str, ctx: Context) -> str:
        """Logs at every level through its Context, and once through Python's logging."""
        await ctx.debug(f"looking for {title}")
        await ctx.info("found a shelf")
        await ctx.warning({"shelf": 3, "full": True})
        logging.getLogger("bookshop").warning("python logging too")
        await ctx.log("error", "label missing", logger_name="labels")
        return f"shelved {title}"

    @mcp_nb.tool()
    async def restock(steps: int, pause: float, ctx: Context) -> str:
        """Reports progress every `pause` seconds, `steps` times."""
        for i in range(steps):
            await asyncio.sleep(pause)
            await ctx.report_progress(i + 1, steps, f"book {i + 1}")
        return f"restocked {steps}"

    @mcp_nb.tool()
    async def count_only(ctx: Context) -> str:
        """Reports progress without a total or a message."""
        for i in range(3):
            await ctx.report_progress(i + 1)
        return "counted"


@pytest.fixture
def explained_afresh():
    """The deprecation is explained once per process: make this test's call the first."""
    context_logs._explained = False
    yield
    context_logs._explained = True


# -- Context logs ---------------------------------------------------------------------------------


def test_context_logs_land_in_the_record_marked_with_level_source_and_time(tools):
    o = mcp_nb.call("shelve", {"title": "Dune"})
    assert o.ok, o
    logs = [(r.source, r.level, r.logger, r.message) for r in o.server_logs]
    assert logs == [
        ("context", "DEBUG", "shelve", "looking for Dune"),
        ("context", "INFO", "shelve", "found a shelf"),
        ("context", "WARNING", "shelve", '{"shelf": 3, "full": true}'),
        ("logging", "WARNING", "bookshop", "python logging too"),
        ("context", "ERROR", "labels", "label missing"),
    ]
    assert all(o.started <= r.at <= o.started + o.duration_ms / 1000 + 1 for r in o.server_logs)
    text = repr(o)
    assert "log says    [context] DEBUG shelve: looking for Dune" in text
    assert "WARNING bookshop: python logging too" in text and "[context] ERROR labels: label missing" in text
    html = o._repr_html_()
    assert "[context]</span>" in html and 'title="+' in html  # the source, and when (a tooltip)
    assert 'title="+' not in outcome_html(o, stable=True)
    row = mcp_nb.history().to_frame().iloc[0]
    assert [r.source for r in row["server_logs"]] == ["context"] * 3 + ["logging", "context"]


def test_show_server_logs_prints_context_logs_live_too(tools, capfd):
    mcp_nb.configure(show_server_logs=True)
    assert mcp_nb.call("shelve", {"title": "Dune"}).ok
    assert "[mcp server] [context] INFO shelve: found a shelf" in capfd.readouterr().err
    mcp_nb.configure(show_server_logs=False)
    assert mcp_nb.call("shelve", {"title": "Dune"}).ok
    assert "found a shelf" not in capfd.readouterr().err


def test_each_call_gets_only_its_own_context_logs_when_calls_overlap(tools):
    gate = threading.Event()

    @mcp_nb.tool()
    async def say(word: str, ctx: Context) -> str:
        await ctx.info(f"{word} before")
        await asyncio.to_thread(gate.wait, 30)
        await ctx.info(f"{word} after")
        return word

    engine = mcp_nb.engine()
    calls = [engine.submit("tool", "say", {"word": w}) for w in ("one", "two")]
    assert wait_until(lambda: all(c.trace is not None and len(c.trace.logs) == 1 for c in calls))
    gate.set()
    one, two = (c.future.result(30) for c in calls)
    assert [r.message for r in one.server_logs] == ["one before", "one after"]
    assert [r.message for r in two.server_logs] == ["two before", "two after"]


def test_the_deprecation_is_explained_once_and_the_sdk_warns_nothing(tools, explained_afresh):
    with warnings.catch_warnings(record=True) as caught:  # the test's own filters, put back after it
        warnings.simplefilter("always")
        for _ in range(3):
            assert mcp_nb.call("shelve", {"title": "Dune"}).ok
    kinds = [type(w.message) for w in caught]
    assert kinds == [context_logs.ContextLogWarning], [str(w.message) for w in caught]
    assert issubclass(context_logs.ContextLogWarning, MCPDeprecationWarning)  # a filter on the SDK's category holds
    assert "SEP-2577" in str(caught[0].message)
    assert caught[0].filename == __file__  # at the user's `await ctx.debug(...)` line


def test_a_filter_on_the_sdks_category_silences_the_explanation_too(tools, explained_afresh):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
        assert mcp_nb.call("shelve", {"title": "Dune"}).ok
    assert caught == []


SHELL_SCRIPT = '''
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "mcp_nb")
shell.run_cell("from mcp.server.mcpserver import Context")
shell.run_cell("""%%mcp_tool --quiet
async def shelve(title: str, ctx: Context) -> str:
    await ctx.info(f"found a shelf for {title}")
    await ctx.warning("shelf 3 is full")
    return title
""")
for title in ("Dune", "Emma", "Ulysses"):
    shell.run_cell(f"%mcp_call shelve title={title}")
'''


def test_a_kernel_gets_the_logs_in_its_cards_and_one_warning_not_one_per_call():
    # A fresh interpreter with Python's default warning filters, as a kernel has: IPython
    # resets the warnings registry at every cell, so the SDK's warnings came back every call.
    import subprocess

    done = subprocess.run([sys.executable, "-c", SHELL_SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for title in ("Dune", "Emma", "Ulysses"):
        assert f"[context] INFO shelve: found a shelf for {title}" in done.stdout
    assert done.stdout.count("[context] WARNING shelve: shelf 3 is full") == 3
    assert done.stderr.count("ContextLogWarning") == 1, done.stderr
    assert "MCPDeprecationWarning" not in done.stderr  # the SDK's own: none at all
    assert len(done.stderr.strip().splitlines()) == 2, done.stderr  # the warning, and the line it points at


def test_a_served_client_that_opted_in_still_gets_the_log_messages(tools):
    # What the handler says through its Context is also sent, as the SDK would, to a client
    # that asked for log messages: a raw SDK client in-process with a log level.
    from mcp import Client

    heard = []

    async def logged(params):
        heard.append((params.level, params.data))

    async def main():
        async with Client(mcp_nb.server(), cache=None, logging_callback=logged, log_level="info") as client:
            return await client.call_tool("shelve", {"title": "Dune"})

    result = asyncio.run(main())
    assert not result.is_error
    assert heard == [("info", "found a shelf"), ("warning", {"shelf": 3, "full": True}), ("error", "label missing")]


# -- progress ---------------------------------------------------------------------------------------


def test_every_progress_event_is_recorded_with_the_call(tools):
    o = mcp_nb.call("restock", {"steps": 4, "pause": 0.01}, progress=False)
    assert o.ok
    assert [(e.progress, e.total, e.message) for e in o.progress] == [(i, 4, f"book {i}") for i in range(1, 5)]
    seconds = [e.seconds for e in o.progress]
    assert seconds == sorted(seconds) and seconds[0] > 0
    frame = o.progress_frame()
    assert list(frame.columns) == ["call_id", "attempt", "progress", "total", "message", "seconds"]
    assert frame["progress"].tolist() == [1.0, 2.0, 3.0, 4.0] and set(frame["call_id"]) == {o.call_id}
    counted = mcp_nb.call("count_only", progress=False)
    assert [(e.progress, e.total, e.message) for e in counted.progress] == [(1, None, None), (2, None, None), (3, None, None)]
    history = mcp_nb.history()
    assert history.to_frame()["progress"].tolist() == [4, 3]
    assert history.progress(o.call_id).equals(frame)
    assert len(history.progress()) == 7
    with pytest.raises(KeyError, match="no call #999"):
        history.progress(999)


def test_the_waiting_thread_draws_the_live_view(tools, capsys):
    seen = []
    engine = mcp_nb.engine()

    class Watch:
        def __init__(self, call):
            self.call = call

        def __call__(self, done=False):
            # Before the request is sent (a loaded machine), the call has no trace yet: no events.
            events = self.call.trace.progress if self.call.trace is not None else ()
            seen.append((threading.current_thread() is threading.main_thread(), len(events), done))

    o = engine.run("tool", "restock", {"steps": 3, "pause": 0.2}, watch=Watch)
    assert o.ok
    assert all(main for main, _, _ in seen) and seen[-1][2] is True
    assert any(0 < n for _, n, _ in seen[:-1])  # drawn while it ran, not only at the end
    # mcp_nb.call's own view: text in a terminal (tqdm writes to stderr), the server's message in it.
    capsys.readouterr()
    assert mcp_nb.call("restock", {"steps": 3, "pause": 0.15}).ok
    err = capsys.readouterr().err
    assert "restock" in err and "book 3" in err and "3/3" in err
    assert mcp_nb.call("restock", {"steps": 3, "pause": 0.15}, progress=False).ok
    assert capsys.readouterr().err == ""


# -- deadlines that reset on progress -----------------------------------------------------------------


def test_the_same_slow_tool_times_out_without_resets_and_finishes_with_them(tools):
    arguments = {"steps": 4, "pause": 0.4}  # 1.6 s of work, a progress event every 0.4 s
    plain = mcp_nb.call("restock", arguments, timeout=1.0, progress=False)
    assert (plain.outcome, plain.cause, plain.deadline_resets, plain.max_timeout_s) == ("timeout", "deadline", 0, None)
    assert plain.message == "Timed out after 1s waiting for 'tools/call'"
    resetting = mcp_nb.call("restock", arguments, timeout=1.0, reset_on_progress=True, progress=False)
    assert (resetting.outcome, resetting.content) == ("result", "restocked 4")
    assert resetting.deadline_resets == 4 and resetting.max_timeout_s == 10.0  # the default ceiling: 10 timeouts
    frame = mcp_nb.history().to_frame()
    assert frame["deadline_resets"].tolist() == [0, 4]
    assert frame["cause"].astype(str).tolist() == ["deadline", "ok"]


def test_a_chatty_tool_is_stopped_at_max_timeout(tools):
    o = mcp_nb.call(
        "restock", {"steps": 1000, "pause": 0.05}, timeout=1.0, reset_on_progress=True, max_timeout=1.5, progress=False
    )
    assert (o.outcome, o.cause, o.code) == ("timeout", "max_timeout", -32001)
    assert o.deadline_resets > 0 and o.max_timeout_s == 1.5
    assert o.message.startswith("Timed out after 1.5s waiting for 'tools/call' (max_timeout; the deadline was reset ")
    assert wait_until(lambda: o.server_fate == "cancelled")  # the handler was cancelled, as at any deadline
    frame = mcp_nb.history().to_frame()
    assert frame["cause"].astype(str).tolist() == ["max_timeout"] and frame["deadline_resets"].iloc[0] == o.deadline_resets


def test_silence_after_progress_ends_a_resetting_call_at_its_deadline(tools):
    @mcp_nb.tool()
    async def stalls(ctx: Context) -> str:
        await ctx.report_progress(1, 2, "half")
        await asyncio.sleep(60)
        return "never"

    # its one progress must come within the deadline: one a loaded machine starts the handler well within
    o = mcp_nb.call("stalls", timeout=STARTS_WITHIN, reset_on_progress=True, max_timeout=30, progress=False)
    assert (o.outcome, o.cause, o.deadline_resets) == ("timeout", "deadline", 1)
    assert o.message == (
        f"Timed out after {STARTS_WITHIN:g}s waiting for 'tools/call' (no progress for {STARTS_WITHIN:g}s;"
        " the deadline was reset 1 time on progress)"
    )


@pytest.mark.parametrize(
    "limits, message",
    [
        ({"max_timeout": 5}, "max_timeout is the ceiling of a deadline that resets on progress"),
        ({"reset_on_progress": True, "max_timeout": 0.5}, r"max_timeout \(0.5 s\) must be at least the timeout \(1 s\)"),
        ({"reset_on_progress": True, "max_timeout": 0}, "max_timeout must be a positive number of seconds, got 0"),
        ({"reset_on_progress": True, "max_timeout": -1}, "max_timeout must be a positive number of seconds"),
        ({"reset_on_progress": True, "max_timeout": float("inf")}, "max_timeout must be a positive number of seconds"),
        ({"reset_on_progress": True, "max_timeout": float("nan")}, "max_timeout must be a positive number of seconds"),
        ({"reset_on_progress": True, "max_timeout": True}, "max_timeout must be a positive number of seconds"),
        ({"reset_on_progress": "yes"}, "reset_on_progress must be True or False"),
    ],
)
def test_bad_limits_are_refused_and_nothing_is_recorded(tools, limits, message):
    with pytest.raises(ValueError, match=message):
        mcp_nb.call("restock", {"steps": 1, "pause": 0}, timeout=1, **limits)
    with pytest.raises(ValueError, match=message):
        mcp_nb.engine().submit("tool", "restock", {"steps": 1, "pause": 0}, 1, **limits)
    with pytest.raises(ValueError, match=message):
        asyncio.run(mcp_nb.acall("restock", {"steps": 1, "pause": 0}, timeout=1, **limits))
    with pytest.raises(ValueError, match=message):
        mcp_nb.sweep("restock", {"steps": [1], "pause": [0]}, timeout=1, progress=False, **limits)
    assert len(mcp_nb.history()) == 0


def test_reset_on_progress_without_a_timeout_uses_the_default_timeout(tools):
    mcp_nb.configure(timeout=1.0)
    o = mcp_nb.call("restock", {"steps": 4, "pause": 0.4}, reset_on_progress=True, progress=False)
    assert o.ok and o.timeout_s == 1.0 and o.max_timeout_s == 10.0 and o.deadline_resets == 4
    with pytest.raises(ValueError, match=r"max_timeout \(0.5 s\) must be at least the timeout \(1 s\)"):
        mcp_nb.call("restock", {"steps": 1, "pause": 0}, reset_on_progress=True, max_timeout=0.5)


def test_acall_and_submit_reset_on_progress_too(tools):
    arguments = {"steps": 4, "pause": 0.4}
    o = asyncio.run(mcp_nb.acall("restock", arguments, timeout=1.0, reset_on_progress=True))
    assert o.ok and o.deadline_resets == 4
    call = mcp_nb.engine().submit("tool", "restock", arguments, 1.0, reset_on_progress=True)
    assert call.future.result(30).ok and call.outcome.deadline_resets == 4


def test_a_cancelled_resetting_call_is_recorded_as_cancelled(tools):
    call = mcp_nb.engine().submit("tool", "restock", {"steps": 1000, "pause": 0.05}, 1.0, reset_on_progress=True, max_timeout=60)
    assert wait_until(lambda: call.trace is not None and len(call.trace.progress) >= 2)
    assert call.cancel()
    o = call.future.result(30)
    assert (o.outcome, o.cause, o.code) == ("timeout", "cancelled", -32800)
    assert o.deadline_resets >= 2
    # No deadline of it is left to fire later: the next call is untouched by it.
    assert mcp_nb.call("restock", {"steps": 1, "pause": 0}, timeout=1.0).ok
    assert mcp_nb.history().to_frame()["cause"].astype(str).tolist() == ["cancelled", "ok"]


def test_sweeps_reset_on_progress(tools):
    grid = {"steps": [3, 4], "pause": [0.4]}
    plain = mcp_nb.sweep("restock", grid, timeout=1.0, progress=False)
    assert plain["cause"].tolist() == ["deadline", "deadline"]
    resetting = mcp_nb.sweep("restock", grid, timeout=1.0, reset_on_progress=True, progress=False)
    assert resetting["outcome"].tolist() == ["result", "result"]
    # Each row says how much progress its call reported and how often that moved its deadline.
    assert resetting[["steps", "progress", "deadline_resets"]].values.tolist() == [[3, 3, 3], [4, 4, 4]]
    assert list(resetting.columns).index("progress") == list(resetting.columns).index("duration_ms") + 1
    quiet = mcp_nb.sweep("restock", {"steps": [0]}, progress=False)
    assert "progress" not in quiet.columns  # a tool that reported nothing keeps the sweep's usual columns
    assert mcp_nb.history().to_frame()["deadline_resets"].tolist()[2:4] in ([3, 4], [4, 3])
    with pytest.raises(ValueError, match="not available for a sweep on a cluster"):
        mcp_nb.sweep("restock", grid, reset_on_progress=True, cluster="tcp://127.0.0.1:1")


# -- the magics -------------------------------------------------------------------------------------


def test_the_magic_resets_on_progress(shell, tools):
    shell.run_cell("%mcp_call restock steps=4 pause=0.4 --timeout 1")
    shell.run_cell("%mcp_call restock steps=4 pause=0.4 --timeout 1 --reset-on-progress")
    shell.run_cell("%mcp_call restock steps=1000 pause=0.05 --timeout 1 --reset-on-progress --max-timeout 1.5")
    frame = mcp_nb.history().to_frame()
    assert frame["cause"].astype(str).tolist() == ["deadline", "ok", "max_timeout"]
    assert frame["deadline_resets"].tolist()[:2] == [0, 4]


@pytest.mark.parametrize(
    "options, message",
    [
        ("--max-timeout 5", "max_timeout is the ceiling of a deadline that resets on progress"),
        ("--timeout 2 --reset-on-progress --max-timeout 1", r"max_timeout \(1 s\) must be at least the timeout \(2 s\)"),
        ("--reset-on-progress --max-timeout 0", "max_timeout must be a positive number of seconds"),
        ("--reset-on-progress --max-timeout nan", "max_timeout must be a positive number of seconds"),
        ("--reset-on-progress --max-timeout soon", "--max-timeout takes seconds, got 'soon'"),
        ("--reset-on-progress=yes", "--reset-on-progress takes no value"),
    ],
)
def test_the_magic_refuses_bad_limits_in_one_line(shell, tools, options, message):
    with pytest.raises(UsageError, match=message):
        shell.run_line_magic("mcp_call", f"restock steps=1 pause=0 {options}")
    assert len(mcp_nb.history()) == 0


def test_reading_and_prompts_take_no_progress_flags(shell):
    @mcp_nb.resource("books://catalog")
    def catalog() -> str:
        return "Dune"

    with pytest.raises(UsageError, match="unknown option --reset-on-progress"):
        shell.run_line_magic("mcp_read", "books://catalog --reset-on-progress")


# -- the panel --------------------------------------------------------------------------------------


def test_the_panel_shows_progress_while_the_call_runs_and_resets_with_its_checkbox(tools):
    panel = show()
    try:
        panel.select("tool", "restock")
        fields = panel._entries[panel._current].form.fields
        fields["steps"].widget.value = "4"
        fields["pause"].widget.value = "0.4"
        panel.timeout.value = "1"
        first = panel.call_button.click() or panel.last_call
        assert wait_until(lambda: panel.progress.layout.display is None and panel.progress.value >= 1)
        assert panel.progress.max == 4 and "book" in panel.progress_text.value
        assert first.future.result(30).cause == "deadline"
        assert wait_until(lambda: panel._call is None and panel.progress.layout.display == "none")
        assert panel.progress_text.value == ""
        panel.reset_on_progress.value = True
        second = panel.call_button.click() or panel.last_call
        assert second is not first
        assert wait_until(lambda: "deadline reset" in panel.progress_text.value)
        o = second.future.result(30)
        assert o.ok and o.deadline_resets == 4
    finally:
        panel.close()


# -- outside servers ----------------------------------------------------------------------------------


def test_server_everything_over_stdio_progress_resets_and_max_timeout():
    peers.require(peers.EVERYTHING)
    mcp_nb.connect("everything", peers.everything_stdio(), env=peers.node_env())
    arguments = {"duration": 2.4, "steps": 4}  # a progress notification every 0.6 s
    plain = mcp_nb.call("trigger-long-running-operation", arguments, timeout=1.0, server="everything", progress=False)
    assert (plain.cause, plain.server_fate) == ("deadline", "cancel_requested")
    resetting = mcp_nb.call(
        "trigger-long-running-operation", arguments, timeout=1.0, reset_on_progress=True, server="everything", progress=False
    )
    assert resetting.ok and resetting.deadline_resets == 4
    assert [(e.progress, e.total) for e in resetting.progress] == [(1, 4), (2, 4), (3, 4), (4, 4)]
    ceiling = mcp_nb.call(
        "trigger-long-running-operation",
        {"duration": 30, "steps": 60},
        timeout=1.0,
        reset_on_progress=True,
        max_timeout=2.0,
        server="everything",
        progress=False,
    )
    assert (ceiling.cause, ceiling.code, ceiling.server_fate) == ("max_timeout", -32001, "cancel_requested")
    assert ceiling.message.startswith("Request 'tools/call' timed out (max_timeout; the deadline was reset ")
    assert mcp_nb.history().progress(resetting.call_id)["progress"].tolist() == [1.0, 2.0, 3.0, 4.0]


def test_server_everything_log_notifications_are_marked_as_such():
    peers.require(peers.EVERYTHING)
    connection = mcp_nb.connect("everything", peers.everything_stdio(), env=peers.node_env())
    o = mcp_nb.call("toggle-simulated-logging", server="everything")
    assert o.ok, o
    # The first simulated message is sent at once, beside the answer: it lands on the connection's log.
    assert wait_until(lambda: any(r.source == "notification" for r in connection.logs))
    entry = next(r for r in connection.logs if r.source == "notification")
    assert entry.at is not None and str(entry).startswith("[notification] ")
    assert entry.message.lower().startswith(entry.level.lower())  # a random level's message ("Debug-level message")


def test_a_python_server_over_stdio_sends_context_logs_and_progress():
    mcp_nb.connect("books", BOOKSHOP)
    o = mcp_nb.call("restock", {"count": 4}, server="books", progress=False)
    assert o.ok, o
    assert [(r.source, r.level, r.message) for r in o.server_logs] == [
        ("notification", "INFO", "restocking 4 books"),
        ("notification", "WARNING", "shelf 3 is full"),
    ]
    assert [(e.progress, e.message) for e in o.progress] == [(i, f"book {i} of 4") for i in range(1, 5)]
    assert "[notification] INFO books: restocking 4 books" in repr(o)


def test_a_resetting_call_stopped_at_its_ceiling_tells_the_outside_server_to_cancel():
    connection = mcp_nb.connect("books", BOOKSHOP)
    o = mcp_nb.call(
        "restock", {"count": 100000}, server="books", timeout=1.0, reset_on_progress=True, max_timeout=1.5, progress=False
    )
    assert (o.cause, o.server_fate) == ("max_timeout", "cancel_requested") and o.deadline_resets > 0
    # The server's handler heard it: its own stderr line says so.
    assert wait_until(lambda: any("restock: cancelled by the client" in r.message for r in connection.logs))
