"""The MCP Inspector command docs/serving.md gives runs as written against a served kernel (issue 40):
under the Node that mcp_nb's `lab` extra brings, whatever Node the machine has (its own is 20
here, under which a bare `npx @modelcontextprotocol/inspector` picks 0.15 and fails)."""

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import peers

import mcp_nb
from mcp_nb.serving import configs

DOCS = Path(__file__).resolve().parent.parent / "docs" / "serving.md"


def documented_command() -> str:
    """The block of docs/serving.md that gives the Inspector's command in the shape
    `handle.configs()` fills in (PORT and TOKEN its placeholders), as written."""
    blocks = re.findall(r"```(?:bash|text)\n(.*?)```", DOCS.read_text(), re.S)
    (command,) = [block for block in blocks if "@modelcontextprotocol/inspector@" in block]
    return command


def test_the_documented_inspector_command_lists_a_served_kernels_tools_as_written(tmp_path):
    peers.require("@modelcontextprotocol/inspector")

    @mcp_nb.tool()
    def add(a: int, b: int) -> int:
        return a + b

    handle = mcp_nb.serve()
    try:
        command = documented_command().replace("http://127.0.0.1:PORT/mcp", handle.url).replace("TOKEN", handle.token)
        env = dict(os.environ)
        # `python` is the one of the environment mcp_nb is installed in, as the page says; the
        # machine's own node and npx stay on PATH, as they are on a fresh machine.
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        env["HOME"] = str(tmp_path)  # the Inspector writes under ~/.mcp-inspector
        # No network in a test: npm's cache is empty and it may not fetch, so npx must find the
        # pinned version among the tests' installed peers (the folder it runs in).
        env["npm_config_cache"] = str(tmp_path / "npm-cache")
        env["npm_config_offline"] = "true"
        done = subprocess.run(["bash", "-c", command], cwd=peers.PEERS, env=env, capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, done.stderr[-3000:]
        listed = json.loads(done.stdout)
        assert [tool["name"] for tool in listed["tools"]] == ["add"]
        # What handle.configs() gives is the same command.
        assert shlex.split(handle.configs()["MCP Inspector (command line)"]) == shlex.split(command.replace("\\\n", " "))
    finally:
        handle.stop()
    assert handle.refused == {}


def test_the_inspector_version_pinned_is_the_one_the_tests_run():
    assert configs.INSPECTOR == peers.PINS["@modelcontextprotocol/inspector"]
    assert f"@modelcontextprotocol/inspector@{configs.INSPECTOR}" in documented_command()
