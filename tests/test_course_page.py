"""docs/course.md against the notebooks, and the README's way onto Binder.

- The course page's syllabus names every notebook in notebooks/, and every notebook it names
  exists; the minutes of each table add up to the total it states.
- No Binder link in the README or the course page is a badge or a link to a placeholder
  account (`OWNER`, `ACCOUNT`...): a clickable link must name the GitHub repository this clone's
  `origin` points at. The README says in one line how to make the link for a copy: a template in
  a code span, whose placeholders that line explains and whose notebook exists.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COURSE = ROOT / "docs" / "course.md"
README = ROOT / "README.md"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

# {doc}`text <notebooks/NAME>`: a link to the site's page of notebooks/NAME.ipynb (a Markdown link to the
# notebook's file would not resolve: the site's docs/notebooks/ are symlinks out of docs/).
LINKED = re.compile(r"\{doc\}`[^`<]*<notebooks/([^>/`]+)>`")
ROW = re.compile(r"^\|(?P<cells>.*)\|\s*$")
MINUTES = re.compile(r"^\**(\d+) min\**$")


def course() -> str:
    return COURSE.read_text(encoding="utf-8")


def section(text: str, heading: str) -> str:
    """The text under `## heading`, to the next `## `."""
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def syllabus(text: str) -> tuple[list[tuple[str, int]], int]:
    """The (notebook, minutes) rows of the first table in `text`, and the minutes of its total row."""
    rows, total = [], None
    for line in text.splitlines():
        match = ROW.match(line.strip())
        if not match or set(line.strip()) <= set("|-: "):
            continue
        cells = [cell.strip() for cell in match["cells"].split("|")]
        minutes = MINUTES.match(cells[-1])
        if minutes is None:
            continue  # the header
        if "total" in line.lower():
            total = int(minutes[1])
            continue
        names = LINKED.findall(line)
        assert len(names) == 1, f"a syllabus row names one notebook: {line!r}"
        rows.append((names[0], int(minutes[1])))
    assert rows and total is not None, "a syllabus table with one row per notebook and a total row"
    return rows, total


def test_the_course_page_names_every_notebook_and_only_notebooks_that_exist():
    named = set(LINKED.findall(course()))
    stems = {path.stem for path in NOTEBOOKS}
    assert named - stems == set(), f"the course page names notebooks that do not exist: {sorted(named - stems)}"
    assert stems - named == set(), f"the course page leaves out {sorted(stems - named)}"


def test_every_notebook_is_on_the_core_path_or_in_a_lab_and_the_minutes_add_up():
    core, core_total = syllabus(section(course(), "The core path"))
    labs, labs_total = syllabus(section(course(), "Optional labs"))
    assert sum(minutes for _, minutes in core) == core_total, "the core path's total is not the sum of its rows"
    assert sum(minutes for _, minutes in labs) == labs_total, "the labs' total is not the sum of their rows"
    assert {name for name, _ in core} | {name for name, _ in labs} == {path.stem for path in NOTEBOOKS}
    assert len({name for name, _ in core}) == len(core), "a notebook is on the core path twice"
    assert core[0][0] == NOTEBOOKS[0].stem, "the core path starts with the notebook that sorts first (the primer)"


# What a Binder link looks like, and the words that stand for an account or repository not yet known.
BINDER = re.compile(
    r"https?://mybinder\.org/v2/gh/(?P<account>[^/\s)`]+)/(?P<repository>[^/\s)`]+)/(?P<ref>[^?\s)`]+)(?:\?urlpath=(?P<urlpath>[^\s)`]+))?"
)
PLACEHOLDER = re.compile(r"^(?:[A-Z][A-Z_-]*|<[^>]*>|\{[^}]*\}|\.\.\.)$")


def code_spans(text: str) -> list[str]:
    return re.findall(r"`([^`\n]+)`", text)


def clickable_binder_links(text: str) -> list[re.Match]:
    """Binder links a reader can click: anywhere but inside a code span (GitHub links bare URLs too)."""
    return list(BINDER.finditer(re.sub(r"`[^`\n]+`", "", text)))


def github_repository(url: str) -> str | None:
    """ACCOUNT/REPOSITORY of a GitHub remote URL (https or ssh), or None for any other remote."""
    match = re.match(
        r"^(?:https://(?:[^@/]+@)?github\.com/|git@github\.com:|ssh://git@github\.com/)([^/]+)/([^/]+?)(?:\.git)?/?$", url.strip()
    )
    return f"{match[1]}/{match[2]}" if match else None


def origin_repository() -> str | None:
    done = subprocess.run(["git", "remote", "get-url", "origin"], cwd=ROOT, capture_output=True, text=True)
    return github_repository(done.stdout) if done.returncode == 0 else None


def wrong_binder_links(text: str, origin: str | None) -> list[str]:
    """What is wrong with each clickable Binder link of `text`, for a clone whose origin is `origin`."""
    wrong = []
    for link in clickable_binder_links(text):
        repository = f"{link['account']}/{link['repository']}"
        if PLACEHOLDER.match(link["account"]) or PLACEHOLDER.match(link["repository"]):
            wrong.append(f"{link[0]}: {repository} is a placeholder, and a reader can click it")
        elif origin is None:
            wrong.append(f"{link[0]}: this clone has no GitHub origin to check {repository} against")
        elif repository.lower() != origin.lower():
            wrong.append(f"{link[0]}: names {repository}, but this clone's origin is {origin}")
    return wrong


@pytest.mark.parametrize("page", [README, COURSE], ids=lambda p: p.name)
def test_no_binder_link_a_reader_can_click_names_a_placeholder_or_another_repository(page):
    assert wrong_binder_links(page.read_text(encoding="utf-8"), origin_repository()) == []


def test_the_check_rejects_the_placeholder_badge():
    # The README's badge as it was: clickable, with OWNER for the account.
    old = "[![Launch on Binder](https://mybinder.org/badge_logo.svg)](https://mybinder.org/v2/gh/OWNER/mcp_nb/HEAD?urlpath=lab/tree/notebooks/01-quickstart.ipynb)"
    assert "placeholder" in " ".join(wrong_binder_links(old, "someone/mcp_nb"))
    assert "placeholder" in " ".join(wrong_binder_links("https://mybinder.org/v2/gh/ACCOUNT/REPOSITORY/HEAD", None))
    real = "https://mybinder.org/v2/gh/someone/mcp_nb/HEAD?urlpath=lab/tree/notebooks/00-primer.ipynb"
    assert wrong_binder_links(real, "someone/mcp_nb") == []
    assert "origin is other/mcp_nb" in " ".join(wrong_binder_links(real, "other/mcp_nb"))
    assert wrong_binder_links(f"`{real.replace('someone/mcp_nb', 'ACCOUNT/REPOSITORY')}`", None) == []  # a template, in code


@pytest.mark.parametrize(
    "url, repository",
    [
        ("https://github.com/someone/mcp_nb.git\n", "someone/mcp_nb"),
        ("https://github.com/someone/mcp_nb", "someone/mcp_nb"),
        ("git@github.com:someone/mcp_nb.git", "someone/mcp_nb"),
        ("ssh://git@github.com/someone/mcp_nb.git", "someone/mcp_nb"),
        ("https://gitlab.com/someone/mcp_nb.git", None),
        ("/srv/git/mcp_nb.git", None),
    ],
)
def test_a_github_remote_names_its_repository(url, repository):
    assert github_repository(url) == repository


def test_the_readme_says_in_one_line_how_to_make_the_binder_link():
    """The link is made for wherever the repository lives, by a one-line rule and a command, never a placeholder."""
    text = README.read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if "mybinder.org" in line]
    assert len(lines) == 1, f"one line of the README is about Binder, not {len(lines)}"
    [line] = lines
    assert not BINDER.search(line.replace("`https://mybinder.org/v2/gh/`", "")), "the rule, not a link with placeholders"
    assert "`https://github.com/`" in line and "`https://mybinder.org/v2/gh/`" in line
    [suffix] = re.findall(r"`(/HEAD\?urlpath=lab/tree/[^`]+)`", line)
    assert "python -m mcp_nb course-links" in text
    # Binder opens the notebook the link names, with the kernel binder/ installs: in learn/, which binder/postBuild
    # writes from notebooks/.
    opened = ROOT / suffix.removeprefix("/HEAD?urlpath=lab/tree/").replace("learn/", "notebooks/", 1)
    assert opened.exists(), f"the link opens {opened.relative_to(ROOT)}, which does not exist"
    assert json.loads(opened.read_text())["metadata"]["kernelspec"]["name"] == "python3"


# What each notebook says of itself, in its first cell and its summary, as the primer does.
OPENING_BLOCKS = ("**You will be able to**", "**Before you start**:", "**Time**: about ")
TIME = re.compile(r"\*\*Time\*\*: about (\d+) minutes")
NOTEBOOK_NAMED = re.compile(r"\b(00-primer|\d\d)\b")


def course_minutes() -> dict[str, int]:
    """Each notebook's minutes on the course page: its core row, else its lab row (08's core part)."""
    core, _ = syllabus(section(course(), "The core path"))
    labs, _ = syllabus(section(course(), "Optional labs"))
    minutes = dict(labs)
    minutes.update(core)
    return minutes


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_notebook_opens_with_objectives_prerequisites_and_the_course_pages_time(path):
    import nbformat

    cells = nbformat.read(path, as_version=4).cells
    opening = cells[0].source
    assert cells[0].cell_type == "markdown" and opening.startswith("# ")
    for block in OPENING_BLOCKS:
        assert opening.count(block) == 1, f"{path.name}'s first cell should have {block!r} once"
    objectives = opening.split("**You will be able to**", 1)[1].split("**Before you start**", 1)[0]
    bullets = [line for line in objectives.splitlines() if line.startswith("- ")]
    assert 2 <= len(bullets) <= 5, f"{path.name}: two to five objectives, not {len(bullets)}"
    before = opening.split("**Before you start**:", 1)[1].split("\n\n", 1)[0]
    if path != NOTEBOOKS[0]:
        assert NOTEBOOK_NAMED.search(before), f"{path.name} names the notebooks to do first"
    (minutes,) = TIME.findall(opening)
    assert int(minutes) == course_minutes()[path.stem], f"{path.name} says {minutes} minutes, the course page otherwise"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_notebook_ends_with_a_summary_and_what_comes_next(path):
    import nbformat

    cells = nbformat.read(path, as_version=4).cells
    markdown = [cell for cell in cells if cell.cell_type == "markdown"]
    summary = markdown[-1]
    assert summary.get("id") == "summary" and summary.source.startswith("## Summary\n"), f"{path.name}'s last text is its summary"
    assert sum(line.startswith("- ") for line in summary.source.splitlines()) >= 2
    assert "**Next**:" in summary.source
    assert [cell.get("id") for cell in cells].count("summary") == 1
