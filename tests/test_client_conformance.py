"""The official MCP conformance suite against mcp_nb as a client.

tests/conformance/client.py is a client program written with mcp_nb's public API; the suite
runs it once per client scenario against a mock server of its own and judges what reached
that server. Each run is client.py forked from a process that imported mcp_nb's client path
once (tests/warm.py): fifty interpreters each importing the SDK cost a minute of
CPU. Three legs: every scenario at 2025-11-25 (the handshake era), every scenario at
2026-07-28 (stateless), and the extension scenarios (no spec version). Each leg must pass but
for its expected-failures file's `client:` entries, the same ones the SDK's own client fails.

In `--suite` mode the suite does not look at how the client program ended, so a client that
crashed after its last request still "passes". The program says on its last line whether it
did every step as it should (`mcp_nb-client: ok`); a scenario counts only with that line.
"""

import os
import re
import tempfile
from pathlib import Path

import peers
import pytest
import warm

HERE = Path(__file__).resolve().parent / "conformance"
CLIENT = HERE / "client.py"
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
    """The command the suite runs per scenario: client.py, started warm (tests/warm.py)."""
    return " ".join(warm.command(CLIENT))


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
