"""The theme: every colour, line, font and varying part of mcp_nb's views, defined once.

Text views are stable on purpose (nbval compares them): no addresses, no timings.

The HTML is read in many places, and each look below is written for all of them: JupyterLab,
Notebook 7, Voila and VS Code in light and dark themes; a notebook opened untrusted (fresh
from a clone or on Binder), where JupyterLab's sanitizer keeps only the inline declarations
it recognises and drops every `var()`, `color-mix()`, `currentColor`, `gap` and `flex`; and
the documentation site (Furo, light and dark), where no `--jp-*` variable exists. So:

- text takes the colour around it, and muted text is that colour faded, as JupyterLab's own
  secondary text is: it reads on any background without knowing the theme;
- a colour that carries meaning (`Ink`) is a mid-tone mixed with the text colour around it,
  darker on a light page and lighter on a dark one, so it keeps 4.5:1 on both; before it
  comes a plain declaration of the same colour on a light page, for the sanitizer to keep;
- borders, surfaces and fonts come from JupyterLab's variables, after a plain declaration
  that reads on both light and dark pages;
- badges are white on a saturated fill, which reads the same in every theme.

The few parts of the HTML that change from run to run (a duration, when a late handler
ended, the frames of a traceback) are each printed from one template below. With
`stable_output` on they are left out; `mcp_nb.notebook.nbval` builds the sanitizer's patterns
from the same templates, so the sanitizer rewrites a view into its stable form and the
two cannot drift apart. The history views list calls in the order they started when
output is stable: concurrent calls are recorded in the order they end.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from typing import Any

from mcp_nb.config import settings
from mcp_nb.mistakes import visible

# Which log sources a view marks with their name ("[context] INFO ..."): a handler's own
# Context messages and an outside server's notifications, which read like the server's log.
MARKED = frozenset({"context", "notification"})

# -- The theme: every look, defined once (the panel's widgets import them) -----------------------

INK_SHARE = 70  # percent of an ink's mid-tone in the mix; the rest is the text colour around it
LIGHT_TEXT = "#212121"  # JupyterLab's light text (black at 87%), what the plain declarations assume


def _hex(value: str) -> tuple[int, ...]:
    return tuple(int(value[i : i + 2], 16) for i in (1, 3, 5))


@dataclass(frozen=True)
class Ink:
    """A colour that carries meaning, for text and lines: `mid` mixed with the text colour around it.

    `plain` is that mix on a light page, computed here for the sanitizer to keep."""

    mid: str

    @property
    def themed(self) -> str:
        return f"color-mix(in srgb,{self.mid} {INK_SHARE}%,currentColor)"

    @property
    def plain(self) -> str:
        share = INK_SHARE / 100
        mixed = (round(share * m + (1 - share) * t) for m, t in zip(_hex(self.mid), _hex(LIGHT_TEXT)))
        return "#" + "".join(f"{c:02x}" for c in mixed)

    @property
    def text(self) -> str:
        return f"color:{self.plain};color:{self.themed}"

    def line(self, side: str = "", width: str = "1px") -> str:
        """A border in this ink, on an element whose own text is not (`side`: "-left", ...)."""
        return f"border{side}:{width} solid {self.plain};border{side}-color:{self.themed}"


# White text on these fills reads in every theme (4.8:1 to 6.5:1).
ON_FILL = "color:#fff"
FILLS = {"result": "#1a7f37", "tool_error": "#b35900", "protocol_error": "#cf222e", "timeout": "#6f42c1"}
KIND_FILLS = {"tool": "#0969da", "resource": "#1a7f37", "prompt": "#8250df"}
NEUTRAL_FILL = "#59636e"
INKS = {"result": Ink("#2da44e"), "tool_error": Ink("#d4760b"), "protocol_error": Ink("#e5534b"), "timeout": Ink("#986ee2")}
KIND_INKS = {"tool": Ink("#2f81f7"), "resource": INKS["result"], "prompt": Ink("#986ee2")}
ERROR = INKS["protocol_error"]

# Declarations, each usable in a style attribute as it is.
MUTED = "opacity:0.7"  # the text colour around it, faded (written 0.7: the sanitizer reads no .7)
_GREY = "rgba(128,128,128,0.4)"  # a line that shows on white and on black alike
_TINT = "rgba(128,128,128,0.12)"
ERROR_TINT = "background:rgba(207,34,46,0.06)"  # behind red text: faint enough for 4.5:1 on either page
LINE = f"var(--jp-border-color2,{_GREY})"  # the colour alone, for a widget's layout (never sanitized)


def border(side: str = "", width: str = "1px") -> str:
    """A neutral border: the theme's own line colour, and a grey on any page where there is none."""
    return f"border{side}:{width} solid {_GREY};border{side}-color:{LINE}"


BORDER = border()
SURFACE = f"background:{_TINT};background:var(--jp-layout-color2,{_TINT})"
_MONO_FONTS = "ui-monospace,SFMono-Regular,Menlo,Consolas,monospace"
MONO = f"font-family:{_MONO_FONTS};font-family:var(--jp-code-font-family,{_MONO_FONTS})"
_UI_FONTS = "system-ui,sans-serif"
UI = f"font-family:{_UI_FONTS};font-family:var(--jp-ui-font-family,{_UI_FONTS});line-height:1.45"

PRE = (
    '<pre style="margin:0;padding:0;border:none;white-space:pre-wrap;overflow-wrap:break-word;'
    # word-break:normal for the sanitizer to keep: JupyterLab's own `pre` breaks words anywhere
    f'word-break:normal;word-break:break-word;{MONO};font-size:0.9em;line-height:1.45;background:none;color:inherit">'
    "{text}</pre>"
)


