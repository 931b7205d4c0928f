"""Calls per second through a served kernel, as a ratio to a plain SDK server under uvicorn.

Two servers with the same two trivial tools (`triv`, sync; `atriv`, async), each in a
process of its own on 127.0.0.1:

  mcp_nb   `mcp_nb.tool()` and `mcp_nb.serve()`: the guard (Host, Origin, bearer token, body
           cap), the recording of every call in the history, list_changed bookkeeping,
           resumable streams; on mcp_nb's loop thread, as in a kernel
  plain    the SDK's `MCPServer` with `@server.tool()`, its `streamable_http_app()` under
           uvicorn, nothing else (its own Host/Origin check, which the SDK turns on for
           127.0.0.1); logging quiet in both, as mcp_nb leaves an unconfigured process

The same client calls the two servers in alternating phases of a few calls each (the order
swapping every other phase), so a change in a shared machine's load lands on both alike. The client is plain HTTP on keep-alive connections
(`http.client`), sending the same bytes to both (the bearer token included), so that the
figures are the servers' own cost: the SDK's client spends more per call than either server
(3.6 ms a call against the plain server here, where a bare keep-alive request takes 1.3 ms),
and would dilute the ratio. Variants: one call at a time at
2026-07-28 (one POST per call, a JSON answer), the same inside a 2025-11-25 session (an SSE
answer per call), and 8 connections calling at once at 2026-07-28. Reported: calls per
second per server, and the ratio mcp_nb / plain (target >= 0.9), the median over rounds
and its range.

Usage: python benchmarks/bench_serving.py [--rounds 5] [--calls 1000] [--chunk 25]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

from _common import machine, median, write_json

ROOT = Path(__file__).resolve().parent.parent
TARGET = 0.9
TOOLS = ("triv", "atriv")
VARIANTS = {"2026-07-28": ("2026-07-28", 1), "2025-11-25": ("2025-11-25", 1), "2026-07-28 x8": ("2026-07-28", 8)}
ACCEPT = "application/json, text/event-stream"

MCP_NB_SERVER = """
import sys
import mcp_nb

@mcp_nb.tool()
def triv() -> str:
    return "x"

@mcp_nb.tool()
async def atriv() -> str:
    return "x"

handle = mcp_nb.serve()
print(handle.url, handle.token, flush=True)
sys.stdin.read()  # until the benchmark closes it
handle.stop()
"""

PLAIN_SERVER = """
import logging, sys, threading, time
import uvicorn
from mcp.server import MCPServer

server = MCPServer("plain")
logging.root.handlers.clear()  # MCPServer() configured the root logger: leave it as quiet as mcp_nb does
logging.root.setLevel(logging.WARNING)

@server.tool()
def triv() -> str:
    return "x"

@server.tool()
async def atriv() -> str:
    return "x"

# uvicorn binds the port itself, as MCPServer.run("streamable-http") has it do.
uv = uvicorn.Server(uvicorn.Config(server.streamable_http_app(), host="127.0.0.1", port=0, log_config=None, ws="none"))
threading.Thread(target=lambda: (sys.stdin.read(), setattr(uv, "should_exit", True)), daemon=True).start()
threading.Thread(target=uv.run, daemon=True).start()
while not uv.started:
    time.sleep(0.01)
print(f"http://127.0.0.1:{uv.servers[0].sockets[0].getsockname()[1]}/mcp", "-", flush=True)
while not uv.should_exit:
    time.sleep(0.1)
