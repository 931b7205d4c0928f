"""Python programs the tests start, started warm: `python warm.py SOCKET PROGRAM ARGS` asks a
process that imported the SDK (and mcp_nb's client path) once (`python warm.py --serve SOCKET`)
to fork a child that runs PROGRAM as `python PROGRAM ARGS` would: with this process's stdin,
stdout and stderr (passed over the socket), its environment, folder and arguments, PROGRAM run
afresh as `__main__`. This process relays the signals it is sent (SIGTERM, SIGINT, SIGHUP) to
the child, waits, and ends as the child ended (its status, or the signal that ended it).

Why: the MCP servers and clients the tests start are real programs, and each spent most of its
second of CPU importing the SDK (its pydantic models are built at import): the same work
hundreds of times a run. Not for the tests about processes themselves (who signals whom,
what outlives what): those start their servers as `python PROGRAM`.

If this process is killed (SIGKILL), the warm process ends the child, and what the child started
(its process group). The warm process ends with the process that started it: when its stdin
closes, or at SIGTERM, ending its children first.

Four kinds of warm process, each started at its first use and ended at exit:

    command(PROGRAM, *args)   # [python, warm.py, SOCKET, PROGRAM, *args]: a server or client the
                              # tests start, from a process that imported mcp_nb's client path too
    python(*argv)             # what `python *argv` runs (`-m pytest ...`, `-m mcp_nb snapshot ...`,
                              # `-c CODE`, `PROGRAM`), from a process that imported the SDK, pytest,
                              # nbval and IPython but not mcp_nb: mcp_nb reads its environment at import,
                              # so the child imports it afresh, with its own
    python("-m", "ipykernel_launcher", ..., preload="kernels")
                              # a kernel (tests/kernels.py), from a process that imported ipykernel
    python("-m", "nbgrader", ..., preload="nbgrader")
                              # nbgrader's commands, from a process that imported nbgrader
    kernels_of(PYTHON, ENV)   # the socket of a "kernels" process of another environment's
                              # interpreter (Binder's venv), for the kernels nbval starts there

What differs from a cold start, and why it does not matter where these are used: the child's
interpreter flags (-X, -W) and resource limits are the warm process's (nothing started so asks
for others; the tests about limits start theirs cold), and the modules named above are imported
already. The child's sys.path is the one its PYTHONPATH gives.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys

RELAYED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def launch(path: str, argv: list[str]) -> int:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(path)
        request = json.dumps({"argv": argv, "env": dict(os.environ), "cwd": os.getcwd()}).encode() + b"\n"
        socket.send_fds(sock, [request], [0, 1, 2])
        # The program's streams are the program's alone: held here too, a program that closes its
        # stdout would not be seen to (the reader's end of the pipe would wait on this copy).
        nothing = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(nothing, fd)
        os.close(nothing)
        said = b""
        while b"\n" not in said:  # the child's pid, first
            chunk = sock.recv(64)
            if not chunk:
                return 1
            said += chunk
        pid_text, _, said = said.partition(b"\n")
        child = int(pid_text)

        def relay(number, _frame):
            try:
                os.kill(child, number)
            except ProcessLookupError:
                pass

        for number in RELAYED:
            signal.signal(number, relay)
        while chunk := sock.recv(64):
            said += chunk
    status = int(said) if said.strip() else 1
    if status < 0:  # ended by a signal: end so too, as the program would have
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    return status


def preload(kind: str) -> None:
    """What the tests' programs import, once: the SDK's client and server and the HTTP server they
    listen with; for `command`'s programs mcp_nb's client path too (it loads its modules lazily),
    for `python`'s commands pytest, nbval, IPython's shell and nbformat instead, for its kernels
    ipykernel and pandas (as a kernel imports it). nbgrader's commands need nbgrader alone (it
    imports Jupyter's server)."""
    if kind == "nbgrader":
        import nbgrader.apps  # noqa: F401

        return
    import mcp.client  # noqa: F401
    import mcp.client.auth  # noqa: F401
    import mcp.server.mcpserver  # noqa: F401
    import starlette.applications  # noqa: F401
    import uvicorn  # noqa: F401

    if kind == "programs":
        import mcp_nb

        mcp_nb.connect, mcp_nb.call, mcp_nb.reset  # noqa: B018 (the attribute loads its module)
    elif kind == "kernels":
        import ipykernel.ipkernel  # noqa: F401
        import ipykernel.kernelapp  # noqa: F401
        import ipykernel.zmqshell  # noqa: F401

        _imported_as_in_a_kernel("pandas")  # what nearly every notebook's history shows
    else:
        import IPython.core.interactiveshell  # noqa: F401
        import nbformat  # noqa: F401
        import nbval.kernel  # noqa: F401
        import nbval.plugin  # noqa: F401
        import pytest  # noqa: F401


def _imported_as_in_a_kernel(name: str) -> None:
    """Import `name` as a kernel's cell would. pandas decides defaults at import from where it
    runs: `display.max_columns` from whether a Jupyter kernel runs it (20 there, 0 in a terminal),
    asking the `get_ipython` a kernel puts among the builtins, and `display.encoding` from
    sys.stdout's (ipykernel's stream says "UTF-8"). A kernel forked from here must print frames as
    one that imported pandas itself, so the import is given both as a kernel has them, taken back
    after (tests/test_warm.py compares every option with a cold kernel's)."""
    import builtins
    import io

    class _Kernel:
        kernel = True

    stdout = sys.stdout
    builtins.get_ipython = _Kernel  # type: ignore[attr-defined]  # get_ipython() is a kernel's shell
    sys.stdout = io.TextIOWrapper(io.BytesIO(), encoding="UTF-8")
    try:
        __import__(name)
    except ImportError:
        pass  # an environment without it imports nothing ahead
    finally:
        sys.stdout = stdout
        del builtins.get_ipython  # type: ignore[attr-defined]


