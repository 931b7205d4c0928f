"""mcp_nb.OAuth: the notebook's authorization-code flow (the SDK's provider underneath), against
a real OAuth-protected server that is its own authorization server (notebooks/servers/protected.py,
built on the SDK's auth parts). The person's step is taken the way a person would: the link
is opened (a GET that follows the approval's redirect, or reads it and pastes it back)."""

import os
import re
import stat
import time

import httpx2
import pytest
from helpers import PROTECTED as SERVER
from helpers import protected_server

import mcp_nb


@pytest.fixture
def config(tmp_path, monkeypatch):
    """Tokens under a folder of the test's own, as a user's config directory would hold them."""
    monkeypatch.setenv("MCP_NB_CONFIG_DIR", str(tmp_path / "config"))
    return tmp_path / "config"


@pytest.fixture
def protected():
    with protected_server() as (url, _):
        yield url
        mcp_nb.reset()  # the sessions closed before the server stops


def approve(link: str) -> str:
    """The person approving in a browser: where the authorization server sends them back."""
    answer = httpx2.get(link, follow_redirects=False, timeout=30)
    assert answer.status_code in (302, 303, 307), answer.text
    return answer.headers["location"]


def follow(link: str) -> None:
    httpx2.get(link, follow_redirects=True, timeout=30)


def steps(connection) -> list[str]:
    return [line.message for line in connection.logs if line.logger == "mcp_nb.oauth"]


# -- checks that need no server ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "options, said",
    [
        ({"callback": "popup"}, "callback must be one of"),
        ({"scopes": ["a b"]}, "scopes are words"),
        ({"scopes": 3}, "scopes is text or a list"),
        ({"client_secret": "x"}, "client_secret goes with"),
        ({"timeout": 0}, "timeout is a positive number"),
    ],
)
def test_bad_options_are_one_line(options, said):
    with pytest.raises((ValueError, TypeError), match=said) as raised:
        mcp_nb.OAuth(**options)
    assert "\n" not in str(raised.value)


def test_its_repr_never_shows_the_client_secret():
    shown = repr(mcp_nb.OAuth(client_id="app", client_secret="s3cret-value", scopes=["notes:read"]))
    assert "s3cret-value" not in shown and "app" in shown and "notes:read" in shown


def test_complete_auth_with_nothing_waiting_says_so():
    with pytest.raises(ValueError, match="no connection is waiting for an authorization"):
        mcp_nb.complete_auth("http://127.0.0.1:8976/mcp_nb/callback?code=x&state=y")
    with pytest.raises(ValueError, match="takes the address"):
        mcp_nb.complete_auth("")


def test_the_token_file_is_the_users_alone_and_can_be_forgotten(config):
    import asyncio

    from mcp.shared.auth import OAuthToken

    stored = mcp_nb.TokenFile("https://example.com/mcp")
    asyncio.run(stored.set_tokens(OAuthToken(access_token="abc", token_type="Bearer", expires_in=60)))
    assert stored.path.parent == config / "oauth" and stat.S_IMODE(stored.path.stat().st_mode) == 0o600
    assert asyncio.run(stored.get_tokens()).access_token == "abc"
    assert mcp_nb.TokenFile("https://example.com/mcp").path == stored.path  # per server: the same file again
    assert mcp_nb.TokenFile("https://other.example.com/mcp").path != stored.path
    assert stored.forget() and not stored.path.exists() and asyncio.run(stored.get_tokens()) is None


# -- a full flow ---------------------------------------------------------------------------------------


def test_a_pasted_flow_connects_and_keeps_the_token_out_of_every_record(protected, config):
    connection = mcp_nb.connect("notes", protected, auth=mcp_nb.OAuth(callback="paste"))
    assert connection.state == "authorizing"
    card = repr(connection)
    link = connection.describe()["authorize"]
    assert link in card and "mcp_nb.complete_auth(" in card and 'href="' in connection._repr_html_()
    landed = approve(link)
    with pytest.raises(ValueError, match="answers none of the authorizations"):
        mcp_nb.complete_auth(re.sub(r"state=[^&]+", "state=forged", landed))
    assert mcp_nb.complete_auth(landed) is connection and connection.state == "connected"
    outcome = mcp_nb.call("whoami", server="notes")
    assert outcome.outcome == "result", outcome
    said = steps(connection)
    for step in (
        "discovery (protected resource metadata)",
        "discovery (authorization server metadata)",
        "registration",
        "authorization: the link is shown",
        "authorization: the person approved",
        "token:",
        "connected",
    ):
        assert any(line.startswith(step) for line in said), (step, said)
    (kept,) = (config / "oauth").glob("*.json")
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    token = __import__("json").loads(kept.read_text())["tokens"]["access_token"]
    written = [
        mcp_nb.history().to_frame().to_json(default_handler=str, date_format="iso"),
        repr(outcome),
        outcome._repr_html_(),
        repr(connection),
        connection._repr_html_(),
        " ".join(str(line) for line in connection.logs),
        mcp_nb.servers().to_json(default_handler=str, date_format="iso"),
    ]
    assert not [text for text in written if token in text]


