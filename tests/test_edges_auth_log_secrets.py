"""No secret reaches a log record, whoever makes it, with DEBUG on for the SDK (`mcp`), httpx2,
httpcore2, uvicorn and mcp_nb: a secret answer to a server's question sent over HTTP (the SDK's
transport logs each message it sends), on both protocol eras; the served kernel's bearer token; a
URL's password and a secret query parameter; an OAuth flow's tokens and client secret. Nor the
call's own log, which mcp_nb files from the same records into the history. The user's root logger
is never touched: the handler here sits on the named loggers, as a user's would."""

from __future__ import annotations

import json
import logging
from typing import Annotated

import httpx2
import pytest
from helpers import protected_server
from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver.resolve import Elicit, Resolve
from pydantic import BaseModel, Field

import mcp_nb
from mcp_nb import Answer

PASSWORD = "hunter2-Zq9x-pa'ss\\word"  # a quote and a backslash: repr() and JSON spell it otherwise
PIN = "4711-0815-2342"
QUERY_SECRET = "qs-7f3a9c2e5d"
URL_PASSWORD = "url-pw-88c1e4"
LOGGERS = ("mcp", "httpx2", "httpcore2", "uvicorn", "mcp_nb")


class Login(BaseModel):
    user: str
    password: str


class Unlock(BaseModel):
    account: str
    pin: str = Field(json_schema_extra={"writeOnly": True})  # secret by its schema, not its name


class Kept(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))

    def emit(self, record):
        self.records.append(record)

    def text(self) -> str:
        return "\n".join(self.format(record) for record in self.records)


@pytest.fixture
def debug_logs():
    """DEBUG on the named loggers of the traffic, a handler on each, as a user turns them on."""
    kept = Kept()
    before = {name: logging.getLogger(name).level for name in LOGGERS}
    root_before = (logging.getLogger().level, list(logging.getLogger().handlers))
    for name in LOGGERS:
        logging.getLogger(name).addHandler(kept)
        logging.getLogger(name).setLevel(logging.DEBUG)
    try:
        yield kept
    finally:
        for name, level in before.items():
            logging.getLogger(name).removeHandler(kept)
            logging.getLogger(name).setLevel(level)
    assert (logging.getLogger().level, list(logging.getLogger().handlers)) == root_before


def register_asking_tools():
    @mcp_nb.tool()
    def archive(login: Annotated[ElicitationResult[Login], Resolve(lambda: Elicit("Log in", Login))]) -> str:
        return f"opened for {login.data.user}" if login.action == "accept" else login.action

    @mcp_nb.tool()
    def safe(asked: Annotated[ElicitationResult[Unlock], Resolve(lambda: Elicit("Unlock", Unlock))]) -> str:
        return f"unlocked {asked.data.account}" if asked.action == "accept" else asked.action


def spellings(secret: str) -> list[str]:
    return [secret, repr(secret)[1:-1], json.dumps(secret)[1:-1]]


@pytest.mark.parametrize("mode", ["2025-11-25", "2026-07-28"])
def test_secret_answers_tokens_and_url_credentials_reach_no_log_record(debug_logs, mode):
    register_asking_tools()
    served = mcp_nb.serve()
    try:
        host = served.url.split("//", 1)[1].split("/", 1)[0]
        # A URL with a password: the served kernel refuses it (it wants its bearer token), after the
        # SDK and httpx2 have logged the URL they connect to.
        with pytest.raises(mcp_nb.ConnectError):
            mcp_nb.connect("basic", f"http://ann:{URL_PASSWORD}@{host}/mcp", mode=mode)
        headers = {"Authorization": f"Bearer {served.token}"}
        mcp_nb.connect("served", f"{served.url}?api_key={QUERY_SECRET}", headers=headers, mode=mode)
        login = mcp_nb.call("archive", server="served", elicit=[Answer.accept(user="ada", password=PASSWORD)])
        unlock = mcp_nb.call("safe", server="served", elicit=[Answer.accept(account="ada", pin=PIN)])
        assert (login.outcome, login.content, unlock.outcome, unlock.content) == (
            "result",
            "opened for ada",
            "result",
            "unlocked ada",
        ), (login, unlock)
        secrets = {"password": PASSWORD, "pin": PIN, "token": served.token, "query": QUERY_SECRET, "url password": URL_PASSWORD}
        said = debug_logs.text()
        # The records are there (the log is on), and what they carried is, without the secrets.
        assert "Sending client message" in said and "HTTP Request: POST" in said
        assert "'user': 'ada'" in said and "api_key=***" in said
        leaked = {name for name, secret in secrets.items() for spelled in spellings(secret) if spelled in said}
        assert not leaked, leaked
        # The calls' own logs, in the history, were filed from the same records.
        frame = mcp_nb.history().to_frame().to_json(default_handler=str, date_format="iso")
        assert "Sending client message" in frame
        assert not {name for name, secret in secrets.items() for spelled in spellings(secret) if spelled in frame}
    finally:
        mcp_nb.reset()


def test_an_oauth_flow_leaves_its_tokens_in_no_log_record(debug_logs, tmp_path, monkeypatch):
    monkeypatch.setenv("MCP_NB_CONFIG_DIR", str(tmp_path / "config"))
    with protected_server() as (url, _):
        follow = lambda link: httpx2.get(link, follow_redirects=True, timeout=30)  # noqa: E731 - the person approving
        mcp_nb.connect("notes", url, auth=mcp_nb.OAuth(callback="loopback", open_browser=follow))
        assert mcp_nb.call("whoami", server="notes").outcome == "result"
        (kept,) = (tmp_path / "config" / "oauth").glob("*.json")
        saved = json.loads(kept.read_text())
        secrets = [saved["tokens"]["access_token"], saved["tokens"]["refresh_token"], saved["client_info"]["client_secret"]]
        mcp_nb.reset()
    said = debug_logs.text()
    assert "HTTP Request: POST" in said and "/token" in said
    assert not [secret for secret in secrets if secret in said]


def test_a_records_arguments_keep_their_shape_when_a_secret_is_taken_out(debug_logs):
    # uvicorn's access formatter unpacks its record's five arguments: they stay five.
    served = mcp_nb.serve()
    try:
        mcp_nb.connect("served", f"{served.url}?api_key={QUERY_SECRET}", headers={"Authorization": f"Bearer {served.token}"})
    finally:
        mcp_nb.reset()
    access = [record for record in debug_logs.records if record.name == "uvicorn.access"]
    assert access and all(isinstance(record.args, tuple) and len(record.args) == 5 for record in access)
    assert all(QUERY_SECRET not in record.getMessage() for record in access)
    assert any("api_key=***" in record.getMessage() for record in access)
