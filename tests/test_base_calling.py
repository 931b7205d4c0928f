"""The calling layer's base promises, through the public faces.

Closing lets go of everything (`serve` then `reset`), is refused from inside a handler, and is
bounded when an async handler holds the loop; the deadline holds for every face while the loop
is held; arguments that cannot be sent are refused in one line; what goes wrong inside mcp_nb
is logged, not swallowed.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
import weakref
from pathlib import Path

import pytest
from helpers import STARTS_WITHIN, wait_until

import mcp_nb
from mcp_nb.records.cases import CasesError
from mcp_nb.registering.loop_watch import LoopBlockedWarning

TIMEOUT_S = STARTS_WITHIN  # the deadline `hog` overruns: it must have started by then
HOLD_S = TIMEOUT_S + 0.5  # how long `hog` holds mcp_nb's loop without awaiting, from its start


def causes(history=None):
    frame = (history or mcp_nb.history()).to_frame()
    return list(zip(frame["name"].astype(str), frame["cause"].astype(str), strict=True))


def rows(name: str) -> list[dict]:
    frame = mcp_nb.history().to_frame()
    return frame[frame["name"] == name].to_dict("records")


def _refused(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(2)
        try:
            probe.connect(("127.0.0.1", port))
        except OSError:
            return True
    return False


def _loop_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "mcp_nb-loop"]


# -- 1. serve, then reset: nothing of the old engine is left ------------------------------------


def test_serve_then_reset_leaves_nothing_of_the_old_engine_running_listening_or_referenced():
    engines, ports, handles = [], [], []
    before = set(_loop_threads())
    for _ in range(2):  # each serve + reset used to keep one more engine alive

        @mcp_nb.tool()
        def echo(text: str) -> str:
            return text

        handle = mcp_nb.serve()
        assert mcp_nb.call("echo", {"text": "hi"}).ok
        engines.append(weakref.ref(mcp_nb.engine()))
        ports.append(handle.port)
        handles.append(handle)  # kept, as a notebook's Out[] keeps the handle it showed
        mcp_nb.reset()
        assert not handle.running
    assert all(_refused(port) for port in ports)
    gc.collect()
    assert [ref() for ref in engines] == [None, None]
    # The stopped handles still say what they were.
    assert [h.running for h in handles] == [False, False]
    assert all(h.url.startswith("http://127.0.0.1:") for h in handles)
    assert "stopped" in repr(handles[0]) and handles[0].calls == 0
    assert wait_until(lambda: set(_loop_threads()) <= before)  # the old engines' loops ended (the new one starts lazily)


def test_a_handle_stopped_by_hand_lets_go_of_its_engine_after_reset():
    handle = mcp_nb.serve()
    old = weakref.ref(mcp_nb.engine())
    handle.stop()
    assert not handle.running and _refused(handle.port)
    mcp_nb.reset()
    gc.collect()
    assert old() is None
    assert "stopped" in repr(handle)


# -- 2. reset from inside a tool: refused, said on the call -------------------------------------


@pytest.mark.parametrize("kind", ["async", "sync"])
def test_reset_inside_a_tool_is_refused_in_one_line_on_the_calls_outcome(kind):
    if kind == "async":

        @mcp_nb.tool()
        async def resetter() -> str:
            mcp_nb.reset()
            return "reset"

    else:

        @mcp_nb.tool()
        def resetter() -> str:
            mcp_nb.reset()
            return "reset"

    engine = mcp_nb.engine()
    begun = time.monotonic()
    o = mcp_nb.call("resetter", timeout=10)
    assert time.monotonic() - begun < 5  # nothing hangs
    assert o.outcome == "tool_error"
    assert "mcp_nb.reset() cannot run inside tool 'resetter'" in o.content
    assert "\n" not in o.content
    # Nothing changed: the same engine, still serving calls, the call in its history.
    assert mcp_nb.engine() is engine and not engine.closed
    assert causes() == [("resetter", o.cause)]
    assert mcp_nb.call("resetter", timeout=10).outcome == "tool_error"


# -- 3. reset and exit while an async tool holds the loop: bounded, and it is named ---------------


@pytest.mark.filterwarnings("ignore::mcp_nb.registering.loop_watch.LoopBlockedWarning")
@pytest.mark.serial  # it times the reset against a bound: alone, so the bound measures mcp_nb
def test_reset_while_an_async_tool_holds_the_loop_returns_soon_and_names_it(caplog):
    holding, release = threading.Event(), threading.Event()

    @mcp_nb.tool()
    async def hog() -> str:
        holding.set()
        release.wait(30)  # no await: holds mcp_nb's loop  # noqa: ASYNC251
        return "done"

    old = mcp_nb.engine()
    call = old.submit("tool", "hog", timeout=60)
    assert holding.wait(10)
    threads = _loop_threads()
    try:
        begun = time.monotonic()
        with caplog.at_level(logging.WARNING, logger="mcp_nb"):
            mcp_nb.reset()
        took = time.monotonic() - begun
        assert took < 8, took  # before: until the hold ended (30 s here; forever for one that never ends)
        (record,) = [r for r in caplog.records if r.name == "mcp_nb" and "stopped waiting" in r.getMessage()]
        assert record.levelno == logging.WARNING and "async tool 'hog'" in record.getMessage()
        # Whoever waits for the held call has its answer.
        outcome = call.future.result(1)
        assert (outcome.outcome, outcome.cause) == ("timeout", "cancelled")
        assert causes(old.history) == [("hog", "cancelled")]
    finally:
        release.set()
    # Let go, the old loop ends by itself.
    assert wait_until(lambda: not any(t.is_alive() for t in threads))
    assert causes(old.history) == [("hog", "cancelled")]  # recorded once


@pytest.mark.serial  # it times a whole interpreter's exit: alone, so the bound measures mcp_nb
def test_interpreter_exit_while_an_async_tool_holds_the_loop_is_bounded(tmp_path):
    script = tmp_path / "held.py"
    script.write_text(
        textwrap.dedent(
            """
            import threading, time
            import mcp_nb

            holding = threading.Event()

            @mcp_nb.tool()
            async def hog() -> str:
                holding.set()
                time.sleep(120)  # never lets go while the process lives
                return "done"

            mcp_nb.engine().submit("tool", "hog", timeout=600)
            assert holding.wait(30)
            print("exiting", flush=True)
            """
        )
    )
    here = str(Path(mcp_nb.__file__).resolve().parent.parent)  # the mcp_nb under test, wherever it is
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))}
    begun = time.monotonic()
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, env=env)
    took = time.monotonic() - begun
    assert run.returncode == 0, run.stderr[-2000:]
    assert "exiting" in run.stdout
    assert took < 30, took  # before: the 120 s of the hold
    # The mcp_nb logger's warning, which logging's last resort prints (the root logger is not configured).
    (said,) = [line for line in run.stderr.splitlines() if "stopped waiting for its event loop" in line]
    assert "async tool 'hog' has held it" in said


# -- 4. the deadline holds for every face while an async tool holds the loop -------------------


def _hog():
    @mcp_nb.tool()
    async def hog() -> str:
        time.sleep(HOLD_S)  # no await: holds mcp_nb's loop past the deadline  # noqa: ASYNC251
        return "done"

    @mcp_nb.tool()
    def quick() -> str:
        return "q"

    assert mcp_nb.call("quick").ok  # the session is open
    mcp_nb.history().clear()


def _by_submit():
    mcp_nb.engine().submit("tool", "hog", timeout=TIMEOUT_S).future.result(30)


def _by_sweep():
    frame = mcp_nb.sweep("hog", [{}], timeout=TIMEOUT_S, progress=False)
    assert frame["outcome"].tolist() == ["timeout"]


def _by_replay():
    cases = {
        "mcp_nb_cases": 1,
        "cases": [{"id": "held", "name": "hog", "timeout": TIMEOUT_S, "expect": {"outcome": "timeout", "cause": "deadline"}}],
    }
    frame = mcp_nb.replay(cases)
    assert frame["passed"].tolist() == [True], frame["reason"].tolist()


def _by_nested_acall():
    @mcp_nb.tool()
    async def outer() -> str:
        inner = await mcp_nb.acall("hog", timeout=TIMEOUT_S)
        return f"{inner.outcome} {inner.cause}"

    assert mcp_nb.call("outer", timeout=30).content == "timeout deadline"


def _by_acall():
    asyncio.run(mcp_nb.acall("hog", timeout=TIMEOUT_S))


def _by_call():
    mcp_nb.call("hog", timeout=TIMEOUT_S)


FACES = {
    "submit": _by_submit,
    "sweep": _by_sweep,
    "replay": _by_replay,
    "nested acall": _by_nested_acall,
    "acall": _by_acall,
    "call": _by_call,
}


@pytest.mark.filterwarnings("ignore::mcp_nb.registering.loop_watch.LoopBlockedWarning")
@pytest.mark.parametrize("face", FACES)
def test_a_call_whose_deadline_passed_while_the_loop_was_held_is_a_timeout_whoever_waits(face):
    _hog()
    FACES[face]()
    # Before: `result ok` after the whole hold for every face but the two that wait in a thread.
    (row,) = rows("hog")  # recorded once
    assert (row["outcome"], row["cause"], row["code"]) == ("timeout", "deadline", -32001), row
    assert "event loop was held by async tool 'hog'" in row["message"]
    # The handler finished: its late answer is its fate, not the outcome.
    assert wait_until(lambda: rows("hog")[0]["server_fate"] == "completed")
    (row,) = rows("hog")
    assert (row["fate_outcome"], row["fate_cause"]) == ("result", "ok")


def test_an_answer_in_time_is_still_a_result_for_the_loops_own_faces():
    @mcp_nb.tool()
    async def brief() -> str:
        time.sleep(0.15)  # holds the loop, but within the deadline  # noqa: ASYNC251
        return "done"

    with pytest.warns(LoopBlockedWarning):  # emitted on the loop before the answer is recorded
        o = mcp_nb.engine().submit("tool", "brief", timeout=5).future.result(30)
    assert (o.outcome, o.cause) == ("result", "ok")


# -- 5. arguments that cannot be sent: one line, nothing recorded -------------------------------


def _nested(levels: int):
    value: object = 1
    for _ in range(levels):
        value = [value]
    return value


def _deep_tools():
    @mcp_nb.tool()
    def deep(x: list) -> int:
        depth = 0
        while isinstance(x, list):
            x, depth = x[0], depth + 1
        return depth

    @mcp_nb.prompt()
    def ask(x: str) -> str:
        return x


def _cyclic():
    loop: list = []
    loop.append(loop)
    return loop


def _replay(arguments):
    case = {"id": "deep", "name": "deep", "arguments": arguments, "expect": {"outcome": "result", "cause": "ok"}}
    return mcp_nb.replay({"mcp_nb_cases": 1, "cases": [case]})


REFUSING_FACES = {
    "call": lambda args: mcp_nb.call("deep", args),
    "acall": lambda args: asyncio.run(mcp_nb.acall("deep", args)),
    "get_prompt": lambda args: mcp_nb.get_prompt("ask", args),
    "sweep": lambda args: mcp_nb.sweep("deep", [args], progress=False),
    "asweep": lambda args: asyncio.run(mcp_nb.asweep("deep", [args])),
    "submit": lambda args: mcp_nb.engine().submit("tool", "deep", args),
    "replay": _replay,
}
TOO_DEEP = {"150 levels": lambda: _nested(150), "1,000 levels": lambda: _nested(1000), "a cycle": _cyclic}


@pytest.mark.parametrize("face", REFUSING_FACES)
@pytest.mark.parametrize("what", TOO_DEEP)
def test_arguments_nested_too_deep_or_holding_themselves_are_refused_in_one_line(face, what):
    _deep_tools()
    arguments = {"x": TOO_DEEP[what]()}
    with pytest.raises(ValueError) as raised:  # before: a bare RecursionError, from every face
        REFUSING_FACES[face](arguments)
    text = str(raised.value)
    assert "\n" not in text and text
    if face == "replay":
        # A case is read (records/cases.py) before its call is prepared; either says which case.
        assert isinstance(raised.value, CasesError) and "'deep'" in text
    else:
        assert "'x'" in text
        assert ("more than 100 levels deep" if what != "a cycle" else "contains itself") in text
    if face == "replay" and what == "150 levels":
        assert "more than 100 levels deep" in text  # the case read, its call refused
    assert len(mcp_nb.history()) == 0  # nothing sent, nothing recorded


def test_arguments_as_deep_as_the_limit_are_sent_and_recorded():
    _deep_tools()
    o = mcp_nb.call("deep", {"x": _nested(100)})
    assert (o.outcome, o.content) == ("result", "100")
    shared = [1]
    assert mcp_nb.call("deep", {"x": [shared, shared]}).ok  # the same list twice is no cycle


def test_a_deep_json_argument_of_mcp_call_is_one_usage_error(shell):
    _deep_tools()
    # past the arguments' 100 levels, within the 256 any JSON is read to (tests/test_edges_deep_json.py)
    result = shell.run_cell('%mcp_call deep {"x": ' + "[" * 150 + "1" + "]" * 150 + "}")
    err = result.error_in_exec or result.error_before_exec
    assert type(err).__name__ == "UsageError", repr(err)
    assert "more than 100 levels deep" in str(err) and "\n" not in str(err)
    assert len(mcp_nb.history()) == 0


# -- 6. what goes wrong inside mcp_nb is logged, not swallowed ------------------------------------


def test_an_exception_escaping_the_client_is_recorded_and_logged_with_its_traceback(monkeypatch, caplog):
    from mcp_nb.calling.connections import Connection

    @mcp_nb.tool()
    def fine() -> str:
        return "fine"

    async def broken(self, client, target, name, arguments, progress=None):
        raise AttributeError("a bug on the call path")

    monkeypatch.setattr(Connection, "send", broken)
    with caplog.at_level(logging.ERROR, logger="mcp_nb"):
        o = mcp_nb.call("fine")
    assert (o.outcome, o.cause) == ("protocol_error", "client_error")
    assert o.message == "AttributeError: a bug on the call path"
    (record,) = [r for r in caplog.records if r.name == "mcp_nb" and r.levelno == logging.ERROR]
    assert record.exc_info is not None and record.exc_info[0] is AttributeError  # before: not logged at all
    assert "fine" in record.getMessage()
    assert causes() == [("fine", "client_error")]


def test_a_caller_mistake_the_client_refuses_is_not_logged_as_a_bug(caplog):
    @mcp_nb.prompt()
    def ask(x: str) -> str:
        return x

    with caplog.at_level(logging.DEBUG, logger="mcp_nb"):
        o = mcp_nb.get_prompt("ask", {"x": 5})
    assert (o.outcome, o.cause) == ("protocol_error", "client_error")
    assert [r for r in caplog.records if r.name == "mcp_nb" and r.levelno >= logging.WARNING] == []


def test_what_fails_while_the_engine_closes_goes_to_the_mcp_nb_logger_at_debug(caplog):
    engine = mcp_nb.engine()
    assert mcp_nb.call("nothing").cause == "unknown_tool"  # the loop runs

    async def failing_closer():
        raise OSError("the closer's own failure")

    engine.on_closing(failing_closer)
    with caplog.at_level(logging.DEBUG, logger="mcp_nb"):
        mcp_nb.reset()  # before: suppressed without a trace
    assert engine.closed
    (record,) = [r for r in caplog.records if r.name == "mcp_nb" and "failing_closer" in r.getMessage()]
    assert record.levelno == logging.DEBUG and record.exc_info[0] is OSError
    # pytest's own capture handlers are the only ones on the root logger: mcp_nb added none.
    assert all(type(h).__module__.startswith("_pytest") for h in logging.getLogger().handlers)
