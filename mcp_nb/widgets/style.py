"""How the panel looks: one scoped stylesheet and the HTML of an entry's header.

Standard ipywidgets have no stylesheet of their own to extend, so the panel carries
one in an HTML widget, every rule scoped under `.mcp-nb-panel`. It is plain CSS made of
the same declarations as every other view (`mcp_nb.display`'s theme), so it reads in light
and dark themes and needs no front-end build: JupyterLab, Notebook 7, VS Code and Voila
apply it alike. Where a front end drops it, the panel still works, only plainer.

ipywidgets gives an HTML widget's content the line height of one input row (28 px), so a
label lines up with the input beside it; the panel's blocks of text (the outcome, the
entry's header, the problems, the history) are set back to the text's own line height.
"""

from __future__ import annotations

from typing import Any

from mcp_nb.mistakes import one_line
from mcp_nb.views.theme import (
    BORDER,
    ERROR,
    ERROR_TINT,
    FILLS,
    KIND_FILLS,
    KIND_INKS,
    MONO,
    MUTED,
    NEUTRAL_FILL,
    ON_FILL,
    UI,
    Ink,
    border,
    escape,
    outlined,
)

# The blocks of text whose HTML widget should not take an input row's line height.
TEXT_BLOCKS = ("outcome-view", "entry", "problems", "uri", "failure", "history-summary", "history-counts")

STYLESHEET = f"""<style>
.mcp-nb-panel {{
  {BORDER}; border-radius: 8px; padding: 6px 10px 10px;
  max-width: 1180px; box-sizing: border-box; {UI};
}}
{", ".join(f".mcp-nb-panel .mcp-nb-{block} > .widget-html-content" for block in TEXT_BLOCKS)} {{
  line-height: 1.45;
}}
.mcp-nb-panel .mcp-nb-picker select,
.mcp-nb-panel .mcp-nb-history-calls select {{
  {MONO}; font-size: 12px; line-height: 1.5;
}}
.mcp-nb-panel .mcp-nb-raw textarea,
.mcp-nb-panel .mcp-nb-json textarea {{ {MONO}; font-size: 12px; }}
.mcp-nb-panel textarea {{ resize: vertical; min-height: 28px; }}
.mcp-nb-panel .mcp-nb-invalid input,
.mcp-nb-panel .mcp-nb-invalid textarea {{
  border-color: {ERROR.themed} !important; box-shadow: inset 0 0 0 1px {ERROR.themed};
}}
.mcp-nb-panel .mcp-nb-label code {{ {MONO}; }}
.mcp-nb-panel .mcp-nb-section {{
  {MUTED}; font-size: 11px; text-transform: uppercase; letter-spacing: .05em;
}}
.mcp-nb-panel .mcp-nb-controls {{
  {border("-top")}; padding-top: 8px; margin-top: 4px;
}}
/* ipywidgets' coloured buttons are white on the theme's brand and warning colours, as low as
   2.8:1 (orange) and 3.1:1 (the dark theme's blue): Call and Cancel take the badges' fills. */
.mcp-nb-panel .mcp-nb-call.mod-primary,
.mcp-nb-panel .mcp-nb-call.mod-primary:hover:enabled {{ background-color: {KIND_FILLS["tool"]}; {ON_FILL}; }}
.mcp-nb-panel .mcp-nb-cancel.mod-warning,
.mcp-nb-panel .mcp-nb-cancel.mod-warning:hover:enabled {{ background-color: {FILLS["tool_error"]}; {ON_FILL}; }}
/* An inactive tab's title is the theme's secondary text on a grey tab, 4.45:1 in the light
   theme: the panel's two tabs take the primary text, and keep the tab's own background. */
.mcp-nb-panel .mcp-nb-tabs > .lm-TabBar .lm-TabBar-tab {{ color: inherit; }}
/* A checkbox's input carries the value "on", drawn in the browser's default black, which a dark
   theme puts on a dark page: it takes the page's text colour, as the label beside it does. */
.mcp-nb-panel input[type="checkbox"] {{ color: inherit; }}
/* Cancel pulses a ring around it, never its own opacity, which would fade its text too. */
.mcp-nb-panel .mcp-nb-cancel {{ animation: mcp-nb-pulse 1.6s ease-in-out infinite; }}
.mcp-nb-spinner {{
  display: inline-block; width: 10px; height: 10px; margin-right: 6px; vertical-align: -1px;
  border: 2px solid currentColor; border-right-color: transparent; border-radius: 50%;
  animation: mcp-nb-spin .8s linear infinite;
}}
@keyframes mcp-nb-spin {{ to {{ transform: rotate(360deg); }} }}
@keyframes mcp-nb-pulse {{ 50% {{ box-shadow: 0 0 0 3px {FILLS["tool_error"]}; }} }}
</style>"""


