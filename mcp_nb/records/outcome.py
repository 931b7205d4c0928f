"""The record of one call: what the model, the host and the operator each saw.

An `Outcome` is frozen. The one part of a call that can still change after the
caller has its Outcome is the server side of a timed-out call (the handler may run
on, then finish or be cancelled): the `server_fate*` properties and `server_logs`
read it live from the call's trace, which is exactly the "unknown outcome" the
error-model documents warn about, made visible.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import MISSING, dataclass, field, fields, make_dataclass
from datetime import UTC, datetime
from html import escape
from typing import TYPE_CHECKING, Any, Protocol, cast

from mcp_nb import libraries as lib
from mcp_nb.elicitation import recorded
from mcp_nb.records.classify import late_outcome
from mcp_nb.records.structured import NotTabular, records
from mcp_nb.records.trace import ProgressEvent, ServerLog, ServerTrace
from mcp_nb.views.cards import outcome_html, outcome_text

if TYPE_CHECKING:
    import pandas as pd

    from mcp_nb.calling.sampling import Sampling
    from mcp_nb.elicitation import Elicitation

OUTCOMES = ("result", "tool_error", "protocol_error", "timeout")
TARGETS = ("tool", "resource", "prompt")
CAUSES = (
    "ok",
    "raised",
    "crash",
    "invalid_arguments",
    "unknown_tool",
    "returned",
    "mcp_error",
    "not_found",
    "resource_error",
    "client_error",
    "disconnected",
    "http_error",
    "unauthorized",
    "url_required",
    "invalid_response",
    "invalid_output",
    "non_json_number",
    "deadline",
    "max_timeout",
    "cancelled",
    "worker_lost",
)
FATES = ("running", "completed", "cancelled", "unobserved", "cancel_requested")
# Who sent the call: mcp_nb itself, an outside client over a transport, or a replay of a saved
# case (told apart, so that saving the history does not save the replay again as new cases).
VIAS = ("kernel", "http", "stdio", "replay")


class Printer(Protocol):
    """IPython's pretty printer, as a `_repr_pretty_` uses it."""

    def text(self, obj: str) -> None: ...


class CauseDoc(dict[str, str]):
    """What each cause means, by name; shown (and printed) as a table of cause and meaning."""

    def __repr__(self) -> str:
        width = max(map(len, self))
        return "\n".join(f"{cause:<{width}}  {meaning}" for cause, meaning in self.items())

    __str__ = __repr__

    def _repr_pretty_(self, printer: Printer, cycle: bool) -> None:
        printer.text(repr(self))

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td><code>{escape(cause)}</code></td><td style='text-align:left'>{escape(meaning)}</td></tr>"
            for cause, meaning in self.items()
        )
        return f"<table><thead><tr><th>cause</th><th style='text-align:left'>what it means</th></tr></thead><tbody>{rows}</tbody></table>"


# What each cause means, for docs and help; docs/outcomes.md is made from it.
CAUSE_DOC = CauseDoc(
    {
        "ok": "the handler returned normally",
        "raised": "the tool raised ToolError: its message is what the model reads",
        "crash": "the handler (or the server's middleware) raised another exception: the text stays on the server, the traceback goes to the log",
        "invalid_arguments": "the arguments did not match the input schema (the function never ran)",
        "unknown_tool": "no tool of that name is registered",
        "returned": "the tool returned a result flagged isError itself",
        "mcp_error": "the handler (or the server's middleware) raised MCPError: code, message and data reach the host unchanged",
        "not_found": "ResourceNotFoundError, an unknown URI, or an unknown prompt",
        "resource_error": "the resource handler raised ResourceError",
        "client_error": "the client failed to finish the request (for example a result it could not validate)",
        "disconnected": "the connection to the server was lost (its process exited, the stream closed), or it was not connected",
        "http_error": "the HTTP server answered with an error status (401, 403, 404, 5xx...): status and body in data",
        "url_required": "the server needs the user to open a page first (-32042, an authorization or a payment): its address is in data; call again after",
        "unauthorized": "the client could get no credentials the server takes: the OAuth flow failed at a step the message names, or nobody approved in time",
        "invalid_response": "the server's answer did not pass the protocol's schema, or was no JSON-RPC at all (an HTML page, a cut body): the client refused it",
        "invalid_output": (
            "the tool's structured result did not match its declared output schema "
            "(refused by the server's check of the return value, or by the client's)"
        ),
        "non_json_number": (
            "the answer held NaN or an infinity, which JSON has not: the kernel's server refused what its handler "
            "returned (the text says which number and where), or the client refused an outside server's answer"
        ),
        "deadline": "the client stopped waiting at the deadline (code -32001); with reset_on_progress, no progress came for a whole timeout",
        "max_timeout": "the call reset its deadline on progress until the hard ceiling max_timeout ended it (code -32001)",
        "cancelled": "the caller stopped waiting before the deadline (interrupt, cancel; code -32800)",
        "worker_lost": "the dask worker running the call died before it sent the call's record back: whether the call ran is unknown",
    }
)

