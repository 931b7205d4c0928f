"""A 2025-era client that keeps its event stream open and never reads it (issue 40): it delays no
other client's news, piles up no work on mcp_nb's loop however often a cell is re-run, and
leaves no error behind when serving stops. (That it is cut off once it has read nothing for
`header_timeout`: test_edges_serving_load.py.)"""

import asyncio
import logging
import socket
import threading
import time

import mcp_types as types
from helpers import wait_until
from outside import client, post, raw_session

import mcp_nb

URI = "notes://" + "n" * 8000  # every update of it is 8 KB on a subscriber's stream


def register_note(version: int) -> None:
    @mcp_nb.resource(URI)
    def note() -> str:
        return f"v{version}"


def deaf_subscriber(handle) -> socket.socket:
    """A raw 2025-era session subscribed to URI, whose event stream is opened with a window of a
    few KB and never read."""
    session = raw_session(handle)
    post(handle.url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    status, _, text = post(
        handle.url, {"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": URI}}, session
    )
    assert status == 200, text
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", handle.port))
    headers = "".join(f"{name}: {value}\r\n" for name, value in session.items())
    sock.sendall(f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{handle.port}\r\nAccept: text/event-stream\r\n{headers}\r\n".encode())
    return sock


def loop_tasks() -> int:
    async def count():
        return len(asyncio.all_tasks())

    return mcp_nb.engine().loop.run(count())


def test_a_client_that_never_reads_its_stream_delays_no_one_elses_news():
    register_note(0)
    # A deadline the test does not reach: only the deaf client's own sender may wait on it.
    handle = mcp_nb.serve(header_timeout=300.0)
    deaf = deaf_subscriber(handle)
    heard: list[tuple[str, float]] = []
    listening, stop = threading.Event(), threading.Event()

    async def other_client():
        async def handler(message):
            if isinstance(message, types.ToolListChangedNotification):
                heard.append(("tools", time.monotonic()))

        async with client(handle.url, handle.token, mode="legacy", message_handler=handler) as session:
            await session.list_tools()
            listening.set()
            while not stop.is_set():
                await asyncio.sleep(0.05)

    other = threading.Thread(target=lambda: asyncio.run(other_client()))
    other.start()
    try:
        assert listening.wait(60)
        before = loop_tasks()
        most = 0
        for version in range(1, 401):  # 3 MB of updates for the deaf client: its stream stalls
            register_note(version)
            time.sleep(0.005)  # each is sent before the next, until its stream takes no more
            if version % 50 == 0:
                most = max(most, loop_tasks())
        marked = time.monotonic()

        @mcp_nb.tool()
        def marker() -> str:
            return "m"

        # The other client hears of the last change (before, it waited behind the deaf one, as
        # long as that one's connection lived).
        assert wait_until(lambda: any(at > marked for _, at in heard), 120.0), "the other client never heard of the last change"
        # Owed, not queued: the re-runs left no pile of tasks waiting on the deaf client.
        assert most - before < 50, (before, most)
        assert handle.refused == {}  # the deaf client was still connected all along
    finally:
        stop.set()
        other.join(60)
        deaf.close()
    handle.stop()


def test_stopping_while_a_client_reads_nothing_is_quiet_and_prompt(caplog):
    register_note(0)
    handle = mcp_nb.serve(header_timeout=60.0)
    deaf = deaf_subscriber(handle)
    try:
        for version in range(1, 401):
            register_note(version)
            time.sleep(0.005)
        time.sleep(1.0)
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            began = time.monotonic()
            handle.stop()
            stopped = time.monotonic() - began
    finally:
        deaf.close()
    # Its stream's task waited on it: uvicorn cancelled it once its grace ran out, and logged an
    # error with a traceback (in a kernel, under the cell that stopped serving).
    errors = [record for record in caplog.records if record.levelno >= logging.ERROR]
    assert not errors, [record.getMessage() for record in errors]
    assert stopped < 30  # generous: it waits on nothing
