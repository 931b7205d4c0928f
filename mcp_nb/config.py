"""The settings every face of mcp_nb shares.

There is one `Settings` object per process. The magics class exposes the same
traits (so `%config McpMagics.timeout = 10` works as JupySQL users expect) and is
linked to this object both ways, so `mcp_nb.configure(timeout=10)` and `%config`
change one setting, not two.
"""

from __future__ import annotations

import math

from traitlets import Bool, Float, HasTraits, Int, TraitError, validate

DEFAULT_TIMEOUT = 30.0  # seconds: the deadline the error-model documents give every request
MAX_DEPTH = 10
# A sync tool waiting on a nested call holds one of the SDK's 40 worker threads per level;
# past about that many the pool runs dry and every level waits for its deadline.
DEPTH_CEILING = 32


def check_timeout(value: object, what: str = "timeout") -> float:
    """Return `value` as seconds, or raise ValueError for anything that is not a positive number.

    A non-positive deadline is an error, never "no deadline": that is the rule in the
    documents, where the SDK would instead fail the call at once with -32001.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} must be a positive number of seconds, got {value!r}")
    seconds = float(value)
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{what} must be a positive number of seconds, got {value!r}")
    return seconds


class SharedTraits(HasTraits):
    """The configurable values, declared once for `Settings` and for the magics."""

    timeout = Float(
        DEFAULT_TIMEOUT,
        help="Client-wide deadline of every request, in seconds (a call's own timeout overrides it).",
    ).tag(config=True)
    show_server_logs = Bool(
        False,
        help="Also print the server's log records live (they are always kept on the call's Outcome).",
    ).tag(config=True)
    history_rows = Int(20, help="How many of the latest calls `%mcp_history` shows.").tag(config=True)
    max_depth = Int(
        MAX_DEPTH,
        help="How deep calls may nest (a tool that calls a tool through mcp_nb...); deeper calls are refused.",
    ).tag(config=True)

    @validate("timeout")
    def _valid_timeout(self, proposal):
        try:
            return check_timeout(proposal["value"])
        except ValueError as err:
            raise TraitError(str(err)) from None

    @validate("max_depth")
    def _valid_depth(self, proposal):
        value = proposal["value"]
        if not 1 <= value <= DEPTH_CEILING:
            raise TraitError(f"max_depth must be between 1 and {DEPTH_CEILING}, got {value}")
        return value

    @validate("history_rows")
    def _valid_rows(self, proposal):
        if proposal["value"] < 1:
            raise TraitError(f"history_rows must be at least 1, got {proposal['value']}")
        return proposal["value"]


class Settings(SharedTraits):
    """The process-wide settings object read by the engine at every call."""


settings = Settings()

CONFIGURABLE = ("timeout", "show_server_logs", "history_rows", "max_depth")


def configure(**values: object) -> dict[str, object]:
    """Change settings; returns them all. Bad names or values raise and change nothing.

    >>> configure(timeout=10)  # doctest: +SKIP
    """
    unknown = sorted(set(values) - set(CONFIGURABLE))
    if unknown:
        raise ValueError(f"unknown setting(s) {', '.join(unknown)}; known: {', '.join(CONFIGURABLE)}")
    # Validate everything first so a bad value leaves every setting as it was.
    checked = {}
    probe = SharedTraits()
    for name, value in values.items():
        try:
            setattr(probe, name, value)
        except TraitError as err:
            raise ValueError(str(err)) from None
        checked[name] = getattr(probe, name)
    for name, value in checked.items():
        setattr(settings, name, value)
    return {name: getattr(settings, name) for name in CONFIGURABLE}
