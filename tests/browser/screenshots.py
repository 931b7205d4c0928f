"""The pictures of the README and the docs, taken from the real thing.

    .venv/bin/python tests/browser/screenshots.py

remakes every picture in docs/images/ (and only those: `PICTURES`). It writes a notebook
whose first cells are the README's quickstart, block for block, followed by the scenes below
(a sweep with faults injected, a plot of the history, the panel, a tool changed); starts
JupyterLab on 127.0.0.1 serving it, with the browser tests' machinery (lab_server.py,
browser_pages.py); runs it in Debian's Chromium through Playwright, once in JupyterLab's
light theme and once in its dark one, each in a kernel of its own; and takes each picture
of one element at a fixed viewport: a call's card, the panel's three tabs, a sweep while it
runs, the history's plot. The PNGs are then reduced to a palette of 256 colours, which
keeps text sharp at a quarter of the size.

It needs what `pip install -e ".[test]"` installs (Playwright, JupyterLab) and Chromium at
/usr/bin/chromium (or MCP_NB_CHROMIUM). Look at every picture before committing it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
README = ROOT / "README.md"
OUT = ROOT / "docs" / "images"
ARTIFACTS = ROOT / "artifacts" / "browser"
THEMES = ("light", "dark")
SHOTS = ("card", "panel-call", "panel-history", "panel-changes", "sweep", "history-plot")
PICTURES = tuple(f"{shot}-{theme}.png" for shot in SHOTS for theme in THEMES)
VIEWPORT = {"width": 1280, "height": 800}
NOTEBOOK = "mcp_nb-pictures.ipynb"
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)

# The card pictured is the README's call whose card has all three panes filled.
CARD_CELL = 'o = mcp_nb.call("get_author", {"title": "?"})'
SCENES = [
    # A slow tool that fails now and then, on purpose (seeded: the same outcomes every run).
    '%%mcp_tool --idempotent --inject "latency=0.15,tool_error=0.1,crash=0.05,protocol_error=0.1,seed=4"\n'
    "def price(isbn: int) -> float:\n"
    '    """The price of a book, in euros."""\n'
    "    return 8.0 + isbn % 7",
    # The sweep's live view: its progress bar, while it runs.
    'prices = mcp_nb.sweep("price", {"isbn": range(120)}, concurrency=6)',
    # One call that outlives its deadline: the history has every outcome type.
    'mcp_nb.call("price", {"isbn": 7}, timeout=0.05)',
    # A plot of the history: each tool's calls by outcome type.
    "import matplotlib.pyplot as plt\n"
    "\n"
    'COLOURS = {"result": "#1a7f37", "tool_error": "#b35900", "protocol_error": "#cf222e", "timeout": "#6f42c1"}\n'
    "calls = mcp_nb.history().to_frame()\n"
    'per_tool = calls.groupby(["name", "outcome"], observed=False).size().unstack()\n'
    "ax = per_tool.plot.barh(stacked=True, color=[COLOURS[o] for o in per_tool.columns], figsize=(8, 2.2))\n"
    'ax.set(title="Calls per tool, by outcome type", ylabel="")\n'
    'ax.legend(loc="center left", bbox_to_anchor=(1, 0.5), frameon=False)\n'
    "plt.show()",
    "%mcp_panel",
    # A tool changed after its first version: the panel's Changes tab says what it means for clients.
    "%%mcp_tool --read-only\n"
    "def price(isbn: int, currency: str) -> float:\n"
    '    """The price of a book, in the currency asked for."""\n'
    '    return (8.0 + isbn % 7) * (1.1 if currency == "USD" else 1.0)',
    'print("all cells ran")',
]


def readme_cells() -> list[str]:
    """The README's quickstart: each of its ```python blocks, a cell of its own."""
    return [
        body.rstrip("\n") for language, body in FENCE.findall(README.read_text(encoding="utf-8")) if language.strip() == "python"
    ]


def notebook() -> dict:
    cells = [
        {"cell_type": "code", "execution_count": None, "id": f"cell-{i}", "metadata": {}, "outputs": [], "source": source}
        for i, source in enumerate([*readme_cells(), *SCENES])
    ]
    kernel = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    return {"cells": cells, "metadata": {"kernelspec": kernel}, "nbformat": 4, "nbformat_minor": 5}


def cell(page, text: str):
    """The code cell whose source holds `text`."""
    return page.locator(".jp-CodeCell", has=page.locator(".jp-InputArea-editor", has_text=text)).first


