"""Cards: how one outcome, one registration and one connection look, as HTML and as text.

Text views are stable on purpose (nbval compares them): no addresses, no timings. Every look
comes from `views.theme`, which says why it looks as it does.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from mcp_nb.mistakes import visible
from mcp_nb.views.surface import changes_html, changes_text
from mcp_nb.views.theme import (
    AUDIO,
    BORDER,
    CARD_TIME,
    CELL,
    ERROR,
    FATE_TIME,
    IMAGE,
    INKS,
    KIND_INKS,
    LOG_TIME,
    MARKED,
    MEDIA_BOX,
    MUTED,
    PANE,
    PANES,
    SURFACE,
    TRACEBACK,
    UI,
    badge,
    border,
    compact_json,
    corner,
    escape,
    inline,
    is_stable,
    kind_badge,
    outlined,
    pre,
)


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


# mcp_nb's own folder: its frames (the probe around a handler) are mcp_nb's, not the server's.
_OWN = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_FRAME = re.compile(r'^  File "(?P<path>[^"]+)"(?P<rest>, line \d+.*)$')


def _shown_path(path: str) -> str:
    """A frame's file as a reader can place it, without this machine's folders: a kernel's cell
    as IPython names it (`Cell In[5]`), an installed or standard module by its import path
    (`mcp/server/mcpserver/server.py`), anything else by its name."""
    if not os.path.isabs(path):
        return path
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    named = getattr(getattr(shell, "compile", None), "format_code_name", lambda _: None)(path)
    if named:
        return " ".join(named)
    roots = sorted((p for p in sys.path if p and os.path.isabs(p)), key=len, reverse=True)
    for root in roots:
        if path.startswith(root.rstrip(os.sep) + os.sep):
            return path[len(root.rstrip(os.sep)) + 1 :]
    return os.path.basename(path)


def readable_frames(traceback: str) -> str:
    """A formatted traceback as the card shows it: mcp_nb's own frames left out (what remains is
    the server's and the handler's), each file named without the machine's folders (`_shown_path`)."""
    kept, skipping = [], False
    for line in traceback.splitlines():
        frame = _FRAME.match(line)
        if frame:
            skipping = frame["path"].startswith(_OWN)
            if not skipping:
                kept.append(f'  File "{_shown_path(frame["path"])}"{frame["rest"]}')
            continue
        if skipping and line.startswith("    "):  # the skipped frame's source line and carets
            continue
        skipping = False
        kept.append(line)
    return "\n".join(kept)


def _json_text(value: Any, indent: int | None = None) -> str:
    """`value` as JSON text; what JSON cannot say (a cycle, an integer of 5000 digits, nesting past
    Python's limit) as a short note instead, so a card always renders."""
    try:
        return json.dumps(value, indent=indent, default=str)
    except RecursionError:
        return "(nested too deeply to show)"
    except (TypeError, ValueError):
        if isinstance(value, int) and not isinstance(value, bool):
            return format(Decimal(value), ".6e")  # more digits than Python writes out
        return "(cannot be shown as JSON)"


def _compact(value: Any, limit: int = 120) -> str:
    """`compact_json`, for a value that may be anything: it never raises."""
    try:
        return compact_json(value, limit)
    except (RecursionError, TypeError, ValueError):  # its fallback, repr(), fails on what json.dumps does
        return _json_text(value)[:limit]


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
        details.append("structured_content: " + _compact(o.structured_content))
    if o.is_error is not None and o.target == "tool":
        details.append(f"is_error: {o.is_error}")
    return _clipped(o.content if o.content is not None else "", LONGEST_CONTENT, "o.content has them all"), details


def _host_view(o) -> str:
    if o.code is None and o.message is None:
        return "nothing to handle: the request succeeded"
    parts = [str(o.code) if o.code is not None else "", _clipped(o.message or "", LONGEST_LINE, "o.message has them all")]
    line = " ".join(p for p in parts if p)
    if o.data is not None:
        line += "\ndata: " + _compact(o.data)
    for page in pages_to_open(o):
        line += (
            f"\nopen {_inline(page['url'])}"
            + (f" ({_inline(page['message'])})" if page.get("message") else "")
            + ", then call again"
        )
    return line


