"""Why a model gave no reply: one class, a kind, and one line that never holds a key.

    ModelError                  the model gave no reply (`kind` says why)
     ├── BadReply               it replied, but not in the chat-completions shape
     └── (kinds without classes of their own: "unreachable", "http_error", "rate_limited",
          "timeout", "raised")

The episode loop catches a `ModelError` and ends the episode with the stop `model_failed`, this
line as its detail; a face never raises it. Its text comes from a peer (an endpoint's error body,
a function's exception) and is made safe before it is kept: one line (`mistakes.one_line`), with
every key this process knows taken out (`keys.scrub`).
"""

from __future__ import annotations

from mcp_nb.mistakes import Failure

KINDS = ("unreachable", "http_error", "rate_limited", "bad_reply", "timeout", "raised")


class ModelError(Failure):
    """A model gave no reply. `kind` is one of KINDS; `status` the HTTP status when there was one;
    `retry_after` the seconds an endpoint asked to wait (a rate limit)."""

    def __init__(self, kind: str, message: str, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.retry_after = retry_after


class BadReply(ModelError):
    """A reply that is not in the chat-completions shape (no assistant message, a tool call without a name...)."""

    def __init__(self, message: str) -> None:
        super().__init__("bad_reply", message)
