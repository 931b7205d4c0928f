"""How the browser tests drive the pages and measure what a person sees.

Driving: JupyterLab (open a notebook, run it, switch its theme from the Settings menu) and
the panel (pick an entry, fill a field, call). Measuring: contrast, lines, fonts.

Contrast follows WCAG 2.x: the relative luminance of a text's colour and of what is behind
it, as painted. Both are painted from the page down, from the colours the browser computed:
each ancestor's background over what is below it, and each one's opacity blending everything
it holds (its background and the text alike) with what is below. Colours are read through a
canvas, so any form the browser computes (`rgb()`, `color(srgb ...)` from `color-mix()`) is
read the same way.
"""

from __future__ import annotations

import re
from pathlib import Path

# A stored notebook of the repository, as a person opens it from a clone or on Binder: untrusted.
STORED = Path(__file__).resolve().parents[2] / "notebooks" / "01-quickstart.ipynb"
AA = 4.5  # WCAG AA for text of ordinary size

MEASURE = r"""
([selector, skip]) => {
  const canvas = document.createElement('canvas');
  canvas.width = canvas.height = 1;
  const ctx = canvas.getContext('2d', {willReadFrequently: true});
  const rgba = (css) => {
    ctx.clearRect(0, 0, 1, 1);
    ctx.fillStyle = '#000';
    ctx.fillStyle = css;
    ctx.fillRect(0, 0, 1, 1);
    const [r, g, b, a] = ctx.getImageData(0, 0, 1, 1).data;
    return [r, g, b, a / 255];
  };
  const over = (top, bottom) => {
    const a = top[3] + bottom[3] * (1 - top[3]);
    if (a === 0) return [0, 0, 0, 0];
    const mix = (i) => (top[i] * top[3] + bottom[i] * bottom[3] * (1 - top[3])) / a;
    return [mix(0), mix(1), mix(2), a];
  };
  const luminance = ([r, g, b]) => {
    const lin = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
  };
  // The element and its ancestors, painted from the page down: each one's background over
  // what is below it, and its opacity blending all it holds (its text too) with that.
  const painted = (el, text) => {
    const chain = [];
    for (let node = el; node && node.nodeType === 1; node = node.parentElement) chain.unshift(node);
    const paint = (i, below) => {
      const style = getComputedStyle(chain[i]);
      let inside = over(rgba(style.backgroundColor), below);
      inside = i === chain.length - 1 ? (text ? over(text, inside) : inside) : paint(i + 1, inside);
      const o = parseFloat(style.opacity);
      return o < 1 ? inside.map((c, k) => o * c + (1 - o) * below[k]) : inside;
    };
    return paint(0, [255, 255, 255, 1]);
  };
  const ownText = (el) => {
    if (el.matches('input, textarea')) return el.value;
    if (el.matches('select')) return el.selectedOptions.length ? el.selectedOptions[0].textContent : '';
    return [...el.childNodes].filter((n) => n.nodeType === 3).map((n) => n.textContent).join('');
  };
  const path = (el) => {
    const parts = [];
    for (let node = el; node && parts.length < 4; node = node.parentElement) {
      const cls = [...node.classList].filter((c) => c.startsWith('mcp-nb') || c.startsWith('jupyter-widget') || c.startsWith('cell_')).slice(0, 2);
      parts.unshift(node.tagName.toLowerCase() + cls.map((c) => '.' + c).join(''));
    }
    return parts.join(' > ');
  };
  const found = [];
  for (const root of document.querySelectorAll(selector)) {
    for (const el of [root, ...root.querySelectorAll('*')]) {
      if (el.matches('script, style, option, optgroup') || (skip && el.closest(skip))) continue;
      if (el.disabled || el.closest('[disabled], .mod-disabled')) continue;  // WCAG leaves inactive controls out
      const text = ownText(el).replace(/\s+/g, ' ').trim();
      if (!text || !el.getClientRects().length || !el.checkVisibility({visibilityProperty: true})) continue;
      const style = getComputedStyle(el);
      const bg = painted(el, null);
      const fg = painted(el, rgba(style.color));
      const [l1, l2] = [luminance(fg), luminance(bg)].sort((a, b) => b - a);
      found.push({
        text: text.slice(0, 60), where: path(el), ratio: (l1 + 0.05) / (l2 + 0.05),
        color: style.color, fg: fg.slice(0, 3).map(Math.round), bg: bg.slice(0, 3).map(Math.round),
      });
    }
  }
  return found;
}
"""