def run_as_main(argv: list[str], cwd: str) -> None:
    """Run what `python *argv` runs, as `__main__`, sys.argv as it would have it."""
    import runpy
    import types

    if argv[0] == "-m":
        sys.argv = [argv[1], *argv[2:]]  # run_module puts the module's file first
        sys.path[0] = cwd
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    elif argv[0] == "-c":
        sys.argv = ["-c", *argv[2:]]
        sys.path[0] = ""
        main = types.ModuleType("__main__")
        sys.modules["__main__"] = main
        exec(compile(argv[1], "<string>", "exec"), main.__dict__)  # noqa: S102 - what `python -c` does
    else:
        sys.argv = argv
        sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))  # as `python PROGRAM` has it
        runpy.run_path(argv[0], run_name="__main__")


def serve(path: str, kind: str) -> None:
    import atexit
    import select
    import threading

    preload(kind)
    # The entries this process's PYTHONPATH put on sys.path: a child has its own instead.
    inherited = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
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
            try:
                conn.sendall(f"{pid}\n".encode())
            except OSError:
                pass
            running[pid] = conn
            return
        code = 1
        try:  # the child: become `python PROGRAM ARGS`
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
            wanted = [entry for entry in request["env"].get("PYTHONPATH", "").split(os.pathsep) if entry]
            sys.path[1:] = [*wanted, *(e for e in sys.path[1:] if e not in inherited and e not in wanted)]
            try:
                run_as_main(request["argv"], request["cwd"])
                code = 0
            except SystemExit as done:
                code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
                if not isinstance(done.code, (int, type(None))):
                    print(done.code, file=sys.stderr)
            except KeyboardInterrupt:  # SIGINT relayed, not handled by the program: as Python ends
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGINT)
        except BaseException:  # noqa: BLE001 - as the interpreter would: the traceback, status 1
            import traceback

            traceback.print_exc()
        finally:
            # What the interpreter does as it ends: it waits for the threads that are not daemons,
            # then runs the functions given to atexit (the program's: a connection closed, a file
            # written whole).
            try:
                threading._shutdown()  # type: ignore[attr-defined]
                atexit._run_exitfuncs()
            except BaseException:  # noqa: BLE001 - as the interpreter would: said, and the end all the same
                import traceback

                traceback.print_exc()
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
            end_all()  # the process that started this one is gone
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


# -- in a test process: its warm process, started at the first command ---------------------------

_started: dict[tuple[str, str], tuple] = {}  # (kind, interpreter) -> (the warm process, its socket's path)


def socket_path(kind: str = "programs", python: str | None = None, env: dict | None = None) -> str:
    """The socket of this process's warm process of `kind`, started (once) if need be; it ends at exit.
    `python` and `env`: run by another interpreter (a venv the tests made) in its environment."""
    python = python or sys.executable
    key = (kind, python)
    if key not in _started or _started[key][0].poll() is not None:
        import atexit
        import shutil
        import subprocess
        import tempfile
        import time

        folder = tempfile.mkdtemp(prefix="w", dir="/tmp")  # a Unix socket's path fits in 107 bytes
        path = os.path.join(folder, "warm")
        process = subprocess.Popen([python, os.path.abspath(__file__), "--serve", path, kind], stdin=subprocess.PIPE, env=env)

        def stop() -> None:
            process.stdin.close()  # its cue to end, its children first
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
            shutil.rmtree(folder, ignore_errors=True)

        atexit.register(stop)
        for _ in range(600):
            if os.path.exists(path) or process.poll() is not None:
                break
            time.sleep(0.05)
        if not os.path.exists(path):
            raise RuntimeError(f"the warm Python process did not start (status {process.poll()})")
        _started[key] = (process, path)
    return _started[key][1]


def kernels_of(python: str, env: dict) -> str:
    """The socket of a warm process of kind "kernels" run by the interpreter `python` of another
    environment (Binder's venv), in `env`, for the kernels of that environment (tests/kernels.py)."""
    return socket_path("kernels", python=python, env=env)


def launched(python: str, socket: str, *argv) -> list[str]:
    """The command that runs `python *argv` as a child of the warm process at `socket`, which
    that `python` runs."""
    return [python, os.path.abspath(__file__), socket, *map(str, argv)]


def command(program, *args) -> list[str]:
    """`[python, PROGRAM, *args]`, started warm: what to give as a server's or a client's command."""
    return launched(sys.executable, socket_path(), program, *args)


def python(*argv, preload: str = "commands") -> list[str]:
    """`[python, *argv]` (`-m MODULE ...`, `-c CODE ...` or `PROGRAM ...`), started warm from a
    process that has not imported mcp_nb; `preload="kernels"` for `-m ipykernel_launcher ...`."""
    return launched(sys.executable, socket_path(preload), *argv)


if __name__ == "__main__":
    if sys.argv[1] == "--serve":
        # Run as a script, tests/ would come first on sys.path: a module of the SDK's importing a
        # name that one of the tests' helpers has would find the helper.
        if sys.path and sys.path[0] == os.path.dirname(os.path.abspath(__file__)):
            del sys.path[0]
        serve(sys.argv[2], sys.argv[3])
    else:
        sys.exit(launch(sys.argv[1], sys.argv[2:]))