def pages_to_open(o) -> list[dict]:
    """The pages a `url_required` answer asks the user to open (its data's `elicitations`)."""
    if getattr(o, "cause", None) != "url_required" or not isinstance(o.data, dict):
        return []
    asked = o.data.get("elicitations")
    return [e for e in asked if isinstance(e, dict) and isinstance(e.get("url"), str)] if isinstance(asked, list) else []


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
    return f"via {o.via}" + (f" from {_inline(o.client)}" if o.client else "")  # the client's name for itself


def _header_text(o) -> str:
    args = "" if o.target == "resource" or o.arguments is None else " " + _compact(o.arguments, 80)
    attempt = f", attempt {o.attempt}" if o.attempt > 1 else ""
    return f"Outcome #{o.call_id}{attempt}: {o.outcome} ({o.cause}) - {o.target} {_inline(o.name)}{args}{_on(o)}{_from(o)}"


def _on(o) -> str:
    """Where the call went, said only when it is not the kernel's own server."""
    server = getattr(o, "server", None) or "kernel"
    return "" if server == "kernel" else f" on {_inline(server)}"


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
        head, hidden, tail = shown_logs(logs)
        gap = [f"... {hidden} more (o.server_logs has every one)"] if hidden else []
        said = [_clipped(str(log)) + (f"\n  {_clipped(_root_cause(log))}" if log.exceptions else "") for log in head + tail]
        block("log says", "\n".join(said[: len(head)] + gap + said[len(head) :]))
    else:
        block("log says", "nothing")
    fate = _fate_line(o)
    if fate:
        block("server", fate)
    asked = _asked(o)
    if asked:
        block("user asked", "\n".join(f"{question}\n  -> {answer}" for question, answer in asked))
    sampled = _sampled(o)
    if sampled:
        block("model asked", "\n".join(f"{request}\n  -> {reply}" for request, reply in sampled))
    return "\n".join(lines)


# A card shows a call's first and last log entries, and says how many it leaves out: a call that
# logged 10,000 lines made a card of 4.6 MB, which a notebook saves and a browser must lay out.
LOG_HEAD, LOG_TAIL = 20, 20
LONGEST_LINE = 2000  # characters of one entry's message a card shows


def shown_logs(logs) -> tuple[list, int, list]:
    """The entries a card shows first and last, and how many between them it leaves out."""
    logs = list(logs)
    if len(logs) <= LOG_HEAD + LOG_TAIL:
        return logs, 0, []
    return logs[:LOG_HEAD], len(logs) - LOG_HEAD - LOG_TAIL, logs[-LOG_TAIL:]


# Characters of a result's text a card shows: a tool (or a server) may answer megabytes, which a
# notebook would save twice (as text and as HTML) and a browser lay out. The Outcome has it all.
LONGEST_CONTENT = 20_000
LONGEST_NAME = 200  # characters of a name, a version, a reason on a line of the card's own


def _clipped(text: str, limit: int = LONGEST_LINE, whole: str = "") -> str:
    """Text someone else wrote, safe to show (`mistakes.visible`), and at most `limit` characters of it."""
    text = visible(text)
    if len(text) <= limit:
        return text
    return text[:limit] + f" … ({len(text) - limit:,} more characters" + (f": {whole})" if whole else ")")


