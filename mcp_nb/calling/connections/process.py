"""A stdio server's process: started here, known by the id it was started with, its group ended.

The SDK's `stdio_client` starts the server itself and keeps the process to itself. mcp_nb needs
the process (to notice its exit while a helper holds its pipes, and to end whatever it started),
so it starts it here (`ServerProcess`), in a session and process group of its own as the SDK
does, and bridges its pipes to the session's streams as the SDK's transport does
(`StdioStreams`): one JSON-RPC message per line, each way.

Whom mcp_nb signals. A process group's id is its leader's process id, and an id is given to no
other process while its process is unreaped (alive, or a zombie). So the server, the group's
leader, is reaped here and only here, after the last signal to its group; and before every
signal it is checked that the leader is still this process's unreaped child (a library's
`os.wait()` could have reaped it: then nothing is signalled). A pid reused by another process
is never signalled, whoever started that process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio
import mcp_types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.stdio import get_default_environment
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.message import SessionMessage
from mcp_types import PARSE_ERROR, ErrorData, JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse, RequestId
from pydantic import ValidationError

from mcp_nb.calling.connections.inbound import answered_id, refused_answer

if TYPE_CHECKING:  # the SDK names no public alias for a transport's two streams
    from mcp.client._transport import TransportStreams

log = logging.getLogger(__package__)

STDIN_GRACE_S = 2.0  # after its stdin closes, how long the server has to exit by itself (the SDK's figure)
TERM_GRACE_S = 1.0  # between asking the group to stop and killing what is left of it
REAP_S = 2.0  # how long a killed leader is waited for before it is left to the interpreter
FLUSH_S = 0.5  # how long messages already accepted have to reach the server's stdin at the end
POLL_S = 0.5  # how often an exit is looked for where the loop cannot watch for it (no pidfd)
STEP_S = 0.02  # how often a group that is ending is looked at
READ_CHUNK = 1 << 16
WAITING_KEPT = 4096  # the requests waiting for an answer a transport remembers (the oldest forgotten first)


def _member(pid: str, group: bytes) -> bool:
    """Whether process `pid` is in process group `group` and not a zombie (/proc/PID/stat)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return False  # gone meanwhile
    return len(fields) > 2 and fields[2] == group and fields[0] not in (b"Z", b"X")


