"""The stdio transport: a server's process as a session's streams, and its stderr as its words.

`StdioTransport` starts the process (`process.ServerProcess`), hands its stdout and stdin to the
session (`process.StdioStreams`; what the SDK would choke on taken out, `inbound.Guarded`) and reads its stderr line by line (`StderrReader`) onto the
connection that owns it (`Owner`: the lines go on the connection and on the calls waiting on it).
The server's exit is watched whatever holds its pipes: the connection is lost at once, and why.

POSIX only: the process leads a process group of its own, which is what mcp_nb ends (`killpg`),
and its pipes are read by the loop without a thread (`add_reader`, non-blocking descriptors).
"""

from __future__ import annotations

import asyncio
import codecs
import logging
import os
import shutil
import time
from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, cast

from mcp_nb.calling.connections.errors import ConnectError
from mcp_nb.calling.connections.inbound import Guarded
from mcp_nb.calling.connections.process import ServerProcess, StdioStreams
from mcp_nb.calling.connections.spec import ServerSpec
from mcp_nb.mistakes import one_line
from mcp_nb.records.trace import ServerLog

if TYPE_CHECKING:  # the SDK names no public alias for a transport's two streams
    from mcp.client._transport import TransportStreams

log = logging.getLogger(__package__)

STRAY_LINE_CHARS = 500  # what a message says of a stdout line that is no JSON-RPC message


class Owner(Protocol):
    """The connection a stdio server's words go to."""

    @property
    def name(self) -> str: ...

    @property
    def logs(self) -> Sequence[ServerLog]: ...

    def heard(self, entry: ServerLog) -> None: ...

    def lost(self, reason: str) -> None: ...


def check_runnable(spec: ServerSpec) -> None:
    """Say plainly that a command is not there, before trying to start it: the error of a failed
    start depends on the machine (a directory on PATH that cannot be searched turns "no such
    file" into "permission denied", which points the user the wrong way)."""
    command = spec.command[0]
    if os.sep in command or (os.altsep and os.altsep in command):
        path = command if os.path.isabs(command) else os.path.join(spec.cwd or os.getcwd(), command)
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise ConnectError(f"could not start {spec.name!r}: no program at {command!r} that can be run")
        return
    # The process gets mcp_nb's environment with `env` on top: PATH is searched there.
    search = spec.env.get("PATH", os.environ.get("PATH", os.defpath))
    if shutil.which(command, path=search) is None:
        raise ConnectError(f"could not start {spec.name!r}: no command {command!r} on PATH")


class StdioTransport:
    """A stdio server's process, started by mcp_nb, its stdout and stdin the session's streams,
    its stderr read line by line onto the connection (`owner`).

    The server's stderr is not the kernel's: in Jupyter `sys.stderr` is not a file (the crash
    users of notebook clients report with the SDK's `errlog`), and a server's diagnostics would
    print into whatever cell runs. Here stderr is a pipe the loop reads: every line goes on the
    connection and on the calls waiting on it. The process's own exit is watched, whatever
    holds its pipes (a helper it started): the connection is lost at once, and its group ended.
    """

    def __init__(self, spec: ServerSpec, owner: Owner) -> None:
        self.spec, self.owner = spec, owner
        self.pid: int | None = None  # the server's, once started
        self.stderr: StderrReader | None = None
        self._process: ServerProcess | None = None
        self._streams: StdioStreams | None = None

    async def __aenter__(self) -> TransportStreams:
        spec, owner = self.spec, self.owner
        check_runnable(spec)
        read_end, write_end = os.pipe()
        try:
            process = ServerProcess(list(spec.command), dict(spec.env) or None, spec.cwd, stderr=write_end)
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)  # the process has its own copy: end-of-file comes when it is gone
        self.pid, self._process = process.pid, process
        self.stderr = StderrReader(owner, read_end)
        process.watch_exit(lambda: owner.lost("the server's process exited"))
        self._streams = StdioStreams(process, self._not_a_message)
        try:
            read, write = await self._streams.open()
            return cast("TransportStreams", (Guarded(read, self._warned), write))
        except BaseException:
            await self._streams.close()
            raise

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> bool | None:
        if self._streams is not None:
            await self._streams.close()
        return None

    def running(self) -> bool:
        """Whether the server's process was started and has not exited."""
        return self._process is not None and self._process.state() == "running"

    def heard_all(self) -> None:
        """File what the server's stderr holds now (it writes about a call before it answers)."""
        if self.stderr is not None:
            self.stderr.drain()

    def left(self) -> None:
        """The session was left: what the process wrote last is filed, and the pipe closed."""
        if self.stderr is not None:
            self.stderr.close()

    def _not_a_message(self, line: str) -> None:
        """A line of the server's stdout that is no JSON-RPC message (a stray print): said on
        the connection, and on the calls waiting on it."""
        self._warned(f"the server wrote a line on stdout that is no JSON-RPC message: {line[:STRAY_LINE_CHARS]!r}")

    def _warned(self, message: str) -> None:
        """What mcp_nb took out of the server's stdout: said on the connection, and on the calls waiting on it."""
        self.owner.heard(ServerLog(level="WARNING", logger="mcp_nb.connection", message=message, at=time.time()))


class StderrReader:
    """Reads a stdio server's stderr line by line onto its connection, on mcp_nb's loop.

    The pipe is read without blocking whenever it has data (the loop watches it), and
    `drain()` reads whatever it holds at once: a server writes what it says about a call
    to stderr before it answers on stdout, so draining once the answer is in puts every
    such line on the call, with no thread to race.
    """

    def __init__(self, owner: Owner, fd: int) -> None:
        self.owner, self.fd = owner, fd
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._rest = ""
        self.done = False
        os.set_blocking(fd, False)
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(fd, self.drain)

    def drain(self) -> None:
        """File every complete line the pipe holds now; at its end, say the process is gone."""
        if self.done:
            return
        owner = self.owner
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except BlockingIOError:
                return
            except OSError:  # read as the pipe's end: the process can say no more
                log.debug("reading the stderr of %r failed", owner.name, exc_info=True)
                chunk = b""
            if not chunk:
                self._finish()
                return
            *lines, self._rest = (self._rest + self._decoder.decode(chunk)).split("\n")
            now = time.time()
            for line in lines:
                owner.heard(
                    ServerLog(level="STDERR", logger=f"{owner.name} stderr", message=line.rstrip("\r"), source="stderr", at=now)
                )

    def _finish(self) -> None:
        owner = self.owner
        self.done = True
        if self._rest:
            owner.heard(
                ServerLog(level="STDERR", logger=f"{owner.name} stderr", message=self._rest, source="stderr", at=time.time())
            )
        self._release()
        last = one_line(owner.logs[-1].message) if owner.logs else ""  # a megabyte, or a terminal's escapes: one bounded line
        owner.lost("its process exited" + (f" (its last line: {last})" if last else ""))

    def close(self) -> None:
        if not self.done:
            self.drain()
        if not self.done:
            self.done = True
            self._release()

    def _release(self) -> None:
        """Stop watching the pipe and close it (once the process is gone, or the connection closed)."""
        try:
            self._loop.remove_reader(self.fd)
        except Exception:  # noqa: BLE001 - a loop already closed watches nothing
            log.debug("could not stop watching the stderr of %r", self.owner.name, exc_info=True)
        try:
            os.close(self.fd)
        except OSError:
            log.debug("could not close the stderr pipe of %r", self.owner.name, exc_info=True)
