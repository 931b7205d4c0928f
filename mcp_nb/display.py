"""HTML and text views of outcomes, registrations and the history.

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
`stable_output` on they are left out; `mcp_nb.nbval` builds the sanitizer's patterns
from the same templates, so the sanitizer rewrites a view into its stable form and the
two cannot drift apart. The history views list calls in the order they started when
output is stable: concurrent calls are recorded in the order they end.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .trace import MARKED

if TYPE_CHECKING:
    import pandas as pd  # imported by the history views that use it: an outcome card needs none

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
    the stable form `stable_output` prints instead. The sanitizer (`mcp_nb.nbval`) rewrites
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
# A log record's traceback, folded under its root cause. Its frames change with the install
# and the kernel (a cell's file name holds the process id); `stable_output` leaves them out.
TRACEBACK = (
    '<details><summary style="cursor:pointer">{cause}</summary>'
    + PRE.format(text="{traceback}")
    + "</details>"
)


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def compact_json(value: Any, limit: int = 120) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def badge(outcome: str) -> str:
    fill = FILLS.get(outcome, NEUTRAL_FILL)
    return (
        f'<span class="mcp-nb-badge mcp-nb-{_e(outcome)}" style="background:{fill};{ON_FILL};'
        f'border-radius:10px;padding:1px 8px;font-size:0.85em;font-weight:600;white-space:nowrap">{_e(outcome)}</span>'
    )


def outlined(text: str, ink: Ink | None = None, size: str = "0.85em") -> str:
    """A chip: the text in its ink with a line around it, or plain text in a neutral line."""
    look = f"{ink.text};border:1px solid {ink.plain};border-color:currentColor" if ink else BORDER
    return f'<span style="{look};border-radius:10px;padding:0 7px;font-size:{size};white-space:nowrap">{_e(text)}</span>'


def _kind_badge(kind: str) -> str:
    return outlined(kind, KIND_INKS.get(kind))


def _pre(text: str) -> str:
    return PRE.format(text=_e(text))


# A header line: inline items that wrap as words do, and one floated to the right end. No flex
# box: an untrusted notebook keeps `display:flex` but drops its `gap` and `flex-wrap`.
GAP = "margin-right:8px"


def _item(body: str, style: str = "") -> str:
    return f'<span style="{GAP}{";" + style if style else ""}">{body}</span>'


def _corner(body: str) -> str:
    """The opening of the right-hand end of a header line; the caller closes its span."""
    return f'<span style="float:right;margin-left:12px;{MUTED};font-size:0.85em">{body}'


# Panes side by side, each at least 220 px, wrapping below that. An untrusted notebook drops
# `flex` and `flex-wrap`: the panes then share one row by their `width`.
PANES = "display:flex;flex-wrap:wrap;margin:0 -8px -8px 0"
PANE = "flex:1 1 220px;width:32%;min-width:0;box-sizing:border-box;margin:0 8px 8px 0"


def _stable(stable: bool | None) -> bool:
    if stable is None:
        from .config import settings

        return settings.stable_output
    return stable


def without_frames(traceback: str) -> str:
    """A formatted traceback with its frames left out: the exceptions and how they chain.

    The frames name files and lines of this install (and the kernel's cell files, whose
    names hold its process id); what teaches, the exceptions, stays.
    """
    kept, in_frames = [], False
    for line in traceback.splitlines():
        if line.rstrip() == "Traceback (most recent call last):":
            in_frames = True
            continue
        # A frame is `  File ...`, its source and carets indented further, or `  [Previous line repeated ...]`.
        if in_frames and (line.startswith("  File ") or line.startswith("    ") or line.startswith("  [")):
            continue
        in_frames = False
        kept.append(line)
    return "\n".join(kept).strip("\n")


def _root_cause(log) -> str | None:
    """The exception the handler really raised (the SDK wraps it), as `Type: text`."""
    if not log.exceptions:
        return None
    kind, text = log.exceptions[-1]
    return f"{kind}: {text}" if text else kind


# -- Outcome ------------------------------------------------------------------------------------


def _model_view(o) -> tuple[str, list[str]]:
    """What the model reads, as (headline, details)."""
    if o.fallback:
        # What the model gets is the host's stand-in; the server sent nothing, as the history says.
        return o.content or "", ["substituted by the host: the read failed and the server sent no content"]
    if o.outcome in ("protocol_error", "timeout"):
        return "nothing: there is no result", []
    details = []
    if o.structured_content is not None:
        details.append("structured_content: " + compact_json(o.structured_content))
    if o.is_error is not None and o.target == "tool":
        details.append(f"is_error: {o.is_error}")
    return o.content if o.content is not None else "", details


def _host_view(o) -> str:
    if o.code is None and o.message is None:
        return "nothing to handle: the request succeeded"
    parts = [str(o.code) if o.code is not None else "", o.message or ""]
    line = " ".join(p for p in parts if p)
    if o.data is not None:
        line += "\ndata: " + compact_json(o.data)
    return line


def _fate_line(o) -> str | None:
    fate = o.server_fate
    if fate is None:
        return None
    if fate == "completed":
        return f"completed after the client gave up: {o.fate_outcome} ({o.fate_cause})"
    return {
        "running": "still running on the server: the outcome is unknown",
        "cancelled": "cancelled on the server before it finished",
        "unobserved": "unknown (this handler was not registered through mcp_nb, so nothing watched it)",
        "cancel_requested": (
            "told to stop (the protocol's cancellation): what the server then did cannot be seen from the client"
        ),
    }[fate]


def _sender(o) -> str:
    """Who made an outside client's call ("" for mcp_nb's own calls, which is what most cards show)."""
    if o.via == "kernel":
        return ""
    return f"via {o.via}" + (f" from {o.client}" if o.client else "")


def _header_text(o) -> str:
    args = "" if o.target == "resource" or o.arguments is None else " " + compact_json(o.arguments, 80)
    attempt = f", attempt {o.attempt}" if o.attempt > 1 else ""
    return f"Outcome #{o.call_id}{attempt}: {o.outcome} ({o.cause}) - {o.target} {o.name}{args}{_on(o)}{_from(o)}"


def _on(o) -> str:
    """Where the call went, said only when it is not the kernel's own server."""
    server = getattr(o, "server", None) or "kernel"
    return "" if server == "kernel" else f" on {server}"


