"""An OAuth flow that fails on what a peer sent is said in one bounded line, whatever the peer sent:
an HTML error page, a login page where tokens were due, an 8 MB body, an `error_description` whose
newlines would write a fake traceback under the message, terminal escapes and bidi overrides.
Against a real OAuth-protected server on 127.0.0.1 (tests/servers/hostile_oauth.py: the SDK's own
authorization server, one endpoint of which answers the hostile body), through `mcp_nb.connect`,
`%mcp_connect`, the connection's log and every log record made meanwhile."""

from __future__ import annotations

import contextlib
import logging
import re
import signal
import subprocess
from pathlib import Path

import httpx2
import pytest
import warm
from hypothesis import given, settings
from hypothesis import strategies as st

import mcp_nb
from mcp_nb.mistakes import one_line

HOSTILE = Path(__file__).parent / "servers" / "hostile_oauth.py"
LONGEST = 700  # characters of a ConnectError: a name, a URL, a step and one bounded line of the peer's


@pytest.fixture
def config(tmp_path, monkeypatch):
    monkeypatch.setenv("MCP_NB_CONFIG_DIR", str(tmp_path / "config"))
    return tmp_path / "config"


@contextlib.contextmanager
def hostile(at: str, answer: str):
    process = subprocess.Popen(
        warm.command(HOSTILE, "--at", at, "--answer", answer),  # started warm (tests/warm.py)
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stderr.readline()
        found = re.fullmatch(r"hostile OAuth server at (http://127\.0\.0\.1:\d+/mcp)\n", line)
        assert found, f"the hostile server said {line!r} (exit {process.poll()})"
        yield found.group(1)
    finally:
        mcp_nb.reset()  # the sessions closed before the server stops
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
        process.stderr.close()


def follow(link: str) -> None:
    """The person approving in a browser: the authorization server redirects to the loopback listener."""
    httpx2.get(link, follow_redirects=True, timeout=30)


def safe(said: str) -> None:
    """One line a notebook can show as it is: no line break, no control character, bounded."""
    assert said.isprintable() and len(said.splitlines()) == 1, said
    assert len(said) <= LONGEST, (len(said), said[:400])
    assert "Traceback" not in said and 'File "/srv' not in said, said


# (where, what it answers, what the message says of it)
CASES = [
    ("token", "html-400", 'token step: Token exchange failed (400): an HTML page titled "400 Bad Request"'),
    ("token", "login-200", 'token step: Invalid token response: not JSON but an HTML page titled "Sign in to Example"'),
    ("token", "huge-400", "token step: Token exchange failed (400): EEEE"),
    ("token", "huge-line-400", 'token step: Token exchange failed (400): {"error": "invalid_grant", "error_description": "xxxx'),
    ("token", "newlines-400", "token step: Token exchange failed (400): invalid_grant: the code expired …"),
    ("token", "controls-400", r"token step: Token exchange failed (400): invalid_client: \x1b[2Jred \u202eevil\x07 \x00"),
    ("token", "wrong-shape-200", "token step: Invalid token response: 2 validation errors for OAuthToken …"),
    ("register", "html-400", 'registration step: Registration failed: 400 an HTML page titled "400 Bad Request"'),
    ("register", "huge-400", "registration step: Registration failed: 400 EEEE"),
    ("register", "newlines-400", "registration step: Registration failed: 400 invalid_grant: the code expired …"),
    ("authorize", "newlines-400", "authorization step: the authorization server refused: access_denied: the code expired …"),
    (
        "authorize",
        "controls-400",
        r"authorization step: the authorization server refused: access_denied: \x1b[2Jred \u202eevil\x07 \x00",
    ),
]


@pytest.mark.parametrize("at, answer, said", CASES, ids=[f"{at}-{answer}" for at, answer, _ in CASES])
def test_a_failed_flow_is_one_bounded_line_naming_its_step(config, caplog, at, answer, said):
    caplog.set_level(logging.DEBUG, logger="mcp_nb")
    caplog.set_level(logging.DEBUG, logger="mcp")
    with hostile(at, answer) as url:
        with pytest.raises(mcp_nb.ConnectError) as raised:
            mcp_nb.connect("notes", url, auth=mcp_nb.OAuth(callback="loopback", open_browser=follow, timeout=60), timeout=30)
    message = str(raised.value)
    safe(message)
    assert f"could not connect to 'notes' ({url}): authorization failed at the {said}" in message, message
    assert list(mcp_nb.servers().index) == ["kernel"]
    # The same line in the connection's log, and no log record carries the page: mcp_nb's debug line
    # is bounded, and the SDK's own "OAuth flow error" keeps a bounded traceback.
    failed = [r.getMessage() for r in caplog.records if r.name == "mcp_nb.calling.connections" and "failed" in r.getMessage()]
    assert failed and all(len(text) < 3000 for text in failed), [len(t) for t in failed]
    for record in caplog.records:
        assert len(record.getMessage()) < 30_000, (record.name, len(record.getMessage()))
        assert len(record.exc_text or "") < 30_000, (record.name, len(record.exc_text))
    assert len(caplog.text) < 200_000


def test_the_magic_says_a_hostile_token_endpoint_in_one_line(config, shell):
    shell.user_ns["oauth"] = mcp_nb.OAuth(callback="loopback", open_browser=follow, timeout=60)
    with hostile("token", "newlines-400") as url:
        result = shell.run_cell(f"%mcp_connect notes {url} --auth oauth --timeout 30")
    error = result.error_in_exec
    assert type(error).__name__ == "UsageError", repr(error)
    safe(str(error))
    assert "authorization failed at the token step: Token exchange failed (400): invalid_grant: the code expired …" in str(error)


@pytest.mark.parametrize(
    "text, shown",
    [
        ("one\ntwo", "one …"),
        ("\n\n  first  \n", "first"),
        ("a\x1b[31mred\x1b[0m", "ared"),
        ("\u202eevil", r"\u202eevil"),
        ("tab\tand\x00nul", r"tab\tand\x00nul"),
        ("x" * 500, "x" * 300 + " …"),
        ("a\u2028b", "a …"),
        ("", ""),
    ],
)
def test_one_line_is_the_first_line_bounded_with_controls_shown(text, shown):
    assert one_line(text) == shown


def test_one_line_costs_the_limit_not_the_text():
    # Eight megabytes on one line, or after a megabyte of blanks: a slice of each.
    assert one_line(" " * 1_000_000 + "E" * 8_000_000, 20) == "E" * 20 + " …"


@settings(deadline=None, max_examples=300)
@given(st.text(), st.integers(min_value=1, max_value=400))
def test_one_line_is_always_one_printable_bounded_line(text, limit):
    shown = one_line(text, limit)
    assert shown.isprintable() or all(
        c.isprintable() or c.isspace() and c not in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029" for c in shown
    )
    assert len(shown.splitlines()) <= 1 and len(shown) <= limit + 2