def test_a_second_connect_uses_the_kept_token_without_asking(protected, config):
    mcp_nb.connect("notes", protected, auth=mcp_nb.OAuth(callback="loopback", open_browser=follow))
    again = mcp_nb.connect("notes", protected, auth=mcp_nb.OAuth(callback="loopback", open_browser=follow))
    assert again.state == "connected" and not any("link is shown" in line for line in steps(again))
    assert mcp_nb.call("whoami", server="notes").outcome == "result"


def test_a_loopback_flow_returns_once_approved_and_its_listener_goes_with_the_connection(protected, config):
    opened = []

    def browser(link):
        opened.append(link)
        follow(link)

    connection = mcp_nb.connect("notes", protected, auth=mcp_nb.OAuth(callback="loopback", open_browser=browser))
    assert connection.state == "connected" and len(opened) == 1
    callback = re.search(r"redirect_uri=([^&]+)", opened[0]).group(1)
    port = int(re.search(r"127\.0\.0\.1%3A(\d+)", callback).group(1))
    # Anyone else knocking on the listener gets nothing: it answers only the flow's own state.
    assert httpx2.get(f"http://127.0.0.1:{port}/callback?code=x&state=guess", timeout=5).status_code == 400
    mcp_nb.disconnect("notes")
    with pytest.raises(httpx2.ConnectError):
        httpx2.get(f"http://127.0.0.1:{port}/callback", timeout=5)


def test_an_expired_token_is_refreshed_and_the_log_says_so(config):
    with protected_server("--token-seconds", "2") as (url, _):
        connection = mcp_nb.connect("notes", url, auth=mcp_nb.OAuth(callback="loopback", open_browser=follow))
        assert mcp_nb.call("whoami", server="notes").outcome == "result"
        time.sleep(3)
        assert mcp_nb.call("whoami", server="notes").outcome == "result"
        assert any(line.startswith("refresh:") for line in steps(connection)), steps(connection)
        mcp_nb.reset()  # its session closed before the server stops


def test_nobody_approving_fails_the_connect_in_one_line_naming_the_step(protected, config):
    with pytest.raises(mcp_nb.ConnectError, match="authorization failed at the authorization step: nobody approved within 1 s"):
        mcp_nb.connect("notes", protected, auth=mcp_nb.OAuth(callback="loopback", open_browser=False, timeout=1))
    assert list(mcp_nb.servers().index) == ["kernel"]


def test_a_refusal_pasted_back_is_said_as_the_servers_answer(protected, config):
    connection = mcp_nb.connect("notes", protected, auth=mcp_nb.OAuth(callback="paste"))
    state = re.search(r"state=([^&]+)", connection.describe()["authorize"]).group(1)
    refused = f"http://127.0.0.1:8976/mcp_nb/callback?error=access_denied&error_description=the+user+said+no&state={state}"
    with pytest.raises(mcp_nb.ConnectError, match="the authorization server refused: access_denied: the user said no"):
        mcp_nb.complete_auth(refused)
    assert "notes" not in mcp_nb.servers().index
    assert os.environ["MCP_NB_CONFIG_DIR"] == str(config)


def test_a_configuration_entry_with_oauth_connects_through_the_flow(protected, config, monkeypatch):
    monkeypatch.setenv("NOTES_SECRET", "not-used-by-a-public-client")
    entry = {"url": protected, "oauth": {"callback": "paste"}}
    connected = mcp_nb.connect_config({"mcpServers": {"notes": entry}})
    assert connected["notes"].state == "authorizing"
    assert mcp_nb.complete_auth(approve(connected["notes"].describe()["authorize"])).state == "connected"
    assert mcp_nb.call("whoami", server="notes").outcome == "result"


