"""mcp_nb's outputs and panel as people see them: JupyterLab's light and dark themes, a
stored notebook opened untrusted, the docs site in Furo's two modes, a Voila dashboard.

Every text is measured in the browser against what is behind it (browser_pages.contrast),
and must reach WCAG AA's 4.5:1. Screenshots of every page are kept in artifacts/browser/
(looks-*.png).
"""

from __future__ import annotations

import re

import pytest
from browser_pages import (
    DARK,
    LIGHT,
    OUTCOME,
    PANEL,
    STORED,
    below_aa,
    call,
    contrast,
    open_notebook,
    outcome_badge,
    pick,
    run_all,
    styles,
    summary,
    theme_value,
    type_in,
    use_theme,
    visible_line,
)

OUTPUT = ".jp-OutputArea-output"
CARDS = ", ".join(
    f"{OUTPUT} {kind}" for kind in (".mcp-nb-outcome", ".mcp-nb-registration", ".mcp-nb-history", "table.dataframe")
)
SIDES = ("top", "right", "bottom", "left")
BORDERS = [f"border-{side}-{part}" for side in SIDES for part in ("width", "style", "color")]


def shoot(page, selector: str, artifacts, name: str, most: int = 8) -> None:
    """Screenshots of the elements matching `selector` (the first `most`), one file each."""
    for i, element in enumerate(page.locator(selector).all()[:most]):
        element.screenshot(path=str(artifacts / f"{name}-{i + 1}.png"))


def assert_readable(measured: list[dict], where: str, artifacts) -> None:
    """Every text at 4.5:1 or more; the figures are kept next to the screenshots."""
    with open(artifacts / "looks-contrast.txt", "a") as figures:
        figures.write(f"{where}: {summary(measured)}\n")
    assert measured, f"no text was measured in {where}"
    low = below_aa(measured)
    assert not low, f"{where}: {len(low)} of {summary(measured)} below 4.5:1:\n" + "\n".join(low)


# -- JupyterLab ------------------------------------------------------------------------------------


def test_outputs_and_the_panel_read_in_jupyterlab_light_and_dark(page, lab, artifacts):
    open_notebook(page, lab, "looks_demo.ipynb")
    use_theme(page, LIGHT)
    run_all(page)
    page.wait_for_selector(f"{PANEL} .mcp-nb-picker select", timeout=60_000)
    # One registration card: the other cells registered with --quiet.
    assert page.locator(f"{OUTPUT} .mcp-nb-registration").count() == 1
    assert page.locator(f"{OUTPUT} .mcp-nb-outcome").count() == 5  # one a call; the panel has shown none yet
    # The panel with an outcome, then a call refused field by field: the red box, the field's
    # problem and the required marks, all on screen at once.
    pick(page, "tool get_author")
    type_in(page, "title", "Dune")
    call(page)
    outcome_badge(page, "result")
    type_in(page, "copies", "many", problem="not an integer")
    call(page)
    page.locator(f"{PANEL} .mcp-nb-problems", has_text="Nothing was sent").wait_for()
    page.locator(f"{PANEL} .mcp-nb-problem", has_text="not an integer").wait_for()

    kind_chip = page.locator(f"{OUTPUT} .mcp-nb-registration span", has_text=re.compile("^tool$")).first
    chip_colours = {}
    for theme, name in ((LIGHT, "light"), (DARK, "dark")):
        use_theme(page, theme)
        chip_colours[theme] = kind_chip.evaluate("el => getComputedStyle(el).color")
        cards = contrast(page, CARDS)
        assert_readable(cards, f"the cards in {theme}", artifacts)
        shoot(page, CARDS, artifacts, f"looks-lab-{name}-card")
        assert_readable(contrast(page, PANEL), f"the panel's Call tab in {theme}", artifacts)
        page.locator(PANEL).screenshot(path=str(artifacts / f"looks-lab-{name}-panel.png"))
        page.locator(f"{PANEL} .mcp-nb-tabs .lm-TabBar-tab", has_text="History").click()
        page.locator(f"{PANEL} .mcp-nb-history-counts tr", has_text="get_author").wait_for()
        assert_readable(contrast(page, PANEL), f"the panel's History tab in {theme}", artifacts)
        page.locator(PANEL).screenshot(path=str(artifacts / f"looks-lab-{name}-history.png"))
        page.locator(f"{PANEL} .mcp-nb-tabs .lm-TabBar-tab", has_text="Call").click()

        # Trusted outputs follow the theme: the cards' lines are its own border colour.
        line = theme_value(page, "--jp-border-color2")
        for style in styles(page, f"{OUTPUT} .mcp-nb-outcome, {OUTPUT} .mcp-nb-registration", "border-top-color"):
            assert style["border-top-color"] == line, (theme, style, line)
    # ... and a colour that means something is lighter on the dark page than on the light one.
    assert chip_colours[LIGHT] != chip_colours[DARK], chip_colours

    # A call in flight: the Cancel button and the status line read too.
    use_theme(page, LIGHT)
    pick(page, "tool slow_count")
    type_in(page, "seconds", "20")
    call(page)
    cancel = page.locator(f"{PANEL} button.mcp-nb-cancel")
    cancel.wait_for(state="visible")
    page.locator(f"{PANEL} .mcp-nb-status", has_text="calling").wait_for()
    for theme in (LIGHT, DARK):
        use_theme(page, theme)
        # the previous outcome is dimmed on purpose while the call runs: it is not this call's
        controls = contrast(page, f"{PANEL} .mcp-nb-controls", skip=".mcp-nb-previous")
        assert_readable(controls, f"a running call in {theme}", artifacts)
    cancel.click()
    outcome_badge(page, "timeout")
    use_theme(page, LIGHT)

    # ipywidgets gives an HTML widget's content an input row's height (28 px): the wrapped
    # lines of the outcome's panes and of the entry's description would be double spaced.
    for selector in (f"{OUTCOME} pre", f"{OUTCOME} .mcp-nb-outcome", f"{PANEL} .mcp-nb-entry-card"):
        for style in styles(page, selector, "line-height", "font-size"):
            height, size = (float(style[p].removesuffix("px")) for p in ("line-height", "font-size"))
            assert height <= 1.6 * size, (selector, style)


