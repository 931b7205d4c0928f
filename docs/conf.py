"""Sphinx configuration: the documentation site of mcp_nb (Sphinx + MyST-NB).

Build (offline, warnings are errors; tests/test_docs.py runs the same):

    sphinx-build -W --keep-going -b html docs docs/_build/html

The pages are Markdown (MyST). The notebooks live in ../notebooks/, where Binder and
nbval use them; they are rendered here with the outputs stored in them (nothing is
executed), through symlinks that this file makes in docs/notebooks/ at every build
(git-ignored there), so no notebook is kept twice.

The build renders what it lists, and nothing else: the pages of docs/ (its top level) and
the course's notebooks named in NOTEBOOKS. A notebook of the user's own, in notebooks/, in
learn/ (where the README's first command opens JupyterLab) or anywhere else, is never read,
so it cannot break the build.
"""

from __future__ import annotations

import inspect
import os
import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))  # autodoc documents this checkout, installed or not
sys.path.insert(0, str(DOCS / "_ext"))  # this site's own extensions

import mcp_nb  # noqa: E402

project = "mcp_nb"
author = "the mcp_nb authors"
copyright = "the mcp_nb authors, MIT License"
release = mcp_nb.__version__
version = release

extensions = [
    "myst_nb",  # Markdown pages and notebooks; brings myst_parser along
    "sphinx.ext.autodoc",
    "widget_snapshots",  # progress bars drawn from their stored state: no CDN, so they show offline
    "reference_pages",  # the reference's tables (magics, commands, settings, causes) made from the code
]

# The course's notebooks, in its order (docs/course.md); tests/test_docs.py checks that this
# names every notebook the repository holds, and no other.
NOTEBOOKS = (
    "00-primer",
    "01-quickstart",
    "02-tool-errors",
    "03-choosing-the-error",
    "04-bad-arguments",
    "05-resources-and-prompts",
    "06-timeouts",
    "07-over-the-wire",
    "08-retries-and-degradation",
    "09-testing",
    "10-regression-cases",
    "11-capstone",
    "12-analytics",
    "13-real-servers",
    "14-serving",
    "15-inside-a-call",
    "16-surfaces",
    "17-a-model-in-the-loop",
)
include_patterns = ["*.md", *(f"notebooks/{name}.ipynb" for name in NOTEBOOKS)]
exclude_patterns = ["_build", "**/.ipynb_checkpoints", "Thumbs.db", ".DS_Store"]

# -- MyST and the notebooks --------------------------------------------------------------------

nb_execution_mode = "off"  # render the outputs stored in the notebooks, as nbval checks them
nb_merge_streams = True  # one block per stream, however the kernel split the prints
myst_heading_anchors = 3  # links such as design.md#deadlines
myst_enable_extensions = ["colon_fence"]

# -- API reference -----------------------------------------------------------------------------

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_class_signature = "separated"

# -- HTML --------------------------------------------------------------------------------------

html_theme = "furo"
html_title = f"mcp_nb {release}"
html_theme_options = {"navigation_with_keys": True}
html_last_updated_fmt = None  # reproducible pages
html_static_path = ["_static"]
html_css_files = ["notebooks.css"]

# -- pages that are made or may be missing -----------------------------------------------------

NOTEBOOK_LINKS = DOCS / "notebooks"
# Pages that other changes add (teaching.md, ...) join the index's Learning toctree by themselves, these
# first, so a page is never left out and a missing one is no error.
FIRST_EXTRA_PAGES = ["teaching"]
PLACEHOLDER = "more-pages-here\n"


def link_notebooks() -> None:
    """docs/notebooks/NAME.ipynb -> ../../notebooks/NAME.ipynb, for every notebook of NOTEBOOKS, and nothing else."""
    NOTEBOOK_LINKS.mkdir(exist_ok=True)
    wanted = {f"{name}.ipynb": ROOT / "notebooks" / f"{name}.ipynb" for name in NOTEBOOKS}
    for link in NOTEBOOK_LINKS.glob("*.ipynb"):
        if link.is_symlink() and link.name not in wanted:  # a stale link; a file of someone's own stays (unread)
            link.unlink()
    for name, target in wanted.items():
        link = NOTEBOOK_LINKS / name
        relative = os.path.relpath(target, NOTEBOOK_LINKS)
        if not (link.is_symlink() and os.readlink(link) == relative):
            link.unlink(missing_ok=True)
            link.symlink_to(relative)


link_notebooks()


def extra_pages(index_source: str) -> list[str]:
    """The top-level pages that exist and the index does not list yet."""
    blocks = [part.split("```", 1)[0] for part in index_source.split("```{toctree}")[1:]]
    listed = {line.strip() for block in blocks for line in block.splitlines() if line.strip() and not line.startswith(":")}
    found = sorted(path.stem for path in DOCS.glob("*.md") if path.stem != "index" and path.stem not in listed)
    return [page for page in FIRST_EXTRA_PAGES if page in found] + [page for page in found if page not in FIRST_EXTRA_PAGES]


def add_extra_pages(app, docname: str, source: list[str]) -> None:
    if docname == "index":
        source[0] = source[0].replace(PLACEHOLDER, "".join(f"{page}\n" for page in extra_pages(source[0])))


API_PLACEHOLDER = "more-api-here\n"
NOT_API = {"load_ipython_extension", "unload_ipython_extension"}  # what `%load_ext mcp_nb` calls, not for users


def more_api(api_source: str) -> str:
    """Reference entries for the names in `mcp_nb.__all__` that api.md does not document yet."""
    documented = set(re.findall(r"^\.\. (?:auto)?(?:function|class|data):: (\w+)", api_source, flags=re.MULTILINE))
    entries = []
    for name in mcp_nb.__all__:
        if name in documented or name in NOT_API:
            continue
        obj = getattr(mcp_nb, name)
        if inspect.isclass(obj):
            entries.append(f".. autoclass:: {name}\n   :members:\n")
        elif callable(obj):
            entries.append(f".. autofunction:: {name}\n")
        else:
            entries.append(f".. data:: {name}\n")
    if not entries:
        return ""
    return "## Also exported\n\n```{eval-rst}\n" + "\n".join(entries) + "```\n"


def add_more_api(app, docname: str, source: list[str]) -> None:
    if docname == "api":
        source[0] = source[0].replace(API_PLACEHOLDER, more_api(source[0]))


def always_reread(app, env, added, changed, removed) -> list[str]:
    # Their text depends on other files (the pages present, mcp_nb.__all__), so an
    # incremental build must not keep an old copy.
    return ["index", "api"]


def setup(app):
    app.connect("source-read", add_extra_pages)
    app.connect("source-read", add_more_api)
    app.connect("env-get-outdated", always_reread)
    return {"parallel_read_safe": True}
