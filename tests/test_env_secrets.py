"""A stdio server given the user's environment: the values of its variables named like secrets
(`DB_PWD`, `API_TOKEN`) never reach a log record or the history file, and the variables every shell
sets whose names merely look like a secret's (`PWD`, the working directory; `OLDPWD`; an agent's
socket) are no secrets: the paths under the working directory stay readable everywhere."""

from __future__ import annotations

import os
import sys
import textwrap

import pytest

import mcp_nb
from mcp_nb.records.history import History

pytestmark = pytest.mark.timeout(120)

SERVER = textwrap.dedent(
    """
    import os
    from mcp.server import MCPServer

    mcp = MCPServer("where")


    @mcp.tool()
    def where() -> str:
        \"\"\"The server's working directory, and its database password (a careless server).\"\"\"
        return f"in {os.getcwd()} with {os.environ['DB_PWD']}"


    mcp.run()
    """
)


def test_a_shells_variables_are_no_secrets_and_a_servers_are(tmp_path):
    home = tmp_path / "project-folder-of-mine"
    home.mkdir()
    (home / "server.py").write_text(SERVER)
    env = {
        **os.environ,
        "PWD": str(home),
        "OLDPWD": str(tmp_path),
        "SSH_AUTH_SOCK": str(tmp_path / "agent.sock"),
        "XDG_SESSION_TYPE": "wayland",
        "DB_PWD": "hunter2-db-pass",
        "API_TOKEN": "tok-0123456789",
    }
    path = tmp_path / "calls.mcpnb"
    mcp_nb.configure(history_file=str(path))
    mcp_nb.connect("where", [sys.executable, str(home / "server.py")], env=env, cwd=str(home), timeout=60)
    o = mcp_nb.call("where", server="where")
    assert o.outcome == "result" and str(home) in o.content
    mcp_nb.configure(history_file=None)
    row = History.open(path).to_frame().iloc[-1]
    assert row["content"] == f"in {home} with ***", row["content"]
    for part in path.iterdir():
        data = part.read_bytes()
        assert b"hunter2-db-pass" not in data and b"tok-0123456789" not in data, part.name