@dataclass(frozen=True)
class Varying:
    """A part of a view that changes from run to run: the template it is printed from, and
    the stable form `stable_output` prints instead. The sanitizer (`mcp_nb.notebook.nbval`) rewrites
    what `printed` makes into `stable`, so both ways end in the same text."""

    printed: str
    stable: str

    def __call__(self, stable: bool, **values: Any) -> str:
        return self.stable if stable else self.printed.format(**values)


# Each holds the fixed markup next to it, so that the sanitizer finds only mcp_nb's own, and
# no stable form is empty (an empty `replace:` line ends in a space, which editors strip).
CARD_TIME = Varying(" · {ms:.1f} ms</span>", "</span>")  # after the call id, in the corner of an outcome card
FATE_TIME = Varying(" at {seconds:.2f} s</div>", "</div>")  # when an abandoned handler ended
# A table's cells carry their own padding: the docs site gives a bare table none.
CELL = "padding:2px 8px"
_CODE_HEADER = f'<th style="text-align:left;{CELL}">code</th>'
HISTORY_MS_HEADER = Varying(_CODE_HEADER + f'<th style="text-align:left;{CELL}">ms</th>', _CODE_HEADER)
_CONTENT_CELL = (
    f'<td style="text-align:left;{CELL};max-width:420px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap" title="'
)
HISTORY_MS_CELL = Varying(f'<td style="text-align:right;{CELL}">' + "{ms:.1f}</td>" + _CONTENT_CELL, _CONTENT_CELL)
# When a log entry was heard, after the request was sent, on its level in the card (a tooltip).
LOG_TIME = Varying(' title="+{ms:.1f} ms">', ">")
VARYING = (CARD_TIME, FATE_TIME, HISTORY_MS_HEADER, HISTORY_MS_CELL, LOG_TIME)
# The times in two messages, which notebook/nbval.py's sanitizer rewrites: who held mcp_nb's loop
# past a call's deadline, and for how long (calling/call.py, in the timeout's message), and how long
# a handler held the loop (registering/loop_watch.py, in its warning). Here, with the views' other
# varying parts, so that writing the sanitizer imports neither the calls nor the MCP SDK.
HELD_BY = "event loop was held by async {handler} for {seconds:.2f} s)"
BLOCKED_FOR = "event loop for {seconds:.2f} s without awaiting"
# A log record's traceback, folded under its root cause. Its frames change with the install
# and the kernel (a cell's file name holds the process id); `stable_output` leaves them out.
TRACEBACK = '<details><summary style="cursor:pointer">{cause}</summary>' + PRE.format(text="{traceback}") + "</details>"


def escape(value: Any) -> str:
    """Text for HTML: its markup escaped, and what would reorder or hide what is read shown as
    escapes (`mistakes.visible`): a view draws what servers and tools wrote."""
    return html.escape(visible(value), quote=True)


def compact_json(value: Any, limit: int = 120) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except RecursionError:
        text = "(nested too deeply to show)"
    except (TypeError, ValueError):
        text = repr(value)
    text = visible(text)  # JSON escapes control characters, not a bidi override nor a lone surrogate
    return text if len(text) <= limit else text[: limit - 1] + "…"


def badge(outcome: str) -> str:
    fill = FILLS.get(outcome, NEUTRAL_FILL)
    return (
        f'<span class="mcp-nb-badge mcp-nb-{escape(outcome)}" style="background:{fill};{ON_FILL};'
        f'border-radius:10px;padding:1px 8px;font-size:0.85em;font-weight:600;white-space:nowrap">{escape(outcome)}</span>'
    )


def outlined(text: str, ink: Ink | None = None, size: str = "0.85em") -> str:
    """A chip: the text in its ink with a line around it, or plain text in a neutral line."""
    look = f"{ink.text};border:1px solid {ink.plain};border-color:currentColor" if ink else BORDER
    return f'<span style="{look};border-radius:10px;padding:0 7px;font-size:{size};white-space:nowrap">{escape(text)}</span>'


def kind_badge(kind: str) -> str:
    return outlined(kind, KIND_INKS.get(kind))


def pre(text: str) -> str:
    return PRE.format(text=escape(text))


# A header line: inline items that wrap as words do, and one floated to the right end. No flex
# box: an untrusted notebook keeps `display:flex` but drops its `gap` and `flex-wrap`.
GAP = "margin-right:8px"


def inline(body: str, style: str = "") -> str:
    return f'<span style="{GAP}{";" + style if style else ""}">{body}</span>'


def corner(body: str) -> str:
    """The opening of the right-hand end of a header line; the caller closes its span."""
    return f'<span style="float:right;margin-left:12px;{MUTED};font-size:0.85em">{body}'


# Panes side by side, each at least 220 px, wrapping below that. An untrusted notebook drops
# `flex` and `flex-wrap`: the panes then share one row by their `width`.
PANES = "display:flex;flex-wrap:wrap;margin:0 -8px -8px 0"
PANE = "flex:1 1 220px;width:32%;min-width:0;box-sizing:border-box;margin:0 8px 8px 0"


def is_stable(stable: bool | None) -> bool:
    if stable is None:
        return settings.stable_output
    return stable


# -- Media: a result's images and sounds, inlined in the card ------------------------------------
# An image is a data: URI, scaled down (never up) to the card's width and a height that leaves the
# panes in view. JupyterLab's sanitizer (an untrusted notebook) keeps <img> and <audio controls>,
# their data: `src` (it checks the scheme of href and cite only) and max-width / max-height.
MEDIA_BOX = "display:inline-block;vertical-align:top;max-width:100%;margin:0 10px 6px 0"
IMAGE = "display:block;max-width:100%;max-height:360px;width:auto;height:auto"
AUDIO = "display:block;max-width:100%"