REQUEST_TIMEOUT = -32001
REQUEST_CANCELLED = -32800


@dataclass(frozen=True, slots=True, eq=False)
class Outcome:
    """One call and how it ended. Never raised: every failure is a value of this type."""

    call_id: int
    target: str  # "tool" | "resource" | "prompt"
    name: str  # tool or prompt name, or the URI read
    arguments: Mapping[str, Any] | None
    outcome: str  # one of OUTCOMES
    cause: str  # one of CAUSES
    content: str | None  # what the model reads: the text of the content blocks, joined
    structured_content: Any
    is_error: bool | None  # the result's isError flag; None when there was no result
    code: int | None  # what the host sees, for protocol errors and timeouts
    message: str | None
    data: Any
    started: float  # when the request was sent, in seconds since the epoch (see `started_at`)
    duration_ms: float
    timeout_s: float
    trace: ServerTrace | None = field(default=None, repr=False)
    observed: bool = field(default=True, repr=False)  # mcp_nb's probe wraps this handler
    attempt: int = 1  # attempts of one call share its call_id; the final Outcome's is the count
    backoff_s: float = 0.0  # the wait before this attempt
    fallback: bool = False  # `content` is the caller's fallback, not what the server sent
    server: str = "kernel"  # the connection the call went to (the kernel's own server is `kernel`)
    worker: str | None = None  # the dask worker that made the call (a sweep with `cluster=`); None in the kernel
    via: str = (
        "kernel"  # one of VIAS: "kernel" for mcp_nb's own calls, "replay" for a replay's, "http"/"stdio" for an outside client's
    )
    client: str | None = None  # an outside client's name and version, as it introduced itself
    deadline_resets: int = 0  # how many progress events restarted the deadline (reset_on_progress)
    max_timeout_s: float | None = None  # the ceiling of a deadline that resets on progress; None without resets
    elicitations: tuple[
        Elicitation, ...
    ] = ()  # the questions the server asked during the call and their answers (`Elicitation`s)
    samplings: tuple[Sampling, ...] = ()  # the completions the server asked of the client's model, and the replies (`Sampling`s)
    protocol: str | None = None  # the protocol version the call was made on ("2025-11-25", "2026-07-28")
    retry: Mapping[str, Any] | None = None  # the call's retry policy as plain values (`Retry.as_dict()`); None without retries
    # The result's images and sounds: the SDK's content blocks as they came (ImageContent,
    # AudioContent, an EmbeddedResource of an image or sound). The card shows them; `content`
    # names them; the history keeps only the text.
    media: tuple[Any, ...] = field(default=(), repr=False)
    # The episode of a model in the loop whose model asked for this call, and the model's turn it
    # came in (`mcp_nb.agent`, `mcp_nb.evaluate`); None for a call no model made.
    episode: int | None = None
    turn: int | None = None

    def __post_init__(self) -> None:
        if self.elicitations:
            # The call's record of each answer holds no secret: the server has had the real one.
            object.__setattr__(self, "elicitations", tuple(recorded(e) for e in self.elicitations))

    @property
    def started_at(self) -> datetime:
        """When the request was sent (UTC)."""
        return datetime.fromtimestamp(self.started, tz=UTC)

    @property
    def ok(self) -> bool:
        return self.outcome == "result"

    @property
    def server_logs(self) -> tuple[ServerLog, ...]:
        """The server's log records for this call (level, logger, message, traceback)."""
        return tuple(self.trace.logs) if self.trace is not None else ()

    @property
    def progress(self) -> tuple[ProgressEvent, ...]:
        """The progress notifications the server sent for this call (progress, total, message, seconds)."""
        return tuple(self.trace.progress) if self.trace is not None else ()

    def progress_frame(self) -> pd.DataFrame:
        """The progress events as a DataFrame: progress, total, message, seconds since the request was sent."""
        return progress_frame([(self.call_id, self.attempt, self.progress)])

    @property
    def server_fate(self) -> str | None:
        """For a timeout: what the server did with the abandoned request.

        `running` (still going), `completed` (it finished after the client gave up;
        see `fate_outcome`), `cancelled`, `unobserved` (a handler mcp_nb did not
        register, so nothing watched it), or `cancel_requested` (an outside server was
        sent the protocol's cancellation; what it did cannot be seen from the client).
        None for calls that did not time out.
        """
        if self.outcome != "timeout":
            return None
        trace = self.trace
        if self.server != "kernel" and trace is not None and trace.t0 is not None and self.duration_ms > 0:
            return "cancel_requested"
        if not self.observed or trace is None:
            return "unobserved"
        if trace.status is None:
            # Never started means the request was dropped before the handler ran.
            return "running" if trace.handler_started is not None else "cancelled"
        return "cancelled" if trace.status == "cancelled" else "completed"

    @property
    def fate_outcome(self) -> str | None:
        """The outcome the late handler would have produced, had anyone waited."""
        return self._late()[0]

    @property
    def fate_cause(self) -> str | None:
        return self._late()[1]

    @property
    def fate_after_ms(self) -> float | None:
        """When the abandoned handler ended, in ms after the request was sent."""
        if self.server_fate not in ("completed", "cancelled") or self.trace is None:
            return None
        if self.trace.handler_ended is None:
            return None
        return (self.trace.handler_ended - self.trace.t0) * 1000.0

    def _late(self) -> tuple[str | None, str | None]:
        if self.server_fate != "completed" or self.trace is None:  # a completed handler left a trace
            return (None, None)

        return late_outcome(self.target, self.trace)

    def frame(self, key: str | None = None) -> pd.DataFrame:
        """The structured result as a DataFrame, one row per record (`-> list[Book]` gives a row per
        Book). `key` picks the field when the result holds more than one list of records. A result
        that is not a list of records raises ValueError saying what it is."""
        if self.outcome != "result":
            raise NotTabular(f"call #{self.call_id} ended as {self.outcome} ({self.cause}): there is no result to tabulate")
        return lib.pandas.DataFrame.from_records(records(self.structured_content, key))

    def _repr_html_(self) -> str:
        return outcome_html(self)

    def __repr__(self) -> str:
        return outcome_text(self)

    def _repr_pretty_(self, printer: Printer, cycle: bool) -> None:  # IPython's text/plain
        printer.text(repr(self))


