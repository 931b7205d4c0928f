"""HTML and text views of outcomes, registrations and the history.

Text views are stable on purpose (nbval compares them): no addresses, no timings.
HTML uses inline styles with JupyterLab's theme variables, so the cards read in
light and dark themes, in Notebook 7, VS Code and nbconvert output alike.
"""

from __future__ import annotations

import html
import json
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
    return (
        f'<pre style="margin:0;white-space:pre-wrap;word-break:break-word;font-family:{MONO};'
        f'font-size:0.9em;background:none;color:{FG}">{_e(text)}</pre>'
    )


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
        return o.content or "", ["fallback content: the read failed, this is the caller's fallback"]
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
    }[fate]


def _sender(o) -> str:
    """Who made an outside client's call ("" for mcp_nb's own calls, which is what most cards show)."""
    if o.via == "kernel":
        return ""
    return f"via {o.via}" + (f" from {o.client}" if o.client else "")


def _header_text(o) -> str:
    args = "" if o.target == "resource" or o.arguments is None else " " + compact_json(o.arguments, 80)
    attempt = f", attempt {o.attempt}" if o.attempt > 1 else ""
    sender = f" ({_sender(o)})" if o.via != "kernel" else ""
    return f"Outcome #{o.call_id}{attempt}: {o.outcome} ({o.cause}) - {o.target} {o.name}{args}{sender}"


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


def outcome_html(o) -> str:
    headline, details = _model_view(o)
    model = _pre(headline) + "".join(f'<div style="color:{MUTED};font-size:0.85em">{_e(d)}</div>' for d in details)
    host = _pre(_host_view(o))
    if o.server_logs:
        items = []
        for log in o.server_logs:
            colour = ERROR if log.level in ("ERROR", "CRITICAL") else MUTED
            item = f'<div><b style="color:{colour}">{_e(log.level)}</b> <span style="color:{MUTED}">{_e(log.logger)}</span>{_pre(log.message)}'
            if log.traceback:
                item += (
                    f'<details><summary style="cursor:pointer">{_e(_root_cause(log) or "traceback")}</summary>'
                    f"{_pre(log.traceback)}</details>"
                )
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
    fate = _fate_line(o)
    fate_html = ""
    if fate:
        after = o.fate_after_ms
        when = f" at {after / 1000:.2f} s" if after is not None else ""
        fate_html = (
            f'<div style="margin-top:6px;padding:4px 8px;border-left:3px solid {COLOURS["timeout"]};background:{SURFACE}">'
            f"<b>Server side:</b> {_e(fate)}{_e(when)}</div>"
        )
    return (
        f'<div class="mcp-nb-outcome" style="font-family:var(--jp-ui-font-family,system-ui,sans-serif);color:{FG};'
        f'border:1px solid {BORDER};border-radius:8px;padding:8px 10px;margin:2px 0;max-width:1100px">'
        f'<div style="display:flex;gap:8px;align-items:center;flex-wrap:wrap;margin-bottom:6px">{badge(o.outcome)}'
        f"<b>{_e(o.cause)}</b>{_kind_badge(o.target)}<code>{_e(o.name)}</code>"
        f'<code style="color:{MUTED}">{_e(args)}</code>'
        + (f'<span style="color:{MUTED};font-size:0.85em">{_e(_sender(o))}</span>' if o.via != "kernel" else "")
        + f'<span style="margin-left:auto;color:{MUTED};font-size:0.85em">#{o.call_id}{attempt} · {o.duration_ms:.1f} ms</span></div>'
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


def _outside(frame: pd.DataFrame) -> bool:
    """Whether outside clients made any of these calls (only then is who made each one shown)."""
    return bool((frame["via"].astype(str) != "kernel").any())


def _via(row) -> str:
    return "" if str(row.via) == "kernel" else f"{row.via}" + (f" {row.client}" if isinstance(row.client, str) else "")


def _counts(frame: pd.DataFrame) -> str:
    counts = frame["outcome"].value_counts()
    return ", ".join(f"{name} {int(counts.get(name, 0))}" for name in COLOURS)


def _cell(value: Any, limit: int) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return ""
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def history_text(frame: pd.DataFrame, rows: int) -> str:
    import pandas as pd

    if frame.empty:
        return "History: no calls yet"
    head = f"History: {len(frame)} calls ({_counts(frame)})"
    tail = frame.tail(rows)[_SHOWN].copy()
    tail["content"] = [_cell(v, 40) for v in tail["content"].astype(object)]
    tail["message"] = [_cell(v, 40) for v in tail["message"].astype(object)]
    tail["code"] = ["" if pd.isna(v) else str(int(v)) for v in tail["code"]]
    if _outside(frame):
        tail["via"] = [_via(r) for r in frame.tail(rows).itertuples(index=False)]
    note = f"\n(last {rows} of {len(frame)}; the whole history: mcp_nb.history().to_frame())" if len(frame) > rows else ""
    return head + "\n" + tail.to_string(index=False) + note


def history_html(frame: pd.DataFrame, rows: int) -> str:
    import pandas as pd

    if frame.empty:
        return f'<div style="color:{MUTED}">History: no calls yet</div>'
    tail = frame.tail(rows)
    outside = _outside(frame)
    body = []
    for r in tail.itertuples(index=False):
        shown = r.content if r.content is not None else (r.message or "")
        shown = "" if shown is None else str(shown)
        cells = [
            str(r.call_id), _e(r.target), f"<code>{_e(r.name)}</code>", badge(str(r.outcome)), _e(r.cause),
            "" if pd.isna(r.code) else str(int(r.code)),
        ] + ([_e(_via(r))] if outside else [])  # fmt: skip
        left = "".join(f'<td style="text-align:left">{cell}</td>' for cell in cells)
        body.append(
            f'<tr>{left}<td style="text-align:right">{r.duration_ms:.1f}</td>'
            f'<td style="text-align:left;max-width:420px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap" '
            f'title="{_e(shown)}">{_e(shown[:200])}</td></tr>'
        )
    more = (
        f'<div style="color:{MUTED};font-size:0.85em">last {rows} of {len(frame)} calls; '
        f"the whole history: <code>mcp_nb.history().to_frame()</code></div>"
        if len(frame) > rows
        else ""
    )
    head = "".join(
        f'<th style="text-align:left">{h}</th>'
        for h in ["call", "target", "name", "outcome", "cause", "code", *(["via"] if outside else []), "ms", "content / message"]
    )
    return (
        f'<div class="mcp-nb-history" style="font-family:var(--jp-ui-font-family,system-ui,sans-serif);color:{FG}">'
        f"<div><b>History</b>: {len(frame)} calls ({_e(_counts(frame))})</div>"
        f'<table style="border-collapse:collapse;font-size:0.9em"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>{more}</div>"
    )
