"""One episode on mcp_nb's loop: the model asked, its tool calls made through the engine, until it ends.

Each turn the model is sent the conversation and the tools offered and replies (`models/`). A reply
without tool calls ends the episode: the model answered. Otherwise each tool call it asked for is
a step, in order:

- arguments that are not a JSON object are not sent; the host's policy says what the model is told
  (or ends the episode);
- a tool that was not offered is sent like any other call unless the policy refuses it;
- anything else is prepared by the engine (`Engine.prepare`, every check of every call) and run
  here, in the episode's task (`Call.run`, as a sweep's workers run theirs), so it is an ordinary
  call: its deadline, its Outcome, its row in the history, with its `episode` and `turn`;
- the model is told what the policy says of the Outcome, and that is recorded on the step.

Nothing the model or a tool does makes this raise: a model that raises, times out or replies in
another shape ends the episode as `model_failed`; a model that never stops ends `out_of_turns`; a
budget reached ends it as `budget`. An interrupt or a reset cancels it: the call in flight records
itself as cancelled (as any call does), the episode ends as `cancelled`, and the cancellation goes
on. However it ends, the episode is recorded once, by the history that recorded its calls
(`History.record_episode`).

`EpisodeRun` is what `batch.core.Lanes` runs (`run()`, `task`, `outcome`): an episode, or an
evaluation's thousand, waits on the one batch core like a sweep's calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
import time
from collections.abc import Sequence
from typing import Any

from mcp_nb.batch.core import Lanes
from mcp_nb.episodes.episode import Episode, Step, Turn
from mcp_nb.episodes.policy import HostPolicy
from mcp_nb.episodes.tasks import judge
from mcp_nb.mistakes import BadJson, BadType, BadValue, Mistake, first_line, read_json
from mcp_nb.models.budget import Budget, Spending
from mcp_nb.models.errors import ModelError
from mcp_nb.models.function import Model, raised
from mcp_nb.models.keys import scrub
from mcp_nb.models.shape import tool_message, tool_spec

MODEL_TIMEOUT_S = 120.0  # how long one reply may take, unless told otherwise
# The episode whose task runs now: the calls it makes record themselves in its context, so a
# listener of the history (a dask worker's partition) can tell them from others'.
CURRENT_EPISODE: contextvars.ContextVar[int | None] = contextvars.ContextVar("mcp_nb_episode", default=None)
RESET = "stopped by mcp_nb.reset()"
INTERRUPTED = "interrupted"


def read_arguments(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """A tool call's arguments as the model wrote them: the object, or why they cannot be sent.
    No text at all is an empty object (what a model writes for a tool without parameters)."""
    if not text or text.isspace():
        return {}, None
    try:
        value = read_json(text)  # said in one line, as every reader of JSON says it
    except BadJson as err:
        return None, f"they are not JSON ({err})"
    if isinstance(value, dict):
        return value, None
    return None, f"they are JSON {_json_kind(value)}, where an object is needed"


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "text"
    if isinstance(value, bool):
        return "true/false"
    return "null" if value is None else "number"


class Shared:
    """What the episodes of one evaluation share: the models opened once, and the evaluation's budget."""

    def __init__(self, total: Budget | None = None) -> None:
        self.sessions: dict[int, Any] = {}  # id(model) -> its reply, once opened
        self.total = total
        self.spending = Spending()