def contrast(page, selector: str, skip: str | None = None) -> list[dict]:
    """Every visible text under `selector` (not under `skip`), with its contrast ratio."""
    return page.evaluate(MEASURE, [selector, skip])


def below_aa(measured: list[dict]) -> list[str]:
    return [
        f"{m['ratio']:.2f}:1 {m['text']!r} ({m['color']} as {m['fg']} on {m['bg']}) at {m['where']}"
        for m in measured
        if m["ratio"] < AA
    ]


def summary(measured: list[dict]) -> str:
    ratios = sorted(m["ratio"] for m in measured)
    return f"{len(ratios)} texts, lowest {ratios[0]:.2f}:1" if ratios else "no text"


STYLE_OF = """
([selector, props]) => [...document.querySelectorAll(selector)].map((el) => {
  const style = getComputedStyle(el);
  return Object.fromEntries(props.map((p) => [p, style.getPropertyValue(p)]));
})
"""


def styles(page, selector: str, *props: str) -> list[dict[str, str]]:
    """The computed values of `props` for every element matching `selector`."""
    return page.evaluate(STYLE_OF, [selector, list(props)])


def visible_line(style: dict[str, str], side: str = "top") -> bool:
    """Whether a computed style draws a border on `side` that can be seen."""
    width = float(style[f"border-{side}-width"].removesuffix("px") or 0)
    colour = style[f"border-{side}-color"]
    alpha = re.search(r"rgba\([^)]*,\s*([\d.]+)\)", colour)
    return width >= 1 and style[f"border-{side}-style"] != "none" and not (alpha and float(alpha.group(1)) == 0)


# -- JupyterLab ----------------------------------------------------------------------------------

LIGHT, DARK = "JupyterLab Light", "JupyterLab Dark"


def open_notebook(page, lab, name: str) -> None:
    """Open a served notebook in JupyterLab, once its kernel is connected."""
    page.goto(lab.open(f"lab/tree/{name}", reset=""))
    # The debugger button turns on once the kernel is connected (steadier than the "Idle" text).
    page.wait_for_selector(".jp-NotebookPanel .jp-DebuggerBugButton[aria-disabled='false']", timeout=90_000)


def run_all(page) -> None:
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()


def _menu_item(page, label: str):
    return page.locator(".lm-Menu-item").filter(
        has=page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(label)}$"))
    )


def use_theme(page, theme: str) -> None:
    """Settings > Theme > `theme`, as a person would; waits until the page has it."""
    page.get_by_role("menuitem", name="Settings", exact=True).click()
    _menu_item(page, "Theme").click()  # a submenu: it has no role of its own
    _menu_item(page, theme).click()
    # Done once the theme's stylesheet is applied: the page's own background is light or dark.
    page.wait_for_function(
        """(light) => {
            const probe = document.createElement('div');
            probe.style.color = 'var(--jp-layout-color0)';
            document.body.appendChild(probe);
            const [r, g, b] = getComputedStyle(probe).color.match(/[\\d.]+/g).map(Number);
            probe.remove();
            return document.body.dataset.jpThemeLight === String(light) && (r + g + b > 384) === light;
        }""",
        arg=theme == LIGHT,
    )


def theme_value(page, variable: str) -> str:
    """A JupyterLab theme variable, resolved as a colour the way an element would compute it."""
    return page.evaluate(
        """(v) => { const el = document.createElement('div'); el.style.color = `var(${v})`;
                    document.body.appendChild(el); const c = getComputedStyle(el).color; el.remove(); return c; }""",
        variable,
    )


