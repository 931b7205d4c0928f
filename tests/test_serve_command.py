"""`python -m mcp_nb serve NOTEBOOK`: a notebook run as a server, driven by the SDK's own clients."""

import asyncio
import signal
import subprocess
import tomllib
from pathlib import Path

import pytest
import warm
from helpers import checkout_env, served_at, write_notebook
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from nbformat.v4 import new_code_cell, new_markdown_cell
from outside import client

from mcp_nb.commands import main

ROOT = Path(__file__).resolve().parent.parent


def shop(folder: Path) -> Path:
    (folder / "prices.py").write_text("PRICES = {'tea': 3}\n")  # a module beside the notebook
    return write_notebook(
        folder,
        new_markdown_cell("# A shop"),
        new_code_cell(
            "%load_ext mcp_nb\nimport os\nfrom prices import PRICES\nprint('a cell prints')\nos.system('echo a child prints')"
        ),
        new_code_cell(
            "%%mcp_tool --read-only\ndef price(item: str) -> int:\n    '''The price of an item.'''\n    print('looking up', item)\n    return PRICES[item]"
        ),
        new_code_cell("raise RuntimeError('only for a kernel')", metadata={"tags": ["mcp-skip"]}),
        new_code_cell("PRICES"),
    )


def test_over_stdio_the_sdk_client_calls_the_notebooks_tools_and_stdout_stays_clean(tmp_path):
    notebook = shop(tmp_path)
    errors = tmp_path / "stderr.txt"

    async def session_life():
        python, *args = warm.python("-m", "mcp_nb", "serve", str(notebook))
        params = StdioServerParameters(command=python, args=args, env=checkout_env())
        with errors.open("w") as log:
            async with Client(stdio_client(params, errlog=log)) as session:
                names = [t.name for t in (await session.list_tools()).tools]
                result = await session.call_tool("price", {"item": "tea"})
                missing = await session.call_tool("price", {"item": "gold"})
                return names, result.content[0].text, missing.is_error

    names, price, failed = asyncio.run(session_life())
    assert names == ["price"] and price == "3" and failed
    said = errors.read_text()
    # Every print reached stderr, none the protocol (a stray byte on stdout would have broken the session).
    for line in ("a cell prints", "a child prints", "looking up tea", "shop.ipynb: 3 cells run, 1 registered"):
        assert line in said


def test_a_cell_that_fails_stops_it_and_is_named(tmp_path):
    notebook = write_notebook(
        tmp_path, new_code_cell("%load_ext mcp_nb"), new_code_cell("x = 1"), new_code_cell("undefined_name + 1")
    )
    done = subprocess.run(
        warm.python("-m", "mcp_nb", "serve", str(notebook)), env=checkout_env(), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1 and done.stdout == ""
    assert "code cell 3 of shop.ipynb failed ('undefined_name + 1'): NameError" in done.stderr
    assert "tag the cell mcp-skip" in done.stderr


def test_not_a_notebook_is_one_line(tmp_path):
    (tmp_path / "x.ipynb").write_text("{not json")
    for path in (tmp_path / "x.ipynb", tmp_path / "missing.ipynb"):
        done = subprocess.run(
            warm.python("-m", "mcp_nb", "serve", str(path)), env=checkout_env(), capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_over_http_it_serves_with_a_token_until_terminated(tmp_path):
    notebook = shop(tmp_path)
    process = subprocess.Popen(
        warm.python("-m", "mcp_nb", "serve", str(notebook), "--http"),
        env=checkout_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url, token, said = served_at(process)
        assert '"shop": {' in said  # the settings name the server after the notebook

        async def session_life():
            async with client(url, token) as session:
                return (await session.call_tool("price", {"item": "tea"})).content[0].text

        assert asyncio.run(session_life()) == "3"
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stderr.close()
        process.stdout.close()


def test_options_of_http_alone_are_refused_without_it(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["serve", str(tmp_path / "shop.ipynb"), "--port", "8000"])
    assert exit_.value.code == 2
    assert "--port, --host, --dangerously-no-auth and --token-file go with --http" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--host", "0.0.0.0", "--dangerously-no-auth"], "dangerously_no_auth is refused on 0.0.0.0"),
        (["--port", "99999"], "port must be a whole number from 0 to 65535"),
        (["--host", " "], "host must be an address or a host name"),
        (["--max-connections", "0"], "max_connections must be"),
        (["--header-timeout", "-1"], "header_timeout must be"),
    ],
)
def test_http_options_are_checked_before_any_cell_runs(tmp_path, capsys, options, said):
    marker = tmp_path / "ran"
    notebook = write_notebook(tmp_path, new_code_cell(f"open({str(marker)!r}, 'w').close()"))
    with pytest.raises(SystemExit) as exit_:
        main(["serve", str(notebook), "--http", *options])
    assert exit_.value.code == 2
    assert said in capsys.readouterr().err
    assert not marker.exists()  # the notebook's cells never ran


def test_the_console_script_is_declared():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert declared["mcp-nb"] == "mcp_nb.commands:main"
    with pytest.raises(SystemExit) as exit_:
        main(["serve", "--help"])
    assert exit_.value.code == 0
