"""`mcp_nb.TokenFile`, the file that keeps a server's OAuth tokens and registered client, with two
writers: two threads, two processes (two kernels), two connects of the real flow at once. No save is
lost and none fails; the file stays the user's alone (0600); its I/O waits for the other writer in a
worker thread, never on the event loop. And a token file that holds what is not tokens (JSON of
another shape, not JSON, not a regular file) starts the flow afresh and says so in one line, naming
the file and `forget()`."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx2
import pytest
from helpers import protected_server
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

import mcp_nb

URL = "https://notes.example.com/mcp"


@pytest.fixture
def config(tmp_path, monkeypatch):
    monkeypatch.setenv("MCP_NB_CONFIG_DIR", str(tmp_path / "config"))
    return tmp_path / "config"


def token(value: str) -> OAuthToken:
    return OAuthToken(access_token=value, token_type="Bearer", expires_in=3600)


def client(value: str) -> OAuthClientInformationFull:
    return OAuthClientInformationFull(client_id=value, redirect_uris=["http://127.0.0.1:9/callback"])


def kept(url: str = URL) -> tuple:
    stored = mcp_nb.TokenFile(url)
    found = asyncio.run(stored.get_tokens()), asyncio.run(stored.get_client_info())
    return tuple(None if x is None else getattr(x, "access_token", None) or x.client_id for x in found)


def leftovers(config: Path) -> list[str]:
    return sorted(p.name for p in (config / "oauth").iterdir() if not p.name.endswith((".json", ".lock")))


def test_two_threads_saving_at_once_lose_nothing(config):
    lost, failed = [], []
    for trial in range(150):
        mcp_nb.TokenFile(URL).forget()
        start = threading.Barrier(2)

        def save(what, value):
            start.wait()
            try:
                stored = mcp_nb.TokenFile(URL)  # a file of its own, as a second connection has
                asyncio.run(stored.set_tokens(token(value)) if what == "tokens" else stored.set_client_info(client(value)))
            except Exception as err:  # noqa: BLE001 - counted, and the test says which
                failed.append(repr(err))

        writers = [
            threading.Thread(target=save, args=("tokens", f"t{trial}")),
            threading.Thread(target=save, args=("client", f"c{trial}")),
        ]
        for writer in writers:
            writer.start()
        for writer in writers:
            writer.join(30)
        if kept() != (f"t{trial}", f"c{trial}"):
            lost.append((trial, kept()))
    assert not failed and not lost, (failed[:3], len(failed), lost[:3], len(lost))
    path = mcp_nb.TokenFile(URL).path
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and leftovers(config) == []


WRITER = (
    """
import asyncio, os, sys, time
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
import mcp_nb
role, count, go = sys.argv[1], int(sys.argv[2]), sys.argv[3]
while not os.path.exists(go):
    time.sleep(0.001)
async def main():
    stored = mcp_nb.TokenFile(%r)
    lost = failed = 0
    for i in range(count):
        try:
            if role == "tokens":
                await stored.set_tokens(OAuthToken(access_token=f"t{i}", token_type="Bearer"))
                got = await stored.get_tokens()
                lost += got is None or got.access_token != f"t{i}"
            else:
                await stored.set_client_info(OAuthClientInformationFull(client_id=f"c{i}", redirect_uris=["http://127.0.0.1:9/cb"]))
                got = await stored.get_client_info()
                lost += got is None or got.client_id != f"c{i}"
        except Exception as err:
            failed += 1
            print(repr(err), file=sys.stderr)
    print(lost, failed)
asyncio.run(main())
"""
    % URL
)


def test_two_processes_saving_at_once_lose_nothing(config, tmp_path):
    # Each writer checks, after each save, that what it saved is there: only it writes its part, so
    # finding an older value means the other writer's save put back what it had read before.
    go = tmp_path / "go"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, role, "300", str(go)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for role in ("tokens", "client")
    ]
    time.sleep(0.5)  # both importing; the file below starts them together
    go.touch()
    said = [writer.communicate(timeout=240) for writer in writers]
    counts = [tuple(map(int, out.split())) for out, _ in said]
    assert counts == [(0, 0), (0, 0)], (counts, [err[-600:] for _, err in said])
    assert kept() == ("t299", "c299")
    assert stat.S_IMODE(mcp_nb.TokenFile(URL).path.stat().st_mode) == 0o600 and leftovers(config) == []


HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.readline()
"""


