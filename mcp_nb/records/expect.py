"""A check of one Outcome that explains itself: `mcp_nb.expect(o, "tool_error", "raised")`.

For exercises and tests. It raises an AssertionError whose message says, in the error model's
words, how the call ended and what was expected: each outcome type and cause with its meaning
(the cause's from `CAUSE_DOC`, which docs/guide.md's table mirrors), then what the model read,
what the host got and what the server's log says. A value of the wrong kind where an Outcome,
an outcome type or a cause belongs is the caller's mistake, said in one line (`BadType`,
`BadValue`); `...` (an exercise's blank not filled in yet) fails as not answered.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from mcp_nb.mistakes import BadType, BadValue
from mcp_nb.records.outcome import CAUSE_DOC, CAUSES, OUTCOMES, Outcome

# What each outcome type means, in the words of the course's glossary and the error model's table.
OUTCOME_DOC = {
    "result": "the request succeeded and the result is not flagged isError: the model takes its content for the answer",
    "tool_error": "the request succeeded and the result is flagged isError: the model reads its content",
    "protocol_error": "the request failed (a JSON-RPC error, or a failure the client or the connection met): "
    "the host handles it, and the model sees nothing",
    "timeout": "the client stopped waiting (at the deadline, or because the caller cancelled): the host handles it, "
    "and what the server did is unknown to the client",
}
# Which causes each outcome type has (docs/guide.md, "Outcomes and causes").
PAIRS = {
    "result": ("ok",),
    "tool_error": ("raised", "crash", "invalid_arguments", "unknown_tool", "returned", "invalid_output", "non_json_number"),
    "protocol_error": (
        "mcp_error", "not_found", "resource_error", "crash", "invalid_arguments", "client_error", "disconnected",
        "http_error", "unauthorized", "url_required", "invalid_response", "invalid_output", "non_json_number",
        "worker_lost",
    ),
    "timeout": ("deadline", "max_timeout", "cancelled"),
}  # fmt: skip
_SHOWN = 300  # characters of what the model read or the host got, in a message


def expect(
    got: Outcome,
    /,
    outcome: str | None = None,
    cause: str | Iterable[str] | None = None,
    *,
    content_contains: str | None = None,
    code: int | None = None,
    message_contains: str | None = None,
    hint: str | None = None,
) -> Outcome:
    """Check that a call ended as expected, or raise an AssertionError that says how it ended and why.

    `outcome`: one of `OUTCOMES`; `cause`: one of `CAUSES`, or several that are all right (for a
    failure that may be raised or returned, `("raised", "returned")`). `content_contains`: text
    the model must read (the result's content); `code`, `message_contains`: what the host must get
    (a protocol error's or a timeout's code and message). `hint`: a sentence added to the message
    when the check fails (an exercise's advice). What is not given is not checked. Returns the
    Outcome, so checks chain. `...` in place of `outcome` or `cause` fails as an answer not written yet.
    """
    if not isinstance(got, Outcome):
        raise BadType(f"expect() checks an Outcome (what mcp_nb.call returns), not {type(got).__name__}")
    _unanswered("outcome", outcome, OUTCOMES)
    _unanswered("cause", cause, CAUSES)
    causes = _causes(cause)
    if outcome is not None:
        if not isinstance(outcome, str):
            raise BadType(f"expect(outcome=...) takes one of {', '.join(OUTCOMES)}, not {type(outcome).__name__}")
        if outcome not in OUTCOMES:
            raise BadValue(f"expect(outcome={outcome!r}): an outcome type is one of {', '.join(OUTCOMES)}")
        if causes and not set(causes) & set(PAIRS[outcome]):
            raise BadValue(f"expect(): {outcome} never has the cause {' or '.join(causes)}; its causes: {', '.join(PAIRS[outcome])}")
    for name, value, kind in (("content_contains", content_contains, str), ("message_contains", message_contains, str), ("hint", hint, str)):
        if value is not None and not isinstance(value, kind):
            raise BadType(f"expect({name}=...) takes a str, not {type(value).__name__}")
    if code is not None and (not isinstance(code, int) or isinstance(code, bool)):
        raise BadType(f"expect(code=...) takes an int, not {type(code).__name__}")

    wrong_outcome = outcome is not None and got.outcome != outcome
    wrong_cause = bool(causes) and got.cause not in causes
    if wrong_outcome or wrong_cause:
        _fail(got, _ended_otherwise(got, outcome, causes), hint)
    if content_contains is not None and (got.content is None or content_contains not in got.content):
        read = "nothing (there is no result)" if got.content is None else _shown(got.content)
        _fail(got, [f"{_call(got)} ended {_pair(got)}, but what the model read does not contain {content_contains!r}", f"the model read: {read}"], hint)
    if code is not None and got.code != code:
        _fail(got, [f"{_call(got)} ended {_pair(got)}, and the host got code {got.code}, not {code}", *_host(got)], hint)
    if message_contains is not None and (got.message is None or message_contains not in got.message):
        _fail(got, [f"{_call(got)} ended {_pair(got)}, but the host's message does not contain {message_contains!r}", *_host(got)], hint)
    return got


def _unanswered(name: str, value: Any, words: tuple[str, ...]) -> None:
    if value is Ellipsis:
        raise AssertionError(f"not answered yet: replace the ... given as {name} with your answer, one of {', '.join(words)}")


def _causes(cause: str | Iterable[str] | None) -> tuple[str, ...]:
    if cause is None:
        return ()
    given = (cause,) if isinstance(cause, str) else cause
    try:
        causes = tuple(given)
    except TypeError:
        raise BadType(f"expect(cause=...) takes a cause or several, not {type(cause).__name__}") from None
    for one in causes:
        if not isinstance(one, str):
            raise BadType(f"expect(cause=...) takes causes as str, not {type(one).__name__}")
        if one not in CAUSES:
            raise BadValue(f"expect(cause={one!r}): a cause is one of {', '.join(CAUSES)}")
    if not causes:
        raise BadValue("expect(cause=()): name at least one cause, or leave cause out")
    return causes


def _ended_otherwise(got: Outcome, outcome: str | None, causes: tuple[str, ...]) -> list[str]:
    wanted = " or ".join(f"{outcome} / {c}" if outcome else f"the cause {c}" for c in causes) if causes else outcome
    lines = [f"{_call(got)} ended {_pair(got)}, not {wanted}"]
    if outcome is not None and got.outcome != outcome:
        lines += [f"it ended as {got.outcome}: {OUTCOME_DOC[got.outcome]}", f"expected {outcome}: {OUTCOME_DOC[outcome]}"]
    if causes and got.cause not in causes:
        lines.append(f"its cause, {got.cause}: {CAUSE_DOC[got.cause]}")
        lines += [f"expected {c}: {CAUSE_DOC[c]}" for c in causes]
    lines.append("the model read: " + ("nothing (there is no result)" if got.content is None else _shown(got.content)))
    lines += _host(got) if got.code is not None else []
    lines += _log(got)
    return lines


def _host(got: Outcome) -> list[str]:
    if got.code is None and got.message is None:
        return ["the host got nothing to handle: the request succeeded"]
    return [f"the host got code {got.code}: {_shown(got.message or '')}"]


def _log(got: Outcome) -> list[str]:
    lines = []
    for log in got.server_logs[:3]:
        root = f" ({log.exceptions[-1][0]}: {log.exceptions[-1][1]})" if log.exceptions else ""
        lines.append(f"the log says: {str(log).splitlines()[0] if str(log) else log.level}{root}")
    return lines


def _fail(got: Outcome, lines: list[str], hint: str | None) -> None:
    text = lines[0] + "".join(f"\n  - {line}" for line in lines[1:])
    raise AssertionError(text + (f"\n  hint: {hint}" if hint else ""))


def _pair(got: Outcome) -> str:
    return f"{got.outcome} / {got.cause}"


def _call(got: Outcome) -> str:
    arguments = "" if got.arguments is None else " " + json.dumps(got.arguments, ensure_ascii=False, default=repr)
    return f"the call of {got.target} {got.name}{arguments}"


def _shown(text: str) -> str:
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "...")