# mcp_nb makes an Outcome for every call, and a frozen dataclass sets each of its fields
# through `object.__setattr__`: 8 µs an Outcome on this kind of machine, the largest single
# part of what mcp_nb adds to a call. So mcp_nb's calls fill a mutable twin with the same
# slots (an ordinary `__init__`, under 1 µs) and then make it an Outcome: the same object,
# frozen from then on (`seal`). Anyone else's `Outcome(...)` is the dataclass's own.
# To a type checker a draft is what it holds and how it is made: an Outcome's fields.
OutcomeDraft = cast(
    "type[Outcome]",
    make_dataclass(
        "OutcomeDraft",
        [(f.name, f.type) if f.default is MISSING else (f.name, f.type, field(default=f.default)) for f in fields(Outcome)],
        slots=True,
        eq=False,
    ),
)
OutcomeDraft.__module__ = __name__


def seal(draft: Outcome) -> Outcome:
    """The Outcome `draft` holds: the same object, now frozen, its answers masked (`__post_init__`)."""
    draft.__class__ = Outcome
    if draft.elicitations:
        draft.__post_init__()
    return draft


PROGRESS_COLUMNS = ("call_id", "attempt", "progress", "total", "message", "seconds")


def progress_frame(calls: Iterable[tuple[int, int, Iterable[ProgressEvent]]]) -> pd.DataFrame:
    """One row per progress event of the given (call_id, attempt, events), in the order they came."""
    rows = [(call_id, attempt, e.progress, e.total, e.message, e.seconds) for call_id, attempt, events in calls for e in events]
    frame = lib.pandas.DataFrame(rows, columns=list(PROGRESS_COLUMNS))
    return frame.astype({"call_id": "int64", "attempt": "int32", "progress": "float64", "total": "float64", "seconds": "float64"})
