"""Checks of one Outcome that explain themselves: `mcp_nb.expect(o, "tool_error", "raised")`, and
the strict check of a learner's prediction, `mcp_nb.check_prediction(o, outcome=..., cause=...)`.

For exercises and tests. A check that does not hold raises `CheckFailed`, an AssertionError whose
message says, in the error model's words, how the call ended and what was expected: each outcome
type and cause with its meaning (the cause's from `CAUSE_DOC`, which docs/outcomes.md's table
mirrors), then what the model read, what the host got and what the server's log says, and a hint
that fits how the call ended. In IPython (JupyterLab, Notebook 7, nbval's report) it shows as that
explanation alone: its `_render_traceback_` leaves out the frames of the check's own code.

`expect` is a testing API: what is not given (None) is not checked, and several causes may all be
right. `check_prediction` is an exercise's: each prediction asked for must be exactly one answer
(one outcome type, one cause, one code...), and `...`, None or several answers fail as not
answered. A value of the wrong kind where the check's author wrote an Outcome, an outcome type or
a cause is the author's mistake, said in one line (`BadType`, `BadValue`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sized
from typing import Any

from mcp_nb.mistakes import BadType, BadValue, Failure
from mcp_nb.records.outcome import CAUSE_DOC, CAUSES, FATES, OUTCOMES, Outcome

# What each outcome type means, in the words of the course's glossary and the error model's table.
OUTCOME_DOC = {
    "result": "the request succeeded and the result is not flagged isError: the model takes its content for the answer",
    "tool_error": "the request succeeded and the result is flagged isError: the model reads its content",
    "protocol_error": "the request failed (a JSON-RPC error, or a failure the client or the connection met): "
    "the host handles it, and the model sees nothing",
    "timeout": "the client stopped waiting (at the deadline, or because the caller cancelled): the host handles it, "
    "and what the server did is unknown to the client",
}
# Which causes each outcome type has (docs/outcomes.md, "Causes").
PAIRS = {
    "result": ("ok",),
    "tool_error": ("raised", "crash", "invalid_arguments", "unknown_tool", "returned", "invalid_output", "non_json_number"),
    "protocol_error": (
        "mcp_error",
        "not_found",
        "resource_error",
        "crash",
        "invalid_arguments",
        "client_error",
        "disconnected",
        "http_error",
        "unauthorized",
        "url_required",
        "invalid_response",
        "invalid_output",
        "non_json_number",
        "worker_lost",
    ),
    "timeout": ("deadline", "max_timeout", "cancelled"),
}
# What a timed-out call's handler did after the client stopped waiting (`Outcome.server_fate`).
FATE_DOC = {
    "running": "the handler is still running on the server",
    "completed": "the handler ran on after the client stopped waiting, and finished (its result was dropped)",
    "cancelled": "the handler was cancelled on the server",
    "cancel_requested": "the server was sent a cancellation; what it did with it is its own",
    "unobserved": "mcp_nb cannot see what the server did",
}
_SHOWN = 300  # characters of what the model read or the host got, in a message
_RED, _PLAIN = "\x1b[1;31m", "\x1b[0m"  # the first line of a failed check, as IPython colours an error's name


class CheckFailed(Failure, AssertionError):
    """A check that did not hold. Its message is the whole explanation: how the call ended, what was
    expected, what each audience got, and a hint. IPython shows it as those lines alone, without the
    frames of the check's own code (JupyterLab, Notebook 7 and nbval's report all use
    `_render_traceback_`); pytest and `str()` give the same text."""

    def _render_traceback_(self) -> list[str]:
        lines = str(self).splitlines() or [type(self).__name__]
        return [_RED + lines[0] + _PLAIN, *lines[1:]]


def expect(
    got: Outcome,
    /,
    outcome: str | None = None,
    cause: str | Iterable[str] | None = None,
    *,
    content_contains: str | None = None,
    code: int | None = None,
    message_contains: str | None = None,
    hint: str | Mapping[str, str] | None = None,
) -> Outcome:
    """Check that a call ended as expected, or raise `CheckFailed` (an AssertionError) that says how it ended and why.

    `outcome`: one of `OUTCOMES`; `cause`: one of `CAUSES`, or several that are all right (for a
    failure that may be raised or returned, `("raised", "returned")`). `content_contains`: text
    the model must read (the result's content); `code`, `message_contains`: what the host must get
    (a protocol error's or a timeout's code and message). What is not given is not checked.
    `hint`: a sentence added to the message when the check fails (an exercise's advice), or a
    mapping that picks the sentence by how the call ended: `"tool_error / crash"`, else
    `"tool_error"`, else `"*"`. Returns the Outcome, so checks chain. `...` in place of `outcome`
    or `cause` fails as an answer not written yet. For a learner's prediction, which must name
    exactly one of each, use `check_prediction`.
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
            raise BadValue(
                f"expect(): {outcome} never has the cause {' or '.join(causes)}; its causes: {', '.join(PAIRS[outcome])}"
            )
    for name, value in (("content_contains", content_contains), ("message_contains", message_contains)):
        if value is not None and not isinstance(value, str):
            raise BadType(f"expect({name}=...) takes a str, not {type(value).__name__}")
    _hints(hint, "expect(hint=...)")
    if code is not None and (not isinstance(code, int) or isinstance(code, bool)):
        raise BadType(f"expect(code=...) takes an int, not {type(code).__name__}")

    said = _hint_for(got, hint)
    wrong_outcome = outcome is not None and got.outcome != outcome
    wrong_cause = bool(causes) and got.cause not in causes
    if wrong_outcome or wrong_cause:
        _fail(_ended_otherwise(got, outcome, causes), said)
    if content_contains is not None and (got.content is None or content_contains not in got.content):
        read = "nothing (there is no result)" if got.content is None else _shown(got.content)
        _fail(
            [
                f"{_call(got)} ended {_pair(got)}, but what the model read does not contain {content_contains!r}",
                f"the model read: {read}",
            ],
            said,
        )
    if code is not None and got.code != code:
        _fail([f"{_call(got)} ended {_pair(got)}, and the host got code {got.code}, not {code}", *_host(got)], said)
    if message_contains is not None and (got.message is None or message_contains not in got.message):
        _fail(
            [f"{_call(got)} ended {_pair(got)}, but the host's message does not contain {message_contains!r}", *_host(got)], said
        )
    return got


# -- A learner's prediction ---------------------------------------------------------------------

# What can be predicted of a call: what the learner names it, and what makes one answer.
_PREDICTED = {
    "outcome": ("the outcome type", "one of " + ", ".join(OUTCOMES)),
    "cause": ("the cause", "one of " + ", ".join(CAUSES)),
    "code": ("the code the host gets", "an int, such as -32602"),
    "fate": ("the server's fate", "one of " + ", ".join(FATES)),
    "attempts": ("the number of attempts", "an int, such as 2"),
}


def check_prediction(got: Outcome, /, *, hints: Mapping[str, str] | None = None, **predicted: Any) -> Outcome:
    """Check a learner's prediction of how a call ended, strictly; return the Outcome, or raise `CheckFailed`.

    Each keyword is one prediction: `outcome` (one of `OUTCOMES`), `cause` (one of `CAUSES`),
    `code` (the int the host got), `fate` (the `server_fate` of a timed-out call, one of
    `FATES`), `attempts` (how many attempts a retried call made). Each must be exactly one answer:
    `...` and None fail as *not answered yet*, several answers (a tuple, a list, `CAUSES`) as
    *name one*, a word that is none of the choices as *not one of them*; only then are the
    predictions compared with the call, and every wrong one is explained. Unlike `expect`, nothing
    given is left unchecked, and no prediction is right by naming several.

    `hints`: the advice for a wrong prediction, picked by what was predicted: `"cause=raised"`
    for the cause `raised`, else `"cause"` for any wrong cause, else `"*"`.
    """
    if not isinstance(got, Outcome):
        raise BadType(f"check_prediction() checks an Outcome (what mcp_nb.call returns), not {type(got).__name__}")
    unknown = sorted(set(predicted) - set(_PREDICTED))
    if unknown:
        raise BadValue(f"check_prediction({unknown[0]}=...): what can be predicted is {', '.join(_PREDICTED)}")
    if not predicted:
        raise BadValue(f"check_prediction() needs at least one prediction: {', '.join(_PREDICTED)}")
    _hints(hints, "check_prediction(hints=...)")
    problems = [problem for name, value in predicted.items() if (problem := _not_one_answer(name, value))]
    if problems:
        raise CheckFailed(
            "\n  - ".join(["not answered yet:", *problems]) if len(problems) > 1 else "not answered yet: " + problems[0]
        )
    actual = {"outcome": got.outcome, "cause": got.cause, "code": got.code, "fate": got.server_fate, "attempts": got.attempt}
    wrong = [name for name, value in predicted.items() if value != actual[name]]
    if not wrong:
        return got
    asked = [name for name in _PREDICTED if name in predicted]  # in a fixed order: outcome / cause first
    lines = [
        f"{_call(got)} ended {_summary({name: actual[name] for name in asked})}, "
        f"not {_summary({name: predicted[name] for name in asked})} as you predicted"
    ]
    for name in asked:
        lines += _compared(name, predicted[name], actual[name])
    lines.append("the model read: " + ("nothing (there is no result)" if got.content is None else _shown(got.content)))
    lines += _host(got) if got.code is not None else []
    lines += _log(got)
    advice = [said for name in wrong if (said := _prediction_hint(hints, name, predicted[name]))]
    if not advice and hints and "*" in hints:
        advice = [hints["*"]]
    raise CheckFailed(lines[0] + "".join(f"\n  - {line}" for line in lines[1:]) + "".join(f"\n  hint: {line}" for line in advice))


def _summary(values: dict[str, Any]) -> str:
    """`tool_error / crash, code -32603`: predictions or what happened, in the words of a card."""
    pair = " / ".join(str(values[name]) for name in ("outcome", "cause") if name in values)
    rest = [
        ("no code" if values["code"] is None else f"code {values['code']}") if "code" in values else "",
        f"server fate {values['fate']}" if "fate" in values else "",
        f"{values['attempts']} attempts" if "attempts" in values else "",
    ]
    return ", ".join(part for part in (pair, *rest) if part)


def _not_one_answer(name: str, value: Any) -> str | None:
    """Why `value` is not one answer for the prediction `name` (None when it is one)."""
    what, choices = _PREDICTED[name]
    if value is Ellipsis or value is None:
        return f"{what} is still {'...' if value is Ellipsis else 'None'}: write your answer, {choices}"
    if name in ("code", "attempts"):
        if isinstance(value, int) and not isinstance(value, bool):
            return None if name == "code" or value >= 1 else f"{what} is {value}: a call makes at least one attempt"
        if isinstance(value, str):
            return f"{what} is the text {value!r}: write it as {choices}"
        if isinstance(value, (list, tuple, set, frozenset, range)):
            return f"name one: {what} is a {type(value).__name__} of {len(value)}; a prediction is exactly one, {choices}"
        return f"{what} is a {type(value).__name__}: write {choices}"
    if isinstance(value, str):
        words = {"outcome": OUTCOMES, "cause": CAUSES, "fate": FATES}[name]
        return None if value in words else f"{value!r} is not {what}: name one, {choices}"
    if isinstance(value, Iterable):
        size = f" of {len(value)}" if isinstance(value, Sized) else ""
        return f"name one: {what} is a {type(value).__name__}{size}; a prediction is exactly one, {choices}"
    return f"{what} is a {type(value).__name__}: name one, {choices}"


def _compared(name: str, predicted: Any, actual: Any) -> list[str]:
    what = _PREDICTED[name][0]
    if predicted == actual:
        return [f"{what}: right, {actual}"]
    meaning = {"outcome": OUTCOME_DOC, "cause": CAUSE_DOC, "fate": FATE_DOC}.get(name, {})
    was = "none (the request succeeded: the host got nothing to handle)" if name == "code" and actual is None else actual
    lines = [f"{what}: you predicted {predicted}, it was {was}" + (f": {meaning[actual]}" if actual in meaning else "")]
    if predicted in meaning:
        lines.append(f"{predicted} would mean: {meaning[predicted]}")
    return lines


def _prediction_hint(hints: Mapping[str, str] | None, name: str, value: Any) -> str | None:
    if not hints:
        return None
    return hints.get(f"{name}={value}", hints.get(name))


# -- Shared -------------------------------------------------------------------------------------


def _hints(hint: Any, where: str) -> None:
    if hint is None or isinstance(hint, str):
        return
    if not isinstance(hint, Mapping):
        raise BadType(f"{where} takes a str or a mapping of str to str, not {type(hint).__name__}")
    for key, value in hint.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise BadType(f"{where} takes a mapping of str to str, not one with {type(key).__name__}: {type(value).__name__}")


def _hint_for(got: Outcome, hint: str | Mapping[str, str] | None) -> str | None:
    """The hint that fits how the call ended: the sentence itself, or the mapping's entry for the
    outcome type and cause, else for the outcome type, else for any other ending ("*")."""
    if hint is None or isinstance(hint, str):
        return hint
    return hint.get(_pair(got), hint.get(got.outcome, hint.get("*")))


def _unanswered(name: str, value: Any, words: tuple[str, ...]) -> None:
    if value is Ellipsis:
        raise CheckFailed(f"not answered yet: replace the ... given as {name} with your answer, one of {', '.join(words)}")


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


def _fail(lines: list[str], hint: str | None) -> None:
    text = lines[0] + "".join(f"\n  - {line}" for line in lines[1:])
    raise CheckFailed(text + (f"\n  hint: {hint}" if hint else ""))


def _pair(got: Outcome) -> str:
    return f"{got.outcome} / {got.cause}"


def _call(got: Outcome) -> str:
    arguments = "" if got.arguments is None else " " + json.dumps(got.arguments, ensure_ascii=False, default=repr)
    return f"the call of {got.target} {got.name}{arguments}"


def _shown(text: str) -> str:
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "...")