class EpisodeRun:
    """One episode, ready to run on mcp_nb's loop (`run`); `outcome` is its Episode once it ended."""

    __slots__ = (
        "engine",
        "episode",
        "model",
        "shared",
        "connection",
        "offered",
        "specs",
        "policy",
        "budget",
        "timeout",
        "model_timeout",
        "check",
        "task",
        "outcome",
        "current",
        "recorded",
        "_lock",
        "_settled",
    )

    def __init__(
        self,
        engine: Any,
        episode: Episode,
        model: Model,
        shared: Shared,
        connection: Any,
        specs: list[dict[str, Any]],
        policy: HostPolicy,
        budget: Budget | None,
        timeout: float | None,
        model_timeout: float,
        check: Any = None,
        judged: bool = False,
        recorded: bool = True,
    ) -> None:
        self.engine = engine
        self.episode = episode
        self.model = model
        self.shared = shared
        self.connection = connection
        self.specs = specs
        self.offered = {spec["function"]["name"]: None for spec in specs}  # in the order offered, looked up at once
        self.policy = policy
        self.budget = budget
        self.timeout = timeout
        self.model_timeout = model_timeout
        self.check = check if judged else _NOT_JUDGED
        self.task: asyncio.Task | None = None
        self.outcome: Episode | None = None
        self.current: Any = None  # the call in flight
        self.recorded = recorded  # kept beside the history (not on a dask worker: the kernel keeps it)
        self._lock = threading.Lock()
        self._settled = False  # the batch recorded it as cancelled: its own end records nothing

    async def run(self) -> Episode:
        self.task = asyncio.current_task()
        episode = self.episode
        episode.started = time.time()
        t0 = time.perf_counter()
        spending = Spending()
        token = CURRENT_EPISODE.set(episode.id)
        try:
            await self._turns(spending)
        except asyncio.CancelledError:
            self._end(t0, spending, "cancelled", RESET if self.engine.closed else INTERRUPTED)
            raise
        except BaseException:
            self._end(t0, spending, "cancelled", "mcp_nb failed: a bug (the traceback follows)")
            raise
        finally:
            CURRENT_EPISODE.reset(token)
        self._end(t0, spending)
        return episode

    def _end(self, t0: float, spending: Spending, stop: str | None = None, detail: str | None = None) -> None:
        """The episode ended (`stop`, `detail` when it did not end by itself): judged, kept, recorded once."""
        with self._lock:
            if self._settled:  # the batch already recorded it as cancelled
                return
            episode = self.episode
            if stop is not None:
                episode.stop, episode.detail = stop, detail
            episode.duration_ms = (time.perf_counter() - t0) * 1000.0
            episode.tokens = spending.tokens
            if self.check is not _NOT_JUDGED:
                episode.passed, episode.check_error = judge(self.check, episode)
            self.outcome = episode
        if self.recorded:
            self.engine.history.record_episode(episode)

    def settle_cancelled(self) -> Episode:
        """A stopped batch builds its frame, and this episode has not ended: recorded as cancelled
        from here (any thread), its call in flight too (`Call.settle_cancelled`); its own end, when
        its task gets there, records nothing. Recorded once."""
        call = self.current
        if call is not None:
            call.settle_cancelled()
        with self._lock:
            if self.outcome is not None or self._settled:
                return self.outcome
            self._settled = True
            episode = self.episode
            episode.stop, episode.detail = "cancelled", "it did not end when its batch was stopped"
            self.outcome = episode
        if self.recorded:
            self.engine.history.record_episode(episode)
        return episode

    async def _turns(self, spending: Spending) -> None:
        episode, shared, budget = self.episode, self.shared, self.budget
        messages, turns, specs = episode.messages, episode.turns, self.specs
        reply_to = shared.sessions[id(self.model)]
        budgeted = budget is not None or shared.total is not None
        seconds = self.model_timeout
        for number in range(1, episode.max_turns + 1):
            if budgeted:
                reached = spending.reached(budget) or _evaluation(shared.spending.reached(shared.total))
                if reached:
                    episode.stop, episode.detail = "budget", reached
                    return
                seconds = max(
                    0.001, min(self.model_timeout, spending.seconds_left(budget), shared.spending.seconds_left(shared.total))
                )
            t0 = time.perf_counter()
            try:
                reply = await reply_to(list(messages), specs, seconds, f"call_t{number}")
            except ModelError as err:
                reached = err.kind == "timeout" and (
                    spending.reached(budget) or _evaluation(shared.spending.reached(shared.total))
                )
                if reached:  # the reply was cut short by what the budget had left
                    episode.stop, episode.detail = "budget", reached
                    return
                episode.stop, episode.detail = "model_failed", scrub(str(err))
                episode.traceback = getattr(err, "traceback", None)
                return
            except Exception as err:  # noqa: BLE001 - an adapter's own failure ends the episode, said, never raised
                failure = raised(err, f"the model {self.model.name!r} failed:")
                episode.stop, episode.detail, episode.traceback = "model_failed", str(failure), failure.traceback
                return
            tokens = reply.tokens
            turn = Turn(number, reply.content, [], reply.finish, (time.perf_counter() - t0) * 1000.0, tokens)
            turns.append(turn)
            spending.spent(tokens)
            if budgeted:
                shared.spending.spent(tokens)
            messages.append(reply.message())
            if not reply.tool_calls:
                episode.stop, episode.answer = "answered", reply.content or ""
                return
            steps = turn.steps
            for index, request in enumerate(reply.tool_calls):
                step = Step(number, index, request.id, request.name, request.arguments)
                steps.append(step)
                call = self._prepared(step)
                if call is not None:  # awaited here, not in a coroutine of its own: every step of the call passes fewer frames
                    self.current = call
                    try:
                        step.outcome = await call.run()
                    except asyncio.CancelledError:
                        step.outcome = call.outcome  # recorded as cancelled, as any call is
                        raise
                    finally:
                        self.current = None
                    step.told = self.policy.after(step.outcome)
                if step.told is None:
                    episode.stop = "host_stopped"
                    episode.detail = (
                        f"{step.reason} (bad_arguments: stop)"
                        if step.outcome is None
                        else f"after a {step.kind} ({step.kind}: stop)"
                    )
                    return
                messages.append(tool_message(request.id, step.told.text, step.told.is_error))
        episode.stop, episode.detail = "out_of_turns", f"{episode.max_turns} turns"

    def _prepared(self, step: Step) -> Any:
        """The call `step` asks for, prepared by the engine; None when the host does not send it
        (the policy's answer is then on the step already)."""
        arguments, why = read_arguments(step.arguments)
        if why is not None:
            step.reason = f"the arguments could not be read: {why}"
            step.told = self.policy.unreadable(why)
            return None
        if step.name not in self.offered:
            refused = self.policy.not_offered(step.name, list(self.offered))
            if refused is not None:
                step.reason, step.told = "the tool was not offered", refused
                return None
        try:
            call = self.engine.prepare("tool", step.name, arguments, self.timeout, connection=self.connection)
        except Mistake as err:  # a request no call can carry (an empty name, NaN in the arguments): not sent
            why = first_line(err)
            step.reason = f"no call can carry it: {why}"
            step.told = self.policy.unreadable(why)
            return None
        except RuntimeError:
            if self.engine.closed:  # reset between two calls: the episode ends as a cancelled one
                raise asyncio.CancelledError from None
            raise
        call.episode, call.turn = self.episode.id, step.turn  # on its Outcome, and its row in the history
        return call


