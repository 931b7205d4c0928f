"""Small helpers shared by the test modules (tests/ is on sys.path under pytest)."""

import contextlib
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import warm

ROOT = Path(__file__).resolve().parent.parent
PROTECTED = ROOT / "notebooks" / "servers" / "protected.py"

# The deadline of a call whose handler must have started before it passed: to see a late result
# or a late crash, a handler still running, the loop an async tool held; or must have reported
# progress, asked its question or answered within it. A handler that had not started by its
# deadline is cancelled before it runs, so a short deadline made those tests fail whenever the
# loaded machine (six workers on two cores) was slow to start it; 0.1 - 0.2 s did. A handler that
# only has to outlast its call waits on an event set when the call has returned, so the deadline
# is all such a test waits; where the work must outlast the deadline, it is scaled with it.
STARTS_WITHIN = 2.0


def wait_until(predicate, limit: float = 10.0) -> bool:
    """Poll `predicate` until it holds or `limit` seconds pass: for things that happen on
    mcp_nb's loop thread or a worker thread, never for timing assertions."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return False


class FakeClock:
    """A retry policy's `sleep`: each wait recorded instead of slept."""

    def __init__(self):
        self.waits = []

    async def __call__(self, seconds):
        self.waits.append(seconds)


def ended(pid: int) -> bool:
    """Whether process `pid` has ended: gone, or a zombie (ended, its status not yet collected by
    whoever adopted it)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] == "Z"  # the state, after the name
    except OSError:
        return True


@contextlib.contextmanager
def interrupted_when(predicate, limit: float = 10.0):
    """Interrupt the main thread, as the kernel's stop button does, once `predicate()` holds.

    The stop button sends SIGINT to the kernel process; Python's handler raises
    KeyboardInterrupt in the main thread, waking it from a blocking wait. The signal goes
    to the main thread itself, so that its wait is what the signal breaks (a simulated one,
    `_thread.interrupt_main()`, only lands once a blocking wait has ended by itself). Use
    it around code that cannot finish until it is interrupted, and the interrupt lands
    inside the block; the block fails if `predicate()` never held.

    A kernel always has Python's handler for SIGINT; a test process may not (a shell without
    job control starts its background commands with SIGINT ignored, and Python then installs
    no handler): the block has it, as a kernel does, and the one before is put back after.
    """
    assert threading.current_thread() is threading.main_thread(), "only the main thread is interrupted"
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    state = {"open": True, "sent": False}
    lock = threading.Lock()

    def watch():
        if not wait_until(predicate, limit):
            return
        with lock:
            if state["open"]:
                state["sent"] = True
                signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    watcher = threading.Thread(target=watch, name="test-interrupter", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        with lock:
            state["open"] = False
        watcher.join()
        signal.signal(signal.SIGINT, before)
    assert state["sent"], f"the interrupt was never sent: {predicate.__name__} did not hold within {limit} s"


def checkout_env() -> dict[str, str]:
    """This process's environment, with this checkout first on PYTHONPATH (for subprocesses)."""
    values = dict(os.environ)
    values["PYTHONPATH"] = str(ROOT) + os.pathsep + values.get("PYTHONPATH", "")
    return values


def write_notebook(folder: Path, *cells) -> Path:
    """A notebook `shop.ipynb` in `folder` with these cells (nbformat's `new_*_cell`s)."""
    import nbformat  # only the tests that write a notebook need it
    from nbformat.v4 import new_notebook

    path = folder / "shop.ipynb"
    nbformat.write(new_notebook(cells=list(cells)), path)
    return path


@contextmanager
def http_served(handler):
    """`handler` (a BaseHTTPRequestHandler) answering on 127.0.0.1, a thread per request; yields
    its address, `http://127.0.0.1:PORT`, and stops it after."""
    from http.server import ThreadingHTTPServer

    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def copy_repository(copy: Path) -> None:
    """The repository's files in `copy`: what git keeps, and what it would keep that is not committed
    yet (as a clone of this working tree holds them), without symlinks or git's own files."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, check=True)
    for name in filter(None, listed.stdout.decode().split("\0")):
        source = ROOT / name
        if source.is_file() and not source.is_symlink():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name)


def served_at(process) -> tuple[str, str, str]:
    """What `mcp-nb serve --http` said on stderr until it serves (its URL, all it said), and the token
    from the file it named: (its URL, its token, all it said)."""
    import re

    said = ""
    while "Ctrl-C stops it." not in said:
        line = process.stderr.readline()
        assert line, f"the server ended early: {said}"
        said += line
    url = re.search(r"serving at (http://127\.0\.0\.1:\d+/mcp)", said).group(1)
    # Not a terminal: the token is in a file only its user can read, never on stderr (a log).
    token_file = re.search(r"^token file: (\S+) ", said, re.MULTILINE).group(1)
    token = Path(token_file).read_text().strip()
    return url, token, said


@contextmanager
def protected_server(*options: str):
    """notebooks/servers/protected.py (an OAuth-protected MCP server) in a process of its own. Yields its /mcp URL and a dict whose "after" is, once the
    server has stopped, what it wrote to stderr past its first line."""
    process = subprocess.Popen(warm.command(PROTECTED, *options), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    said = {"after": ""}
    try:
        line = process.stderr.readline()
        found = re.fullmatch(r"protected MCP server at (http://127\.0\.0\.1:\d+/mcp)\n", line)
        assert found, f"the protected server said {line!r} (exit {process.poll()})"
        yield found.group(1), said
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
                raise
        said["after"] = process.stderr.read()
        process.stderr.close()
    # Stopped by SIGTERM, it ends as a clean exit rather than killed by the signal.
    assert process.returncode == 0, (process.returncode, said["after"])


def added(i: int, name: str = "add"):
    """The Outcome of a trivial successful call number `i` (`add(a=i)` answering `str(i)`), built
    without a server: what the history file's tests record by the hundred thousand."""
    from mcp_nb.records.outcome import Outcome  # the helpers of tests that make no Outcome load no records

    text = str(i)
    return Outcome(
        i, "tool", name, {"a": i}, "result", "ok", text, {"result": text}, False, None, None, None, 1_750_000_000.0 + i, 1.0, 30.0
    )
