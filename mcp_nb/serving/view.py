"""How a serving handle looks: where it listens, whether a token guards it, what it refused.

The token is a secret, and a cell's output is saved with the notebook: the summary shows
only its first characters. The ready-to-paste client settings (which must carry it
whole) are folded away in the HTML view and absent from the text view; `handle.token`
and `handle.configs()` give them in full. A token is worth nothing once its server
stops: every start makes a new one.
"""

from __future__ import annotations

import html

from mcp_nb.views.theme import BORDER, CELL, MONO, MUTED, SURFACE, UI


def masked(token: str | None) -> str:
    return "none (dangerously_no_auth)" if token is None else f"{token[:4]}… (handle.token)"


def _refused(handle) -> str:
    counts = handle.refused
    if not counts:
        return "none"
    return f"{sum(counts.values())} ({', '.join(f'{reason} {n}' for reason, n in sorted(counts.items()))})"


def serving_text(handle) -> str:
    state = "serving" if handle.running else "stopped"
    lines = [
        f"mcp_nb {state} at {handle.url}",
        f"  token     {masked(handle.token)}",
        f"  calls     {handle.calls} from outside clients (in the history, via http)",
        f"  refused   {_refused(handle)}",
    ]
    if handle.running:
        lines.append("  stop with %mcp_serve --stop or handle.stop(); client settings: handle.configs()")
    return "\n".join(lines)


def serving_html(handle) -> str:
    e = html.escape
    state = "serving" if handle.running else "stopped"
    rows = [
        ("token", masked(handle.token)),
        ("calls", f"{handle.calls} from outside clients (in the history, via http)"),
        ("refused", _refused(handle)),
    ]
    table = "".join(
        f'<tr><td style="{MUTED};{CELL};padding-left:0;text-align:left">{e(k)}</td>'
        f'<td style="{CELL};text-align:left">{e(v)}</td></tr>'
        for k, v in rows
    )
    blocks = ""
    if handle.running:
        blocks = "".join(
            f'<div style="margin-top:6px">{e(client)}</div>'
            f'<pre style="margin:2px 0;padding:6px;{SURFACE};{MONO};font-size:0.85em;color:inherit;'
            f'white-space:pre-wrap;word-break:break-all">{e(text)}</pre>'
            for client, text in handle.configs().items()
        )
        blocks = (
            f'<details style="margin-top:6px"><summary>client settings (they hold the token)</summary>{blocks}</details>'
            f'<div style="{MUTED};font-size:0.85em;margin-top:4px">stop with <code>%mcp_serve --stop</code> '
            f"or <code>handle.stop()</code></div>"
        )
    return (
        f'<div class="mcp-nb-serving" style="{UI};{BORDER};border-radius:6px;padding:8px 10px">'
        f"<div><b>mcp_nb {state}</b> at <code>{e(handle.url)}</code></div>"
        f'<table style="border-collapse:collapse;font-size:0.9em;margin-top:4px">{table}</table>{blocks}</div>'
    )