@pytest.mark.parametrize(
    "oauth, said",
    [
        ({"client_secret": "s"}, "a client secret is not kept in a configuration file"),
        ({"scope": "x"}, "unexpected field"),
        ({"client_secret_env": "MCP_NB_NOT_SET_ANYWHERE", "client_id": "a"}, "not set in this environment"),
        ("yes", "'oauth' is true or an object"),
    ],
)
def test_a_configurations_oauth_is_checked_before_anything_connects(oauth, said):
    with pytest.raises(ValueError, match=said):
        mcp_nb.connect_config({"mcpServers": {"notes": {"url": "http://127.0.0.1:9/mcp", "oauth": oauth}}})
    with pytest.raises(ValueError, match="which the configuration does not connect"):
        mcp_nb.connect_config({"mcpServers": {"notes": {"url": "http://127.0.0.1:9/mcp"}}}, auth={"other": None})
    assert list(mcp_nb.servers().index) == ["kernel"]


def test_the_panel_shows_the_link_and_takes_the_pasted_address(protected, config):
    from helpers import wait_until

    panel = mcp_nb.panel()
    connection = mcp_nb.connect("notes", protected, auth=mcp_nb.OAuth(callback="paste"))
    panel.show_server("notes")
    box = panel.authorize
    assert box.widget.layout.display == "flex" and box.paste.layout.display == "flex"
    assert connection.describe()["authorize"].replace("&", "&amp;") in box.link.value
    box.complete.click()  # nothing pasted yet: said, nothing sent
    assert "paste the whole address" in box.said.value and connection.state == "authorizing"
    box.address.value = "http://127.0.0.1:8976/mcp_nb/callback?code=x&state=forged"
    box.complete.click()
    assert "answers none of the authorizations" in box.said.value
    box.address.value = approve(connection.describe()["authorize"])
    box.complete.click()
    assert wait_until(lambda: connection.state == "connected" and box.widget.layout.display == "none")
    assert wait_until(lambda: "whoami" in " ".join(str(o) for o in panel.picker.options))
    panel.close()


def test_after_a_full_flow_in_a_kernel_the_token_is_in_no_saved_notebook_case_file_or_log(tmp_path, config):
    """A notebook a user runs and saves: the flow, a call, the history shown, the connection's
    log shown, cases saved, mcp_nb's log at debug level to a file. The token is in its file only."""
    import json

    import nbformat
    from kernels import execute

    cells = [
        "import logging, pathlib, re, subprocess, sys, httpx2\nimport mcp_nb\n"
        "said = logging.FileHandler('mcp_nb.log')\n"
        "for name in ('mcp_nb', 'mcp', 'httpx2', 'httpcore'):  # every library of the flow, at debug level\n"
        "    logging.getLogger(name).addHandler(said); logging.getLogger(name).setLevel(logging.DEBUG)",
        f"server = subprocess.Popen([sys.executable, {str(SERVER)!r}], stderr=subprocess.PIPE, text=True)\n"
        "url = re.search(r'(http://\\S+/mcp)', server.stderr.readline()).group(1)",
        "notes = mcp_nb.connect('notes', url, auth=mcp_nb.OAuth(callback='paste'))\nnotes",
        "landed = httpx2.get(notes.describe()['authorize'], follow_redirects=False).headers['location']\nmcp_nb.complete_auth(landed)",
        "mcp_nb.call('whoami', server='notes')",
        "mcp_nb.call('add_note', {'text': 'hello'}, server='notes')",
        "mcp_nb.history().to_frame()",
        "[str(line) for line in notes.logs]",
        "mcp_nb.servers()",
        "mcp_nb.history().to_cases('cases.json')\nserver.terminate(); server.wait(10)",
    ]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in cells])
    execute(notebook, tmp_path)
    saved = tmp_path / "flow.ipynb"
    nbformat.write(notebook, saved)
    errors = [o for c in notebook.cells for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
    (kept,) = (config / "oauth").glob("*.json")
    tokens = json.loads(kept.read_text())["tokens"]
    secrets = [tokens["access_token"], tokens["refresh_token"]]
    for written in (saved, tmp_path / "cases.json", tmp_path / "mcp_nb.log"):
        text = written.read_text()
        assert len(text) > 200, written  # each holds the flow's records
        assert not [s for s in secrets if s in text], f"a token is written in {written.name}"