# -- the panel ------------------------------------------------------------------------------------

PANEL = ".jp-OutputArea-output .mcp-nb-panel"
OUTCOME = f"{PANEL} .mcp-nb-outcome-view"


def choose(page, select: str, text: str) -> None:
    """Choose the option of a <select> whose text contains `text`."""
    options = page.locator(f"{select} option")
    labels = [" ".join(label.split()) for label in options.all_inner_texts()]  # no-break spaces pad the columns
    matches = [i for i, label in enumerate(labels) if text in label]
    assert matches, f"no option with {text!r} in {labels}"
    page.locator(f"{select} select").select_option(index=matches[0])


def pick(page, entry: str) -> None:
    """Choose an entry and wait until its form is the one shown.

    The header changes as soon as its message arrives, the form a moment later (a widget's view
    is made asynchronously), so the fields of the entry shown before must be gone too: two tools
    with a field of the same name (`title`) once had the test type into the one on its way out
    and call the new tool with the new form's empty value."""
    name = entry.split()[-1]
    shown = page.evaluate("() => document.querySelector('.mcp-nb-panel .mcp-nb-entry')?.textContent || ''")
    fields = f"{PANEL} .mcp-nb-form-box input, {PANEL} .mcp-nb-form-box textarea"
    before = [] if name in shown else page.locator(fields).element_handles()
    choose(page, f"{PANEL} .mcp-nb-picker", entry)
    page.wait_for_function("name => document.querySelector('.mcp-nb-panel .mcp-nb-entry').textContent.includes(name)", arg=name)
    for handle in before:
        handle.wait_for_element_state("hidden")  # detached with the form it belonged to


def field(page, path: str):
    """The input of a form field: its <input> or <textarea>."""
    return page.locator(f"{PANEL} .mcp-nb-field-{path}").locator("input, textarea").first


def type_in(page, path: str, text: str, problem: str | None = None) -> None:
    """Type `text` into a form field and wait for the kernel's verdict on it, as a person sees
    the field turn red (or back) before reaching for Call.

    The verdict is a line under the field's label: it moves every control below it. Playwright
    checks that the press of a click lands on its target, not that the release does, so a
    click sent while that line was on its way was lost now and then on a busy machine (the
    press on Call, the release where Call had been).
    """
    field(page, path).fill(text)
    flagged = page.locator(f"{PANEL} .mcp-nb-field-{path}.mcp-nb-invalid")
    if problem is None:
        flagged.wait_for(state="detached")  # a field that was flagged is cleared; one that was not stays so
    else:
        flagged.wait_for()
        page.locator(f"{PANEL} .mcp-nb-problem", has_text=problem).wait_for()


def call(page) -> None:
    page.locator(f"{PANEL} button.mcp-nb-call").click()


def outcome_badge(page, outcome: str, timeout: float = 20_000):
    """Wait for a fresh outcome of this type: not the dimmed one of an earlier call."""
    page.wait_for_function(
        """([view, outcome]) => {
            const el = document.querySelector(view);
            return el && !el.querySelector('.mcp-nb-previous') && el.querySelector('.mcp-nb-badge.mcp-nb-' + outcome);
        }""",
        arg=[OUTCOME, outcome],
        timeout=timeout,
    )
    return page.locator(f"{OUTCOME} .mcp-nb-badge.mcp-nb-{outcome}")


def shot(page, artifacts, name: str) -> None:
    panel = page.locator(PANEL)
    panel.scroll_into_view_if_needed()
    panel.screenshot(path=str(artifacts / f"{name}.png"))


def set_timeout(page, seconds: str) -> None:
    page.locator(f"{PANEL} .mcp-nb-timeout input").fill(seconds)


def outcome_text(page) -> str:
    return " ".join(page.locator(OUTCOME).inner_text().split())