# Red text and lines on a faint red, in either theme.
PROBLEM_BOX = (
    f"{ERROR.text};border:1px solid {ERROR.plain};border-color:currentColor;border-left-width:4px;border-radius:6px;{ERROR_TINT}"
)


def _e(value: Any) -> str:
    return escape(value)  # the views' escape: markup, and what would reorder or hide what is read


def filled(text: str, fill: str) -> str:
    """A chip of white text on a saturated fill (it reads the same in every theme)."""
    return (
        f'<span style="background:{fill};{ON_FILL};border-radius:10px;padding:0 8px;'
        f'font-size:0.8em;font-weight:600">{_e(text)}</span>'
    )


def chip(text: str, ink: Ink | None = None) -> str:
    """An outlined chip: in an ink, or neutral."""
    return outlined(text, ink, size="0.8em")


def kind_label(entry) -> str:
    """`tool`, `resource`, `template` or `prompt`: a template reads through variables."""
    if entry.kind == "resource" and entry.input_schema is not None:
        return "template"
    return entry.kind


LONGEST_DESCRIPTION = 10_000  # characters of a description the entry's card shows


def entry_html(entry) -> str:
    """The header of the chosen tool, resource or prompt: what it is and what it promises."""
    kind = kind_label(entry)
    name = entry.uri if entry.kind == "resource" else entry.name
    chips = "".join(chip(a) for a in sorted(entry.annotations))
    if entry.is_async:
        chips += chip("async")
    title = f'<span style="{MUTED}">{_e(entry.title)}</span>' if entry.title else ""
    also = f'<span style="{MUTED};font-size:0.85em">name {_e(entry.name)}</span>' if entry.kind == "resource" else ""
    description = (entry.description or "").strip()
    if len(description) > LONGEST_DESCRIPTION:  # a server's words: megabytes would hold the page (and the saved widget state)
        description = description[:LONGEST_DESCRIPTION] + f" … ({len(description) - LONGEST_DESCRIPTION:,} more characters)"
    body = f'<div style="white-space:pre-wrap;margin-top:3px">{_e(description)}</div>' if description else ""
    ink = KIND_INKS.get(entry.kind)
    line = ink.line("-left", "4px") if ink else border("-left", "4px")
    # A widget's HTML is never sanitized: the header line may be a flex box.
    return (
        f'<div class="mcp-nb-entry-card" style="{line};padding:2px 0 2px 10px">'
        f'<div style="display:flex;gap:8px;align-items:center;flex-wrap:wrap">'
        f"{filled(kind, KIND_FILLS.get(entry.kind, NEUTRAL_FILL))}"
        # A long name wraps anywhere rather than running out of the panel.
        f'<b style="min-width:0;overflow-wrap:anywhere"><code style="background:none;font-size:1.05em;overflow-wrap:anywhere">'
        f"{_e(name)}</code></b>{title}{also}{chips}</div>{body}</div>"
    )


def problems_html(title: str, problems: list[str]) -> str:
    """Why nothing was sent: a red box listing every problem."""
    if not problems and not title:
        return ""
    items = "".join(f"<li>{_e(p)}</li>" for p in problems)
    return (
        f'<div class="mcp-nb-problem-box" style="{PROBLEM_BOX};padding:4px 10px"><b>{_e(title)}</b>'
        + (f'<ul style="margin:2px 0 2px 18px;padding:0">{items}</ul>' if items else "")
        + "</div>"
    )


def note_html(text: str) -> str:
    return f'<div style="{MUTED};font-size:0.9em">{_e(text)}</div>'


def running_html(target: str, name: str, timeout: float) -> str:
    verb = {"tool": "calling", "resource": "reading", "prompt": "getting"}.get(target, "calling")
    return (
        f'<span style="{MUTED}"><span class="mcp-nb-spinner"></span>{verb} <code>{_e(name)}</code>'
        f" · gives up after {timeout:g} s · the kernel stays free</span>"
    )


def progress_html(progress: float, total: float | None, message: str | None, resets: int) -> str:
    count = f"{progress:g}/{total:g}" if total else f"{progress:g}"
    said = f" · {_e(one_line(message, 200))}" if message else ""  # the server's words, on the bar's one line
    reset = f" · deadline reset {resets}×" if resets else ""
    return f'<span style="{MUTED}">{count}{said}{reset}</span>'


def section(text: str) -> str:
    return f'<div class="mcp-nb-section">{_e(text)}</div>'
