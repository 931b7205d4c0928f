"""An API key: read from an environment variable, or typed at a prompt; never shown, never written.

A key given as text in a cell would be saved with the notebook, so there is no way to give one:
`key=` names the environment variable that holds it (`"OPENAI_API_KEY"`), or is `Key.prompt()`,
which asks for it the way `getpass` does (in a notebook, a password field that is not saved).
The value is read when a request is sent and goes into that request's header only. It is never
in a repr, an exception's message, an episode, the history or its file, a case file or a log:

- every `Key` alive names its value to `registering.log_secrets`, which takes it out of every log
  record of the loggers that carry traffic (the HTTP client's included), whoever logs it;
- `scrub(text)` takes every live key out of a text, and every text a model's endpoint sends back
  (an error body may quote the key it refused) passes through it before it is kept;
- a `Key` pickles as the name of its variable (a dask worker reads its own environment); a key
  typed at a prompt refuses to be pickled rather than travel.
"""

from __future__ import annotations

import getpass
import os
import re
import threading
import weakref
from typing import Any

from mcp_nb.mistakes import BadType, BadValue
from mcp_nb.records.redact import scrubber
from mcp_nb.registering import log_secrets

# An environment variable's name as keys are named (OPENAI_API_KEY): capitals, digits and "_". A
# text of another form given as `key=` is taken for a key itself and refused, without being echoed.
_VARIABLE = re.compile(r"[A-Z_][A-Z0-9_]{0,63}\Z")
TYPED = "a key typed at a prompt"

_live: weakref.WeakSet[Key] = weakref.WeakSet()
_lock = threading.Lock()


class Key:
    """An API key: `Key("OPENAI_API_KEY")` reads that environment variable at each request;
    `Key.prompt()` asks for it once, without echoing it, and keeps it in this process only."""

    __slots__ = ("env", "_typed", "__weakref__")

    def __init__(self, env: str) -> None:
        if not isinstance(env, str):
            raise BadType(f"a key is named by its environment variable (text), not {type(env).__name__}")
        if not _VARIABLE.match(env):
            raise BadValue(
                "key= takes the NAME of the environment variable that holds the key (such as \"OPENAI_API_KEY\"), "
                "or mcp_nb.Key.prompt(): a key written in a cell would be saved with the notebook"
            )
        self.env: str | None = env
        self._typed: str | None = None
        with _lock:
            _live.add(self)

    @classmethod
    def prompt(cls, label: str = "API key") -> Key:
        """Ask for the key without echoing it (`getpass`; a password field in a notebook)."""
        try:
            typed = getpass.getpass(f"{label}: ")  # looked up now: a kernel puts its own getpass there
        except EOFError:  # no terminal and nothing to read (a script, a pipe, a notebook without stdin)
            raise BadValue("no key was typed: there is no input to read it from (set an environment variable and give its name)") from None
        if not isinstance(typed, str) or not typed.strip():
            raise BadValue("no key was typed")
        key = cls.__new__(cls)
        key.env, key._typed = None, typed.strip()
        with _lock:
            _live.add(key)
        return key

    def present(self) -> bool:
        return self._typed is not None or bool(os.environ.get(self.env or "", "").strip())

    def check(self) -> None:
        """Raise one line when there is no key to send (its variable is not set)."""
        if not self.present():
            raise BadValue(f"the environment variable {self.env} is not set: set it to your API key (or use key=mcp_nb.Key.prompt())")

    def value(self) -> str:
        """The key, for a request's header; nothing else should ever hold it."""
        if self._typed is not None:
            return self._typed
        self.check()
        return os.environ[self.env].strip()  # type: ignore[index]

    def __repr__(self) -> str:
        return f"Key({TYPED})" if self.env is None else f"Key({self.env!r})"

    __str__ = __repr__

    def __reduce__(self) -> tuple[Any, ...]:
        if self.env is None:
            raise TypeError(f"{TYPED} stays in this process: set an environment variable where the model is called from")
        return (Key, (self.env,))


def key_from(value: Any) -> Key | None:
    """`key=` as given: None (no key: a local endpoint), a `Key`, or an environment variable's name."""
    if value is None or isinstance(value, Key):
        return value
    return Key(value)


def known() -> list[str]:
    """The value of every live key that has one now."""
    with _lock:
        keys = list(_live)
    found = []
    for key in keys:
        if key._typed is not None:
            found.append(key._typed)
        elif key.env is not None:
            value = os.environ.get(key.env, "").strip()
            if value:
                found.append(value)
    return found


log_secrets.watch(known)  # no log record holds one, whoever logs it
scrub = scrubber(known)  # a text without any live key (nor a URL password, a bearer token...)
