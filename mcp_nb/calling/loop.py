"""mcp_nb's own event loop, in a daemon thread.

The SDK's client session is an anyio context manager whose cancel scopes must be
entered and left by the same task. Jupyter's kernel already runs a loop, plain
scripts run none, and `nest_asyncio` breaks exactly that rule, so mcp_nb gives the
session one long-lived owner instead: a loop in a thread of its own (the shape of
dask.distributed's `Client`). Every face (sync, `await`, widget callbacks) submits
coroutines to it; nothing in the user's loop is patched.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
import logging
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

log = logging.getLogger("mcp_nb")

# How long a thread that waits for the loop (closing, interpreter exit) goes on waiting once the
# loop stopped answering: an async handler that holds it without awaiting may never let go.
HELD_LIMIT_S = 2.0
# How long a callback may take to run before the loop counts as not answering, for `wait`.
ANSWER_S = 0.1
# A sync face waits in its thread for an answer that this loop makes: from a coroutine on the
# loop (an async tool) it would wait for itself, forever.
BLOCKS_OWN_LOOP = (
    "this would block mcp_nb's own event loop; from a coroutine running there, use the async form (for example `{example}`)"
)


class LoopThread:
    def __init__(self, name: str = "mcp_nb-loop") -> None:
        self._ready = threading.Event()
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()
        self._ready.wait()

    def _main(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self.loop = loop
        # The loop runs one root task until stop(), as asyncio.run() would. anyio ties each
        # worker thread it starts for a sync handler to the loop's root task; on a loop with
        # none (run_forever) it falls back to the task that asked, which ends with its
        # request, so every sync call started and stopped a thread of its own.
        self._stopping = loop.create_future()
        root = loop.create_task(self._until_stopped(), name="mcp_nb-loop-root")
        self._ready.set()
        try:
            while True:
                try:
                    loop.run_until_complete(root)
                    break  # stop() was called
                except BaseException:  # noqa: BLE001
                    # A SystemExit or KeyboardInterrupt escaping some task stops the
                    # loop; the loop itself is fine, so keep serving calls.
                    log.debug("an exception escaped a task on mcp_nb's event loop", exc_info=True)
                    if root.done():
                        break
                    continue
        finally:
            try:
                _cancel_remaining(loop)
            finally:
                loop.close()

    def in_loop(self) -> bool:
        return threading.current_thread() is self._thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call_soon(self, callback: Callable[[], Any]) -> None:
        """Run `callback` on the loop, from any thread (RuntimeError once the loop is closed)."""
        assert self.loop is not None
        self.loop.call_soon_threadsafe(callback)

    def answers(self, within: float) -> bool:
        """Whether the loop runs a callback within `within` seconds (False while something holds it)."""
        if self.in_loop():
            return True
        heard = threading.Event()
        try:
            self.call_soon(heard.set)
        except RuntimeError:
            return False
        return heard.wait(within)

    async def answers_async(self, within: float) -> bool:
        """`answers` for a coroutine on another loop: waits without blocking that loop."""
        heard = asyncio.Event()
        caller = asyncio.get_running_loop()
        try:
            self.call_soon(lambda: caller.call_soon_threadsafe(heard.set))
        except RuntimeError:
            return False
        try:
            await asyncio.wait_for(heard.wait(), within)
        except TimeoutError:
            return False
        return True

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` on the loop and block this thread for its result.

        An interrupt (Ctrl-C, the kernel's stop button) cancels the coroutine and is
        re-raised here; the coroutine gets to record what it was doing first.
        """
        if self.in_loop():
            coro.close()
            raise RuntimeError(BLOCKS_OWN_LOOP.format(example="await mcp_nb.acall(...)"))
        future = self.submit(coro)
        try:
            return future.result()
        except KeyboardInterrupt:
            future.cancel()
            raise

    async def run_async(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await `coro` from any event loop; runs it directly when already on this loop."""
        if self.in_loop():
            return await coro
        return await asyncio.wrap_future(self.submit(coro))

    async def _until_stopped(self) -> None:
        await self._stopping

    def _end(self) -> None:
        if not self._stopping.done():
            self._stopping.set_result(None)

    def wait(self, done: concurrent.futures.Future[T] | threading.Event, limit: float, held_limit: float = HELD_LIMIT_S) -> bool:
        """Wait until `done` (a coroutine's future on this loop, or an event the loop sets) for at
        most `limit` seconds, and give up sooner once the loop has not answered for `held_limit`
        seconds in a row (an async handler holds it without awaiting). True when it is done.

        For closing and stopping, which must end even when a handler never lets go. Not from the
        loop's own thread, which would wait for itself."""
        ready: Callable[[float], bool] = done.wait if isinstance(done, threading.Event) else functools.partial(_finished, done)
        end = time.monotonic() + limit
        held_since: float | None = None
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return ready(0)
            if ready(min(ANSWER_S, left)):
                return True
            if self.answers(ANSWER_S):
                held_since = None
                continue
            now = time.monotonic()
            held_since = now if held_since is None else held_since
            if now - held_since >= held_limit:
                return ready(0)

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop the loop and wait up to `timeout` seconds for its thread to end; True when it did.

        From the loop's own thread it only asks (a thread cannot wait for itself to end): the
        loop stops once the callback running now returns."""
        if self.loop is None or not self._thread.is_alive():
            return True
        try:
            self.loop.call_soon_threadsafe(self._end)
        except RuntimeError:  # closed already: the thread is on its way out
            pass
        if self.in_loop():
            return False
        self._thread.join(timeout=timeout)
        return not self._thread.is_alive()


def _cancel_remaining(loop: asyncio.AbstractEventLoop) -> None:
    # What asyncio.run() does on its way out: a task left pending when the loop closes
    # would leave whoever waits on it (a future in another thread) waiting forever.
    # Cancelled, each call records itself as cancelled and its waiters get an answer.
    tasks = [task for task in asyncio.all_tasks(loop) if not task.done()]
    if not tasks:
        return
    if any(_not_started(task) for task in tasks):
        # Cancelled before its first line, a call could not record itself: a call
        # submitted just before the stop gets one step first (to its first `await`).
        loop.run_until_complete(asyncio.sleep(0))
        tasks = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in tasks:
        task.cancel()
    try:
        loop.run_until_complete(asyncio.wait(tasks, timeout=5))
    except BaseException:  # noqa: BLE001 - stopping is best effort; the loop closes either way
        log.debug("the tasks left on mcp_nb's event loop did not all end as it stopped", exc_info=True)


def _finished(future: concurrent.futures.Future[T], seconds: float) -> bool:
    """Whether `future` ends within `seconds` (however it ends)."""
    try:
        future.exception(timeout=seconds)
    except concurrent.futures.TimeoutError:
        return False
    except concurrent.futures.CancelledError:
        pass
    return True


def _not_started(task: asyncio.Task[object]) -> bool:
    coro = task.get_coro()
    return inspect.iscoroutine(coro) and inspect.getcoroutinestate(coro) == inspect.CORO_CREATED
