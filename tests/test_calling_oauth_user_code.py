"""The user's code an OAuth flow runs stays off mcp_nb's loop and out of the interpreter's way: a
browser opener (`OAuth(open_browser=...)`) runs in a daemon thread of its own, so one that never
returns cannot keep the process from exiting, and a storage factory (`OAuth(storage=...)`), which
may read a keyring or a disk, runs in a thread too, never on the loop every call shares."""

from __future__ import annotations

import subprocess
import sys
import threading

import httpx2
import pytest
from helpers import protected_server

import mcp_nb


@pytest.fixture
def config(tmp_path, monkeypatch):
    monkeypatch.setenv("MCP_NB_CONFIG_DIR", str(tmp_path / "config"))
    return tmp_path / "config"


def follow(link: str) -> None:
    httpx2.get(link, follow_redirects=True, timeout=30)


OPENER_NEVER_RETURNS = """
import sys, threading, httpx2, mcp_nb

def opener(link):
    # The person approves (a thread of theirs follows the link); the browser program never returns.
    threading.Thread(target=httpx2.get, args=(link,), kwargs={"follow_redirects": True, "timeout": 30}, daemon=True).start()
    threading.Event().wait()

mcp_nb.connect("notes", sys.argv[1], auth=mcp_nb.OAuth(callback="loopback", open_browser=opener))
print(mcp_nb.call("whoami", server="notes").outcome, flush=True)
"""


@pytest.mark.timeout(180)
def test_a_browser_opener_that_never_returns_does_not_keep_the_kernel_from_exiting(config):
    with protected_server() as (url, _):
        kernel = subprocess.Popen(
            [sys.executable, "-c", OPENER_NEVER_RETURNS, url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            out, err = kernel.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            kernel.kill()
            out, err = kernel.communicate()
            pytest.fail(f"the process did not exit: it waited for the browser opener (said {out!r})")
    assert out.split()[-1:] == ["result"] and kernel.returncode == 0, err[-2000:]  # after the link, shown


def test_the_storage_factory_runs_off_mcp_nbs_loop(config, tmp_path):
    on_loop = []

    def storage(url: str) -> mcp_nb.TokenFile:
        on_loop.append(mcp_nb.engine().loop.in_loop())
        return mcp_nb.TokenFile(url, tmp_path / "tokens")

    with protected_server() as (url, _):
        connection = mcp_nb.connect("notes", url, auth=mcp_nb.OAuth(callback="loopback", storage=storage, open_browser=follow))
        assert connection.state == "connected" and mcp_nb.call("whoami", server="notes").outcome == "result"
        mcp_nb.reset()
    assert on_loop == [False]
    assert list((tmp_path / "tokens").glob("*.json"))  # the factory's storage kept the tokens


def test_a_storage_factory_that_never_returns_fails_the_connect_within_its_timeout_and_holds_nothing(config):
    release = threading.Event()
    try:
        with protected_server() as (url, _):
            oauth = mcp_nb.OAuth(callback="loopback", storage=lambda url: release.wait(), open_browser=follow)
            with pytest.raises(mcp_nb.ConnectError) as raised:
                mcp_nb.connect("notes", url, auth=oauth, timeout=2)
            assert "within 2 s" in str(raised.value)

            @mcp_nb.tool()
            def echo(x: int) -> int:
                return x

            assert mcp_nb.call("echo", {"x": 1}).outcome == "result"  # the loop was not held meanwhile
    finally:
        release.set()
