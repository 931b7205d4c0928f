"""The documentation site builds offline, with warnings as errors, and has every page.

The same build as `sphinx-build -W --keep-going -b html docs docs/_build/html`, into a
temporary folder. Any attempt to reach the network goes to a closed local port, so a
build that needed it (an intersphinx inventory, a remote image) fails here.
"""

from __future__ import annotations

import html
import inspect
import re
from pathlib import Path

import docs_site
import pytest

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
    for name in ("course", "notebooks", "magics", "api", "settings", "outcomes", "error-model", "design", "performance"):
        page(site, f"{name}.html")
        assert f'href="{name}.html"' in index, f"the index does not link {name}.html"
    # Every other page in docs/ (added by later changes) is in the navigation too.
    for extra in sorted(DOCS.glob("*.md")):
        assert f'href="{extra.stem}.html"' in index or extra.stem == "index", f"{extra.name} is not in the navigation"


def page_text(site: Path, name: str) -> str:
    """The page's text as a reader reads it, its spaces and Sphinx's typographic quotes and ellipses made plain."""
    text = html.unescape(re.sub(r"<[^>]+>", "", page(site, name)))
    return " ".join(text.replace("\u2019", "'").replace("\u2018", "'").replace("\u2026", "...").split())


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
    for name in (
        "call",
        "acall",
        "read",
        "aread",
        "get_prompt",
        "aget_prompt",
        "tool",
        "resource",
        "prompt",
        "remove",
        "registered",
        "history",
        "server",
        "configure",
        "reset",
        "Outcome",
        "History",
        "ServerLog",
        "Registration",
    ):
        assert f'id="mcp_nb.{name}"' in api, f"mcp_nb.{name} is not in the API reference"
    assert "Call a tool and wait for its Outcome" in api  # from the docstring
    for name in set(mcp_nb.__all__) - {"load_ipython_extension", "unload_ipython_extension"}:
        assert f'id="mcp_nb.{name}"' in api, f"mcp_nb.{name} is exported but not documented"


def test_the_reference_has_the_vocabulary_and_the_error_model_its_cases(site):
    import mcp_nb

    outcomes = page(site, "outcomes.html")
    for word in (*mcp_nb.OUTCOMES, *mcp_nb.CAUSES, *mcp_nb.COLUMNS):
        assert f'<code class="docutils literal notranslate"><span class="pre">{word}</span></code>' in outcomes, word
    text = page_text(site, "outcomes.html")
    for meaning in mcp_nb.CAUSE_DOC.values():  # each cause's meaning, as the code says it
        assert " ".join(meaning.split()) in text, meaning
    error_model = page(site, "error-model.html")
    assert "ResourceNotFoundError" in error_model and "-32001" in error_model


def shell_with_magics():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "mcp_nb")
    return shell


def test_the_magics_reference_is_each_magics_help_from_ipython(site):
    """Every magic of mcp_nb has its section, holding what `%name?` prints: its usage, and each option its parser has."""
    magics = html.unescape(re.sub(r"<[^>]+>", "", page(site, "magics.html")))
    shell = shell_with_magics()
    found = 0
    for kind, prefix in (("cell", "%%"), ("line", "%")):
        for name, method in shell.magics_manager.magics[kind].items():
            if type(getattr(method, "__self__", None)).__name__ != "McpMagics":
                continue
            found += 1
            assert f"{prefix}{name}" in magics, name
            for line in inspect.cleandoc(method.__doc__).removeprefix("::").splitlines():
                assert " ".join(line.split()) in " ".join(magics.split()), f"{prefix}{name}: {line!r} is not in the reference"
            parser = getattr(method, "parser", None)
            for action in parser._actions if parser is not None else ():
                for option in action.option_strings:
                    assert option in magics, f"{prefix}{name} {option}"
    assert found >= 18


def test_the_commands_and_settings_reference_are_made_from_the_code(site):
    import argparse
    import importlib

    from mcp_nb.commands import COMMANDS
    from mcp_nb.config import CONFIGURABLE, SharedTraits

    magics = html.unescape(page(site, "magics.html"))
    for name, (module, _) in COMMANDS.items():
        parser = argparse.ArgumentParser(prog=f"python -m mcp_nb {name}")
        importlib.import_module(module).arguments(parser)
        assert f"python -m mcp_nb {name}" in magics, name
        for action in parser._actions:
            for option in action.option_strings:
                assert option in magics, f"{name} {option}"
    settings = page_text(site, "settings.html")
    for name in CONFIGURABLE:
        assert name in settings and " ".join(SharedTraits.class_traits()[name].help.replace("`", "").split())[:60] in settings, (
            name
        )


def test_the_build_renders_the_notebooks_it_lists_and_those_are_the_course():
    """docs/conf.py's NOTEBOOKS names every notebook of notebooks/ that git keeps, and no other."""
    import subprocess

    listed = docs_conf_notebooks()
    kept = subprocess.run(
        ["git", "ls-files", "notebooks/*.ipynb"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert sorted(listed) == sorted(Path(path).stem for path in kept)


def docs_conf_notebooks() -> tuple[str, ...]:
    import ast

    tree = ast.parse((DOCS / "conf.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "NOTEBOOKS" for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError("docs/conf.py has no NOTEBOOKS")


def test_a_notebook_of_the_users_own_cannot_break_the_build(tmp_path_factory):
    """The site is built from a copy of the repository with broken notebooks where a user makes them
    (notebooks/, learn/, learn/mine/, docs/ itself: tests/docs_site.py), with warnings as errors: it
    built, renders none of them, and left each as it was."""
    made = docs_site.site(tmp_path_factory)
    pages, copy = Path(made["html"]), Path(made["copy"])
    assert not list(pages.rglob("Untitled.html")) and not list(pages.rglob("scratch.html")) and not list(pages.rglob("mine.html"))
    for where in docs_site.USERS_NOTEBOOKS:
        assert (copy / where).read_text() == docs_site.BROKEN, where  # a file of the user's own is left as it was


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


def test_every_picture_is_shown_where_the_text_describes_it():
    """Each picture is on a docs page (the site shows it), and the README shows a card and the panel."""
    on_docs = {Path(link).name for page_path, links in pictures_named().items() if page_path.parent != ROOT for link in links}
    assert {path.name for path in IMAGES.iterdir()} <= on_docs
    on_readme = {Path(link).name for link in pictures_named()[ROOT / "README.md"]}
    assert {"card-light.png", "card-dark.png", "panel-call-light.png", "panel-call-dark.png"} <= on_readme


def test_the_readmes_links_lead_somewhere():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = [
        link.split("#")[0] for link in re.findall(r"\]\(([^)\s]+)\)", readme) if not link.startswith(("http://", "https://"))
    ]
    assert links and [link for link in links if not (ROOT / link).exists()] == []
    assert "ACCOUNT" not in readme and "REPOSITORY/" not in readme and "get-url origin`" not in readme.split("## The course")[0]