def _inline(text: Any, limit: int = LONGEST_NAME) -> str:
    """A name (a tool's, a server's, a client's) on a line the card makes: one line, safe to show,
    at most `limit` characters."""
    text = visible(text, inline=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _asked(o) -> list[tuple[str, str]]:
    """The questions the server asked during the call and their answers, as (question, answer) lines.

    No times: how long an answer took varies from run to run; the Outcome has it.
    """
    out = []
    for e in getattr(o, "elicitations", None) or ():
        e = e.as_dict() if hasattr(e, "as_dict") else e
        question = _clipped(e["message"]) + (f" (open {_inline(e['url'], LONGEST_LINE)})" if e.get("url") else "")
        answer = e["action"] + (" " + _compact(e["content"]) if e.get("content") else "")
        answer += {"elicit": ", from the call's elicit=", "default": ", from the configured elicit", "form": ", in the form"}.get(
            e["source"], ""
        )
        if e.get("reason"):
            answer += f": {e['reason']}"
        out.append((question, answer))
    return out


def _sampled(o) -> list[tuple[str, str]]:
    """The completions the server asked of the client's model and the replies, as (request, reply)
    lines: the last message of each request, and the reply's text (or why it was refused)."""
    out = []
    for sampled in getattr(o, "samplings", None) or ():
        s = sampled.as_dict() if hasattr(sampled, "as_dict") else sampled
        messages = s.get("messages") or []
        request = _clipped(messages[-1]["text"]) if messages else "(no messages)"
        if len(messages) > 1:
            request += f" (the last of {len(messages)} messages)"
        if s.get("text") is None:
            reply = f"refused: {s.get('reason')}"
        else:
            where = {"function": "the sampling function", "prepared": "a prepared reply"}.get(s.get("source"), s.get("source"))
            reply = f"replied {_clipped(s['text'])!r} ({where}" + (f", model {s['model']}" if s.get("model") else "") + ")"
            if s.get("tool_use"):
                reply += f", asking for the tool {s['tool_use']['name']} with {_compact(s['tool_use']['input'])}"
        out.append((request, reply))
    return out


# A card inlines each image or sound of up to LARGEST_MEDIA characters of base64 (1.5 MB of
# image), and MEDIA_BUDGET characters over all of them: a notebook saves the card, and a browser
# lays it out. What is left out is named with its size; `Outcome.media` has it all.
LARGEST_MEDIA = 2_000_000
MEDIA_BUDGET = 4_000_000
_MEDIA_TYPE = re.compile(r"(image|audio)/[A-Za-z0-9][A-Za-z0-9.+-]*")
_BASE64 = re.compile(r"[A-Za-z0-9+/ \t\r\n]*=?=?[ \t\r\n]*")  # base64, wrapped in lines or not


def _media_parts(block) -> tuple[str, str, str]:
    """(kind, media type, base64 data) of an image, a sound, or an embedded resource's blob."""
    inner = getattr(block, "resource", None)
    if inner is not None:
        mime = getattr(inner, "mime_type", None) or ""
        return mime.partition("/")[0], mime, getattr(inner, "blob", None) or ""
    return getattr(block, "type", ""), getattr(block, "mime_type", None) or "", getattr(block, "data", None) or ""


def _size(characters: int) -> str:
    """The size of `characters` of base64 once decoded, for a reader."""
    size = characters * 3 // 4
    if size >= 1_000_000:
        return f"{size / 1_000_000:.1f} MB"
    return f"{size / 1000:.1f} kB" if size >= 1000 else f"{size} bytes"


def _media_html(o) -> str:
    """The result's images and sounds, each as itself (within the card's budget) or named."""
    media = getattr(o, "media", None) or ()
    if not media or o.fallback:
        return ""
    budget, shown = MEDIA_BUDGET, []
    for block in media:
        kind, mime, data = _media_parts(block)
        label = f"{kind} {mime}, {_size(len(data))}"
        note = None
        if not _MEDIA_TYPE.fullmatch(mime) or not mime.startswith(kind + "/"):
            note = f"{kind}: not shown: not a media type ({_compact(mime, 60)})"
        elif len(data) > LARGEST_MEDIA:
            note = f"{label}: too large to show here (o.media has it)"
        elif len(data) > budget:
            note = f"{label}: not shown, the card holds {_size(MEDIA_BUDGET - budget)} of media already (o.media has it)"
        elif not _BASE64.fullmatch(data):
            note = f"{label}: not shown: not base64"
        if note is not None:
            shown.append(f'<div style="{MEDIA_BOX};{MUTED};font-size:0.85em">{escape(note)}</div>')
            continue
        budget -= len(data)
        source = f"data:{mime};base64,{data}"  # both checked above: nothing in them needs escaping
        if kind == "image":
            item = f'<img src="{source}" alt="{escape(label)}" title="{escape(label)}" style="{IMAGE}">'
        else:
            item = f'<audio controls src="{source}" title="{escape(label)}" style="{AUDIO}"></audio>'
        shown.append(f'<div style="{MEDIA_BOX}">{item}<div style="{MUTED};font-size:0.8em">{escape(label)}</div></div>')
    return "".join(shown)


def outcome_html(o, stable: bool | None = None) -> str:
    """The outcome card; `stable` (default: the `stable_output` setting) leaves out what changes from run to run."""
    stable = is_stable(stable)
    headline, details = _model_view(o)
    model = pre(headline) + "".join(f'<div style="{MUTED};font-size:0.85em">{escape(d)}</div>' for d in details)
    host = pre(_host_view(o))
    if o.server_logs:
        items = []
        head, hidden, tail = shown_logs(o.server_logs)
        for log in [*head, None, *tail] if hidden else head:
            if log is None:
                items.append(
                    f'<div style="{MUTED};margin:4px 0">… {hidden:,} more log entries: <code>o.server_logs</code> has every one</div>'
                )
                continue
            level = ERROR.text if log.level in ("ERROR", "CRITICAL") else MUTED
            mark = f'<span style="{MUTED}">[{escape(log.source)}]</span> ' if log.source in MARKED else ""
            at = _log_time(o, log.at, stable)
            item = (
                f'<div>{mark}<b style="{level}"{at}{escape(log.level)}</b> <span style="{MUTED}">{escape(log.logger)}</span>'
                f"{pre(_clipped(log.message))}"
            )
            if log.traceback:
                shown = without_frames(log.traceback) if stable else readable_frames(log.traceback)
                item += TRACEBACK.format(cause=escape(_root_cause(log) or "traceback"), traceback=escape(shown))
            items.append(item + "</div>")
        logs = "".join(items)
    else:
        logs = f'<span style="{MUTED}">nothing</span>'
    args = "" if o.target == "resource" or o.arguments is None else _compact(o.arguments, 80)

    def pane(title: str, body: str, look: str = PANE) -> str:
        return (
            f'<div style="{look};{BORDER};border-radius:6px;padding:6px 8px">'
            f'<div style="font-size:0.8em;text-transform:uppercase;letter-spacing:0.04em;{MUTED};margin-bottom:4px">'
            f"{title}</div>{body}</div>"
        )

    # The images and sounds the model is given, under the panes at the card's full width: a chart
    # squeezed into a third of it would not read.
    media = _media_html(o)
    media_html = pane("What the model sees: its images and sounds", media, "margin-top:8px") if media else ""

    attempt = f" attempt {o.attempt}" if o.attempt > 1 else ""
    took = CARD_TIME(stable, ms=o.duration_ms)
    fate = _fate_line(o)
    fate_html = ""
    if fate:
        after = o.fate_after_ms
        when = FATE_TIME(stable, seconds=after / 1000) if after is not None else FATE_TIME.stable
        fate_html = (
            f'<div style="margin-top:6px;padding:4px 8px;{INKS["timeout"].line("-left", "3px")};{SURFACE}">'
            f"<b>Server side:</b> {escape(fate)}{when}"
        )
    asked_html = "".join(
        f'<div style="margin-top:6px;padding:4px 8px;{BORDER};border-radius:6px;{SURFACE}">'
        f'<b>The server asked:</b> {escape(question)}<div style="{MUTED}">answered {escape(answer)}</div></div>'
        for question, answer in _asked(o)
    ) + "".join(
        f'<div style="margin-top:6px;padding:4px 8px;{BORDER};border-radius:6px;{SURFACE}">'
        f'<b>The server asked the model:</b> {escape(request)}<div style="{MUTED}">{escape(reply)}</div></div>'
        for request, reply in _sampled(o)
    )
    header = (
        corner(f"#{o.call_id}{attempt}")
        + took  # the corner's span ends in `took`
        + inline(badge(o.outcome))
        + inline(f"<b>{escape(o.cause)}</b>")
        + inline(kind_badge(o.target))
        + inline(f"<code>{escape(o.name)}</code>")
        + (inline(escape(_on(o).strip()), MUTED) if _on(o) else "")
        + (inline(escape(_sender(o)), MUTED) if o.via != "kernel" else "")
        + (f'<code style="{MUTED}">{escape(args)}</code>' if args else "")
    )
    return (
        f'<div class="mcp-nb-outcome" style="{UI};{BORDER};border-radius:8px;padding:8px 10px;margin:2px 0;max-width:1100px">'
        f'<div style="margin-bottom:8px">{header}</div>'
        f'<div style="{PANES}">'
        f"{pane('What the model sees', model)}{pane('What the host sees', host)}{pane('What the log says', logs)}"
        f"</div>{media_html}{fate_html}{asked_html}</div>"
    )


# -- Registration -------------------------------------------------------------------------------


# The schemas here are whatever a server published (or a cell declared): any JSON value. A card
# shows what it can read of one and never raises: a keyword of another shape is passed over,
# `true` (or anything that is no schema) reads as "any", `false` as "nothing".


def _parameters(schema: Any) -> list[tuple[str, str, bool, str]]:
    """(name, type, required, description) of each property of an object schema."""
    if not isinstance(schema, Mapping):
        return []
    required = schema.get("required")
    required = {n for n in required if isinstance(n, str)} if isinstance(required, list) else set()
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return []
    rows = []
    for name, prop in properties.items():
        kind = schema_type(prop, schema)
        description = ""
        if isinstance(prop, Mapping):
            if "default" in prop:
                kind += " = " + _json_text(prop["default"])
            if isinstance(prop.get("description"), str):
                description = prop["description"]
        rows.append((str(name), kind, name in required, description))
    return rows


_NESTED = 12  # a schema nested deeper than this (a Python dict that holds itself) is named "…" there


def schema_type(prop: Any, root: Any = None, depth: int = 0) -> str:
    """A short human name for a JSON Schema: `integer`, `string | null`, `array[string]`, `Book`..."""
    if prop is False:
        return "nothing"
    if not isinstance(prop, Mapping):
        return "any"  # `true`, or a value that is no schema: nothing is ruled out
    if depth > _NESTED:
        return "…"
    ref = prop.get("$ref")
    if isinstance(ref, str):
        return ref.rsplit("/", 1)[-1] or ref
    members = next((m for m in (prop.get("anyOf"), prop.get("oneOf")) if isinstance(m, list) and m), None)
    if members is not None:
        return " | ".join(schema_type(p, root, depth + 1) for p in members)
    if isinstance(prop.get("enum"), list):
        return "enum(" + ", ".join(_json_text(v) for v in prop["enum"]) + ")"
    kind = prop.get("type", "any")
    if isinstance(kind, list):
        return " | ".join(k for k in kind if isinstance(k, str)) or "any"
    if not isinstance(kind, str):
        return "any"
    if kind == "array" and isinstance(prop.get("items"), Mapping):
        return f"array[{schema_type(prop['items'], root, depth + 1)}]"
    return kind


def registration_text(r) -> str:
    where = f" {_inline(r.uri, LONGEST_LINE)}" if r.uri else ""
    state = "replaced" if r.replaced else "registered"
    lines = [f"{r.kind} {_inline(r.name)}{where} ({state}{', async' if r.is_async else ''})"]
    if r.title:
        lines.append(f"  title: {_inline(r.title, LONGEST_LINE)}")
    first = (r.description or "").strip().splitlines()
    if first:  # a description of blanks has no first line
        lines.append("  " + _inline(first[0], LONGEST_LINE))
    if r.annotations:
        lines.append("  annotations: " + ", ".join(_inline(a) for a in sorted(r.annotations)))
    if r.faults:
        lines.append(f"  faults injected: {r.faults}")
    params = _parameters(r.input_schema)
    if params:
        lines.append("  parameters:")
        for name, kind, required, _ in params:
            lines.append(f"    {_inline(name)}: {_inline(kind, LONGEST_LINE)}{' (required)' if required else ''}")
    elif r.kind != "resource" or r.input_schema is not None:
        lines.append("  parameters: none")
    fields, models = _returns(getattr(r, "output_schema", None))
    if fields:
        lines.append("  returns (output schema):")
        lines.extend(f"    {_inline(name)}: {_inline(kind, LONGEST_LINE)}" for name, kind, _, _ in fields)
        lines.extend(f"    {_inline(model)}: {_inline(described, LONGEST_LINE)}" for model, described in models)
    changes = getattr(r, "changes", ())
    if changes:
        lines.append("  what changed for clients:")
        lines.extend(changes_text(changes, "    "))
    return "\n".join(lines)


_PLAIN = frozenset({"string", "integer", "number", "boolean", "null"})


def _one_plain_value(schema: Mapping[str, Any]) -> bool:
    """The SDK's wrapper of one plain value (`-> str` gives `{"result": string}`): the result's
    text says all it does, so the card leaves it out."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or set(properties) != {"result"} or schema.get("$defs"):
        return False
    result = properties["result"]
    kind = result.get("type") if isinstance(result, Mapping) else None
    if isinstance(kind, str):
        return kind in _PLAIN
    return isinstance(kind, list) and bool(kind) and all(isinstance(k, str) and k in _PLAIN for k in kind)


def _returns(schema: dict[str, Any] | None) -> tuple[list[tuple[str, str, bool, str]], list[tuple[str, str]]]:
    """What a tool's output schema promises: its top-level fields, and each model it refers to,
    as `Book: title string, year integer`."""
    if not isinstance(schema, Mapping) or _one_plain_value(schema):
        return [], []
    fields = _parameters(schema)
    models = []
    defs = schema.get("$defs")
    for model, sub in defs.items() if isinstance(defs, Mapping) else ():
        if isinstance(sub, Mapping):
            models.append((str(model), ", ".join(f"{n} {k}" for n, k, _, _ in _parameters(sub)) or schema_type(sub, schema)))
    return fields, models


def registration_html(r) -> str:
    params = _parameters(r.input_schema)
    th = f'style="text-align:left;{CELL};padding-left:0"'
    td = f'style="text-align:left;{CELL};padding-left:0;vertical-align:top"'
    rows = "".join(
        f"<tr><td {td}><code>{escape(n)}</code></td><td {td}><code>{escape(k)}</code></td><td {td}>{'yes' if req else ''}</td>"
        f'<td {td}><span style="{MUTED}">{escape(d)}</span></td></tr>'
        for n, k, req, d in params
    )
    table = (
        f'<table style="border-collapse:collapse;font-size:0.9em;margin-top:4px"><thead><tr>'
        f"<th {th}>parameter</th><th {th}>type</th><th {th}>required</th><th {th}>description</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
        if params
        else f'<div style="{MUTED};font-size:0.9em">no parameters</div>'
    )
    chips = "".join(inline(outlined(a, size="0.8em")) for a in sorted(r.annotations))
    if r.faults:
        chips += inline(outlined(f"faults injected: {r.faults}", ERROR, size="0.8em"))
    schema = ""
    if r.input_schema:
        schema = (
            f'<details><summary style="cursor:pointer;{MUTED};font-size:0.85em">input schema</summary>'
            f"{pre(_json_text(r.input_schema, indent=2))}</details>"
        )
    output = getattr(r, "output_schema", None)
    fields, models = _returns(output)
    if fields:
        returned = "".join(
            f"<tr><td {td}><code>{escape(n)}</code></td><td {td}><code>{escape(k)}</code></td><td {td}>{'yes' if req else ''}</td>"
            f'<td {td}><span style="{MUTED}">{escape(d)}</span></td></tr>'
            for n, k, req, d in fields
        )
        returned += "".join(
            f'<tr><td {td}><code>{escape(m)}</code></td><td {td} colspan="3"><span style="{MUTED}">{escape(d)}</span></td></tr>'
            for m, d in models
        )
        table += (
            f'<table style="border-collapse:collapse;font-size:0.9em;margin-top:4px"><thead><tr>'
            f"<th {th}>returns</th><th {th}>type</th><th {th}>required</th><th {th}>description</th></tr></thead>"
            f"<tbody>{returned}</tbody></table>"
        )
        schema += (
            f'<details><summary style="cursor:pointer;{MUTED};font-size:0.85em">output schema</summary>'
            f"{pre(_json_text(output, indent=2))}</details>"
        )
    desc = escape((r.description or "").strip())
    state = "replaced the earlier version" if r.replaced else "registered"
    line = KIND_INKS[r.kind].line("-left", "4px") if r.kind in KIND_INKS else border("-left", "4px")
    return (
        f'<div class="mcp-nb-registration" style="{UI};{BORDER};{line};border-radius:6px;padding:6px 10px;max-width:900px">'
        f"<div>{corner(state + (' · async' if r.is_async else ''))}</span>"
        f"{inline(kind_badge(r.kind))}{inline(f'<b><code>{escape(r.name)}</code></b>')}"
        + (inline(f"<code>{escape(r.uri)}</code>") if r.uri else "")
        + (inline(escape(r.title)) if r.title else "")
        + f"{chips}</div>"
        + (f'<div style="white-space:pre-wrap;margin:4px 0">{desc}</div>' if desc else "")
        + changes_html(getattr(r, "changes", ()))
        + f"{table}{schema}</div>"
    )


# -- Connections ---------------------------------------------------------------------------------

_STATE_INKS = {"connected": INKS["result"], "lost": ERROR, "failed": ERROR}


def _offers(row: dict[str, Any]) -> str:
    parts = [f"{row[k]} {k}{'s' if row[k] != 1 else ''}" for k in ("tool", "resource", "template", "prompt") if row.get(k)]
    return ", ".join(parts) or "nothing"


def _then(row: dict[str, Any]) -> str:
    """What the person does after approving, by how the flow's answer comes back."""
    if row.get("callback") == "paste":
        return "copy the whole address the browser lands on (its page will not load) into mcp_nb.complete_auth('...')"
    return "come back here: the notebook hears the approval by itself"


def _protocol(row: dict[str, Any]) -> str:
    """The protocol version the connection speaks, and whether the user pinned it (`mode=`)."""
    if not row.get("protocol"):
        return ""
    pinned = row.get("mode") not in (None, "", "auto")
    return f"protocol {_inline(row['protocol'])}" + (" (pinned)" if pinned else "")


def _who(row: dict[str, Any]) -> str:
    """The name and version the server gave of itself (whatever it gave, shown on one line)."""
    return " ".join(_inline(p) for p in (row.get("server_name"), row.get("server_version")) if p)


def _target(row: dict[str, Any]) -> str:
    """The command or URL the connection was made with; the kernel's own interpreter (a command
    started with `sys.executable`) by its file name, not by the folders it lives in on this machine."""
    target = str(row.get("target") or "")
    if sys.executable and target.startswith(sys.executable + " "):
        return os.path.basename(sys.executable) + target[len(sys.executable) :]
    return target


def connection_text(row: dict[str, Any]) -> str:
    who = _who(row)
    reason = ", " + _inline(row["reason"], LONGEST_LINE) if row.get("reason") else ""
    lines = [f"server {_inline(row['server'])} ({row['transport']}, {row['state']}{reason})"]
    if who or row.get("protocol"):
        lines.append("  " + ", ".join(part for part in (who, _protocol(row)) if part))
    if row.get("target"):
        lines.append(f"  {_inline(_target(row), LONGEST_LINE)}")
    if row.get("authorize"):
        lines.append(f"  approve in the browser: {_inline(row['authorize'], LONGEST_LINE)}")
        lines.append("  then " + _then(row))
    else:
        lines.append(f"  offers {_offers(row)}")
    if row.get("unavailable"):
        lines.append(f"  unavailable: {_inline(row['unavailable'], LONGEST_LINE)}")
    return "\n".join(lines)


def _link(url: Any, label: str) -> str:
    """A link to a web page a server named; any other kind of address (`javascript:`) as text."""
    url = str(url)
    if not url.lower().startswith(("https://", "http://")):
        return f"{label} <code>{escape(url)}</code>"
    return f'<a href="{escape(url)}" target="_blank" rel="noopener noreferrer">{label}</a>'


def connection_html(row: dict[str, Any]) -> str:
    ink = _STATE_INKS.get(row["state"])
    state = ink.text if ink else MUTED
    who = _who(row)
    details = [f"<code>{escape(_target(row))}</code>"] if row.get("target") else []
    if row.get("protocol"):
        details.append(escape(_protocol(row)))
    reason = f' <span style="{state}">({escape(row["reason"])})</span>' if row.get("reason") else ""
    line = ink.line("-left", "4px") if ink else border("-left", "4px")
    return (
        f'<div class="mcp-nb-connection" style="{UI};{BORDER};{line};border-radius:6px;padding:6px 10px;max-width:900px">'
        f"<div>{inline('<b><code>' + escape(row['server']) + '</code></b>')}"
        + (inline(escape(who)) if who else "")
        + f"{inline(kind_badge(row['transport']))}"
        f'<span style="{state};font-weight:600">{escape(row["state"])}</span>{reason}</div>'
        f'<div style="{MUTED};font-size:0.9em">{" · ".join(details)}</div>'
        + (
            f"<div>{_link(row['authorize'], '<b>Approve in the browser</b>')}"
            f' <span style="{MUTED}">then {escape(_then(row))}</span></div>'
            if row.get("authorize")
            else f"<div>offers {escape(_offers(row))}</div>"
        )
        + (
            f'<div style="{MUTED};font-size:0.9em">unavailable: {escape(row["unavailable"])}</div>'
            if row.get("unavailable")
            else ""
        )
        + "</div>"
    )
