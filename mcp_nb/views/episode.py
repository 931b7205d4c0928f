"""How an episode looks: the conversation, each tool call's card inline, how it ended, as HTML and as text.

Read top to bottom as the model lived it: the task; each turn, the model's words and the tools it
asked for, each call's outcome card (model / host / log, `cards.py`) or why the host did not send
it, and what the host told the model of it (and by which rule of its policy); then how the episode
ended and what each failure led to. The scripted stand-in is labelled as such on every episode it
plays. Like the other views, this draws what it is handed and imports nothing of what it draws;
the text form holds nothing that changes from run to run, and the HTML form's only time is the
outcome card's own (`CARD_TIME`), which the nbval sanitizer knows.
"""

from __future__ import annotations

from typing import Any

from mcp_nb.views.cards import outcome_html, outcome_text
from mcp_nb.views.theme import (
    BORDER,
    CARD_TIME,
    ERROR,
    INKS,
    MUTED,
    SURFACE,
    UI,
    compact_json,
    corner,
    escape,
    inline,
    is_stable,
    outlined,
    pre,
)

STOP_INKS = {
    "answered": INKS["result"],
    "out_of_turns": INKS["timeout"],
    "budget": INKS["timeout"],
    "cancelled": INKS["timeout"],
    "model_failed": ERROR,
    "host_stopped": INKS["tool_error"],
}
STOP_WORDS = {
    "answered": "answered",
    "out_of_turns": "out of turns",
    "model_failed": "the model failed",
    "budget": "a budget was reached",
    "host_stopped": "the host stopped it",
    "cancelled": "cancelled",
}
LONGEST_WORDS = 4000  # characters of a model's words (or of what it was told) a view shows


def _clipped(text: str | None) -> str:
    text = text or ""
    return text if len(text) <= LONGEST_WORDS else text[:LONGEST_WORDS] + f"… ({len(text) - LONGEST_WORDS:,} more characters)"


def _arguments(text: str) -> str:
    return text if len(text) <= 200 else text[:199] + "…"


def _ending(e: Any) -> str:
    words = STOP_WORDS.get(e.stop, e.stop)
    if e.stop == "answered":
        return words
    return f"{words}: {e.detail}" if e.detail else words


def _recovery(e: Any) -> str:
    fates = [f for f in e.fates() if f is not None]
    if not fates:
        return "no call failed"
    counted = {f: fates.count(f) for f in dict.fromkeys(fates)}
    said = ", ".join(f"{fate.replace('_', ' ')} {n}" for fate, n in counted.items())
    return f"{len(fates)} failed call{'s' if len(fates) != 1 else ''}: {said}"


def _who(e: Any) -> str:
    return e.model_label if e.stand_in else (e.model_label or e.model)


def _verdict(e: Any) -> str:
    return "" if e.passed is None else (" - check passed" if e.passed else " - check failed")


# -- text ---------------------------------------------------------------------------------------


def episode_text(e: Any) -> str:
    head = f"Episode #{e.id}: {STOP_WORDS.get(e.stop, e.stop)} after {len(e.turns)} turn{'s' if len(e.turns) != 1 else ''}"
    lines = [f"{head} - {_who(e)}{_verdict(e)}"]

    def block(label: str, text: str) -> None:
        first, *rest = (text or "").splitlines() or [""]
        lines.append(f"  {label:<11} {first}")
        lines.extend(f"  {'':<11} {line}" for line in rest)

    block("task", e.task)
    for turn in e.turns:
        said = []
        if turn.content:
            said.append(f"says {_clipped(turn.content)}")
        for step in turn.steps:
            said.append(f"calls {step.name} {_arguments(step.arguments)}")
            if step.outcome is not None:
                card = outcome_text(step.outcome).splitlines()
                said.append(f"-> {card[0]}")
            else:
                said.append(f"-> not sent: {step.reason}")
            if step.told is not None:
                said.append(f"told ({step.told.rule}): {_clipped(step.told.text)}")
        block(f"turn {turn.number}", "\n".join(said) or "says nothing")
    block("ended", _ending(e) + (f": {_clipped(e.answer)}" if e.stop == "answered" and e.answer else ""))
    block("recovery", _recovery(e))
    return "\n".join(lines)


# -- HTML ---------------------------------------------------------------------------------------


def _box(label: str, body: str, style: str = "") -> str:
    return (
        f'<div style="margin-top:6px;padding:4px 8px;{BORDER};border-radius:6px{";" + style if style else ""}">'
        f'<div style="font-size:0.8em;text-transform:uppercase;letter-spacing:0.04em;{MUTED}">{escape(label)}</div>{body}</div>'
    )


def episode_html(e: Any, stable: bool | None = None) -> str:
    """The episode as the conversation; `stable` (default: the `stable_output` setting) leaves out times."""
    stable = is_stable(stable)
    ink = STOP_INKS.get(e.stop)
    took = CARD_TIME(stable, ms=e.duration_ms)
    tokens = f" · {e.tokens:,} tokens" if e.tokens is not None else ""
    header = (
        corner(f"episode #{e.id}")
        + took
        + inline(outlined(STOP_WORDS.get(e.stop, e.stop), ink))
        + inline(f"<b>{escape(_who(e))}</b>")
        + inline(
            escape(
                f"{len(e.turns)} turn{'s' if len(e.turns) != 1 else ''}, {len(e.calls)} call{'s' if len(e.calls) != 1 else ''}{tokens}"
            ),
            MUTED,
        )
        + (inline(escape(f"on {e.server}"), MUTED) if e.server != "kernel" else "")
        + (inline(escape(_verdict(e).strip(" -")), MUTED) if e.passed is not None else "")
    )
    parts = [f'<div style="margin-bottom:6px">{header}</div>', _box("task", pre(e.task), SURFACE)]
    for turn in e.turns:
        items = []
        if turn.content:
            items.append(pre(_clipped(turn.content)))
        for step in turn.steps:
            items.append(
                f'<div style="margin-top:4px">asks for <code>{escape(step.name)}</code> '
                f'<code style="{MUTED}">{escape(_arguments(step.arguments))}</code></div>'
            )
            if step.outcome is not None:
                items.append(outcome_html(step.outcome, stable))
            else:
                items.append(f'<div style="{ERROR.text}">not sent: {escape(step.reason or "")}</div>')
            if step.told is not None:
                items.append(
                    f'<div style="margin-top:2px"><span style="{MUTED}">the host told the model ({escape(step.told.rule)}):</span>'
                    f"{pre(_clipped(step.told.text))}</div>"
                )
        if not items:
            items.append(f'<span style="{MUTED}">said nothing</span>')
        parts.append(_box(f"turn {turn.number}" + (f" · {turn.finish}" if turn.finish else ""), "".join(items)))
    ending = escape(_ending(e))
    if e.stop == "answered":
        ending += pre(_clipped(e.answer))
    parts.append(
        _box(
            "ended",
            f'<div style="{ink.text if ink else ""}">{ending}</div>' + f'<div style="{MUTED}">{escape(_recovery(e))}</div>',
        )
    )
    return (
        f'<div class="mcp-nb-episode" style="{UI};{BORDER};border-radius:8px;padding:8px 10px;margin:2px 0;max-width:1100px">'
        + "".join(parts)
        + "</div>"
    )


def evaluation_note(attrs: dict) -> str:
    """One line under an evaluation's table: how many episodes, and whether it was stopped."""
    stopped = " (stopped early)" if attrs.get("interrupted") else ""
    return f"{attrs.get('episodes', 0)} episodes{stopped}; policy {compact_json(attrs.get('policy', {}))}"