time.sleep(1)
"""


class Server:
    def __init__(self, name: str, source: str) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        self.name = name
        self.process = subprocess.Popen(
            [sys.executable, "-c", source], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        url, token = self.process.stdout.readline().split()
        self.url, self.token = url, None if token == "-" else token

    def close(self) -> None:
        self.process.stdin.close()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Caller:
    """One keep-alive connection to a server, speaking one protocol era."""

    def __init__(self, server: Server, era: str) -> None:
        parts = urlsplit(server.url)
        self.path, self.era = parts.path, era
        self.connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
        # The same headers for both servers; the plain one ignores the token.
        self.headers = {"Content-Type": "application/json", "Accept": ACCEPT, "Authorization": f"Bearer {server.token or '-'}",
                        "MCP-Protocol-Version": era}  # fmt: skip
        if era == "2025-11-25":
            answer, headers = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": era, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})  # fmt: skip
            self.headers["mcp-session-id"] = headers["mcp-session-id"]
            self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def post(self, body: dict, extra: dict | None = None) -> tuple[str, dict]:
        self.connection.request("POST", self.path, json.dumps(body).encode(), {**self.headers, **(extra or {})})
        response = self.connection.getresponse()
        text = response.read().decode()
        assert response.status < 300, (response.status, text)
        return text, {k.lower(): v for k, v in response.getheaders()}

    def call(self, tool: str, id_: int) -> None:
        params: dict = {"name": tool, "arguments": {}}
        extra = None
        if self.era != "2025-11-25":
            params["_meta"] = {"io.modelcontextprotocol/protocolVersion": self.era,
                               "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
                               "io.modelcontextprotocol/clientCapabilities": {}}  # fmt: skip
            extra = {"Mcp-Method": "tools/call", "Mcp-Name": tool}
        text, _ = self.post({"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params}, extra)
        assert '"isError":false' in text, text

    def close(self) -> None:
        self.connection.close()


def paired_rates(servers: dict[str, Server], tool: str, era: str, in_flight: int, calls: int, chunk: int) -> dict[str, float]:
    """Calls per second of each server, measured in alternating phases of `chunk` calls per
    connection: every phase runs `in_flight` connections on one server at once (a barrier
    starts and ends it), and the servers take turns, so a change in the machine's load
    between phases lands on both alike."""
    names = list(servers)
    callers = {name: [Caller(servers[name], era) for _ in range(in_flight)] for name in names}
    spent = dict.fromkeys(names, 0.0)
    done = dict.fromkeys(names, 0)
    gate = threading.Barrier(in_flight + 1)
    phases = [names[i % 2] if (i // 2) % 2 == 0 else names[1 - i % 2] for i in range(2 * max(1, calls // chunk))]

    def work(slot: int) -> None:
        for name in phases:
            gate.wait()
            for i in range(chunk):
                callers[name][slot].call(tool, i + 1)
            gate.wait()

    try:
        for name in names:  # warm up, outside the timed part
            for caller in callers[name]:
                for i in range(20):
                    caller.call(tool, i + 1)
        threads = [threading.Thread(target=work, args=(slot,)) for slot in range(in_flight)]
        for thread in threads:
            thread.start()
        for name in phases:
            gate.wait()
            t0 = time.perf_counter()
            gate.wait()
            spent[name] += time.perf_counter() - t0
            done[name] += chunk * in_flight
        for thread in threads:
            thread.join()
        return {name: done[name] / spent[name] for name in names}
    finally:
        for name in names:
            for caller in callers[name]:
                caller.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=1000, help="calls per server, tool and variant in each round")
    parser.add_argument("--chunk", type=int, default=25, help="calls per connection in each phase")
    args = parser.parse_args()

    servers = {"mcp_nb": Server("mcp_nb", MCP_NB_SERVER), "plain": Server("plain", PLAIN_SERVER)}
    rates: dict[tuple[str, str, str], list[float]] = {}
    try:
        for round_ in range(args.rounds):
            for variant, (era, in_flight) in VARIANTS.items():
                for tool in TOOLS:
                    measured = paired_rates(servers, tool, era, in_flight, args.calls, args.chunk)
                    for name, rate in measured.items():
                        rates.setdefault((variant, tool, name), []).append(rate)
            print(f"round {round_ + 1}/{args.rounds} done", flush=True)
    finally:
        for server in servers.values():
            server.close()

    rows, verdicts = [], []
    print(f"\n{'variant':<15} {'tool':<6} {'mcp_nb calls/s':>15} {'plain calls/s':>14} {'ratio':>7}  range of round ratios")
    for variant in VARIANTS:
        for tool in TOOLS:
            ours, plain = rates[(variant, tool, "mcp_nb")], rates[(variant, tool, "plain")]
            ratios = [a / b for a, b in zip(ours, plain)]
            ratio = median(ratios)
            rows.append({"variant": variant, "tool": tool, "mcp_nb": median(ours), "plain": median(plain),
                         "ratio": ratio, "ratios": ratios})  # fmt: skip
            print(f"{variant:<15} {tool:<6} {median(ours):>15.0f} {median(plain):>14.0f} {ratio:>7.3f}  "
                  f"{min(ratios):.3f} - {max(ratios):.3f}")  # fmt: skip
            verdicts.append((f"{variant} {tool}: mcp_nb/plain {ratio:.3f} >= {TARGET}", ratio >= TARGET))
    print()
    for text, passed in verdicts:
        print(("PASS " if passed else "FAIL ") + text)
    path = write_json("serving.json", {"machine": machine(), "rounds": args.rounds, "calls": args.calls, "rows": rows})
    print(f"\nfigures: {path}")


if __name__ == "__main__":
    main()
