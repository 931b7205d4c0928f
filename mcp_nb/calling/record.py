"""What every recorded call has, and how its Outcomes are built: `CallRecord`.

A `call.Call` is one (it sends the request); a call an outside client made to the served kernel
is another (serving's `OutsideCall`, which only records): both build their Outcomes here, so an
outcome and its cause mean the same whoever made the call. Outcomes are built through the
mutable twin (`outcome.seal`): a frozen dataclass's own __init__ costs more than the rest of
mcp_nb's work on a call.
"""

from __future__ import annotations

import itertools
import time

from mcp_types import CallToolResult, ErrorData, ReadResourceResult

from mcp_nb.calling.connections import METHODS, Answer, ConnectionLost
from mcp_nb.calling.retry import Retry
from mcp_nb.calling.sampling import Sampling
from mcp_nb.elicitation import Elicitation
from mcp_nb.records import classify
from mcp_nb.records.outcome import REQUEST_CANCELLED, REQUEST_TIMEOUT, Outcome, OutcomeDraft, seal
from mcp_nb.records.trace import ServerTrace
from mcp_nb.sdk_compat import TIMED_OUT

_ids = itertools.count(1)  # process-wide, so ids stay unique across `reset()`


class CallRecord:
    """What every recorded call has, and how its Outcomes are built (see the module's doc)."""

    __slots__ = (
        "id",
        "target",
        "name",
        "arguments",
        "timeout",
        "attempt",
        "backoff",
        "trace",
        "started",
        "t0",
        "reset_on_progress",
        "max_timeout",
        "resets",
        "_by_ceiling",
        "elicitations",
        "samplings",
        "episode",
        "turn",
    )

    via = "kernel"  # who sent it (a subclass that records an outside client's call has its own)
    client: str | None = None
    rule: Retry | None = None  # the retry policy (a `Call` that retries has one)

    def __init__(
        self, target: str, name: str, arguments: dict[str, object] | None, timeout: float, call_id: int | None = None
    ) -> None:
        # A record of a call that already has its id (one a cluster's worker never reported) keeps it.
        self.id = next(_ids) if call_id is None else call_id
        self.target = target
        self.name = name
        self.arguments = arguments
        self.timeout = timeout
        self.attempt = 0
        self.backoff = 0.0
        self.trace: ServerTrace | None = None
        self.started = 0.0  # epoch seconds when the current attempt was sent
        self.t0: float | None = None  # perf_counter() then; None until it is sent
        self.reset_on_progress = False  # each progress event restarts the deadline...
        self.max_timeout: float | None = None  # ...never past this many seconds after the request was sent
        self.resets = 0  # how many times the current attempt's deadline was restarted
        self._by_ceiling = False  # the deadline in force is max_timeout, not the last progress + timeout
        # The questions the server asked during this attempt, and the completions it asked of the
        # client's model: tuples, grown on the rare attempt that has any, so a plain call
        # allocates nothing here for the cycle collector to count.
        self.elicitations: tuple[Elicitation, ...] = ()
        self.samplings: tuple[Sampling, ...] = ()
        self.episode: int | None = None  # the episode whose model asked for this call (`episodes/loop.py`), and its turn
        self.turn: int | None = None

    def observes(self, target: str, key: str) -> bool:
        """Whether mcp_nb's probe watches the handler this call reaches."""
        return False

    def server_name(self) -> str:
        return "kernel"

    def local(self) -> bool:
        """Whether the server is in this process, where its log and its handlers are seen."""
        return True

    def timed_out_text(self) -> str:
        return TIMED_OUT

    def protocol(self) -> str | None:
        """The protocol version the call goes over (None when it cannot be known)."""
        return None

    # -- the Outcomes ---------------------------------------------------------------------------

    def _outcome(
        self,
        outcome: str,
        cause: str,
        duration_ms: float,
        content: str | None = None,
        structured_content: object = None,
        is_error: bool | None = None,
        code: int | None = None,
        message: str | None = None,
        data: object = None,
        observed: bool = True,
        media: tuple[object, ...] = (),
    ) -> Outcome:
        # Every call makes one: built through the mutable twin (see the module's doc).
        return seal(
            OutcomeDraft(
                call_id=self.id,
                target=self.target,
                name=self.name,
                arguments=self.arguments,
                outcome=outcome,
                cause=cause,
                content=content,
                structured_content=structured_content,
                is_error=is_error,
                code=code,
                message=message,
                data=data,
                started=self.started or time.time(),
                duration_ms=duration_ms,
                timeout_s=self.timeout,
                trace=self.trace,
                observed=observed,
                attempt=self.attempt or 1,
                backoff_s=self.backoff,
                server=self.server_name(),
                via=self.via,
                client=self.client,
                elicitations=self.elicitations,
                deadline_resets=self.resets,
                samplings=self.samplings,
                protocol=self.protocol(),
                max_timeout_s=self.max_timeout,
                retry=None if self.rule is None else self.rule.as_dict(),
                media=media,
                episode=self.episode,
                turn=self.turn,
            )
        )

    def _elapsed_ms(self) -> float:
        return 0.0 if self.t0 is None else (time.perf_counter() - self.t0) * 1000.0

    def _result(self, raw: Answer) -> Outcome:
        if isinstance(raw, CallToolResult):
            blocks = raw.content
            return self._tool_result(
                classify.content_text(blocks), bool(raw.is_error), raw.structured_content, classify.content_media(blocks)
            )
        duration = self._elapsed_ms()
        text = classify.resource_text(raw.contents) if isinstance(raw, ReadResourceResult) else classify.prompt_text(raw.messages)
        return self._outcome("result", "ok", duration, content=text, is_error=False)

    def _tool_result(self, content: str, is_error: bool, structured: object, media: tuple[object, ...] = ()) -> Outcome:
        kind, cause = classify.tool_result_cause(self.name, content, is_error, self.trace, self.local())
        return self._outcome(
            kind,
            cause,
            self._elapsed_ms(),
            content=content,
            structured_content=structured,
            is_error=is_error,
            media=media,
        )

    def _protocol_error(self, error: ErrorData, raised: tuple[tuple[str, str], ...] = ()) -> Outcome:
        cause = classify.protocol_error_cause(self.target, error.code, self.trace, error.message, self.local(), raised)
        return self._outcome("protocol_error", cause, self._elapsed_ms(), code=error.code, message=error.message, data=error.data)

    def _deadline(self, note: str = "") -> Outcome:
        method = METHODS[self.target]
        resets = f"the deadline was reset {self.resets} time{'s' if self.resets != 1 else ''} on progress"
        if self._by_ceiling:
            cause = "max_timeout"
            message = self.timed_out_text().format(seconds=self.max_timeout, method=method) + f" (max_timeout; {resets})"
        else:
            cause = "deadline"
            message = self.timed_out_text().format(seconds=self.timeout, method=method)
            if self.resets:
                message += f" (no progress for {self.timeout:g}s; {resets})"
        return self._outcome(
            "timeout",
            cause,
            self._elapsed_ms(),
            code=REQUEST_TIMEOUT,
            message=message + note,
            observed=self.observes(self.target, self.name),
        )

    def _cancelled(self) -> Outcome:
        elapsed = self._elapsed_ms()
        return self._outcome(
            "timeout",
            "cancelled",
            elapsed,
            code=REQUEST_CANCELLED,
            message=f"Cancelled by the caller after {elapsed / 1000:.3g}s",
            observed=self.observes(self.target, self.name),
        )

    def _unsent(self, attempt: int) -> Outcome:
        """Cancelled before the request was sent (while connecting, or waiting to retry)."""
        self.attempt, self.t0 = attempt, None
        self.started = time.time()
        self.trace = ServerTrace(time.perf_counter())  # no handler ever started: the server dropped nothing
        return self._outcome(
            "timeout",
            "cancelled",
            0.0,
            code=REQUEST_CANCELLED,
            message=f"Cancelled by the caller before attempt {attempt} was sent",
        )

    def _http_error(self, error: ErrorData, status: dict[str, object]) -> Outcome:
        return self._outcome(
            "protocol_error",
            "http_error",
            self._elapsed_ms(),
            code=error.code,
            message=f"HTTP {status['status']}: {error.message}",
            data=status,
        )

    def _sent_params(self) -> dict[str, object]:
        """What the request's params hold, to find its HTTP answer among the connection's."""
        if self.target == "resource":
            return {"uri": self.name}
        return {"name": self.name}

    def _client_error(self, err: BaseException) -> Outcome:
        """What escaped the SDK: a transport's failure where one can be told, else a client error."""
        cause, data = classify.client_failure(err)
        text = str(err).strip()
        if cause == "disconnected" and isinstance(err, ConnectionLost):
            message = text
        else:
            message = f"{type(err).__name__}: {text}" if text else type(err).__name__
        return self._outcome("protocol_error", cause, self._elapsed_ms(), message=message, data=data)