def _from(o) -> str:
    """Who made it, said only when it is an outside client (most cards show mcp_nb's own calls)."""
    return f" ({_sender(o)})" if o.via != "kernel" else ""


def _log_time(o, at: float | None, stable: bool) -> str:
    """When a log entry came, after the request was sent; a call rebuilt from a history row has no `started`."""
    started = getattr(o, "started", None)
    if stable or at is None or started is None:
        return LOG_TIME.stable
    return LOG_TIME(False, ms=(at - started) * 1000.0)


def outcome_text(o) -> str:
    headline, details = _model_view(o)
    lines = [_header_text(o)]

    def block(label: str, text: str) -> None:
        first, *rest = (text or "").splitlines() or [""]
        lines.append(f"  {label:<11} {first}")
        lines.extend(f"  {'':<11} {line}" for line in rest)

    block("model sees", "\n".join([headline, *details]))
    block("host sees", _host_view(o))
    logs = o.server_logs
    if logs:
        block("log says", "\n".join(str(log) + (f"\n  {_root_cause(log)}" if log.exceptions else "") for log in logs))
    else:
        block("log says", "nothing")
    fate = _fate_line(o)
    if fate:
        block("server", fate)
    asked = _asked(o)
    if asked:
        block("user asked", "\n".join(f"{question}\n  -> {answer}" for question, answer in asked))
    return "\n".join(lines)


def _asked(o) -> list[tuple[str, str]]:
    """The questions the server asked during the call and their answers, as (question, answer) lines.

    No times: how long an answer took varies from run to run; the Outcome has it.
    """
    out = []
    for e in getattr(o, "elicitations", None) or ():
        e = e.as_dict() if hasattr(e, "as_dict") else e
        question = e["message"] + (f" (open {e['url']})" if e.get("url") else "")
        answer = e["action"] + (" " + compact_json(e["content"]) if e.get("content") else "")
        answer += {"elicit": ", from the call's elicit=", "default": ", from the configured elicit", "form": ", in the form"}.get(
            e["source"], ""
        )
        if e.get("reason"):
            answer += f": {e['reason']}"
        out.append((question, answer))
    return out


