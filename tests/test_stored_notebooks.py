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
MACHINE_PATHS = re.compile(
    r"(?:/work/|/check/|/home/|/root/|/tmp/|/usr/lib/python|\.venv/|site-packages|ipykernel_\d)"
)


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
                f"(...{sanitize(text, patterns)[max(0, found.start() - 60):found.end() + 40]}...)"
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
