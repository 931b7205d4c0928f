"""The reference pages' tables, made from the code at every build, so they cannot drift.

A page holds a marker line, `<!-- reference: NAME -->` (an HTML comment: on GitHub the page
shows its prose and no stale copy), which becomes, before the page is parsed:

- `magics`: every magic of mcp_nb, each under a heading of its own with its help, as
  `%mcp_call?` prints it: read from IPython, which builds it from the magic's docstring and
  its argument parser;
- `commands`: every `python -m mcp_nb` command's `--help`, from its argparse parser;
- `settings`: the configurable settings (`%config McpMagics`, `mcp_nb.configure`), their
  defaults and help, from their traitlets declarations;
- `outcomes`, `causes`: the outcome types and what each means; every cause, the outcome
  types it comes with and what it means (`mcp_nb.CAUSE_DOC`, the pairs `mcp_nb.expect` checks);
- `columns`: the history's columns, in order (`mcp_nb.COLUMNS`).
"""

from __future__ import annotations

import argparse
import importlib
import os
import re

MARKER = re.compile(r"^<!-- reference: ([a-z]+) -->$", re.M)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _fence(text: str) -> str:
    """A ```text block that holds `text` whole, even where it has fences of its own."""
    ticks = "`" * max([3, *(len(run) + 1 for run in re.findall(r"`{3,}", text))])
    return f"{ticks}text\n{text.rstrip()}\n{ticks}\n"


def _shell():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    if "mcp_nb.notebook" not in shell.extension_manager.loaded and "mcp_nb" not in shell.extension_manager.loaded:
        shell.run_line_magic("load_ext", "mcp_nb")
    return shell


def magics() -> str:
    shell = _shell()
    found = []
    for kind, prefix in (("cell", "%%"), ("line", "%")):
        for name, method in shell.magics_manager.magics[kind].items():
            owner = getattr(method, "__self__", None)
            if type(owner).__name__ == "McpMagics":
                found.append((prefix + name, method))
    summary = "| magic | what it does |\n|---|---|\n"
    sections = []
    for name, method in found:
        doc = _help(method)
        paragraphs = [" ".join(part.split()) for part in re.split(r"\n\s*\n", doc)]
        first = next((part for part in paragraphs if part and not part.startswith("%")), "")
        summary += f"| [`{name}`](#{name.lstrip('%')}) | {_cell(first)} |\n"
        sections.append(f"## {name}\n\n{_fence(doc)}")
    return summary + "\n" + "\n".join(sections)


def _help(method) -> str:
    """What `%name?` shows: the docstring, which IPython's magic_arguments fills with the parser's usage and options."""
    import inspect

    return inspect.cleandoc(method.__doc__ or "").removeprefix("::").strip("\n")


def commands() -> str:
    from mcp_nb.commands import COMMANDS

    sections = []
    for name, (module, summary) in COMMANDS.items():
        parser = argparse.ArgumentParser(prog=f"python -m mcp_nb {name}", description=summary[0].upper() + summary[1:] + ".")
        importlib.import_module(module).arguments(parser)
        sections.append(f"### {name}\n\n{_fence(parser.format_help())}")
    return "\n".join(sections)


def settings() -> str:
    from mcp_nb.config import CONFIGURABLE, SharedTraits

    rows = "| setting | default | what it does |\n|---|---|---|\n"
    for name in CONFIGURABLE:
        trait = SharedTraits.class_traits()[name]
        rows += f"| `{name}` | `{trait.default_value!r}` | {_cell(trait.help)} |\n"
    return rows


def outcomes() -> str:
    from mcp_nb.records.expect import OUTCOME_DOC

    return "| outcome type | what it means |\n|---|---|\n" + "".join(
        f"| `{name}` | {_cell(doc)} |\n" for name, doc in OUTCOME_DOC.items()
    )


def causes() -> str:
    import mcp_nb
    from mcp_nb.records.expect import PAIRS

    rows = "| cause | outcome types | what it means |\n|---|---|---|\n"
    for cause in mcp_nb.CAUSES:
        kinds = ", ".join(f"`{kind}`" for kind, paired in PAIRS.items() if cause in paired)
        rows += f"| `{cause}` | {kinds} | {_cell(mcp_nb.CAUSE_DOC[cause])} |\n"
    return rows


def columns() -> str:
    import mcp_nb

    return ", ".join(f"`{column}`" for column in mcp_nb.COLUMNS) + "\n"


MADE = {"magics": magics, "commands": commands, "settings": settings, "outcomes": outcomes, "causes": causes, "columns": columns}


def fill(text: str) -> str:
    """The page with each marker replaced by what it names (an unknown name is an error)."""

    def made(match: re.Match) -> str:
        name = match.group(1)
        if name not in MADE:
            raise ValueError(f"<!-- reference: {name} -->: no such table (known: {', '.join(MADE)})")
        return MADE[name]()

    return MARKER.sub(made, text)


def on_source_read(app, docname: str, source: list[str]) -> None:
    if MARKER.search(source[0]):
        source[0] = fill(source[0])


def always_reread(app, env, added, changed, removed) -> list[str]:
    # Their text comes from the code, not only from their files: an incremental build rereads them.
    pages = [(doc, env.doc2path(doc)) for doc in env.found_docs]
    return [doc for doc, path in pages if str(path).endswith(".md") and MARKER.search(open(path, encoding="utf-8").read())]


def setup(app):
    os.environ.setdefault("COLUMNS", "100")  # argparse's help is wrapped at this width, at every build alike
    app.connect("source-read", on_source_read)
    app.connect("env-get-outdated", always_reread)
    return {"parallel_read_safe": True}
