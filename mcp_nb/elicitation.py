"""Elicitation: a server asks the user for input in the middle of a call, and the notebook answers.

The MCP specification lets a server ask its client for input while a request runs
(`elicitation/create`: a message and a flat JSON schema, or a URL to open). The answer is
one of three actions: `accept` (with content matching the schema), `decline` (the user said
no) or `cancel` (the user dismissed the question without choosing).

Where the answer comes from, first found wins:

1. the call's own `elicit=`: a callable `(message, schema) -> answer` (sync or async),
   a list of prepared answers consumed in order, or the word "decline" / "cancel";
2. the configured default, `mcp_nb.configure(elicit=...)` (the same kinds of value);
3. a person, through a form, when the face that made the call can show one (the panel, and
   `await mcp_nb.acall` in a notebook a person is looking at);
4. nobody: the question is cancelled, and the record says why. Nothing waits forever.

Every question and its answer is recorded on the call (`Elicitation`), with where the
answer came from and how long it took.

This module knows nothing of IPython or widgets; a face that can ask a person passes an
`ask` coroutine function to the call.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import inspect
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic_core import PydanticSerializationError, to_json

from mcp_nb.mistakes import BadType, BadValue

ACTIONS = ("accept", "decline", "cancel")
# Where an answer came from, as the record says.
SOURCES = ("elicit", "default", "form", "none")

# An answer's field that holds a secret (a password, a token, a key): the question's schema marks
# it (`writeOnly`, `format: password`), or its name says so. The server gets the real value; every
# record of the answer (the Outcome, the history, a card, a log line) holds SECRET in its place,
# and a saved case names the environment variable its replay reads it from (records/cases.py).
SECRET = "\u2022\u2022\u2022\u2022 (secret)"
_SECRET_NAME = re.compile(r"pass|pwd|secret|token|api_?key|private_?key|credential|auth", re.I)

NO_ANSWER = (
    "nobody could answer: give the call elicit= (a function or a list of prepared answers) or set "
    "mcp_nb.configure(elicit=...); a form shows only where a person can click while the call waits "
    "(the panel, or await mcp_nb.acall in a notebook)"
)


def is_secret(field: str, schema: Any) -> bool:
    """Whether an answer's field holds a secret: the question's schema marks it so (`writeOnly`,
    `format: password`), or its name says so (password, token, api_key...). The one rule for
    records, cards, logs and cases."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    declared = properties.get(field) if isinstance(properties, Mapping) else None
    if isinstance(declared, Mapping) and (declared.get("writeOnly") is True or declared.get("format") == "password"):
        return True
    return isinstance(field, str) and _SECRET_NAME.search(field) is not None


@dataclass(frozen=True, slots=True)
class Answer:
    """An answer to one elicitation: `Answer.accept({...})`, `Answer.decline()`, `Answer.cancel()`."""

    action: str
    content: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise BadValue(f"an answer's action is one of {', '.join(ACTIONS)}, got {self.action!r}")
        if self.content is not None and self.action != "accept":
            raise BadValue(f"only an accepted answer carries content; {self.action!r} carries none")
        if self.content is not None and not isinstance(self.content, Mapping):
            raise BadType(f"an accepted answer's content is a mapping of field names to values, got {type(self.content).__name__}")
        if self.content:
            # The answer goes to the server as JSON: what has no JSON form is refused here, with
            # the field named, not found by the SDK as it writes the reply (which failed the call).
            for field, value in self.content.items():
                try:
                    to_json(value)
                except (PydanticSerializationError, TypeError, ValueError, RecursionError):
                    raise BadValue(
                        f"an accepted answer's field {field!r} is a {type(value).__name__}, which has no JSON form; "
                        "answer with text, numbers, true/false or a list of texts"
                    ) from None

    @classmethod
    def accept(cls, content: Mapping[str, Any] | None = None, /, **fields: Any) -> Answer:
        """Accept, with the fields the server asked for (a dict, keywords, or both)."""
        merged = {**(content or {}), **fields}
        return cls("accept", merged)

    @classmethod
    def decline(cls) -> Answer:
        return cls("decline")

    @classmethod
    def cancel(cls) -> Answer:
        return cls("cancel")


