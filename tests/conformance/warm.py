"""The client program, started warm: the suite runs `python warm.py SOCKET client.py URL` once per
scenario (about fifty, all at once), and this asks a process that imported mcp_nb's client path
once (`python warm.py --serve SOCKET`, which tests/test_client_conformance.py starts) to fork a
child that runs client.py as `python client.py URL` would: with this process's stdin, stdout and
stderr (passed over the socket), its environment, folder and arguments, client.py run afresh as
`__main__`. This process waits, and exits with the child's status.

Why: each client program spent most of its second of CPU importing the SDK (its pydantic models
are built at import), the same work fifty times over. What the suite judges is unchanged: the
requests that reach its servers, and the client's last line.

If this process is ended (the suite's timeout), the warm process ends the child, and what the
child started (its process group). The warm process ends with the test that started it: when
its stdin closes, or at SIGTERM, ending its children first.
"""

from __future__ import annotations

import json
import os
import socket
import sys


def launch(path: str, argv: list[str]) -> int:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(path)
        request = json.dumps({"argv": argv, "env": dict(os.environ), "cwd": os.getcwd()}).encode() + b"\n"
        socket.send_fds(sock, [request], [0, 1, 2])
        status = b""
        while chunk := sock.recv(64):
            status += chunk
    return int(status) if status.strip() else 1


def serve(path: str) -> None:
    import runpy
    import select
    import signal
    import threading

    # What every scenario imports, once: mcp_nb's client path (it loads its modules lazily).
    import mcp.client  # noqa: F401
    import mcp.client.auth  # noqa: F401

    import mcp_nb

    mcp_nb.connect, mcp_nb.call, mcp_nb.reset  # noqa: B018 (the attribute loads its module)
    # A fork copies only the thread that forks: another thread's lock would stay held in the child.
    if threading.active_count() != 1:
        raise SystemExit("warm.py: a thread was started at import, and a fork could deadlock")

    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(128)
    running: dict[int, socket.socket] = {}  # a child's pid (and group) -> its launcher's connection

    def end_all(*_) -> None:
        for pid in running:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, end_all)

    def start(conn: socket.socket) -> None:
        data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
        while not data.endswith(b"\n"):
            more = conn.recv(1 << 20)
            if not more:
                for fd in fds:
                    os.close(fd)
                conn.close()
                return
            data += more
        request = json.loads(data)
        pid = os.fork()
        if pid:
            try:
                os.setpgid(pid, pid)  # here too: a kill before the child's own call must reach it
            except OSError:
                pass
            for fd in fds:
                os.close(fd)
            running[pid] = conn
            return
        code = 1
        try:  # the child: become `python client.py URL`
            os.setpgid(0, 0)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            listener.close()
            for other in running.values():
                other.close()
            conn.close()
            for fd, given in zip((0, 1, 2), fds):
                os.dup2(given, fd)
                os.close(given)
            sys.stdin = open(0, closefd=False)  # noqa: SIM115
            sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
            sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environ.update(request["env"])
            sys.argv = request["argv"]
            sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))  # as `python client.py` has it
            try:
                runpy.run_path(sys.argv[0], run_name="__main__")
                code = 0
            except SystemExit as done:
                code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
                if not isinstance(done.code, (int, type(None))):
                    print(done.code, file=sys.stderr)
        except BaseException:  # noqa: BLE001 - as the interpreter would: the traceback, status 1
            import traceback

            traceback.print_exc()
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:  # noqa: BLE001, S110
                    pass
            os._exit(code)

    abandoned: set[int] = set()  # children whose launcher ended first, killed, not yet reaped
    while True:
        watched = [conn for pid, conn in running.items() if pid not in abandoned]
        ready, _, _ = select.select([sys.stdin, listener, *watched], [], [], 0.05)
        if sys.stdin in ready and not sys.stdin.buffer.read1(1):
            end_all()  # the test that started this process is gone
        if listener in ready:
            start(listener.accept()[0])
        for pid, conn in list(running.items()):
            if conn in ready and not conn.recv(1):  # its launcher ended first: so does the child
                abandoned.add(pid)
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        while running:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if not pid:
                break
            conn = running.pop(pid, None)
            abandoned.discard(pid)
            if conn is not None:
                try:
                    conn.sendall(str(os.waitstatus_to_exitcode(status)).encode())
                except OSError:
                    pass
                conn.close()


if __name__ == "__main__":
    if sys.argv[1] == "--serve":
        serve(sys.argv[2])
    else:
        sys.exit(launch(sys.argv[1], sys.argv[2:]))
