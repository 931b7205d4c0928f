"""Who to tell when something changes: the one list of listeners of every part that is watched.

The history tells its listeners of every recorded call, the registry of every registration,
a connection of every change in what its server offers. Each keeps a `Listeners`, and the
same two rules hold for all of them:

- A bound method is held weakly. Listening never keeps the listener's object alive: a view
  that is gone (a panel nothing refers to any more) costs nothing, and its entry goes with
  it. Any other callable (a function, a lambda, a closure) is held as given, since the list
  may be all that keeps it.
- A listener that raises is logged (on the `mcp_nb` logger, with its traceback) and the
  others are still told: a broken view must never lose a call or break registering.

Telling is cheap on the call path: the listeners are a tuple, replaced whole on every change,
so a thread that tells them reads it without a lock.

`WeakCall` is a bound method held weakly for a list that holds what it is given (traitlets'
observers), for an object that must not be kept alive by it either.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Iterator
from types import MethodType
from typing import Any

from mcp_nb.mistakes import BadType

log = logging.getLogger(__name__)


class Listeners:
    """The listeners of one thing, told in the order they were added: `listeners(*args)`."""

    __slots__ = ("_what", "_held", "_lock")

    def __init__(self, what: str) -> None:
        self._what = what  # "history listener": what a failure is logged as
        self._held: tuple[Any, ...] = ()  # callables, and WeakMethods of bound methods
        # Re-entrant: a finalizer run by the garbage collector while a listener is being added
        # may remove another one on the same thread.
        self._lock = threading.RLock()

    def add(self, listener: Callable[..., Any]) -> None:
        """Tell `listener` from now on (a bound method is held weakly, see the module docstring)."""
        if not callable(listener):
            raise BadType(f"a listener must be callable, got {type(listener).__name__}")
        held = _weakly(listener) if isinstance(listener, MethodType) else listener
        with self._lock:
            self._held = (*self._live(), held)

    def remove(self, listener: Callable[..., Any]) -> None:
        """Stop telling `listener` (added twice, it is told once less); one never added is ignored."""
        with self._lock:
            held = self._live()
            for i, each in enumerate(held):
                if _resolve(each) == listener:
                    self._held = held[:i] + held[i + 1 :]
                    return
            self._held = held

    def __call__(self, *args: Any) -> None:
        """Tell every listener; one that fails is logged, and the next ones are still told."""
        gone = False
        for each in self._held:
            listener = _resolve(each)
            if listener is None:
                gone = True
                continue
            try:
                listener(*args)
            except Exception:  # a broken view must not break what it watches
                log.exception("%s failed", self._what)
        if gone:
            with self._lock:
                self._held = self._live()

    def _live(self) -> tuple[Any, ...]:
        return tuple(each for each in self._held if _resolve(each) is not None)

    def __iter__(self) -> Iterator[Callable[..., Any]]:
        """The listeners still there, in order."""
        for each in self._held:
            listener = _resolve(each)
            if listener is not None:
                yield listener

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __bool__(self) -> bool:
        # What the call path asks before telling anyone: no resolving here (a listener that
        # is gone is skipped, and forgotten, when they are told).
        return bool(self._held)

    def __contains__(self, listener: object) -> bool:
        return any(each == listener for each in self)

    def __repr__(self) -> str:
        return f"<{len(self)} {self._what}s>"


def _weakly(method: MethodType) -> Any:
    try:
        return weakref.WeakMethod(method)
    except TypeError:  # an object that cannot be referred to weakly (__slots__ without __weakref__)
        return method


def _resolve(held: Any) -> Callable[..., Any] | None:
    return held() if isinstance(held, weakref.WeakMethod) else held


class WeakCall:
    """A bound method held weakly, as a callable: calling it once its object is gone does nothing.

    For a list that holds whatever it is given (traitlets' observers, the engine's close
    listeners): the object the method belongs to stays free to go. Remove the WeakCall itself,
    not the method, from that list.
    """

    __slots__ = ("_method", "__weakref__")

    def __init__(self, method: Callable[..., Any]) -> None:
        if not isinstance(method, MethodType):
            raise BadType(f"WeakCall holds a bound method, got {type(method).__name__}")
        self._method = weakref.WeakMethod(method)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        method = self._method()
        return None if method is None else method(*args, **kwargs)

    @property
    def alive(self) -> bool:
        return self._method() is not None

    def __repr__(self) -> str:
        method = self._method()
        return f"<WeakCall of {getattr(method, '__qualname__', 'a method whose object is gone')}>"