@dataclass(frozen=True, slots=True)
class Elicitation:
    """One question a server asked during a call, and the answer it got."""

    message: str
    schema: Mapping[str, Any] | None  # the requested schema of a form question; None for a URL question
    url: str | None  # the page a URL question asks the user to open
    action: str  # one of ACTIONS
    content: Mapping[str, Any] | None  # what was sent with an accept; on a call's Outcome each secret field reads SECRET
    source: str  # one of SOURCES
    reason: str | None  # why the answer is not the person's or the caller's choice (nobody to ask, a broken answerer)
    waited_ms: float  # how long the call waited for the answer (not counted against its deadline)

    def recorded(self) -> Elicitation:
        """The question as a record keeps it: each secret field's value replaced by `SECRET`
        (`is_secret`). The server was sent the real answer before this record was made."""
        hidden = without_secrets(self.content, self.schema)
        return self if hidden is self.content else Elicitation(
            self.message, self.schema, self.url, self.action, hidden, self.source, self.reason, self.waited_ms
        )  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        """The question and its answer as plain values, each secret field's value replaced by `SECRET`."""
        content = without_secrets(self.content, self.schema)
        return {
            "message": self.message, "action": self.action, "content": None if content is None else dict(content),
            "source": self.source, "reason": self.reason, "url": self.url,
        }  # fmt: skip

    def __repr__(self) -> str:
        # Never the secret, not even before the call's record is made (a log line, a debugger).
        shown = self.recorded()
        return "Elicitation(" + ", ".join(f"{f.name}={getattr(shown, f.name)!r}" for f in dataclasses.fields(self)) + ")"


def without_secrets(content: Mapping[str, Any] | None, schema: Any) -> Mapping[str, Any] | None:
    """`content` with each secret field's value replaced by `SECRET`; `content` itself when it holds none."""
    if not content or not any(is_secret(field, schema) for field in content):
        return content
    return {field: SECRET if is_secret(field, schema) else value for field, value in content.items()}


def recorded(question: Any) -> Any:
    """A question as a call's record keeps it (`Elicitation.recorded`); anything else as it is."""
    return question.recorded() if isinstance(question, Elicitation) else question


def answer_of(value: Any) -> Answer:
    """An `Answer` from what a user may write for one: an Answer, the SDK's ElicitResult, a dict
    (the content of an accept), or the word "accept", "decline" or "cancel"."""
    if isinstance(value, Answer):
        return value
    if isinstance(value, str):
        if value in ACTIONS:
            return Answer(value, {} if value == "accept" else None)
        raise BadValue(f"an answer written as a word is one of {', '.join(ACTIONS)}, got {value!r}")
    if isinstance(value, Mapping):
        return Answer.accept(value)
    action = getattr(value, "action", None)
    if action in ACTIONS:  # mcp_types.ElicitResult, or the server-side ElicitationResult members
        content = getattr(value, "content", None)
        return Answer(action, dict(content) if content is not None and action == "accept" else None)
    raise BadType(
        "an answer is Answer.accept({...}) / Answer.decline() / Answer.cancel(), a dict (accepted content), "
        f"or 'decline' / 'cancel'; got {type(value).__name__}"
    )


class Answerer:
    """Where one call's answers come from (made fresh for every call, so prepared answers are
    consumed per call)."""

    def __init__(self, value: Any, source: str) -> None:
        self.value = value
        self.source = source
        self._prepared: list[Answer] | None = None
        self._used = 0
        if isinstance(value, (list, tuple)):
            self._prepared = [answer_of(item) for item in value]
        elif isinstance(value, str):
            answer_of(value)
        elif not callable(value):
            answer_of(value)  # a single answer, given for every question

    async def answer(self, message: str, schema: Any) -> tuple[Answer, str | None]:
        """The answer, and a reason when it is not the answerer's own choice."""
        if self._prepared is not None:
            if self._used >= len(self._prepared):
                return Answer.cancel(), f"the {len(self._prepared)} prepared answer(s) were all used"
            answer = self._prepared[self._used]
            self._used += 1
            return answer, None
        if not callable(self.value) or isinstance(self.value, str):
            return answer_of(self.value), None
        try:
            if is_async(self.value):
                given = await self.value(message, schema)
            else:
                # A plain function may block (input() in a script): not on mcp_nb's loop.
                given = await in_thread(self.value, message, schema)
                if inspect.isawaitable(given):  # a plain function that hands back a coroutine (a partial, a lambda)
                    given = await given
            return answer_of(given), None
        except (ValueError, TypeError) as err:
            return Answer.cancel(), f"the elicit function's answer is not one: {err}"
        except Exception as err:  # noqa: BLE001 - a broken answerer cancels the question, the call goes on
            return Answer.cancel(), f"the elicit function raised {type(err).__name__}: {err}"


