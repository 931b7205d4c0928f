"""How the panel looks: one scoped stylesheet and the HTML of an entry's header.

Standard ipywidgets have no stylesheet of their own to extend, so the panel carries
one in an HTML widget, every rule scoped under `.mcp-nb-panel`. It is plain CSS with
JupyterLab's theme variables (and fallbacks), so it reads in light and dark themes and
needs no front-end build: JupyterLab, Notebook 7, VS Code and Voila apply it alike.
Where a front end drops it, the panel still works, only plainer.
"""

from __future__ import annotations

import html
from typing import Any

from ..display import BORDER, ERROR, FG, KIND_COLOURS, MONO, MUTED

STYLESHEET = f"""<style>
.mcp-nb-panel {{
  border: 1px solid {BORDER}; border-radius: 8px; padding: 6px 10px 10px;
  max-width: 1180px; box-sizing: border-box;
  font-family: var(--jp-ui-font-family, system-ui, sans-serif);
}}
.mcp-nb-panel .mcp-nb-picker select,
.mcp-nb-panel .mcp-nb-history-calls select {{
  font-family: {MONO}; font-size: 12px; line-height: 1.5;
}}
.mcp-nb-panel .mcp-nb-raw textarea,
.mcp-nb-panel .mcp-nb-json textarea {{ font-family: {MONO}; font-size: 12px; }}
.mcp-nb-panel textarea {{ resize: vertical; min-height: 28px; }}
.mcp-nb-panel .mcp-nb-invalid input,
.mcp-nb-panel .mcp-nb-invalid textarea {{
  border-color: {ERROR} !important; box-shadow: inset 0 0 0 1px {ERROR};
}}
.mcp-nb-panel .mcp-nb-label code {{ font-family: {MONO}; }}
.mcp-nb-panel .mcp-nb-section {{
  color: {MUTED}; font-size: 11px; text-transform: uppercase; letter-spacing: .05em;
}}
.mcp-nb-panel .mcp-nb-controls {{
  border-top: 1px solid {BORDER}; padding-top: 8px; margin-top: 4px;
}}
.mcp-nb-panel .mcp-nb-cancel {{ animation: mcp-nb-pulse 1.6s ease-in-out infinite; }}
.mcp-nb-spinner {{
  display: inline-block; width: 10px; height: 10px; margin-right: 6px; vertical-align: -1px;
  border: 2px solid currentColor; border-right-color: transparent; border-radius: 50%;
  animation: mcp-nb-spin .8s linear infinite;
}}
@keyframes mcp-nb-spin {{ to {{ transform: rotate(360deg); }} }}
@keyframes mcp-nb-pulse {{ 50% {{ opacity: .75; }} }}
</style>"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def chip(text: str, colour: str, filled: bool = False) -> str:
    if filled:
        return (
            f'<span style="background:{colour};color:#fff;border-radius:10px;padding:0 8px;'
            f'font-size:0.8em;font-weight:600">{_e(text)}</span>'
        )
    return (
        f'<span style="border:1px solid {colour};color:{colour};border-radius:10px;padding:0 7px;'
        f'font-size:0.8em">{_e(text)}</span>'
    )


def kind_label(entry) -> str:
    """`tool`, `resource`, `template` or `prompt`: a template reads through variables."""
    if entry.kind == "resource" and entry.input_schema is not None:
        return "template"
    return entry.kind


def entry_html(entry) -> str:
    """The header of the chosen tool, resource or prompt: what it is and what it promises."""
    kind = kind_label(entry)
    colour = KIND_COLOURS.get(entry.kind, MUTED)
    name = entry.uri if entry.kind == "resource" else entry.name
    chips = "".join(chip(a, MUTED) for a in sorted(entry.annotations))
    if entry.is_async:
        chips += chip("async", MUTED)
    title = f'<span style="color:{MUTED}">{_e(entry.title)}</span>' if entry.title else ""
    also = f'<span style="color:{MUTED};font-size:0.85em">name {_e(entry.name)}</span>' if entry.kind == "resource" else ""
    description = (entry.description or "").strip()
    body = (
        f'<div style="white-space:pre-wrap;margin-top:3px;color:{FG}">{_e(description)}</div>'
        if description
        else ""
    )
    return (
        f'<div class="mcp-nb-entry-card" style="border-left:4px solid {colour};padding:2px 0 2px 10px">'
        f'<div style="display:flex;gap:8px;align-items:center;flex-wrap:wrap">{chip(kind, colour, filled=True)}'
        f'<b><code style="background:none;font-size:1.05em">{_e(name)}</code></b>{title}{also}{chips}</div>{body}</div>'
    )


def problems_html(title: str, problems: list[str]) -> str:
    """Why nothing was sent: a red box listing every problem."""
    if not problems and not title:
        return ""
    items = "".join(f"<li>{_e(p)}</li>" for p in problems)
    return (
        f'<div class="mcp-nb-problem-box" style="border:1px solid {ERROR};border-left-width:4px;border-radius:6px;'
        f'padding:4px 10px;color:{ERROR};background:rgba(207,34,46,0.06)"><b>{_e(title)}</b>'
        + (f'<ul style="margin:2px 0 2px 18px;padding:0">{items}</ul>' if items else "")
        + "</div>"
    )


def note_html(text: str) -> str:
    return f'<div style="color:{MUTED};font-size:0.9em">{_e(text)}</div>'


def running_html(target: str, name: str, timeout: float) -> str:
    verb = {"tool": "calling", "resource": "reading", "prompt": "getting"}.get(target, "calling")
    return (
        f'<span style="color:{MUTED}"><span class="mcp-nb-spinner"></span>{verb} <code>{_e(name)}</code>'
        f" · gives up after {timeout:g} s · the kernel stays free</span>"
    )


def section(text: str) -> str:
    return f'<div class="mcp-nb-section">{_e(text)}</div>'
