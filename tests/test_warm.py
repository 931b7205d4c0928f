"""tests/warm.py, which starts the tests' MCP servers and clients warm: a program started so is
the program `python PROGRAM ARGS` would run — its arguments, environment, folder, stdin, stdout,
stderr and exit status its own, the signals sent to its launcher relayed to it — and a launcher
killed outright ends the program and what it started."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import warm
from helpers import ended, wait_until

PROGRAM = """\
import os, signal, subprocess, sys, time
print(sys.argv[1:], os.environ.get("SCENARIO"), os.getcwd(), __name__, sys.stdin.readline().strip(), flush=True)
if sys.argv[1] == "hang":
    open(sys.argv[2], "w").write(str(subprocess.Popen(["sleep", "300"]).pid))
    time.sleep(300)
if sys.argv[1] == "polite":
    signal.signal(signal.SIGTERM, lambda *_: (print("stopped politely", flush=True), sys.exit(0)))
    open(sys.argv[2], "w").write("ready")
    time.sleep(300)
if sys.argv[1] == "closes":
    os.close(1)  # its stdout closed, the program runs on: its reader sees the end
    time.sleep(300)
if sys.argv[1] == "plain":
    open(sys.argv[2], "w").write("ready")
    time.sleep(300)
sys.exit(int(sys.argv[1]))
"""


def wait_for(marker: Path) -> str:
    for _ in range(200):
        if marker.exists() and marker.read_text():
            return marker.read_text()
        time.sleep(0.05)
    pytest.fail("the program did not start")


@pytest.fixture
def program(tmp_path):
    (tmp_path / "program.py").write_text(PROGRAM)
    return tmp_path / "program.py"


def test_a_program_started_warm_has_its_own_arguments_environment_folder_streams_and_status(program, tmp_path):
    env = {**os.environ, "SCENARIO": "tools_call"}
    done = subprocess.run(
        warm.command(program, "7"), cwd=tmp_path, env=env, input="hello\n", capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 7
    assert done.stdout == f"['7'] tools_call {tmp_path} __main__ hello\n"


def test_a_program_that_closes_its_stdout_is_seen_to_close_it(program, tmp_path):
    with subprocess.Popen(
        warm.command(program, "closes"), cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as closing:
        closing.stdin.write("hello\n")
        closing.stdin.flush()
        assert closing.stdout.readline().endswith("hello\n")
        assert closing.stdout.read() == ""  # the end, while the program still runs
        assert closing.poll() is None
        closing.kill()


def test_signals_reach_the_program_and_it_ends_as_they_end_it(program, tmp_path):
    marker = tmp_path / "ready"
    with subprocess.Popen(
        warm.command(program, "polite", marker), cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True
    ) as polite:
        wait_for(marker)
        polite.send_signal(signal.SIGTERM)
        assert polite.wait(30) == 0 and "stopped politely" in polite.stdout.read()
    marker.unlink()
    plain = subprocess.Popen(
        warm.command(program, "plain", marker), cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
    )
    wait_for(marker)
    plain.send_signal(signal.SIGTERM)
    assert plain.wait(30) == -signal.SIGTERM  # ended by the signal, as the program was


def test_a_killed_launcher_ends_the_program_and_what_it_started(program, tmp_path):
    marker = tmp_path / "sleeper.pid"
    hanging = subprocess.Popen(
        warm.command(program, "hang", marker), cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
    )
    sleeper = int(wait_for(marker))
    hanging.kill()
    hanging.wait()
    assert wait_until(lambda: ended(sleeper), 5), "the program a killed launcher asked for (and what it started) ran on"


def test_python_runs_a_module_code_or_a_program_as_python_would(program, tmp_path):
    """`warm.python(...)` takes what `python` takes: `-m MODULE`, `-c CODE`, `PROGRAM`, each
    with its arguments, `__main__`, the folder on sys.path where Python puts it, and the
    PYTHONPATH of its own environment (not the warm process's)."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "shown.py").write_text("import sys\nprint(sys.argv[1:], __name__, sys.path[0])\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "lib")}
    as_module = subprocess.run(
        warm.python("-m", "shown", "a", "b"), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert as_module.stdout == f"['a', 'b'] __main__ {tmp_path}\n", as_module.stderr
    code = "import sys, mcp_nb\nprint(sys.argv, __name__, repr(sys.path[0]), mcp_nb.settings.stable_output)"
    stable = {**os.environ, "MCP_NB_STABLE_OUTPUT": "1"}
    as_code = subprocess.run(warm.python("-c", code, "x"), cwd=tmp_path, env=stable, capture_output=True, text=True, timeout=60)
    # mcp_nb reads its environment as it is imported: imported afresh, it reads this one's
    assert as_code.stdout == "['-c', 'x'] __main__ '' True\n", as_code.stderr
    as_program = subprocess.run(warm.python(program, "5"), cwd=tmp_path, input="hi\n", capture_output=True, text=True, timeout=60)
    assert as_program.returncode == 5 and as_program.stdout.endswith("__main__ hi\n")


def test_python_ends_as_the_interpreter_ends(tmp_path):
    """Threads that are not daemons are waited for and atexit's functions run, even when the
    program ends by SystemExit; its status is the one it gave."""
    code = (
        "import atexit, threading, time\n"
        "atexit.register(print, 'atexit ran', flush=True)\n"
        "threading.Thread(target=lambda: (time.sleep(0.3), print('thread ended', flush=True))).start()\n"
        "raise SystemExit(3)\n"
    )
    done = subprocess.run(warm.python("-c", code), capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (3, "thread ended\natexit ran\n"), done.stderr


def test_a_kernel_started_warm_is_interrupted_and_ended_by_its_manager_as_a_kernel_is():
    """tests/kernels.py starts the tests' kernels warm: its manager's interrupt reaches the running
    cell, and a shutdown with `now` (a kill) ends the kernel, not only its launcher."""
    from kernels import start_new_kernel

    manager, client = start_new_kernel()
    try:
        said = []
        reply = client.execute_interactive("import os; print(os.getpid())", timeout=60, output_hook=said.append)
        kernel = int("".join(m["content"].get("text", "") for m in said if m["msg_type"] == "stream"))
        assert kernel != manager.provisioner.process.pid  # the launcher's child, not the launcher
        sent = client.execute("import time; time.sleep(60)")
        time.sleep(0.5)
        manager.interrupt_kernel()
        reply = client.get_shell_msg(timeout=30)
        assert reply["parent_header"]["msg_id"] == sent and reply["content"]["ename"] == "KeyboardInterrupt"
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    assert wait_until(lambda: ended(kernel), 10), "the kernel ran on after its manager killed it"


def test_a_kernel_started_warm_has_pandas_options_as_a_cold_kernel_has_them():
    """The kernels' warm process imports pandas, which decides defaults at import from where it
    runs (`display.max_columns` is 20 in a kernel, 0 in a terminal): every option a kernel forked
    from it reads is the one a kernel that imported pandas itself reads."""
    from kernels import start_new_kernel

    code = (
        "import json, pandas\n"
        "from pandas._config.config import _registered_options\n"
        "print(json.dumps({key: repr(pandas.get_option(key)) for key in sorted(_registered_options)}))"
    )
    seen = []
    for warm_start in (True, False):
        manager, client = start_new_kernel(warm=warm_start)
        try:
            said = []
            client.execute_interactive(code, timeout=60, output_hook=said.append)
            out = "".join(m["content"]["text"] for m in said if m["msg_type"] == "stream" and m["content"]["name"] == "stdout")
            seen.append(json.loads(out.strip().splitlines()[-1]))
        finally:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
    warm_options, cold_options = seen
    assert warm_options["display.max_columns"] == "20"
    assert warm_options == cold_options
