"""Stable output and the shipped sanitizer: what changes from run to run is left out or
rewritten, and everything that teaches stays.

- One setting, `stable_output`, for `%config McpMagics`, `mcp_nb.configure()` and the
  environment variable MCP_NB_STABLE_OUTPUT (where it starts; anything set later wins).
- The views with it on: no duration, no time a late handler ended, no traceback frames;
  outcome, cause, code, message, content, the late fate as a state, the root cause and the
  exception chain all kept; the history in the order calls started.
- The sanitizer (`python -m mcp_nb nbval-sanitize`, read by nbval's own parser) rewrites
  every view into the form stable output prints: the two ways agree, so a notebook stored
  one way passes when checked the other. This repository's notebooks use that very file.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import pytest
from helpers import STARTS_WITHIN, wait_until
from mcp import MCPError
from mcp.server.mcpserver.exceptions import ToolError
from nbval.plugin import get_sanitize_patterns

import mcp_nb
from mcp_nb.config import STABLE_OUTPUT_ENV, flag_from_env, settings
from mcp_nb.notebook import nbval
from mcp_nb.registering.loop_watch import LoopBlockedWarning
from mcp_nb.views import cards, tables, theme

ROOT = Path(__file__).resolve().parent.parent


def register_every_outcome() -> threading.Event:
    """Registers a tool for each outcome; returns the event that lets `slow` end."""
    let_go = threading.Event()

    @mcp_nb.tool()
    def get_author(title: str) -> str:
        if title == "Nothing":
            raise ToolError(f"No book titled {title!r}.")
        if title == "Offline":
            raise MCPError(code=-32050, message="catalog offline", data={"retry_after": 5})
        if title == "Broken":
            return {}["catalog"]
        return "Frank Herbert"

    @mcp_nb.tool()
    def slow() -> str:
        let_go.wait(30)  # let go once its call timed out: a late result
        return "late"

    return let_go


def every_outcome(late: bool = True) -> list[mcp_nb.Outcome]:
    let_go = register_every_outcome()
    calls = [mcp_nb.call("get_author", {"title": title}) for title in ("Dune", "Nothing", "Broken", "Offline")]
    calls.append(mcp_nb.call("get_author", {"title": 42}))  # invalid arguments: pydantic's text
    if not late:
        return calls
    timed_out = mcp_nb.call("slow", timeout=STARTS_WITHIN)
    let_go.set()
    assert wait_until(lambda: timed_out.server_fate == "completed"), timed_out.server_fate
    return [*calls, timed_out]


def nbval_sanitize(text: str) -> str:
    """What nbval does with the file this mcp_nb writes: its own parser, its own order."""
    for regex, replace in get_sanitize_patterns(nbval.sanitizer()):
        text = re.sub(regex, replace, text)
    return text


def stable_form(text: str) -> str:
    """`text` rewritten by the sanitizer's rules for mcp_nb's own varying parts only."""
    for part in theme.VARYING:
        text = re.sub(nbval.pattern(part.printed), part.stable, text)
    return text


# -- the setting -----------------------------------------------------------------------------------


def test_stable_output_is_one_setting_for_config_and_configure(shell):
    assert settings.stable_output is False
    assert mcp_nb.configure(stable_output=True)["stable_output"] is True
    magics = [c for c in shell.configurables if type(c).__name__ == "McpMagics"][0]
    assert magics.stable_output is True
    shell.run_line_magic("config", "McpMagics.stable_output = False")
    assert settings.stable_output is False
    with pytest.raises(ValueError):
        mcp_nb.configure(stable_output="sometimes")
    assert settings.stable_output is False


def test_a_setting_made_before_the_extension_is_loaded_is_kept(shell):
    """`%load_ext` (or `%reload_ext`) links the magics to the settings without putting defaults back."""
    mcp_nb.configure(stable_output=True, timeout=7)
    shell.run_line_magic("reload_ext", "mcp_nb")
    assert (settings.stable_output, settings.timeout) == (True, 7)
    shell.run_line_magic("config", "McpMagics.timeout = 9")
    assert settings.timeout == 9  # still linked after the reload


def test_the_environment_variable_is_read_as_on_or_off():
    for value in ("1", "true", "Yes", " on "):
        assert flag_from_env(STABLE_OUTPUT_ENV, {STABLE_OUTPUT_ENV: value}) is True
    for value in ("", "0", "false", "No", "off"):
        assert flag_from_env(STABLE_OUTPUT_ENV, {STABLE_OUTPUT_ENV: value}) is False
    assert flag_from_env(STABLE_OUTPUT_ENV, {}) is False
    with pytest.raises(ValueError, match="MCP_NB_STABLE_OUTPUT must be one of .*got 'maybe'"):
        flag_from_env(STABLE_OUTPUT_ENV, {STABLE_OUTPUT_ENV: "maybe"})


PROBE = r"""
import mcp_nb
from IPython.core.interactiveshell import InteractiveShell
from mcp_nb.config import settings