def is_async(function: Any) -> bool:
    """Whether calling `function` starts a coroutine (an `async def`, or an object whose `__call__` is one)."""
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(getattr(function, "__call__", None))  # noqa: B004 - an object whose __call__ is async


async def in_thread(function: Callable[..., Any], *args: Any) -> Any:
    """`function(*args)` in a daemon thread of its own, awaited: for the user's code that answers a
    server (an elicit function, a sampling function, a roots function, a watch's listener).

    Never on mcp_nb's loop: it may block (a model's client, `input()`), and every call, the served
    kernel and the panel would wait on it. Not in the loop's default executor: a function that
    never returns would keep one of its few threads for ever, and the interpreter joins those at
    exit, so the kernel could not end. The caller bounds the wait; the thread, which cannot be
    stopped, is left to finish by itself. The caller's context variables go with it, as
    `asyncio.to_thread` carries them."""
    loop = asyncio.get_running_loop()
    answered: asyncio.Future = loop.create_future()
    context = contextvars.copy_context()

    def run() -> None:
        try:
            result, error = context.run(function, *args), None
        except BaseException as err:  # noqa: BLE001 - handed to whoever awaits it
            result, error = None, err
        try:
            loop.call_soon_threadsafe(_settle, answered, result, error)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass

    threading.Thread(target=run, name=f"mcp_nb-answer-{getattr(function, '__name__', 'function')}", daemon=True).start()
    return await answered


def _settle(future: asyncio.Future, result: Any, error: BaseException | None) -> None:
    if future.done():  # the awaiting side gave up (cancelled, or its bound passed)
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


def check_elicit(value: Any, what: str = "elicit") -> None:
    """Raise ValueError/TypeError for a value that cannot answer elicitations (None is fine)."""
    if value is None:
        return
    if isinstance(value, (bytes, bytearray)) or isinstance(value, (set, frozenset)):
        raise BadType(f"{what} must be a function, a list of answers or an answer, got {type(value).__name__}")
    try:
        Answerer(value, what)
    except (ValueError, TypeError) as err:
        raise type(err)(f"{what}: {err}") from None


def answerer(value: Any, source: str) -> Answerer | None:
    return None if value is None else Answerer(value, source)


def with_defaults(answer: Answer, schema: Any) -> Answer:
    """An accepted answer with each field it leaves out that the question gives a `default`
    filled in with that default (SEP-1034: an answer of "accept" takes what was proposed)."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping):
        return answer
    content = dict(answer.content or {})
    missing = {
        field: declared["default"] for field, declared in properties.items()
        if field not in content and isinstance(declared, Mapping) and "default" in declared
    }  # fmt: skip
    return Answer.accept({**missing, **content}) if missing else answer


# A face that can ask a person: `await ask(message, schema, url)` -> Answer.
Ask = Callable[[str, Any, "str | None"], Any]


async def elicit(
    answerers: Sequence[Answerer | None], ask: Ask | None, message: str, schema: Any, url: str | None
) -> Elicitation:
    """Answer one question from the first source there is, and record how."""
    t0 = time.perf_counter()
    reason: str | None = None
    for source in answerers:
        if source is not None:
            answer, reason = await source.answer(message, schema if url is None else {"url": url})
            where = source.source
            break
    else:
        if ask is not None:
            answer, where = answer_of(await ask(message, schema, url)), "form"
        else:
            answer, where, reason = Answer.cancel(), "none", NO_ANSWER
    if answer.action == "accept" and url is None:
        answer = with_defaults(answer, schema)
    return Elicitation(
        message=message, schema=schema, url=url, action=answer.action,
        content=None if answer.content is None else dict(answer.content), source=where, reason=reason,
        waited_ms=(time.perf_counter() - t0) * 1000.0,
    )  # fmt: skip