@pytest.mark.skipif(sys.platform == "win32", reason="the holder takes the lock with flock")
def test_a_save_waits_for_another_writer_in_a_thread_not_on_the_loop(config):
    stored = mcp_nb.TokenFile(URL)
    stored.path.parent.mkdir(parents=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(stored.path.with_suffix(".lock"))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline() == "held\n"

        async def save_while_held() -> int:
            saving = asyncio.ensure_future(stored.set_tokens(token("after")))
            turns = 0
            for _ in range(20):  # the loop goes on turning while the save waits for the other writer
                await asyncio.sleep(0.01)
                turns += 1
            assert not saving.done(), "the save did not wait for the other writer's lock"
            holder.stdin.write("\n")
            holder.stdin.flush()  # the other writer is done
            await asyncio.wait_for(saving, 30)
            return turns

        assert asyncio.run(save_while_held()) == 20
    finally:
        holder.kill()
        holder.wait(10)
    assert kept() == ("after", None)


def follow(link: str) -> None:
    httpx2.get(link, follow_redirects=True, timeout=30)


CONNECT = """
import sys, httpx2, mcp_nb
follow = lambda link: httpx2.get(link, follow_redirects=True, timeout=30)
mcp_nb.connect("notes", sys.argv[1], auth=mcp_nb.OAuth(callback="loopback", open_browser=follow))
print(mcp_nb.call("whoami", server="notes").outcome)
"""


def test_two_kernels_authorizing_at_once_both_connect_and_keep_a_usable_file(config):
    with protected_server() as (url, _):
        kernels = [
            subprocess.Popen([sys.executable, "-c", CONNECT, url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)
        ]
        said = [kernel.communicate(timeout=120) for kernel in kernels]
        assert [out.split()[-1:] for out, _ in said] == [["result"], ["result"]], [err[-800:] for _, err in said]
        assert "FileNotFoundError" not in "".join(err for _, err in said)
        # What they kept works for a third kernel (this one), without asking the person again.
        shown = []
        connection = mcp_nb.connect("notes", url, auth=mcp_nb.OAuth(callback="loopback", open_browser=shown.append))
        assert connection.state == "connected" and shown == []
        assert mcp_nb.call("whoami", server="notes").outcome == "result"
        mcp_nb.reset()
    assert leftovers(config) == []


# -- a file that is not tokens ---------------------------------------------------------------------------


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "content",
    [
        "[]",
        '{"tokens": {"access_token": 5}}',
        '{"tokens": "yes", "client_info": [1]}',
        '{"client_info": {"client_id": 7}}',
        "not JSON at all",
        '{"tokens": ' + "[" * 100_000 + "]" * 100_000 + "}",  # nested past any reader
        b"\xff\xfe\x00",
        "fifo",
    ],
    ids=["list", "token-number", "token-text", "client-id-number", "not-json", "deep", "not-utf8", "fifo"],
)
def test_a_token_file_that_is_not_tokens_starts_afresh_and_says_so(config, caplog, content):
    caplog.set_level(logging.WARNING, logger="mcp_nb")
    with protected_server() as (url, _):
        path = mcp_nb.TokenFile(url).path
        path.parent.mkdir(parents=True)
        if content == "fifo":
            os.mkfifo(path)  # a reader opening it would wait for a writer forever
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        connection = mcp_nb.connect("notes", url, auth=mcp_nb.OAuth(callback="loopback", open_browser=follow))
        assert connection.state == "connected"
        assert mcp_nb.call("whoami", server="notes").outcome == "result"
        said = [r.getMessage() for r in caplog.records if "token file" in r.getMessage()]
        assert said, [r.getMessage() for r in caplog.records]
        for line in said:
            assert len(line.splitlines()) == 1 and str(path) in line and "TokenFile(url).forget() deletes it" in line, line
            assert "authorization starts afresh" in line
        assert len(said) == len(set(said))  # each reason once, not at every read
        assert any(str(path) in entry.message for entry in connection.logs)  # the connection's log has it too
        mcp_nb.reset()
    assert stat.S_ISREG(path.stat().st_mode) and stat.S_IMODE(path.stat().st_mode) == 0o600
    saved = json.loads(path.read_text())
    assert saved["tokens"]["access_token"] and saved["client_info"]["client_id"]  # the next save replaced it whole


# -- a registration kept by another flow -------------------------------------------------------------------


def registrations(connection) -> int:
    return sum(line.message.startswith("registration:") for line in connection.logs if line.logger == "mcp_nb.oauth")


def test_a_kept_registration_serves_the_next_flow_on_its_own_port(config):
    with protected_server() as (url, _):
        first = mcp_nb.connect("notes", url, auth=mcp_nb.OAuth(callback="loopback", open_browser=follow))
        assert registrations(first) == 1
        mcp_nb.reset()
        path = mcp_nb.TokenFile(url).path
        kept = json.loads(path.read_text())
        del kept["tokens"]  # gone (revoked, expired past refresh): the person is asked again
        path.write_text(json.dumps(kept))
        again = mcp_nb.connect("notes", url, auth=mcp_nb.OAuth(callback="loopback", open_browser=follow, timeout=30))
        assert again.state == "connected" and registrations(again) == 0
        assert mcp_nb.call("whoami", server="notes").outcome == "result"
        mcp_nb.reset()


def test_a_registration_for_a_port_now_taken_is_made_afresh_not_waited_on(config):
    import socket

    with protected_server() as (url, _):
        mcp_nb.connect("notes", url, auth=mcp_nb.OAuth(callback="loopback", open_browser=follow))
        mcp_nb.reset()
        path = mcp_nb.TokenFile(url).path
        kept = json.loads(path.read_text())
        del kept["tokens"]
        path.write_text(json.dumps(kept))
        port = int(re.search(r":(\d+)/callback", kept["client_info"]["redirect_uris"][0]).group(1))
        with socket.socket() as squatter:  # another program (another kernel's flow) listens there now
            squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # the old listener's connections linger
            squatter.bind(("127.0.0.1", port))
            squatter.listen()
            again = mcp_nb.connect("notes", url, auth=mcp_nb.OAuth(callback="loopback", open_browser=follow, timeout=30))
            assert again.state == "connected" and registrations(again) == 1
            assert any("registered afresh" in line.message for line in again.logs)
        assert mcp_nb.call("whoami", server="notes").outcome == "result"
        mcp_nb.reset()
