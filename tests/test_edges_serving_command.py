"""What `mcp-nb serve NOTEBOOK --http` prints (issue 40): what a terminal's user reads, every line
of it, and never the token where a log would keep it."""

import asyncio
import os
import pty
import re
import select
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest
import warm
from helpers import checkout_env, write_notebook
from nbformat.v4 import new_code_cell
from outside import client

from mcp_nb.commands import main


def shop(folder: Path) -> Path:
    return write_notebook(
        folder,
        new_code_cell("%load_ext mcp_nb\nPRICES = {'tea': 3}\nprint('a cell prints')"),
        new_code_cell(
            "%%mcp_tool --read-only\ndef price(item: str) -> int:\n    '''The price of an item.'''\n    return PRICES[item]"
        ),
        new_code_cell("PRICES"),  # a value a notebook would show as Out[3]
    )


def price_with(url: str, token: str) -> str:
    async def call():
        async with client(url, token) as session:
            return (await session.call_tool("price", {"item": "tea"})).content[0].text

    return asyncio.run(call())


def stop(process: subprocess.Popen) -> tuple[str, str]:
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    return out, err


def read_until(fd: int, marker: bytes, within: float = 120.0) -> bytes:
    said, deadline = b"", time.monotonic() + within
    while marker not in said:
        ready, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0))
        assert ready, f"nothing more within {within} s: {said[-2000:]!r}"
        try:
            data = os.read(fd, 65536)
        except OSError:  # the terminal's other end closed: the process ended
            break
        if not data:
            break
        said += data
    return said


def test_to_a_pipe_it_prints_no_cell_value_and_the_token_only_into_a_private_file(tmp_path):
    notebook = shop(tmp_path)
    process = subprocess.Popen(
        warm.python("-m", "mcp_nb", "serve", str(notebook), "--http"),
        env=checkout_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        said = ""
        while "Ctrl-C stops it." not in said:
            line = process.stderr.readline()
            assert line, said
            said += line
        url = re.search(r"serving at (http://127\.0\.0\.1:\d+/mcp)$", said, re.M).group(1)
        token_file = Path(
            re.search(r"^token file: (\S+) \(readable by you alone; removed when the server stops\)$", said, re.M).group(1)
        )
        token = token_file.read_text().strip()
        # Readable by its user alone, in a folder of its own.
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        assert stat.S_IMODE(token_file.parent.stat().st_mode) == 0o700
        assert price_with(url, token) == "3"
        out, err = stop(process)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    everything = said + err + out
    assert token not in everything  # stderr is where a process manager's log is kept
    assert "Out[" not in everything  # a cell's value is a notebook's to show, not a server's
    assert out == "a cell prints\n"  # what the cells print is printed, on stdout
    assert "shop.ipynb: 3 cells run, 1 registered (tool price); serving at" in said
    assert f'"Authorization": "Bearer <the token in {token_file}>"' in said  # the settings name the file
    assert not token_file.exists() and not token_file.parent.exists()  # gone with the server


def test_to_a_terminal_it_prints_the_token_for_its_user_and_still_no_cell_value(tmp_path):
    notebook = shop(tmp_path)
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        warm.python("-m", "mcp_nb", "serve", str(notebook), "--http"),
        env=checkout_env(),
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
    )
    os.close(follower)
    try:
        said = read_until(leader, b"Ctrl-C stops it.").decode()
        url = re.search(r"serving at (http://127\.0\.0\.1:\d+/mcp)", said).group(1)
        token = re.search(r"^token: (\S+)\r?$", said, re.M).group(1)
        assert price_with(url, token) == "3"
        assert "token file" not in said and "Out[" not in said and "a cell prints" in said
        assert f"Bearer {token}" in said  # the settings, whole, for the terminal's user to paste
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(leader)


def test_the_token_goes_to_the_file_named_and_the_file_goes_with_the_server(tmp_path):
    notebook = shop(tmp_path)
    token_file = tmp_path / "secrets" / "shop.token"
    token_file.parent.mkdir()
    token_file.write_text("an older token\n")
    token_file.chmod(0o644)  # a file that was there, readable by others: made the user's alone first
    process = subprocess.Popen(
        warm.python("-m", "mcp_nb", "serve", str(notebook), "--http", "--token-file", str(token_file)),
        env=checkout_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        said = ""
        while "Ctrl-C stops it." not in said:
            line = process.stderr.readline()
            assert line, said
            said += line
        assert f"token file: {token_file} " in said
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        token = token_file.read_text().strip()
        url = re.search(r"serving at (http://127\.0\.0\.1:\d+/mcp)", said).group(1)
        assert price_with(url, token) == "3"
        stop(process)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert not token_file.exists() and token_file.parent.exists()  # the file goes, the user's folder stays


def test_the_token_file_goes_with_http(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["serve", str(tmp_path / "shop.ipynb"), "--token-file", str(tmp_path / "t")])
    assert exit_.value.code == 2
    assert "--port, --host, --dangerously-no-auth and --token-file go with --http" in capsys.readouterr().err