def outcome_html(o, stable: bool | None = None) -> str:
    """The outcome card; `stable` (default: the `stable_output` setting) leaves out what changes from run to run."""
    stable = _stable(stable)
    headline, details = _model_view(o)
    model = _pre(headline) + "".join(f'<div style="{MUTED};font-size:0.85em">{_e(d)}</div>' for d in details)
    host = _pre(_host_view(o))
    if o.server_logs:
        items = []
        for log in o.server_logs:
            level = ERROR.text if log.level in ("ERROR", "CRITICAL") else MUTED
            mark = f'<span style="{MUTED}">[{_e(log.source)}]</span> ' if log.source in MARKED else ""
            at = _log_time(o, log.at, stable)
            item = (
                f'<div>{mark}<b style="{level}"{at}{_e(log.level)}</b> <span style="{MUTED}">{_e(log.logger)}</span>'
                f"{_pre(log.message)}"
            )
            if log.traceback:
                shown = without_frames(log.traceback) if stable else log.traceback
                item += TRACEBACK.format(cause=_e(_root_cause(log) or "traceback"), traceback=_e(shown))
            items.append(item + "</div>")
        logs = "".join(items)
    else:
        logs = f'<span style="{MUTED}">nothing</span>'
    args = "" if o.target == "resource" or o.arguments is None else compact_json(o.arguments, 80)

    def pane(title: str, body: str) -> str:
        return (
            f'<div style="{PANE};{BORDER};border-radius:6px;padding:6px 8px">'
            f'<div style="font-size:0.8em;text-transform:uppercase;letter-spacing:0.04em;{MUTED};margin-bottom:4px">'
            f"{title}</div>{body}</div>"
        )

    attempt = f" attempt {o.attempt}" if o.attempt > 1 else ""
    took = CARD_TIME(stable, ms=o.duration_ms)
    fate = _fate_line(o)
    fate_html = ""
    if fate:
        after = o.fate_after_ms
        when = FATE_TIME(stable, seconds=after / 1000) if after is not None else FATE_TIME.stable
        fate_html = (
            f'<div style="margin-top:6px;padding:4px 8px;{INKS["timeout"].line("-left", "3px")};{SURFACE}">'
            f"<b>Server side:</b> {_e(fate)}{when}"
        )
    asked_html = "".join(
        f'<div style="margin-top:6px;padding:4px 8px;{BORDER};border-radius:6px;{SURFACE}">'
        f'<b>The server asked:</b> {_e(question)}<div style="{MUTED}">answered {_e(answer)}</div></div>'
        for question, answer in _asked(o)
    )
    header = (
        _corner(f"#{o.call_id}{attempt}") + took  # the corner's span ends in `took`
        + _item(badge(o.outcome)) + _item(f"<b>{_e(o.cause)}</b>") + _item(_kind_badge(o.target))
        + _item(f"<code>{_e(o.name)}</code>")
        + (_item(_e(_on(o).strip()), MUTED) if _on(o) else "")
        + (_item(_e(_sender(o)), MUTED) if o.via != "kernel" else "")
        + (f'<code style="{MUTED}">{_e(args)}</code>' if args else "")
    )  # fmt: skip
    return (
        f'<div class="mcp-nb-outcome" style="{UI};{BORDER};border-radius:8px;padding:8px 10px;margin:2px 0;max-width:1100px">'
        f'<div style="margin-bottom:8px">{header}</div>'
        f'<div style="{PANES}">'
        f'{pane("What the model sees", model)}{pane("What the host sees", host)}{pane("What the log says", logs)}'
        f"</div>{fate_html}{asked_html}</div>"
    )


# -- Registration -------------------------------------------------------------------------------


def _parameters(schema: dict[str, Any] | None) -> list[tuple[str, str, bool, str]]:
    if not schema:
        return []
    required = set(schema.get("required", []))
    rows = []
    for name, prop in (schema.get("properties") or {}).items():
        kind = schema_type(prop, schema)
        if "default" in prop:
            kind += " = " + json.dumps(prop["default"], default=str)
        rows.append((name, kind, name in required, prop.get("description", "")))
    return rows


