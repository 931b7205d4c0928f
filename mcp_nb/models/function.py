"""A model as the episode loop sees it: a name, a kind, and a reply to await.

`model_of(value)` takes what a user gives as `model=`: an adapter or the stand-in as they are, or
any function `(messages, tools) -> reply`, sync or async, wrapped here. The loop opens a model
once for an episode (an evaluation once for all its episodes: one HTTP client, its connections
reused) and awaits `reply(messages, tools, seconds)` each turn on mcp_nb's loop:

- an async function is awaited there, bounded by `seconds` (like an async tool, it must await:
  one that blocks holds the loop);
- a sync function runs in a thread of its own, so a blocking HTTP call does not hold the loop; past
  `seconds` the loop stops waiting and the thread is left to end by itself (a thread cannot be
  stopped), which is why it is a thread of its own rather than one of a shared pool.

What a function raises, or returns that is not a reply, ends the episode as `model_failed`, said
in one line without any key (`ModelError`); the traceback is kept on the error, keys taken out.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import threading
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from mcp_nb.models.errors import ModelError
from mcp_nb.models.keys import scrub
from mcp_nb.models.shape import Reply, read_reply
from mcp_nb.mistakes import BadType, one_line

KINDS = ("function", "endpoint", "stand-in")
Replier = Callable[[list, list, float, str], Awaitable[Reply]]


class Model:
    """What the loop needs of a model. `kind` is one of KINDS; `label` is what a view says of it."""

    name: str = "model"
    kind: str = "function"

    @property
    def label(self) -> str:
        return self.name

    def check(self) -> None:
        """Raise one line, before anything runs, when this model cannot reply (no key, say)."""

    def spec(self) -> dict[str, Any] | None:
        """How a saved evaluation names this model (no key, only where to find one); None: it cannot be saved."""
        return None

    @contextlib.asynccontextmanager
    async def opened(self) -> AsyncIterator[Replier]:
        """`reply(messages, tools, seconds, ids)` for the episodes run meanwhile, on the running loop."""
        yield self.reply

    async def reply(self, messages: list, tools: list, seconds: float, ids: str = "call") -> Reply:
        raise NotImplementedError


class FunctionModel(Model):
    """A function `(messages, tools) -> reply`, sync or async, as a Model."""

    kind = "function"

    def __init__(self, function: Callable[..., Any], name: str | None = None) -> None:
        self.function = function
        self.name = name or _name_of(function)
        self._async = inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(getattr(function, "__call__", None))  # noqa: B004 - an object whose __call__ is async

    async def reply(self, messages: list, tools: list, seconds: float, ids: str = "call") -> Reply:
        try:
            async with asyncio.timeout(seconds):
                if self._async:
                    got = await self.function(messages, tools)
                else:
                    got = await _in_a_thread(self.function, messages, tools)
                if inspect.isawaitable(got):  # a sync function that returned a coroutine
                    got = await got
        except TimeoutError:
            raise ModelError("timeout", f"the model function {self.name!r} did not reply within {seconds:g} s") from None
        except ModelError:
            raise
        except Exception as err:  # noqa: BLE001 - whatever the user's function raised ends the episode, said
            raise raised(err, f"the model function {self.name!r} raised") from None
        return read_reply(got, ids)

    def __repr__(self) -> str:
        return f"<model function {self.name}>"


def raised(err: BaseException, who: str) -> ModelError:
    """A ModelError for an exception a model raised: one line, and its traceback (no key in either)."""
    said = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
    failure = ModelError("raised", f"{who} {one_line(scrub(said))}")
    failure.traceback = scrub("".join(traceback.format_exception(err)))  # type: ignore[attr-defined]
    return failure


async def _in_a_thread(function: Callable[..., Any], *args: Any) -> Any:
    """`function(*args)` in a daemon thread of its own, awaited; one that never returns keeps only its thread."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future = loop.create_future()
    context = contextvars.copy_context()

    def settle(outcome: Callable[[], None]) -> None:
        if not done.done():
            outcome()

    def work() -> None:
        try:
            value = context.run(function, *args)
        except BaseException as err:  # noqa: BLE001 - handed to the awaiting coroutine, which says it
            # SystemExit or KeyboardInterrupt raised in this thread is the function's failure, not the loop's to obey
            failure = err if isinstance(err, Exception) else RuntimeError(f"{type(err).__name__}: {err}")
            _hand(loop, settle, lambda: done.set_exception(failure))
        else:
            _hand(loop, settle, lambda: done.set_result(value))

    threading.Thread(target=work, name="mcp_nb model function", daemon=True).start()
    return await done


def _hand(loop: asyncio.AbstractEventLoop, settle: Callable[[Callable[[], None]], None], outcome: Callable[[], None]) -> None:
    try:
        loop.call_soon_threadsafe(settle, outcome)
    except RuntimeError:
        pass  # the loop is closed (mcp_nb.reset()): nobody waits for this reply any more


def _name_of(function: Callable[..., Any]) -> str:
    name = getattr(function, "__name__", None) or type(function).__name__
    return "function" if name == "<lambda>" else name


def model_of(value: Any, name: str | None = None) -> Model:
    """`model=` as given: a Model as it is, a function wrapped; anything else refused in one line."""
    if isinstance(value, Model):
        return value
    if callable(value):
        return FunctionModel(value, name)
    raise BadType(f"a model is a function (messages, tools) -> reply, or an adapter such as mcp_nb.OpenAICompatible(...), not {type(value).__name__}")


def models_of(value: Any) -> list[tuple[str, Model]]:
    """`models=` of an evaluation, as (name, model) pairs: one model, a list of them, or a dict of
    names to models. Names tell the rows apart: a second model of one name gets a number."""
    if isinstance(value, dict):
        given = []
        for name, model in value.items():
            if not isinstance(name, str) or not name.strip():
                raise BadType(f"models= names each model with text, not {name!r}")
            given.append((name, model_of(model, name)))
    elif isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        given = [(model.name, model) for model in map(model_of, value)]
    else:
        model = model_of(value)
        given = [(model.name, model)]
    if not given:
        raise BadType("models= names no model")
    seen: dict[str, int] = {}
    named = []
    for name, model in given:
        seen[name] = seen.get(name, 0) + 1
        named.append((name if seen[name] == 1 else f"{name}#{seen[name]}", model))
    return named
