"""HTML and text views of outcomes, registrations and the history.

Text views are stable on purpose (nbval compares them): no addresses, no timings.
HTML uses inline styles with JupyterLab's theme variables, so the cards read in
light and dark themes, in Notebook 7, VS Code and nbconvert output alike.

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

if TYPE_CHECKING:
    import pandas as pd  # imported by the history views that use it: an outcome card needs none

COLOURS = {"result": "#1a7f37", "tool_error": "#b35900", "protocol_error": "#cf222e", "timeout": "#6f42c1"}
KIND_COLOURS = {"tool": "#0969da", "resource": "#1a7f37", "prompt": "#8250df"}
# The theme, defined here once for every view (the panel's widgets import it): JupyterLab's
# variables, with the light theme's values where a front end has none.
FG = "var(--jp-ui-font-color1, #1f2328)"
MUTED = "var(--jp-ui-font-color2, #59636e)"
BORDER = "var(--jp-border-color2, #d1d9e0)"
SURFACE = "var(--jp-layout-color2, #f6f8fa)"
MONO = "var(--jp-code-font-family, ui-monospace, SFMono-Regular, Menlo, monospace)"
ERROR = COLOURS["protocol_error"]

PRE = (
    '<pre style="margin:0;white-space:pre-wrap;word-break:break-word;font-family:{mono};'
    'font-size:0.9em;background:none;color:{fg}">{text}</pre>'
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
_CODE_HEADER = '<th style="text-align:left">code</th>'
HISTORY_MS_HEADER = Varying(_CODE_HEADER + '<th style="text-align:left">ms</th>', _CODE_HEADER)
_CONTENT_CELL = '<td style="text-align:left;max-width:420px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap" title="'
HISTORY_MS_CELL = Varying('<td style="text-align:right">{ms:.1f}</td>' + _CONTENT_CELL, _CONTENT_CELL)
VARYING = (CARD_TIME, FATE_TIME, HISTORY_MS_HEADER, HISTORY_MS_CELL)
# A log record's traceback, folded under its root cause. Its frames change with the install
# and the kernel (a cell's file name holds the process id); `stable_output` leaves them out.
TRACEBACK = (
    '<details><summary style="cursor:pointer">{cause}</summary>'
    + PRE.format(mono=MONO, fg=FG, text="{traceback}")
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
    colour = COLOURS.get(outcome, "#59636e")
    return (
        f'<span class="mcp-nb-badge mcp-nb-{_e(outcome)}" style="background:{colour};color:#fff;'
        f'border-radius:10px;padding:1px 8px;font-size:0.85em;font-weight:600;white-space:nowrap">{_e(outcome)}</span>'
    )


def _kind_badge(kind: str) -> str:
    colour = KIND_COLOURS.get(kind, "#59636e")
    return (
        f'<span style="border:1px solid {colour};color:{colour};border-radius:10px;padding:0 7px;'
        f'font-size:0.85em">{_e(kind)}</span>'
    )


def _pre(text: str) -> str:
    return PRE.format(mono=MONO, fg=FG, text=_e(text))


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


def _header_text(o) -> str:
    args = "" if o.target == "resource" or o.arguments is None else " " + compact_json(o.arguments, 80)
    attempt = f", attempt {o.attempt}" if o.attempt > 1 else ""
    return f"Outcome #{o.call_id}{attempt}: {o.outcome} ({o.cause}) - {o.target} {o.name}{args}{_on(o)}"


def _on(o) -> str:
    """Where the call went, said only when it is not the kernel's own server."""
    server = getattr(o, "server", None) or "kernel"
    return "" if server == "kernel" else f" on {server}"


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
    return "\n".join(lines)


