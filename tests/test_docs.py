"""The documentation site builds offline, with warnings as errors, and has every page.

The same build as `sphinx-build -W --keep-going -b html docs docs/_build/html`, into a
temporary folder. Any attempt to reach the network goes to a closed local port, so a
build that needed it (an intersphinx inventory, a remote image) fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import docs_site

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return docs_site.built(tmp_path_factory)


def page(site: Path, name: str) -> str:
    path = site / name
    assert path.exists(), f"{name} was not built"
    return path.read_text(encoding="utf-8")


def test_the_pages_are_built_and_linked_from_the_index(site):
    index = page(site, "index.html")
    for name in ("guide", "notebooks", "error-model", "api", "design", "performance"):
        page(site, f"{name}.html")
        assert f'href="{name}.html"' in index, f"the index does not link {name}.html"
    # Every other page in docs/ (added by later changes) is in the navigation too.
    for extra in sorted(DOCS.glob("*.md")):
        assert f'href="{extra.stem}.html"' in index or extra.stem == "index", f"{extra.name} is not in the navigation"


def test_every_notebook_is_rendered_with_its_stored_outputs(site):
    listing = page(site, "notebooks.html")
    for notebook in NOTEBOOKS:
        html = page(site, f"notebooks/{notebook.stem}.html")
        assert f'href="notebooks/{notebook.stem}.html"' in listing
        assert "cell_output" in html, f"{notebook.name} is rendered without outputs"
    tool_errors = page(site, "notebooks/02-tool-errors.html")
    assert 'class="mcp-nb-outcome"' in tool_errors  # the Outcome cards, as stored
    assert "all 10 calls are as described" in tool_errors
    choosing = page(site, "notebooks/03-choosing-the-error.html")
    assert 'class="mcp-nb-outcome"' in choosing and "all 8 calls are as described" in choosing
    analytics = page(site, "notebooks/12-analytics.html")
    assert re.search(r'<img [^>]*src="\.\./_images/[^"]+\.png"', analytics), "the plots are missing"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[nb.name for nb in NOTEBOOKS])
def test_notebooks_are_stored_executed_top_to_bottom(notebook):
    """The site shows the stored outputs, and nbval compares only cells that have been run."""
    import nbformat

    counts = [cell.execution_count for cell in nbformat.read(notebook, as_version=4).cells if cell.cell_type == "code"]
    assert counts == list(range(1, len(counts) + 1)), (
        f"{notebook.name} is not stored as one run from a fresh kernel: jupyter execute --inplace {notebook.relative_to(ROOT)}"
    )


def test_the_api_reference_documents_the_public_api(site):
    import mcp_nb

    api = page(site, "api.html")
    for name in ("call", "acall", "read", "aread", "get_prompt", "aget_prompt", "tool", "resource", "prompt",
                 "remove", "registered", "history", "server", "configure", "reset",
                 "Outcome", "History", "ServerLog", "Registration"):  # fmt: skip
        assert f'id="mcp_nb.{name}"' in api, f"mcp_nb.{name} is not in the API reference"
    assert "Call a tool and wait for its Outcome" in api  # from the docstring
    for name in set(mcp_nb.__all__) - {"load_ipython_extension", "unload_ipython_extension"}:
        assert f'id="mcp_nb.{name}"' in api, f"mcp_nb.{name} is exported but not documented"


def test_the_guide_has_the_vocabulary_and_the_error_model(site):
    guide = page(site, "guide.html")
    import mcp_nb

    for cause in mcp_nb.CAUSES:
        assert f"<code class=\"docutils literal notranslate\"><span class=\"pre\">{cause}</span></code>" in guide, cause
    error_model = page(site, "error-model.html")
    assert "ResourceNotFoundError" in error_model and "-32001" in error_model


# -- the pictures ------------------------------------------------------------------------------

IMAGES = DOCS / "images"
# A picture named by a page: Markdown's ![alt](path), HTML's src= and srcset=, a MyST image or figure directive.
PICTURE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)|(?:src|srcset)=\"([^\"]+)\"|^```\{(?:image|figure)\}\s+(\S+)", re.M)


def screenshots_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("screenshots", ROOT / "tests" / "browser" / "screenshots.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pictures_named() -> dict[Path, list[str]]:
    """Each page (the README, every docs page) and the pictures it names, as files."""
    named = {}
    for page_path in [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]:
        if "_build" in page_path.parts:
            continue
        found = [next(filter(None, match.groups())) for match in PICTURE.finditer(page_path.read_text(encoding="utf-8"))]
        named[page_path] = [link for link in found if not link.startswith(("http://", "https://", "data:"))]
    return named


def test_every_picture_a_page_names_exists():
    missing = [
        f"{page_path.relative_to(ROOT)}: {link}"
        for page_path, links in pictures_named().items()
        for link in links
        if not (page_path.parent / link).resolve().is_file()
    ]
    assert missing == []


def test_the_pictures_are_the_ones_the_command_makes():
    """docs/images holds what `python tests/browser/screenshots.py` makes, no more, no less."""
    made = set(screenshots_module().PICTURES)
    assert made and {path.name for path in IMAGES.iterdir()} == made