def take(page, theme: str, out: Path, lab) -> list[str]:
    """Open the notebook (a copy for this theme), run it, take this theme's pictures."""
    from browser_pages import DARK, LIGHT, PANEL, call, open_notebook, outcome_badge, pick, run_all, type_in, use_theme

    open_notebook(page, lab, f"{theme}-{NOTEBOOK}")
    use_theme(page, LIGHT if theme == "light" else DARK)
    page.locator(".jp-NotebookPanel .jp-Notebook").click(position={"x": 5, "y": 5})
    run_all(page)
    taken = []

    def save(locator, shot: str) -> None:
        name = f"{shot}-{theme}.png"
        locator.scroll_into_view_if_needed()
        locator.screenshot(path=str(out / name), animations="disabled")
        taken.append(name)

    # The sweep while it runs: its bar, between a quarter and three quarters done.
    sweep = cell(page, "mcp_nb.sweep(")
    bar = sweep.locator(".jp-OutputArea-output .widget-hprogress").first
    bar.wait_for(timeout=120_000)
    page.wait_for_function(
        """(selector) => {
            const label = [...document.querySelectorAll(selector)].map((el) => el.textContent).join(' ');
            const done = /(\\d+)\\/120/.exec(label);
            return done && Number(done[1]) >= 30 && Number(done[1]) <= 90;
        }""",
        arg=".jp-CodeCell .jp-OutputArea-output .widget-html-content",
        timeout=60_000,
        polling=50,
    )
    save(sweep, "sweep")

    page.locator(".jp-OutputArea-output", has_text="all cells ran").wait_for(timeout=120_000)
    save(cell(page, CARD_CELL).locator(".jp-OutputArea-output .mcp-nb-outcome").first, "card")
    plot = cell(page, "per_tool.plot.barh")
    plot.locator(".jp-OutputArea-output img").wait_for()
    save(plot, "history-plot")

    panel = page.locator(PANEL)
    pick(page, "tool get_author")
    type_in(page, "title", "Dune")
    call(page)
    outcome_badge(page, "result")
    save(panel, "panel-call")
    tabs = page.locator(f"{PANEL} .mcp-nb-tabs .lm-TabBar-tab")
    tabs.filter(has_text="History").click()
    page.locator(f"{PANEL} .mcp-nb-history-counts tr", has_text="price").wait_for()
    save(panel, "panel-history")
    tabs.filter(has_text="Changes").click()
    page.locator(f"{PANEL} .mcp-nb-changes-view", has_text="currency").wait_for()
    save(panel, "panel-changes")
    return taken


def reduce(path: Path) -> None:
    """The picture in a palette of 256 colours (text stays sharp: no dithering), PNG-optimised."""
    from PIL import Image

    with Image.open(path) as image:
        image.load()
        reduced = image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    reduced.save(path, optimize=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Remake the pictures of the README and the docs (docs/images/).")
    parser.add_argument("--out", type=Path, default=OUT, help="where to write them (default: docs/images/)")
    options = parser.parse_args(argv)
    sys.path.insert(0, str(HERE))
    from lab_server import CHROMIUM, CHROMIUM_ARGS, jupyterlab, local_only
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        parser.error(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set MCP_NB_CHROMIUM)")
    started = time.monotonic()
    options.out.mkdir(parents=True, exist_ok=True)
    taken: list[str] = []
    with tempfile.TemporaryDirectory(prefix="mcp_nb-pictures-") as folder:
        base = Path(folder)
        served = base / "notebooks"
        served.mkdir()
        for theme in THEMES:
            (served / f"{theme}-{NOTEBOOK}").write_text(json.dumps(notebook(), indent=1))
        with jupyterlab(base, served) as lab, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            try:
                for theme in THEMES:
                    context = browser.new_context(viewport=VIEWPORT, device_scale_factor=1)
                    page = context.new_page()
                    page.route("**/*", local_only)
                    page.set_default_timeout(30_000)
                    try:
                        taken += take(page, theme, options.out, lab)
                    except Exception:
                        # What was on screen, for whoever reads the error (git-ignored there).
                        ARTIFACTS.mkdir(parents=True, exist_ok=True)
                        page.screenshot(path=str(ARTIFACTS / f"pictures-failed-{theme}.png"), full_page=True)
                        raise
                    finally:
                        context.close()
            finally:
                browser.close()
    for name in taken:
        reduce(options.out / name)
    missing = sorted(set(PICTURES) - set(taken))
    assert not missing, f"not taken: {missing}"
    size = sum((options.out / name).stat().st_size for name in taken)
    print(f"{len(taken)} pictures in {options.out} ({size / 1024:.0f} KiB) in {time.monotonic() - started:.0f} s")
    for name in taken:
        print(f"  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