class _NotJudged:
    def __repr__(self) -> str:
        return "not judged"


_NOT_JUDGED = _NotJudged()


def _evaluation(reached: str | None) -> str | None:
    return None if reached is None else f"the evaluation's {reached}"


class Episodes(Lanes):
    """Episodes on mcp_nb's loop, in lanes (`batch.core.Lanes`), their models opened once for all."""

    def __init__(
        self,
        engine: Any,
        runs: Sequence[EpisodeRun],
        shared: Shared,
        models: Sequence[Model],
        concurrency: int,
        ended: Any = None,
    ) -> None:
        super().__init__(engine, runs, concurrency, ended=ended)
        self.shared = shared
        self.models = list({id(m): m for m in models}.values())

    async def run(self) -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                for model in self.models:
                    self.shared.sessions[id(model)] = await stack.enter_async_context(model.opened())
                await super().run()
        finally:
            self.finished.set()

    def finished_as(self, episode: Episode) -> bool:
        return episode.stop != "cancelled"

    def episodes(self) -> list[Episode]:
        """The episodes that ran (an interrupt or a reset may have stopped some before they began)."""
        return [run.outcome for run in self.calls if run.outcome is not None]


def offered_tools(connection: Any, names: Sequence[str] | None) -> list[dict[str, Any]]:
    """The tools the model is offered: every tool of the server, or those named (all must exist)."""
    tools = {entry.name: entry for entry in connection.entries() if entry.kind == "tool"}
    if names is None:
        chosen = list(tools.values())
    else:
        if isinstance(names, str) or not isinstance(names, Sequence):
            raise BadType("tools= is a list of tool names")
        missing = [name for name in names if name not in tools]
        if missing:
            offered = ", ".join(tools) or "none"
            raise BadValue(f"{connection.name!r} has no tool {', '.join(map(repr, missing))} (its tools: {offered})")
        chosen = [tools[name] for name in dict.fromkeys(names)]
    return [tool_spec(entry.name, entry.description, entry.input_schema) for entry in chosen]


def conversation(task: str, system: str | None) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [] if not system else [{"role": "system", "content": system}]
    messages.append({"role": "user", "content": task})
    return messages


def check_model_timeout(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value != value or value == float("inf"):
        raise BadValue(f"model_timeout must be a positive number of seconds, got {value!r}")
    return float(value)


def check_turns(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise BadValue(f"max_turns must be a whole number >= 1, got {value!r}")
    return value