def schema_type(prop: dict[str, Any], root: dict[str, Any] | None = None) -> str:
    """A short human name for a JSON Schema: `integer`, `string | null`, `array[string]`, `Book`..."""
    if "$ref" in prop:
        return prop["$ref"].rsplit("/", 1)[-1]
    if "anyOf" in prop or "oneOf" in prop:
        return " | ".join(schema_type(p, root) for p in prop.get("anyOf") or prop.get("oneOf"))
    if "enum" in prop:
        return "enum(" + ", ".join(json.dumps(v) for v in prop["enum"]) + ")"
    kind = prop.get("type", "any")
    if isinstance(kind, list):
        return " | ".join(kind)
    if kind == "array" and isinstance(prop.get("items"), dict):
        return f"array[{schema_type(prop['items'], root)}]"
    return kind


def registration_text(r) -> str:
    where = f" {r.uri}" if r.uri else ""
    state = "replaced" if r.replaced else "registered"
    lines = [f"{r.kind} {r.name}{where} ({state}{', async' if r.is_async else ''})"]
    if r.title:
        lines.append(f"  title: {r.title}")
    if r.description:
        lines.append("  " + r.description.strip().splitlines()[0])
    if r.annotations:
        lines.append("  annotations: " + ", ".join(sorted(r.annotations)))
    if r.faults:
        lines.append(f"  faults injected: {r.faults}")
    params = _parameters(r.input_schema)
    if params:
        lines.append("  parameters:")
        for name, kind, required, _ in params:
            lines.append(f"    {name}: {kind}{' (required)' if required else ''}")
    elif r.kind != "resource" or r.input_schema is not None:
        lines.append("  parameters: none")
    fields, models = _returns(getattr(r, "output_schema", None))
    if fields:
        lines.append("  returns (output schema):")
        lines.extend(f"    {name}: {kind}" for name, kind, _, _ in fields)
        lines.extend(f"    {model}: {described}" for model, described in models)
    return "\n".join(lines)


_PLAIN = frozenset({"string", "integer", "number", "boolean", "null"})


def _one_plain_value(schema: dict[str, Any]) -> bool:
    """The SDK's wrapper of one plain value (`-> str` gives `{"result": string}`): the result's
    text says all it does, so the card leaves it out."""
    properties = schema.get("properties") or {}
    if set(properties) != {"result"} or schema.get("$defs"):
        return False
    kind = properties["result"].get("type")
    kinds = {kind} if isinstance(kind, str) else set(kind or ["?"])
    return kinds <= _PLAIN


def _returns(schema: dict[str, Any] | None) -> tuple[list[tuple[str, str, bool, str]], list[tuple[str, str]]]:
    """What a tool's output schema promises: its top-level fields, and each model it refers to,
    as `Book: title string, year integer`."""
    if not isinstance(schema, dict) or _one_plain_value(schema):
        return [], []
    fields = _parameters(schema)
    models = []
    for model, sub in (schema.get("$defs") or {}).items():
        if isinstance(sub, dict):
            models.append((model, ", ".join(f"{n} {k}" for n, k, _, _ in _parameters(sub)) or schema_type(sub, schema)))
    return fields, models


