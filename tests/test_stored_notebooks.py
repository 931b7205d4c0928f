"""The notebooks are stored with the outputs nbval compares against, on whatever machine CI
checks them out. Two ways a stored notebook can pass here and fail there, checked for every
notebook before nbval runs it:

- a comment meant as an nbval marker that nbval does not read (`# NBVAL_IGNORE_OUTPUT: why`
  is not a marker: nbval wants the comment to be exactly the marker's name), so the cell is
  compared after all;
- a compared output that names where this clone or its Python lives (an absolute path, a
  virtual environment, site-packages), once the shipped sanitizer has rewritten it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from nbval.plugin import comment_markers, find_comment_markers, find_metadata_tags, get_sanitize_patterns

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SANITIZER = ROOT / "notebooks" / "sanitize.cfg"

# What a path that depends on the machine looks like in an output.
MACHINE_PATHS = re.compile(r"(?:/work/|/check/|/home/|/root/|/tmp/|/usr/lib/python|\.venv/|site-packages|ipykernel_\d)")


def cells(path: Path):
    notebook = json.loads(path.read_text())
    for number, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] == "code":
            yield number, cell


def source(cell) -> str:
    text = cell["source"]
    return text if isinstance(text, str) else "".join(text)


def compared(cell) -> bool:
    options = dict(find_comment_markers(source(cell)))
    options.update(find_metadata_tags(cell.get("metadata", {})))
    return options.get("check", True) and not options.get("skip", False)


def output_texts(cell):
    for output in cell.get("outputs", []):
        if "text" in output:
            text = output["text"]
            yield text if isinstance(text, str) else "".join(text)
        for mime, data in output.get("data", {}).items():
            if mime.startswith("text/"):
                yield data if isinstance(data, str) else "".join(data)


def sanitize(text: str, patterns) -> str:
    for regex, replace in patterns:
        text = re.sub(regex, replace, text)
    return text


def test_there_are_notebooks_to_check():
    assert len(NOTEBOOKS) >= 8


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_nbval_comment_is_a_marker_nbval_reads(path):
    for number, cell in cells(path):
        for line in source(cell).splitlines():
            stripped = line.strip()
            if not stripped.startswith("#"):
                continue
            comment = stripped.lstrip("#").strip()
            if re.match(r"(?:NBVAL|PYTEST_VALIDATE)_", comment):
                assert comment in comment_markers, (
                    f"{path.name} cell {number}: {stripped!r} is not read by nbval; "
                    "put the marker on a line of its own and say why on the next line"
                )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_compared_output_names_where_this_machine_keeps_things(path):
    patterns = get_sanitize_patterns(SANITIZER.read_text())
    for number, cell in cells(path):
        if not compared(cell):
            continue
        for text in output_texts(cell):
            found = MACHINE_PATHS.search(sanitize(text, patterns))
            assert found is None, (
                f"{path.name} cell {number} compares an output that names a machine's path "
                f"(...{sanitize(text, patterns)[max(0, found.start() - 60) : found.end() + 40]}...)"
            )


# A bearer token in a saved output, or one named as a token (mcp_nb's are 43 characters): anyone
# who reads the notebook could call the server while it runs.
SECRET = re.compile(r"Bearer\s+[A-Za-z0-9_\-.~+/]{16,}|token\W{1,4}[A-Za-z0-9_\-]{20,}", re.I)
SAVED = sorted({*NOTEBOOKS, *(ROOT / "mcp_nb" / "starter").glob("*.ipynb"), *(ROOT / "tests" / "browser").glob("*.ipynb")})


@pytest.mark.parametrize("notebook", SAVED, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_saved_output_holds_a_token(notebook):
    for index, cell in enumerate(json.loads(notebook.read_text())["cells"]):
        for output in cell.get("outputs", []):
            found = SECRET.search(json.dumps(output))
            assert found is None, f"{notebook.name} cell {index}: {found.group(0)[:12]}…"


def test_the_token_check_finds_a_token():
    # The check above must be able to fail: a served handle's settings, as they were printed.
    assert SECRET.search('"Authorization": "Bearer tpWbZO0Bbv_8QsyFbLiDa-dDdVuXchliO1QidKezmGs"')
    assert SECRET.search("token tpWbZO0Bbv_8QsyFbLiDa-dDdVuXchliO1QidKezmGs")
    assert not SECRET.search("tpWb… (handle.token)")


# -- What any saved output may not hold, compared or not (a collapsed traceback, an ignored cell) --
#
# A notebook is read on GitHub, on the docs site and on Binder with the outputs of the machine
# that ran it last: none of them may name where that machine keeps things (this checkout, a
# worktree beside it, a home or temporary folder, the interpreter, a kernel's cell files), hold
# what looks like a secret, show a log line stamped with the time, or a progress bar that a
# static viewer draws as it was when it appeared (`0%|`) rather than as it ended.


def _places() -> re.Pattern[str]:
    import sys
    import tempfile

    here = {str(ROOT), str(ROOT.parent), str(Path.home()), tempfile.gettempdir(), sys.prefix, sys.base_prefix}
    literal = [re.escape(place.rstrip("/") + "/") for place in here if len(place.rstrip("/")) > 1]
    return re.compile("|".join([*literal, MACHINE_PATHS.pattern, r"/srv/|/opt/|/Users/|/var/folders/|[A-Za-z]:\\\\"]))


PLACES = _places()
# A run of 32 or more URL-safe characters that mixes upper case, lower case and digits, as
# `secrets.token_urlsafe` makes them; hex (a widget's model id) and words are not.
TOKEN_LIKE = re.compile(r"(?<![\w\-/+=.,])(?=[\w\-]*[A-Z])(?=[\w\-]*[a-z])(?=[\w\-]*\d)[A-Za-z0-9_\-]{32,}(?![\w\-])")
LOG_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}[,.]\d{3}")  # logging's asctime
BAR_AT_START = re.compile(r"(?<![\d.])0%\|")


def saved_texts(cell):
    """Every text a saved output holds, as (kind, text): streams, text/* data, tracebacks."""
    for output in cell.get("outputs", []):
        if "text" in output:
            text = output["text"]
            yield output.get("name", "stream"), text if isinstance(text, str) else "".join(text)
        for mime, data in output.get("data", {}).items():
            if mime.startswith("text/"):
                yield mime, data if isinstance(data, str) else "".join(data)
        if output.get("traceback"):
            yield "traceback", "\n".join(output["traceback"])


def problems(text: str, kind: str) -> list[str]:
    found = []
    for what, pattern in (
        ("a machine's path", PLACES),
        ("a token-like string", TOKEN_LIKE),
        ("a progress bar at 0%", BAR_AT_START),
    ):
        hit = pattern.search(re.sub(r"base64,[A-Za-z0-9+/=]+", "base64,", text))
        if hit:
            found.append(f"{what}: ...{text[max(0, hit.start() - 60) : hit.end() + 30]}...")
    if kind in ("stdout", "stderr", "stream"):
        hit = LOG_STAMP.search(text)
        if hit:
            found.append(f"a log line stamped with the time: {text[max(0, hit.start() - 10) : hit.end() + 60]}")
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_saved_output_names_the_machine_a_secret_a_log_stamp_or_a_bar_at_its_start(path):
    for number, cell in cells(path):
        for kind, text in saved_texts(cell):
            found = problems(text, kind)
            assert not found, f"{path.name} cell {number} ({cell.get('id')}, {kind}): {found[0]}"


def test_the_saved_output_checks_can_fail():
    assert problems('  File "/tmp/ipykernel_6743/3713197527.py", line 3, in get_author', "text/html")
    assert problems(f"<code>{ROOT}/.venv/bin/python servers/bookshop.py stdio</code>", "text/html")
    assert problems('  File "/work/wt-i14a/mcp_nb/trace.py", line 338, in probed', "text/plain")
    assert problems("token  tpWbZO0Bbv_8QsyFbLiDa-dDdVuXchliO1QidKezmGs", "text/plain")
    assert problems("sweep price:   0%|          | 0/200 [00:00<?, ?call/s]", "text/plain")
    assert problems("2026-11-30 15:05:24,035 - distributed.nanny - WARNING - Restarting worker", "stderr")
    assert not problems("sweep price: 100%|##########| 200/200 [00:01<00:00, 150.00call/s]", "text/plain")
    assert not problems('  File "mcp/server/mcpserver/server.py", line 442, in _handle_call_tool', "text/html")
    assert not problems("http://127.0.0.1:38671/mcp  hHaw\u2026 (handle.token)  d2bafc4f4e0a4b7c9a1e5f3b2c8d7e6f", "text/plain")
    assert not problems(
        '<img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk">', "text/html"
    )
