"""The official MCP conformance suite against mcp_nb as a client.

tests/conformance/client.py is a client program written with mcp_nb's public API; the suite
runs it once per client scenario against a mock server of its own and judges what reached
that server. Each run is client.py forked from a process that imported mcp_nb's client path
once (tests/conformance/warm.py): fifty interpreters each importing the SDK cost a minute of
CPU. Three legs: every scenario at 2025-11-25 (the handshake era), every scenario at
2026-07-28 (stateless), and the extension scenarios (no spec version). Each leg must pass but
for its expected-failures file's `client:` entries, the same ones the SDK's own client fails.

In `--suite` mode the suite does not look at how the client program ended, so a client that
crashed after its last request still "passes". The program says on its last line whether it
did every step as it should (`mcp_nb-client: ok`); a scenario counts only with that line.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import peers
import pytest

HERE = Path(__file__).resolve().parent / "conformance"
CLIENT = HERE / "client.py"
WARM = HERE / "warm.py"
SUITE = "@modelcontextprotocol/conformance"
LEGS = ("2025-11-25", "2026-07-28", "extensions")

# Scenarios the suite passes but where the client program rightly does not say ok, and why.
CLIENT_FAILS = {
    # SDK 2.3.0 validates a tools/call answer at 2026-07-28 as CallToolResult | InputRequiredResult,
    # both of which require `resultType`; the scenario's last tool answers without one (which the
    # spec allows: a missing resultType means "complete"), so the SDK raises and mcp_nb records the
    # call as protocol_error / invalid_response. The SDK's own client fails the same step.
    "sep-2322-client-request-state": "resultType",
}


def listed(leg: str) -> set[str]:
    """The client scenarios the pinned suite has for a leg (as `conformance list --client` says)."""
    done = peers.conformance("list", "--client")
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.findall(r"^\s*- (\S+) \[([^\]]*)\]", done.stdout, flags=re.MULTILINE)
    tag = "extension" if leg == "extensions" else leg
    return {name for name, versions in found if tag in versions.split(",")}


@pytest.fixture(scope="module")
def client_command():
    """The command the suite runs per scenario: client.py, forked from a process that imported
    mcp_nb's client path once (conformance/warm.py), which ends with this module's tests."""
    folder = tempfile.mkdtemp(prefix="w", dir="/tmp")  # a Unix socket's path fits in 107 bytes
    path = os.path.join(folder, "warm")
    warm = subprocess.Popen([sys.executable, str(WARM), "--serve", path], stdin=subprocess.PIPE)
    try:
        for _ in range(600):
            if os.path.exists(path) or warm.poll() is not None:
                break
            time.sleep(0.05)
        assert os.path.exists(path), f"the warm client process did not start (status {warm.poll()})"
        yield f"{sys.executable} {WARM} {path} {CLIENT}"
    finally:
        peers.stop(warm)
        shutil.rmtree(folder, ignore_errors=True)


def run(leg: str, results: str, command: str):
    where = ["--suite", "extensions"] if leg == "extensions" else ["--suite", "all", "--spec-version", leg]
    return peers.conformance(
        "client",
        "--command",
        command,
        *where,
        "--timeout",
        "60000",
        "--expected-failures",
        str(HERE / f"expected-failures.{leg}.yml"),
        "-o",
        results,
        timeout=900,
    )


def last_lines(results: str) -> dict[str, str]:
    """Each scenario's client program's last line of output, by scenario name (a scenario run
    again alone, under `alone/`, by that run)."""
    said = {}
    for stdout in sorted(Path(results).rglob("stdout.txt"), key=lambda path: "alone" in path.parts):
        where = stdout.parent.relative_to(results)
        where = where.relative_to("alone") if where.parts[0] == "alone" else where
        scenario = re.sub(r"-\d{4}-\d\d-\d\dT[\d-]+Z$", "", str(where))  # less its run's time
        lines = stdout.read_text(errors="replace").strip().splitlines()
        said[scenario] = next((line for line in reversed(lines) if line.startswith("mcp_nb-client:")), "(nothing said)")
    return said


def alone(leg: str, scenario: str, results: str, command: str):
    """One scenario run by itself (`--scenario`), judged directly."""
    where = [] if leg == "extensions" else ["--spec-version", leg]
    return peers.conformance(
        "client",
        "--command",
        command,
        "--scenario",
        scenario,
        *where,
        "--timeout",
        "60000",
        "-o",
        results,
        timeout=300,
    )


@pytest.mark.parametrize("leg", LEGS)
def test_every_client_scenario_passes(leg, client_command):
    peers.require(SUITE)
    with tempfile.TemporaryDirectory() as results:
        done = run(leg, results, client_command)
        summary = done.stdout.split("SUMMARY ===")[-1]
        ran = set(re.findall(r"^[✓✗] (\S+):", summary, flags=re.MULTILINE))
        assert ran == listed(leg), f"scenarios not run at {leg}: {listed(leg) - ran}"
        passed = set(re.findall(r"^✓ (\S+):", summary, flags=re.MULTILINE))
        if done.returncode != 0:
            # The suite runs its scenarios all at once, on a machine the other tests load too:
            # one that measures time (`sse-retry` judges a reconnection late by 200 ms as a
            # warning) can miss by contention alone. Each unexpected failure runs again by itself,
            # as the SDK's own CI does: a real failure fails again, and fails this test.
            listing = re.sub(r"\x1b\[[0-9;]*m", "", summary).split("Unexpected failures (not in baseline):")
            assert len(listing) == 2 and "Stale baseline" not in summary, (
                f"the client suite failed at {leg}:\n{summary[-6000:]}\n{done.stderr[-3000:]}"
            )
            again = re.findall(r"^\s+✗ (\S+)$", listing[1].split("\n\n")[0], flags=re.MULTILINE)
            assert again, f"the client suite failed at {leg}:\n{summary[-6000:]}\n{done.stderr[-3000:]}"
            for scenario in again:
                solo = alone(leg, scenario, str(Path(results) / "alone"), client_command)
                assert solo.returncode == 0, (
                    f"{scenario} fails at {leg} run alone too:\n{solo.stdout[-4000:]}\n{solo.stderr[-2000:]}"
                )
                print(f"{scenario} at {leg}: failed among the others, passed alone")
            passed |= set(again)
        said = last_lines(results)
    crashed = {name: said.get(name, "(no output)") for name in passed if said.get(name) != "mcp_nb-client: ok"}
    expected = {name: reason for name, reason in CLIENT_FAILS.items() if name in passed}
    assert set(crashed) == set(expected), f"client program did not finish as it should at {leg}: {crashed}"
    for name, reason in expected.items():  # failing for the reason given, not another one
        assert reason in crashed[name], f"{name} failed for another reason than {reason!r}: {crashed[name]}"


def test_the_client_program_uses_only_the_public_api():
    source = CLIENT.read_text()
    private = re.findall(r"mcp_nb\.(?:[a-z_]+\.)*_\w+|from mcp_nb\.\w+|import mcp_nb\.\w+", source)
    assert private == [], f"tests/conformance/client.py reaches past mcp_nb's public API: {private}"
    assert "mcp_nb.connect(" in source and "mcp_nb.call(" in source
    assert os.path.basename(CLIENT) == "client.py"


def test_the_warm_start_runs_a_program_as_python_would_and_ends_it_with_its_launcher(client_command, tmp_path):
    """conformance/warm.py, which starts the client program for the suite: its arguments,
    environment, folder, output and exit status are the program's own, and a launcher ended
    (the suite's timeout) ends the program and what it started."""
    launcher = client_command.rsplit(" ", 1)[0].split(" ")  # python warm.py SOCKET
    program = tmp_path / "program.py"
    marker = tmp_path / "sleeper.pid"
    program.write_text(
        "import os, subprocess, sys, time\n"
        "print(sys.argv[1:], os.environ.get('SCENARIO'), os.getcwd(), __name__, flush=True)\n"
        "if sys.argv[1] == 'hang':\n"
        f"    open({str(marker)!r}, 'w').write(str(subprocess.Popen(['sleep', '300']).pid))\n"
        "    time.sleep(300)\n"
        "sys.exit(int(sys.argv[1]))\n"
    )
    env = {**os.environ, "SCENARIO": "tools_call"}
    done = subprocess.run([*launcher, str(program), "7"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 7
    assert done.stdout == f"['7'] tools_call {tmp_path} __main__\n"

    hanging = subprocess.Popen([*launcher, str(program), "hang"], cwd=tmp_path, stdout=subprocess.DEVNULL)
    for _ in range(200):
        if marker.exists() and marker.read_text():
            break
        time.sleep(0.05)
    sleeper = int(marker.read_text())
    hanging.kill()
    hanging.wait()
    for _ in range(100):
        try:
            state = Path(f"/proc/{sleeper}/stat").read_text().rpartition(")")[2].split()[0]
        except FileNotFoundError:
            break
        if state == "Z":
            break
        time.sleep(0.05)
    else:
        pytest.fail("the program a killed launcher asked for (and what it started) ran on")