shell = InteractiveShell.instance()
print(settings.stable_output)
shell.run_line_magic("load_ext", "mcp_nb")
print(settings.stable_output)
shell.run_line_magic("config", "McpMagics.stable_output = False")
print(settings.stable_output)
"""


def run_probe(value: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != STABLE_OUTPUT_ENV}
    env["PYTHONPATH"] = str(ROOT)
    if value is not None:
        env[STABLE_OUTPUT_ENV] = value
    return subprocess.run(
        [sys.executable, "-c", PROBE], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )


def test_the_environment_variable_is_where_the_setting_starts_and_the_notebook_wins():
    on = run_probe("1")
    assert on.returncode == 0, on.stderr
    # on at import, still on once the extension is loaded, off once the notebook says so
    assert on.stdout.split() == ["True", "True", "False"]
    assert run_probe(None).stdout.split() == ["False", "False", "False"]
    bad = run_probe("maybe")
    assert bad.returncode != 0 and "MCP_NB_STABLE_OUTPUT must be one of" in bad.stderr


# -- the views -------------------------------------------------------------------------------------


def test_stable_cards_leave_out_timings_and_frames_and_keep_what_teaches():
    ok, raised, crash, offline, invalid, late = every_outcome()
    assert [o.cause for o in (ok, raised, crash, offline, invalid, late)] == [
        "ok",
        "raised",
        "crash",
        "mcp_error",
        "invalid_arguments",
        "deadline",
    ]
    for o in (ok, raised, crash, offline, invalid, late):
        shown = cards.outcome_html(o, stable=False)
        stable = cards.outcome_html(o, stable=True)
        assert re.search(r" · \d+\.\d ms</span>", shown)
        assert " ms</span>" not in stable and f"#{o.call_id}</span>" in stable
        for kept in (o.outcome, o.cause, o.name):
            assert kept in stable
        assert repr(o) == cards.outcome_text(o)  # the text view has no timings either way
    assert "Frank Herbert" in cards.outcome_html(ok, stable=True)
    assert "No book titled &#x27;Nothing&#x27;." in cards.outcome_html(raised, stable=True)
    offline_card = cards.outcome_html(offline, stable=True)
    assert "-32050 catalog offline" in offline_card and "retry_after" in offline_card
    assert f"-32001 Timed out after {STARTS_WITHIN:g}s" in cards.outcome_html(late, stable=True)
    # the late fate, as a state without the time it came
    assert re.search(
        r"completed after the client gave up: result \(ok\) at \d+\.\d\d s</div>", cards.outcome_html(late, stable=False)
    )
    assert "completed after the client gave up: result (ok)</div>" in cards.outcome_html(late, stable=True)
    # the crash's traceback: the exceptions and their chain, without the frames
    shown, stable = cards.outcome_html(crash, stable=False), cards.outcome_html(crash, stable=True)
    assert "File &quot;" in shown and "File &quot;" not in stable and "Traceback (most recent call last)" not in stable
    assert '<summary style="cursor:pointer">KeyError: &#x27;catalog&#x27;</summary>' in stable
    assert "KeyError: &#x27;catalog&#x27;\n\nThe above exception was the direct cause of the following exception:" in stable


def test_the_stable_setting_is_what_the_views_read():
    o = every_outcome(late=False)[0]
    mcp_nb.configure(stable_output=True)
    assert o._repr_html_() == cards.outcome_html(o, stable=True)
    assert mcp_nb.history()._repr_html_() == tables.history_html(mcp_nb.history().to_frame(), settings.history_rows, stable=True)
    mcp_nb.configure(stable_output=False)
    assert o._repr_html_() == cards.outcome_html(o, stable=False)


def test_the_stable_history_has_no_durations_and_lists_calls_in_the_order_they_started():
    @mcp_nb.tool()
    async def wait(seconds: float) -> float:
        await asyncio.sleep(seconds)
        return seconds

    # Concurrent calls end, and are recorded, in another order than they started in.
    frame = mcp_nb.sweep("wait", [{"seconds": 0.3}, {"seconds": 0.2}, {"seconds": 0.1}], progress=False)
    history = mcp_nb.history().to_frame()
    assert list(history["call_id"]) == sorted(frame["call_id"], reverse=True)
    stable_html = tables.history_html(history, 20, stable=True)
    assert ">ms</th>" not in stable_html and "text-align:right" not in stable_html
    assert ">ms</th>" in tables.history_html(history, 20, stable=False)
    ids = [int(i) for i in re.findall(r'<tr><td style="[^"]*">(\d+)</td>', stable_html)]
    assert ids == sorted(frame["call_id"])
    text = tables.history_text(history, 20, stable=True)
    assert [int(line.split()[0]) for line in text.splitlines()[2:]] == sorted(frame["call_id"])
    # what teaches stays: every outcome, cause and content
    assert stable_html.count("mcp-nb-result") == 3 and "0.3" in stable_html


def test_registration_cards_have_nothing_that_changes_from_run_to_run(shell):
    cell = "%%mcp_tool --read-only\ndef get_author(title: str) -> str:\n    '''Look up an author.'''\n    return title\n"
    first = shell.run_cell(cell).result
    mcp_nb.reset()
    again = shell.run_cell(cell).result
    assert (repr(first), first._repr_html_()) == (repr(again), again._repr_html_())


# -- the sanitizer ---------------------------------------------------------------------------------


def test_the_sanitizer_rewrites_every_view_into_its_stable_form():
    outcomes = every_outcome()
    frame = mcp_nb.history().to_frame()
    for o in outcomes:
        shown, stable = cards.outcome_html(o, stable=False), cards.outcome_html(o, stable=True)
        assert nbval_sanitize(shown) == nbval_sanitize(stable)
        if "<details>" not in stable:  # a traceback's body is the one part both forms mask
            assert stable_form(shown) == stable
        # the text view has nothing to rewrite but pydantic's link to its docs
        text = cards.outcome_text(o)
        assert nbval_sanitize(text) == re.sub(r"errors\.pydantic\.dev/[\d.]+/", "errors.pydantic.dev/VERSION/", text)
    assert stable_form(tables.history_html(frame, 20, stable=False)) == tables.history_html(frame, 20, stable=True)
    assert nbval_sanitize(tables.history_text(frame, 20, stable=False)) == nbval_sanitize(
        tables.history_text(frame, 20, stable=True)
    )
    # nbval reads every rule of the file, once, in order (it keys them by regex)
    patterns = get_sanitize_patterns(nbval.sanitizer())
    assert [(r.regex, r.replace) for r in nbval.rules()] == patterns
    assert len({regex for regex, _ in patterns}) == len(patterns)
    assert nbval.sanitize(tables.history_html(frame, 20, stable=False)) == nbval_sanitize(
        tables.history_html(frame, 20, stable=False)
    )


def test_each_part_that_varies_is_rewritten_whatever_its_value():
    for part in theme.VARYING:
        for value in (0.0, 0.04, 7.5, 1234.56, 98765.4):
            printed = part.printed.format(ms=value, seconds=value)
            assert nbval_sanitize(printed) == part.stable, printed


def test_the_sanitizer_leaves_the_users_own_outputs_alone():
    for text in (
        "took 5.0 ms",
        "<Figure size 640x480 with 1 Axes>",
        "<td>12.5</td>",
        "· 3.0 ms",
        'File "notes.txt" is missing',
        "errors.pydantic.dev is pydantic's site",
    ):
        assert nbval_sanitize(text) == text


def test_what_libraries_print_is_rewritten():
    assert (
        nbval_sanitize('  File "/x/venv/lib/python3.11/site-packages/mcp/server.py", line 12, in run')
        == '  File "PATH", line N, in run'
    )
    assert nbval_sanitize("File &quot;/tmp/ipykernel_4242/12345.py&quot;, line 3") == 'File "PATH", line N'
    assert nbval_sanitize("/tmp/ipykernel_4242/12345.py:3: LoopBlockedWarning") == "CELL.py:3: LoopBlockedWarning"
    assert nbval_sanitize("https://errors.pydantic.dev/2.14/v/int_parsing") == "https://errors.pydantic.dev/VERSION/v/int_parsing"
    assert nbval_sanitize("2026-11-30 12:00:01.123456+00:00") == "TIMESTAMP"
    assert nbval_sanitize("<Book object at 0x7f3a2b1c>") == "<Book object at 0xADDRESS>"


def test_the_time_an_async_tool_held_the_loop_is_rewritten_in_both_messages():
    started, release = threading.Event(), threading.Event()

    @mcp_nb.tool()
    async def hog() -> str:
        started.set()
        release.wait(30)  # holds mcp_nb's loop without awaiting  # noqa: ASYNC101
        return "done"

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoopBlockedWarning)
        o = mcp_nb.call("hog", timeout=STARTS_WITHIN)  # returns at its deadline, the loop still held
        release.set()
        assert started.is_set() and o.cause == "deadline"
        assert wait_until(lambda: o.server_fate == "completed"), o.server_fate
    assert re.search(r"event loop was held by async tool 'hog' for \d+\.\d\d s\)", o.message)
    assert "event loop was held by async tool &#x27;hog&#x27; for SECONDS s)" in nbval_sanitize(o._repr_html_())
    assert "event loop was held by async tool 'hog' for SECONDS s)" in nbval_sanitize(repr(o))
    (warning,) = [log for log in o.server_logs if log.logger == "mcp_nb"]
    assert re.search(r"event loop for \d+\.\d\d s without awaiting", warning.message)
    assert "event loop for SECONDS s without awaiting" in nbval_sanitize(repr(o))


def test_the_command_writes_the_file_this_repository_checks_its_notebooks_with(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    printed = subprocess.run(
        [sys.executable, "-m", "mcp_nb", "nbval-sanitize"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout == nbval.sanitizer() and printed.stdout.isascii()
    written = subprocess.run(
        [sys.executable, "-m", "mcp_nb", "nbval-sanitize", "-o", tmp_path / "sanitize.cfg"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert written.returncode == 0 and written.stdout == ""
    assert (tmp_path / "sanitize.cfg").read_text() == printed.stdout
    assert (ROOT / "notebooks" / "sanitize.cfg").read_text() == printed.stdout, (
        "notebooks/sanitize.cfg is not what this mcp_nb writes: python -m mcp_nb nbval-sanitize -o notebooks/sanitize.cfg"
    )