def registration_html(r) -> str:
    params = _parameters(r.input_schema)
    th = f'style="text-align:left;{CELL};padding-left:0"'
    td = f'style="text-align:left;{CELL};padding-left:0;vertical-align:top"'
    rows = "".join(
        f'<tr><td {td}><code>{_e(n)}</code></td><td {td}><code>{_e(k)}</code></td><td {td}>{"yes" if req else ""}</td>'
        f'<td {td}><span style="{MUTED}">{_e(d)}</span></td></tr>'
        for n, k, req, d in params
    )
    table = (
        f'<table style="border-collapse:collapse;font-size:0.9em;margin-top:4px"><thead><tr>'
        f"<th {th}>parameter</th><th {th}>type</th><th {th}>required</th><th {th}>description</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
        if params
        else f'<div style="{MUTED};font-size:0.9em">no parameters</div>'
    )
    chips = "".join(_item(outlined(a, size="0.8em")) for a in sorted(r.annotations))
    if r.faults:
        chips += _item(outlined(f"faults injected: {r.faults}", ERROR, size="0.8em"))
    schema = ""
    if r.input_schema:
        schema = (
            f'<details><summary style="cursor:pointer;{MUTED};font-size:0.85em">input schema</summary>'
            f"{_pre(json.dumps(r.input_schema, indent=2))}</details>"
        )
    output = getattr(r, "output_schema", None)
    fields, models = _returns(output)
    if fields:
        returned = "".join(
            f'<tr><td {td}><code>{_e(n)}</code></td><td {td}><code>{_e(k)}</code></td><td {td}>{"yes" if req else ""}</td>'
            f'<td {td}><span style="{MUTED}">{_e(d)}</span></td></tr>'
            for n, k, req, d in fields
        )
        returned += "".join(
            f'<tr><td {td}><code>{_e(m)}</code></td><td {td} colspan="3"><span style="{MUTED}">{_e(d)}</span></td></tr>'
            for m, d in models
        )
        table += (
            f'<table style="border-collapse:collapse;font-size:0.9em;margin-top:4px"><thead><tr>'
            f"<th {th}>returns</th><th {th}>type</th><th {th}>required</th><th {th}>description</th></tr></thead>"
            f"<tbody>{returned}</tbody></table>"
        )
        schema += (
            f'<details><summary style="cursor:pointer;{MUTED};font-size:0.85em">output schema</summary>'
            f"{_pre(json.dumps(output, indent=2))}</details>"
        )
    desc = _e((r.description or "").strip())
    state = "replaced the earlier version" if r.replaced else "registered"
    line = KIND_INKS[r.kind].line("-left", "4px") if r.kind in KIND_INKS else border("-left", "4px")
    return (
        f'<div class="mcp-nb-registration" style="{UI};{BORDER};{line};border-radius:6px;padding:6px 10px;max-width:900px">'
        f"<div>{_corner(state + (' · async' if r.is_async else ''))}</span>"
        f"{_item(_kind_badge(r.kind))}{_item(f'<b><code>{_e(r.name)}</code></b>')}"
        + (_item(f"<code>{_e(r.uri)}</code>") if r.uri else "")
        + (_item(_e(r.title)) if r.title else "")
        + f"{chips}</div>"
        + (f'<div style="white-space:pre-wrap;margin:4px 0">{desc}</div>' if desc else "")
        + f"{table}{schema}</div>"
    )


# -- History ------------------------------------------------------------------------------------

_SHOWN = ["call_id", "target", "name", "outcome", "cause", "content", "code", "message"]


def _outside(frame: pd.DataFrame) -> bool:
    """Whether outside clients made any of these calls (only then is who made each one shown)."""
    return bool((frame["via"].astype(str) != "kernel").any())


def _via(row) -> str:
    return "" if str(row.via) == "kernel" else f"{row.via}" + (f" {row.client}" if isinstance(row.client, str) else "")


def _counts(frame: pd.DataFrame) -> str:
    counts = frame["outcome"].value_counts()
    return ", ".join(f"{name} {int(counts.get(name, 0))}" for name in FILLS)


def _cell(value: Any, limit: int) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return ""
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _in_order(frame: pd.DataFrame, stable: bool) -> pd.DataFrame:
    # Calls are recorded as they end, which for concurrent calls is a matter of timing; ids
    # are given out as calls start, and a retried call's attempts share its id.
    return frame.sort_values(["call_id", "attempt"], kind="stable") if stable else frame


def history_text(frame: pd.DataFrame, rows: int, stable: bool | None = None) -> str:
    import pandas as pd

    if frame.empty:
        return "History: no calls yet"
    head = f"History: {len(frame)} calls ({_counts(frame)})"
    ordered = _in_order(frame, _stable(stable)).tail(rows)
    tail = ordered[_SHOWN].copy()
    tail["content"] = [_cell(v, 40) for v in tail["content"].astype(object)]
    tail["message"] = [_cell(v, 40) for v in tail["message"].astype(object)]
    tail["code"] = ["" if pd.isna(v) else str(int(v)) for v in tail["code"]]
    if _outside(frame):
        tail["via"] = [_via(r) for r in ordered.itertuples(index=False)]
    note = f"\n(last {rows} of {len(frame)}; the whole history: mcp_nb.history().to_frame())" if len(frame) > rows else ""
    return head + "\n" + tail.to_string(index=False) + note


