"""A folder to start a course of notebooks from: `python -m mcp_nb init-course DIR`.

What a teacher who publishes notebooks on Binder and checks them in CI needs, and would
otherwise have to work out from this repository:

    DIR/README.md                        what is where, and the steps
    DIR/binder/requirements.txt          mcp-notebook, pinned (repo2docker reads binder/ only)
    DIR/binder/runtime.txt               the Python it was made with (Binder's default is older)
    DIR/binder/postBuild                 Binder's last step: the student versions in learn/, no solution kept
    DIR/notebooks/01-first-tool.ipynb    a first lesson, to replace, with one worked exercise in nbgrader's
                                         format (`python -m mcp_nb student-version` strips its solution)
    DIR/sanitize.cfg                     the nbval sanitizer of this mcp_nb (mcp_nb.notebook.nbval)
    DIR/.github/workflows/notebooks.yml  CI: nbval over every notebook

The files are kept in `mcp_nb/starter/`. The pin is where this mcp_nb was installed from
(PEP 610's direct_url.json): a version when it came from a package index, the repository
and commit when it came from git, the URL of an archive. Binder cannot reach a folder or a
file on this machine; then `--mcp-nb` says where Binder gets mcp_nb. The distribution is
named mcp-notebook (the import name stays mcp_nb): the name mcp-nb on PyPI belongs to
another project, so a requirement naming it is refused.
"""

from __future__ import annotations

import json
import re
import sys
from importlib import metadata, resources
from pathlib import Path
from string import Template

from mcp_nb._version import __version__
from mcp_nb.mistakes import BadValue
from mcp_nb.notebook.nbval import sanitizer

# starter file -> where it goes in the course, and whether it is a template
LAYOUT = {
    "README.md": ("README.md", True),
    "requirements.txt": ("binder/requirements.txt", True),
    "runtime.txt": ("binder/runtime.txt", True),
    "first-tool.ipynb": ("notebooks/01-first-tool.ipynb", False),
    "notebooks.yml": (".github/workflows/notebooks.yml", True),
    "postBuild": ("binder/postBuild", False),
}
EXECUTABLE = {"binder/postBuild"}  # repo2docker runs postBuild only when it is executable
SANITIZER = "sanitize.cfg"
# What pip installs this as (pyproject.toml's [project] name); mcp-nb on PyPI is another project.
DISTRIBUTION = "mcp-notebook"
OTHER_PROJECT = "mcp-nb"
_NAME = re.compile(r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)")  # a requirement's project name (PEP 508)


def installed_requirement(distribution: metadata.Distribution | None = None) -> str:
    """The requirement line that installs this mcp_nb elsewhere, from how it was installed here.

    Raises ValueError when it cannot be installed elsewhere the same way (a folder or file
    on this machine, or no installed package at all).
    """
    if distribution is None:
        try:
            distribution = metadata.distribution(DISTRIBUTION)
        except metadata.PackageNotFoundError:
            raise BadValue(
                "mcp_nb is imported from a folder, not installed as a package, so there is nothing to pin: "
                "say where Binder gets mcp_nb with --mcp-nb"
            ) from None
    text = distribution.read_text("direct_url.json")
    if text is None:  # installed from a package index
        return f"{DISTRIBUTION}[lab]=={distribution.version}"
    source = json.loads(text)
    url = source["url"]
    vcs = source.get("vcs_info")
    if vcs is not None:
        return f"{DISTRIBUTION}[lab] @ {vcs['vcs']}+{url}@{vcs['commit_id']}"
    if url.startswith("file:"):
        raise BadValue(
            f"mcp_nb was installed from {url}, which Binder cannot reach: say where Binder gets mcp_nb "
            f"with --mcp-nb (a pip requirement, or a URL such as git+https://github.com/OWNER/mcp_nb@v{distribution.version})"
        )
    return f"{DISTRIBUTION}[lab] @ {url}"


def requirement_line(given: str) -> str:
    """`--mcp-nb`'s value as a line of requirements.txt: a requirement naming mcp-notebook, or a URL to install it from.

    Names compare as pip compares them (PEP 503: `mcp_notebook`, `MCP.Notebook` are the same).
    A requirement naming mcp-nb is refused: that name on PyPI is another project.
    """
    given = given.strip()
    if "\n" not in given:
        name = _NAME.match(given)
        normalized = None if name is None else re.sub(r"[-_.]+", "-", name.group(1)).lower()
        if normalized == DISTRIBUTION:
            return given
        if normalized == OTHER_PROJECT:
            renamed = DISTRIBUTION + given[name.end(1) :]
            raise BadValue(
                f"--mcp-nb: {name.group(1)} on PyPI is another project; this one is named {DISTRIBUTION}: "
                f"write {renamed!r}, not {given!r}"
            )
        if "://" in given or given.startswith("git+"):
            return f"{DISTRIBUTION}[lab] @ {given}"
    raise BadValue(f"--mcp-nb takes a requirement naming {DISTRIBUTION} or a URL to install it from, not {given!r}")


def create(directory: str | Path, requirement: str | None = None) -> list[Path]:
    """Make the course folder `directory` (new or empty); returns the files written.

    `requirement`: how Binder and CI install mcp_nb (a requirement line, or a URL); by
    default, where this mcp_nb was installed from.
    """
    root = Path(directory)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise BadValue(f"{root} already exists and is not an empty folder: nothing was written")
    line = installed_requirement() if requirement is None else requirement_line(requirement)
    values = {"requirement": line, "python": "{}.{}".format(*sys.version_info[:2]), "version": __version__}
    starter = resources.files("mcp_nb") / "starter"
    contents = {}
    for name, (target, is_template) in LAYOUT.items():
        text = (starter / name).read_text(encoding="utf-8")
        contents[target] = Template(text).substitute(values) if is_template else text
    contents[SANITIZER] = sanitizer()
    written = []
    for target, text in contents.items():
        path = root / target
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if target in EXECUTABLE:
            path.chmod(path.stat().st_mode | 0o111)
        written.append(path)
    return written


# -- python -m mcp_nb init-course --------------------------------------------------------------


def arguments(parser) -> None:
    parser.add_argument("directory", help="the course folder to make (new, or empty)")
    parser.add_argument(
        "--mcp-nb",
        metavar="REQUIREMENT",
        help="how Binder and CI install mcp_nb: a pip requirement or a URL (git+https://..., a wheel's URL); "
        "default: where this mcp_nb was installed from",
    )


def run(args) -> int:
    try:
        written = create(args.directory, args.mcp_nb)
    except ValueError as err:
        args.parser.error(str(err))
    root = Path(args.directory)
    for path in written:
        print(path.relative_to(root).as_posix())
    print(f"\nNext: run the notebooks and store their outputs, then check them as CI will (see {root / 'README.md'}).")
    return 0