def test_a_stored_notebook_opened_untrusted_keeps_its_lines_panes_and_fonts(page, lab, artifacts):
    """A notebook fresh from a clone or on Binder is untrusted until it is run: JupyterLab's
    sanitizer drops every inline declaration it does not recognise (`var()`, `color-mix()`)."""
    open_notebook(page, lab, STORED.name)
    card = page.locator(f"{OUTPUT} .mcp-nb-outcome").first
    card.wait_for()
    assert "var(" not in card.get_attribute("style"), "the notebook was trusted: its outputs were not sanitized"
    for theme, name in ((LIGHT, "light"), (DARK, "dark")):
        use_theme(page, theme)
        for style in styles(page, f"{OUTPUT} .mcp-nb-outcome", *BORDERS):
            assert all(visible_line(style, side) for side in SIDES), style
        panes = styles(page, f"{OUTPUT} .mcp-nb-outcome > div:nth-child(2) > div", *BORDERS, "width")
        assert len(panes) == 3 * page.locator(f"{OUTPUT} .mcp-nb-outcome").count()
        for style in panes:
            assert all(visible_line(style, side) for side in SIDES), style
            assert float(style["width"].removesuffix("px")) > 150, style  # side by side, each readable
        for style in styles(page, f"{OUTPUT} .mcp-nb-registration", *BORDERS):
            assert visible_line(style, "top") and float(style["border-left-width"].removesuffix("px")) >= 4, style
        for style in styles(page, f"{OUTPUT} .mcp-nb-outcome pre, {OUTPUT} .mcp-nb-registration pre", "font-family"):
            assert "mono" in style["font-family"].lower(), style
        muted = styles(page, f"{OUTPUT} .mcp-nb-outcome [style*='opacity']", "opacity")
        assert muted and all(float(style["opacity"]) < 1 for style in muted)
        for style in styles(page, f"{OUTPUT} .mcp-nb-history td, {OUTPUT} .mcp-nb-history th", "padding-left"):
            assert float(style["padding-left"].removesuffix("px")) >= 4, style
        measured = contrast(page, CARDS)
        shoot(page, CARDS, artifacts, f"looks-untrusted-{name}")
        if theme == LIGHT:
            assert_readable(measured, "an untrusted notebook in the light theme", artifacts)
        else:
            # The plain colours the sanitizer keeps are a light page's; the text itself follows
            # the theme, so only the coloured words fall below AA here (until the notebook is run).
            with open(artifacts / "looks-contrast.txt", "a") as figures:
                low = len(below_aa(measured))
                figures.write(f"an untrusted notebook in the dark theme: {summary(measured)}, {low} below 4.5:1\n")
            plain = [m for m in measured if m["ratio"] < 4.5]
            assert all(m["ratio"] >= 3 for m in measured), below_aa(measured)
            assert len(plain) < len(measured) / 4, below_aa(measured)
    use_theme(page, LIGHT)