def outcome_html(o, stable: bool | None = None) -> str:
    """The outcome card; `stable` (default: the `stable_output` setting) leaves out what changes from run to run."""
    stable = _stable(stable)
    headline, details = _model_view(o)
    model = _pre(headline) + "".join(f'<div style="color:{MUTED};font-size:0.85em">{_e(d)}</div>' for d in details)
    host = _pre(_host_view(o))
    if o.server_logs:
        items = []
        for log in o.server_logs:
            colour = ERROR if log.level in ("ERROR", "CRITICAL") else MUTED
            item = f'<div><b style="color:{colour}">{_e(log.level)}</b> <span style="color:{MUTED}">{_e(log.logger)}</span>{_pre(log.message)}'
            if log.traceback:
                shown = without_frames(log.traceback) if stable else log.traceback
                item += TRACEBACK.format(cause=_e(_root_cause(log) or "traceback"), traceback=_e(shown))
            items.append(item + "</div>")
        logs = "".join(items)
    else:
        logs = f'<span style="color:{MUTED}">nothing</span>'
    args = "" if o.target == "resource" or o.arguments is None else compact_json(o.arguments, 80)

    def pane(title: str, body: str) -> str:
        return (
            f'<div style="flex:1 1 220px;min-width:0;border:1px solid {BORDER};border-radius:6px;padding:6px 8px">'
            f'<div style="font-size:0.8em;text-transform:uppercase;letter-spacing:.04em;color:{MUTED};margin-bottom:4px">'
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
            f'<div style="margin-top:6px;padding:4px 8px;border-left:3px solid {COLOURS["timeout"]};background:{SURFACE}">'
            f"<b>Server side:</b> {_e(fate)}{when}"
        )
    return (
        f'<div class="mcp-nb-outcome" style="font-family:var(--jp-ui-font-family,system-ui,sans-serif);color:{FG};'
        f'border:1px solid {BORDER};border-radius:8px;padding:8px 10px;margin:2px 0;max-width:1100px">'
        f'<div style="display:flex;gap:8px;align-items:center;flex-wrap:wrap;margin-bottom:6px">{badge(o.outcome)}'
        f"<b>{_e(o.cause)}</b>{_kind_badge(o.target)}<code>{_e(o.name)}</code>"
        + (f'<span style="color:{MUTED}">{_e(_on(o).strip())}</span>' if _on(o) else "")
        + f'<code style="color:{MUTED}">{_e(args)}</code>'
        f'<span style="margin-left:auto;color:{MUTED};font-size:0.85em">#{o.call_id}{attempt}{took}</div>'
        f'<div style="display:flex;gap:8px;flex-wrap:wrap">'
        f'{pane("What the model sees", model)}{pane("What the host sees", host)}{pane("What the log says", logs)}'
        f"</div>{fate_html}</div>"
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
    return "\n".join(lines)


def registration_html(r) -> str:
    params = _parameters(r.input_schema)
    td = 'style="text-align:left;padding:1px 10px 1px 0"'
    rows = "".join(
        f'<tr><td {td}><code>{_e(n)}</code></td><td {td}><code>{_e(k)}</code></td><td {td}>{"yes" if req else ""}</td>'
        f'<td {td}><span style="color:{MUTED}">{_e(d)}</span></td></tr>'
        for n, k, req, d in params
    )
    table = (
        f'<table style="border-collapse:collapse;font-size:0.9em;margin-top:4px"><thead><tr>'
        f"<th style=\"text-align:left\">parameter</th><th style=\"text-align:left\">type</th>"
        f"<th style=\"text-align:left\">required</th><th style=\"text-align:left\">description</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
        if params
        else f'<div style="color:{MUTED};font-size:0.9em">no parameters</div>'
    )
    chips = "".join(
        f'<span style="border:1px solid {BORDER};border-radius:10px;padding:0 6px;margin-right:4px;font-size:0.8em">{_e(a)}</span>'
        for a in sorted(r.annotations)
    )
    if r.faults:
        chips += (
            f'<span style="border:1px solid {COLOURS["protocol_error"]};color:{COLOURS["protocol_error"]};'
            f'border-radius:10px;padding:0 6px;font-size:0.8em">faults injected: {_e(r.faults)}</span>'
        )
    schema = ""
    if r.input_schema:
        schema = (
            f'<details><summary style="cursor:pointer;color:{MUTED};font-size:0.85em">input schema</summary>'
            f"{_pre(json.dumps(r.input_schema, indent=2))}</details>"
        )
    desc = _e((r.description or "").strip())
    state = "replaced the earlier version" if r.replaced else "registered"
    return (
        f'<div class="mcp-nb-registration" style="font-family:var(--jp-ui-font-family,system-ui,sans-serif);color:{FG};'
        f'border:1px solid {BORDER};border-left:4px solid {KIND_COLOURS.get(r.kind, "#59636e")};border-radius:6px;'
        f'padding:6px 10px;max-width:900px">'
        f'<div style="display:flex;gap:8px;align-items:center;flex-wrap:wrap">{_kind_badge(r.kind)}<b><code>{_e(r.name)}</code></b>'
        + (f"<code>{_e(r.uri)}</code>" if r.uri else "")
        + (f"<span>{_e(r.title)}</span>" if r.title else "")
        + f"{chips}<span style=\"margin-left:auto;color:{MUTED};font-size:0.85em\">{state}"
        f"{' · async' if r.is_async else ''}</span></div>"
        + (f'<div style="white-space:pre-wrap;margin:4px 0">{desc}</div>' if desc else "")
        + f"{table}{schema}</div>"
    )


# -- History ------------------------------------------------------------------------------------

_SHOWN = ["call_id", "target", "name", "outcome", "cause", "content", "code", "message"]


def _counts(frame: pd.DataFrame) -> str:
    counts = frame["outcome"].value_counts()
    return ", ".join(f"{name} {int(counts.get(name, 0))}" for name in COLOURS)


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
    tail = _in_order(frame, _stable(stable)).tail(rows)[_SHOWN].copy()
    tail["content"] = [_cell(v, 40) for v in tail["content"].astype(object)]
    tail["message"] = [_cell(v, 40) for v in tail["message"].astype(object)]
    tail["code"] = ["" if pd.isna(v) else str(int(v)) for v in tail["code"]]
    note = f"\n(last {rows} of {len(frame)}; the whole history: mcp_nb.history().to_frame())" if len(frame) > rows else ""
    return head + "\n" + tail.to_string(index=False) + note


def history_html(frame: pd.DataFrame, rows: int, stable: bool | None = None) -> str:
    import pandas as pd

    stable = _stable(stable)
    if frame.empty:
        return f'<div style="color:{MUTED}">History: no calls yet</div>'
    tail = _in_order(frame, stable).tail(rows)
    body = []
    for r in tail.itertuples(index=False):
        shown = r.content if r.content is not None else (r.message or "")
        shown = "" if shown is None else str(shown)
        cells = [
            str(r.call_id), _e(r.target), f"<code>{_e(r.name)}</code>", badge(str(r.outcome)), _e(r.cause),
            "" if pd.isna(r.code) else str(int(r.code)),
        ]  # fmt: skip
        left = "".join(f'<td style="text-align:left">{cell}</td>' for cell in cells)
        # the duration, then the content cell as far as its title attribute
        body.append(f'<tr>{left}{HISTORY_MS_CELL(stable, ms=r.duration_ms)}{_e(shown)}">{_e(shown[:200])}</td></tr>')
    more = (
        f'<div style="color:{MUTED};font-size:0.85em">last {rows} of {len(frame)} calls; '
        f"the whole history: <code>mcp_nb.history().to_frame()</code></div>"
        if len(frame) > rows
        else ""
    )
    head = (
        "".join(f'<th style="text-align:left">{h}</th>' for h in ["call", "target", "name", "outcome", "cause"])
        + HISTORY_MS_HEADER(stable)  # the code and ms headers
        + '<th style="text-align:left">content / message</th>'
    )
    return (
        f'<div class="mcp-nb-history" style="font-family:var(--jp-ui-font-family,system-ui,sans-serif);color:{FG}">'
        f"<div><b>History</b>: {len(frame)} calls ({_e(_counts(frame))})</div>"
        f'<table style="border-collapse:collapse;font-size:0.9em"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>{more}</div>"
    )


# -- Connections ---------------------------------------------------------------------------------

_STATE_COLOURS = {"connected": COLOURS["result"], "lost": COLOURS["protocol_error"], "failed": COLOURS["protocol_error"]}


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
    colour = _STATE_COLOURS.get(row["state"], MUTED)
    who = " ".join(p for p in (row.get("server_name"), row.get("server_version")) if p)
    details = [f"<code>{_e(row['target'])}</code>"] if row.get("target") else []
    if row.get("protocol"):
        details.append(f"protocol {_e(row['protocol'])}")
    reason = f' <span style="color:{colour}">({_e(row["reason"])})</span>' if row.get("reason") else ""
    return (
        f'<div class="mcp-nb-connection" style="font-family:var(--jp-ui-font-family,system-ui,sans-serif);color:{FG};'
        f'border:1px solid {BORDER};border-left:4px solid {colour};border-radius:6px;padding:6px 10px;max-width:900px">'
        f'<div style="display:flex;gap:8px;align-items:center;flex-wrap:wrap"><b><code>{_e(row["server"])}</code></b>'
        f"<span>{_e(who)}</span>{_kind_badge(row['transport'])}"
        f'<span style="color:{colour};font-weight:600">{_e(row["state"])}</span>{reason}</div>'
        f'<div style="color:{MUTED};font-size:0.9em">{" · ".join(details)}</div>'
        f"<div>offers {_e(_offers(row))}</div></div>"
    )