class ServerProcess:
    """A stdio server's process, started by mcp_nb: its id, its exit, its group's end."""

    def __init__(self, argv: list[str], env: dict[str, str] | None, cwd: str | os.PathLike[str] | None, stderr: int) -> None:
        # The environment the SDK's transport gives a server: a few safe variables, `env` on top.
        self.popen = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            bufsize=0,
            env=get_default_environment() | (env or {}),
            cwd=cwd,
            start_new_session=True,
        )
        self.pid = self.popen.pid
        self._pidfd: int | None = None
        with contextlib.suppress(AttributeError, OSError):  # Linux 5.3 and later
            self._pidfd = os.pidfd_open(self.pid)
        self._loop = asyncio.get_running_loop()
        self._watching = False
        self._poll: asyncio.Task[None] | None = None
        self._ending: asyncio.Task[None] | None = None
        self._on_exit: Callable[[], None] | None = None

    # -- is it still ours ------------------------------------------------------------------------

    def state(self) -> str:
        """ "running"; "exited" (a zombie, unreaped: its id is still ours); or "gone" (reaped,
        by mcp_nb or by someone else: its id may belong to another process now)."""
        if self.popen.returncode is not None:
            return "gone"
        if not hasattr(os, "waitid"):  # no way to look without reaping (macOS before Python 3.13)
            return "gone" if self.popen.poll() is not None else "running"
        try:  # WNOWAIT: looked at, not reaped
            if self._pidfd is not None:
                found = os.waitid(os.P_PIDFD, self._pidfd, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            else:
                found = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return "gone"
        return "running" if found is None else "exited"

    def signal_group(self, sig: int) -> bool:
        """Send `sig` to the group the server leads, if the server is still this process's
        unreaped child (else its id may be another's: nothing is sent). Whether it was sent."""
        if not hasattr(os, "killpg") or self.pid == os.getpgrp() or self.state() == "gone":
            return False
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def _group_lives(self) -> bool:
        """Whether a member of the group other than a zombie is left. Read from /proc on Linux;
        elsewhere the group counts as alive while its leader is unreaped (it is waited for)."""
        group = str(self.pid).encode()
        # The leader first: while it runs, the group lives, and the whole of /proc (every process
        # of the machine, thousands on a busy one) need not be read to know it.
        if _member(str(self.pid), group):
            return True
        try:
            entries = os.listdir("/proc")
        except OSError:
            return self.state() != "gone"
        return any(_member(entry, group) for entry in entries if entry.isdigit())

    # -- its exit --------------------------------------------------------------------------------

    def watch_exit(self, on_exit: Callable[[], None]) -> None:
        """Call `on_exit()` on the loop when the server exits (whatever still holds its pipes),
        and end its group then. The loop watches the pidfd; elsewhere the exit is polled for."""
        self._on_exit = on_exit
        if self._pidfd is not None:
            try:
                self._loop.add_reader(self._pidfd, self._exited)
                self._watching = True
                return
            except (OSError, NotImplementedError):  # a loop that cannot watch a descriptor
                pass
        self._poll = self._loop.create_task(self._polling())

    async def _polling(self) -> None:
        while self.state() == "running":
            await asyncio.sleep(POLL_S)
        self._exited()

    def _exited(self) -> None:
        self._unwatch()
        on_exit, self._on_exit = self._on_exit, None
        if on_exit is not None:
            on_exit()
        if self._ending is None:
            self._ending = self._loop.create_task(self._end_group())

    def _unwatch(self) -> None:
        if self._watching and self._pidfd is not None:
            with contextlib.suppress(Exception):
                self._loop.remove_reader(self._pidfd)
        self._watching = False
        if self._poll is not None and self._poll is not asyncio.current_task():
            self._poll.cancel()
        self._poll = None

    # -- its end ----------------------------------------------------------------------------------

    async def end(self) -> None:
        """The connection closes: the server's stdin is closed (the caller did), it is given
        STDIN_GRACE_S to exit, then its group is ended and it is reaped. Goes on to the end
        even if the caller is cancelled meanwhile."""
        self._unwatch()
        self._on_exit = None
        if self._ending is None:
            self._ending = self._loop.create_task(self._ended_after_stdin())
        await asyncio.shield(self._ending)

    async def _ended_after_stdin(self) -> None:
        waited = 0.0
        while self.state() == "running" and waited < STDIN_GRACE_S:
            await asyncio.sleep(STEP_S)
            waited += STEP_S
        await self._end_group()

    async def _end_group(self) -> None:
        """TERM the group, KILL what is left of it after TERM_GRACE_S, then reap the leader:
        the group's id stays the server's until this is done."""
        try:
            if self.signal_group(signal.SIGTERM):
                waited, lives = 0.0, self._group_lives()
                while lives and waited < TERM_GRACE_S:
                    await asyncio.sleep(STEP_S)
                    waited += STEP_S
                    lives = self._group_lives()
                if lives:
                    self.signal_group(signal.SIGKILL)
            await self._reaped()
        finally:
            if self._pidfd is not None:
                with contextlib.suppress(OSError):
                    os.close(self._pidfd)
                self._pidfd = None

    async def _reaped(self) -> None:
        waited = 0.0
        while self.popen.poll() is None and waited < REAP_S:
            await asyncio.sleep(STEP_S)
            waited += STEP_S
        if self.popen.returncode is None:
            log.debug("the stdio server %d did not end after SIGKILL; left to the interpreter to reap", self.pid)


class StdioStreams:
    """The server's stdout and stdin as the session's read and write streams (what the SDK's
    stdio transport yields): a line of stdout is one message, each message sent is one line.
    A line that is no message is said (`said(line)`: on the connection, and the calls waiting).

    A line that answers a request still waiting, but is no message the protocol allows, fails
    that request at once (`inbound.refused_answer`): the SDK's session drops what it cannot
    validate, and the request would wait for its deadline. So the ids of the requests sent and
    not yet answered are kept (`_waiting`, as the SDK's session matches them: "7" answers 7).
    """

    def __init__(self, process: ServerProcess, said: Callable[[str], None]) -> None:
        self.process, self.said = process, said
        self._loop = asyncio.get_running_loop()
        # The session's ends, as the SDK's transports make them (unbuffered: a slow session
        # holds the reader, and a full pipe holds the server, rather than memory growing).
        self._to_session: MemoryObjectSendStream[SessionMessage | Exception]
        self.read_stream: MemoryObjectReceiveStream[SessionMessage | Exception]
        self._to_session, self.read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        self.write_stream: MemoryObjectSendStream[SessionMessage]
        self._from_session: MemoryObjectReceiveStream[SessionMessage]
        self.write_stream, self._from_session = anyio.create_memory_object_stream[SessionMessage](0)
        self._stdout: asyncio.StreamReader | None = None
        self._stdout_pipe: asyncio.BaseTransport | None = None
        self._stdin: asyncio.WriteTransport | None = None
        self._stdin_ready: _Writable | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._waiting: dict[RequestId, RequestId] = {}  # a request sent and not answered: its id as matched -> as sent

    async def open(self) -> TransportStreams:
        popen = self.process.popen
        stdout = self._stdout = asyncio.StreamReader(limit=READ_CHUNK)
        self._stdout_pipe, _ = await self._loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdout), popen.stdout)
        self._stdin, self._stdin_ready = await self._loop.connect_write_pipe(_Writable, popen.stdin)
        self._tasks = [self._loop.create_task(self._read()), self._loop.create_task(self._write())]
        return self.read_stream, self.write_stream

    async def _read(self) -> None:
        """Each line of the server's stdout, parsed, to the session; a line that is no message
        goes as the error it is, as the SDK's transport sends it, and is said."""
        assert self._stdout is not None
        adapter = mcp_types.jsonrpc_message_adapter
        parts: list[bytes] = []
        try:
            async with self._to_session:
                while chunk := await self._stdout.read(READ_CHUNK):
                    start = 0
                    while (end := chunk.find(b"\n", start)) >= 0:
                        parts.append(chunk[start:end])
                        line, parts = b"".join(parts), []
                        start = end + 1
                        if not line.strip():
                            continue
                        item: SessionMessage | Exception
                        try:
                            item = SessionMessage(adapter.validate_json(line, by_name=False))
                        except ValueError as err:
                            item = self._refused(line, err)
                            self.said(line.decode("utf-8", errors="replace"))
                        else:
                            if isinstance(item.message, JSONRPCResponse | JSONRPCError) and item.message.id is not None:
                                self._waiting.pop(coerce_request_id(item.message.id), None)
                        await self._to_session.send(item)
                    if start < len(chunk):
                        parts.append(chunk[start:])
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            # The session is gone. What the server still writes is read and dropped: a server
            # blocked on a full pipe could not see its stdin close, and exit.
            while await self._stdout.read(READ_CHUNK):
                pass

    def _refused(self, line: bytes, err: ValueError) -> SessionMessage | Exception:
        """What the session gets for a line that is no valid message: an error of mcp_nb's making
        for the request it answers, if that request still waits; else the error it is, as the
        SDK's own transport sends it."""
        rid = answered_id(line) if isinstance(err, ValidationError) else None
        sent = self._waiting.pop(coerce_request_id(rid), None) if rid is not None else None
        if sent is None or not isinstance(err, ValidationError):
            return err
        refused = ErrorData(code=PARSE_ERROR, message=refused_answer(line, err))
        return SessionMessage(JSONRPCError(jsonrpc="2.0", id=sent, error=refused))

    def _sent(self, message: mcp_types.JSONRPCMessage) -> None:
        """Keep the id of a request sent; forget that of a request the session stopped waiting for."""
        if isinstance(message, JSONRPCRequest):
            self._waiting[coerce_request_id(message.id)] = message.id
            if len(self._waiting) > WAITING_KEPT:
                del self._waiting[next(iter(self._waiting))]
        elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
            cancelled = (message.params or {}).get("requestId")
            if isinstance(cancelled, str | int):
                self._waiting.pop(coerce_request_id(cancelled), None)

    async def _write(self) -> None:
        stdin, ready = self._stdin, self._stdin_ready
        assert stdin is not None and ready is not None  # `open` made both before this task
        try:
            async with self._from_session:
                async for sent in self._from_session:
                    self._sent(sent.message)
                    line = sent.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    stdin.write(line.encode("utf-8"))
                    await ready.drained()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError, OSError):
            # The server stopped reading: the session hears the end rather than waiting for ever.
            await self._to_session.aclose()

    async def close(self) -> None:
        """Stop the traffic, let what was accepted reach the server (briefly), close its pipes,
        and end the process (see `ServerProcess.end`)."""
        self.read_stream.close()  # a reader blocked on the session goes on to the end of stdout
        self.write_stream.close()
        if self._tasks:
            await asyncio.wait({self._tasks[1]}, timeout=FLUSH_S)  # the writer
        if self._stdin is not None:
            self._stdin.close()  # the server's stdin ends: it is asked to exit
        try:
            await self.process.end()
        finally:
            for task in self._tasks:
                task.cancel()
            if self._tasks:
                await asyncio.wait(self._tasks, timeout=FLUSH_S)
            for stream in (self._to_session, self._from_session, self.read_stream, self.write_stream):
                stream.close()
            if self._stdout_pipe is not None:
                self._stdout_pipe.close()  # a helper that outlived the group cannot hold the reader


class _Writable(asyncio.Protocol):
    """The server's stdin as the loop writes it: `drained()` waits while the pipe is full, and
    raises once the server has closed it."""

    def __init__(self) -> None:
        self._ready = asyncio.Event()
        self._ready.set()
        self._lost: BaseException | None = None
        self._closed = False

    def pause_writing(self) -> None:
        self._ready.clear()

    def resume_writing(self) -> None:
        self._ready.set()

    def connection_lost(self, exc: BaseException | None) -> None:
        self._closed, self._lost = True, exc
        self._ready.set()

    async def drained(self) -> None:
        await self._ready.wait()
        if self._closed:
            raise self._lost or BrokenPipeError("the server closed its stdin")