def history_html(frame: pd.DataFrame, rows: int, stable: bool | None = None) -> str:
    import pandas as pd

    stable = _stable(stable)
    if frame.empty:
        return f'<div style="{MUTED}">History: no calls yet</div>'
    tail = _in_order(frame, stable).tail(rows)
    outside = _outside(frame)
    body = []
    for r in tail.itertuples(index=False):
        shown = r.content if r.content is not None else (r.message or "")
        shown = "" if shown is None else str(shown)
        cells = [
            str(r.call_id), _e(r.target), f"<code>{_e(r.name)}</code>", badge(str(r.outcome)), _e(r.cause),
            *([_e(_via(r))] if outside else []), "" if pd.isna(r.code) else str(int(r.code)),
        ]  # fmt: skip
        left = "".join(f'<td style="text-align:left;{CELL}">{cell}</td>' for cell in cells)
        # the duration, then the content cell as far as its title attribute
        body.append(f'<tr>{left}{HISTORY_MS_CELL(stable, ms=r.duration_ms)}{_e(shown)}">{_e(shown[:200])}</td></tr>')
    more = (
        f'<div style="{MUTED};font-size:0.85em">last {rows} of {len(frame)} calls; '
        f"the whole history: <code>mcp_nb.history().to_frame()</code></div>"
        if len(frame) > rows
        else ""
    )
    names = ["call", "target", "name", "outcome", "cause", *(["via"] if outside else [])]
    head = (
        "".join(f'<th style="text-align:left;{CELL}">{h}</th>' for h in names)
        + HISTORY_MS_HEADER(stable)  # the code and ms headers
        + f'<th style="text-align:left;{CELL}">content / message</th>'
    )
    # A page narrower than the table (the docs site's column) scrolls it instead of cutting it off.
    return (
        f'<div class="mcp-nb-history" style="{UI}">'
        f"<div><b>History</b>: {len(frame)} calls ({_e(_counts(frame))})</div>"
        f'<div style="overflow-x:auto;max-width:100%"><table style="border-collapse:collapse;font-size:0.9em">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>{more}</div>"
    )


# -- Connections ---------------------------------------------------------------------------------

_STATE_INKS = {"connected": INKS["result"], "lost": ERROR, "failed": ERROR}


def _offers(row: dict[str, Any]) -> str:
    parts = [f"{row[k]} {k}{'s' if row[k] != 1 else ''}" for k in ("tool", "resource", "template", "prompt") if row.get(k)]
    return ", ".join(parts) or "nothing"


def connection_text(row: dict[str, Any]) -> str:
    who = " ".join(p for p in (row.get("server_name"), row.get("server_version")) if p)
    lines = [f"server {row['server']} ({row['transport']}, {row['state']}{', ' + row['reason'] if row.get('reason') else ''})"]
    if who:
        lines.append(f"  {who}" + (f", protocol {row['protocol']}" if row.get("protocol") else ""))
    if row.get("target"):
        lines.append(f"  {row['target']}")
    lines.append(f"  offers {_offers(row)}")
    return "\n".join(lines)


def connection_html(row: dict[str, Any]) -> str:
    ink = _STATE_INKS.get(row["state"])
    state = ink.text if ink else MUTED
    who = " ".join(p for p in (row.get("server_name"), row.get("server_version")) if p)
    details = [f"<code>{_e(row['target'])}</code>"] if row.get("target") else []
    if row.get("protocol"):
        details.append(f"protocol {_e(row['protocol'])}")
    reason = f' <span style="{state}">({_e(row["reason"])})</span>' if row.get("reason") else ""
    line = ink.line("-left", "4px") if ink else border("-left", "4px")
    return (
        f'<div class="mcp-nb-connection" style="{UI};{BORDER};{line};border-radius:6px;padding:6px 10px;max-width:900px">'
        f"<div>{_item('<b><code>' + _e(row['server']) + '</code></b>')}"
        + (_item(_e(who)) if who else "")
        + f"{_item(_kind_badge(row['transport']))}"
        f'<span style="{state};font-weight:600">{_e(row["state"])}</span>{reason}</div>'
        f'<div style="{MUTED};font-size:0.9em">{" · ".join(details)}</div>'
        f"<div>offers {_e(_offers(row))}</div></div>"
    )