# -- the docs site ---------------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_docs_site_reads_in_furo_light_and_dark(page, docs_site, artifacts, scheme):
    page.emulate_media(color_scheme=scheme)
    quickstart = docs_site / "notebooks" / STORED.with_suffix(".html").name
    page.goto(quickstart.as_uri())
    page.wait_for_function(
        "(dark) => (getComputedStyle(document.body).backgroundColor === 'rgb(19, 20, 22)') === dark", arg=scheme == "dark"
    )
    outputs = ".cell_output"
    assert page.locator(f"{outputs} .mcp-nb-outcome").count() and page.locator(f"{outputs} .mcp-nb-history").count()
    assert_readable(contrast(page, outputs), f"the quickstart page in Furo's {scheme} mode", artifacts)
    # Tables have room between their columns...
    for style in styles(page, f"{outputs} .mcp-nb-history td, {outputs} .mcp-nb-registration th", "padding-right"):
        assert float(style["padding-right"].removesuffix("px")) >= 4, style
    # ... and one wider than the column scrolls inside it rather than running under the page's contents.
    cut = page.evaluate(
        """() => [...document.querySelectorAll('.cell_output table')].filter((table) => {
            const column = document.querySelector('article').getBoundingClientRect();
            if (table.getBoundingClientRect().right <= column.right + 1) return false;
            for (let el = table.parentElement; el && el !== document.body; el = el.parentElement) {
                const style = getComputedStyle(el);
                if (['auto', 'scroll'].includes(style.overflowX) && el.getBoundingClientRect().right <= column.right + 1) return false;
            }
            return true;
        }).map((table) => table.className || table.parentElement.className)"""
    )
    assert not cut, f"tables cut off at the column's edge: {cut}"
    ours = f"{outputs}:has(.mcp-nb-outcome, .mcp-nb-registration, .mcp-nb-history, table)"
    shoot(page, ours, artifacts, f"looks-docs-{scheme}", most=12)


def test_progress_bars_show_on_the_docs_site_offline(page, docs_site, artifacts):
    # Every request but the page's own files is refused, as offline: no widget script loads.
    page.goto((docs_site / "notebooks" / "08-retries-and-degradation.html").as_uri())
    bars = page.locator(".cell_output .widget-snapshot")
    assert bars.count() >= 1
    for i in range(bars.count()):
        text = " ".join(bars.nth(i).inner_text().split())
        assert "100%" in text, text
        assert bars.nth(i).locator("progress").get_attribute("value") == bars.nth(i).locator("progress").get_attribute("max")
    assert page.locator("script[type='application/vnd.jupyter.widget-view+json']").count() == 0
    bars.first.screenshot(path=str(artifacts / "looks-docs-progress.png"))


# -- Voila -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_a_voila_dashboard_registers_quietly_and_reads(page, voila, artifacts, theme):
    page.goto(voila.open("voila/render/voila_demo.ipynb", theme=theme), timeout=120_000)
    panel = ".mcp-nb-panel"
    page.wait_for_selector(f"{panel} .mcp-nb-outcome-view .mcp-nb-badge.mcp-nb-result", timeout=120_000)
    assert page.locator(".mcp-nb-registration").count() == 0  # the cells registered with --quiet
    assert page.locator(".mcp-nb-outcome").count() == 2  # the call's card, and the panel's outcome
    # The result's lines (one title a line) are single spaced, in the card and in the panel.
    for style in styles(page, ".mcp-nb-outcome pre", "line-height", "font-size"):
        height, size = (float(style[p].removesuffix("px")) for p in ("line-height", "font-size"))
        assert height <= 1.6 * size, style
    assert_readable(contrast(page, ".mcp-nb-outcome, .mcp-nb-panel"), f"Voila's {theme} theme", artifacts)
    page.screenshot(path=str(artifacts / f"looks-voila-{theme}.png"), full_page=True)
