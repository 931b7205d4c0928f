"""How a serving handle looks: where it listens, whether a token guards it, what it refused.

The token is a secret, and a cell's output is saved with the notebook: no view prints it.
The summary shows only its first characters; the client settings in the HTML view stand
with a placeholder where the token goes, and the text view leaves them out. `handle.token`
and `handle.configs()` give them in full, to whoever asks in code.
"""

from __future__ import annotations

import html

from mcp_nb.views.theme import BORDER, CELL, MONO, MUTED, SURFACE, UI

# What the settings shown in a cell's output say where the token goes.
TOKEN_SHOWN = "<the token: handle.token>"


def masked(token: str | None) -> str:
    return "none (dangerously_no_auth)" if token is None else f"{token[:4]}… (handle.token)"


def _shown(configs: dict[str, str], token: str | None) -> dict[str, str]:
    """The client settings as a saved output may hold them: the placeholder where the token goes."""
    if token is None:
        return configs
    return {client: text.replace(token, TOKEN_SHOWN) for client, text in configs.items()}


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
            for client, text in _shown(handle.configs(), handle.token).items()
        )
        blocks = (
            f'<details style="margin-top:6px"><summary>client settings (put in the token: '
            f"<code>handle.token</code>, or all of them filled in: <code>handle.configs()</code>)</summary>{blocks}</details>"
            f'<div style="{MUTED};font-size:0.85em;margin-top:4px">stop with <code>%mcp_serve --stop</code> '
            f"or <code>handle.stop()</code></div>"
        )
    return (
        f'<div class="mcp-nb-serving" style="{UI};{BORDER};border-radius:6px;padding:8px 10px">'
        f"<div><b>mcp_nb {state}</b> at <code>{e(handle.url)}</code></div>"
        f'<table style="border-collapse:collapse;font-size:0.9em;margin-top:4px">{table}</table>{blocks}</div>'
    )
