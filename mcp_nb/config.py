"""The settings every face of mcp_nb shares.

There is one `Settings` object per process. The magics class exposes the same
traits (so `%config McpMagics.timeout = 10` works as JupySQL users expect) and is
linked to this object both ways, so `mcp_nb.configure(timeout=10)` and `%config`
change one setting, not two.
"""

from __future__ import annotations

import os
import warnings

from traitlets import Any, Bool, Float, HasTraits, Int, TraitError, validate

from mcp_nb.elicitation import check_elicit
from mcp_nb.history_file import ENV as HISTORY_FILE_ENV
from mcp_nb.history_file import check_writable
from mcp_nb.mistakes import BadValue
from mcp_nb.numbers import as_float, shown

DEFAULT_TIMEOUT = 30.0  # seconds: the deadline the error-model documents give every request
MAX_DEPTH = 10
# A sync tool waiting on a nested call holds one of the SDK's 40 worker threads per level;
# past about that many the pool runs dry and every level waits for its deadline.
DEPTH_CEILING = 32

# CI can turn stable output on without editing notebooks. Read once, at import: it is where
# the setting starts, and anything set later (`%config`, `configure()`, an IPython config
# file) wins over it, as a value set in code wins over MPLBACKEND or PYTHONWARNINGS.
STABLE_OUTPUT_ENV = "MCP_NB_STABLE_OUTPUT"
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")


def flag_from_env(name: str, environ=os.environ) -> bool:
    """The on/off value of an environment variable; unset or empty is off.

    A value that is neither (`MCP_NB_STABLE_OUTPUT=maybe`) raises ValueError naming the
    variable, rather than being read as one or the other behind the user's back.
    """
    value = environ.get(name, "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise BadValue(f"{name} must be one of {', '.join(_TRUE)} or {', '.join(v for v in _FALSE if v)}, got {environ[name]!r}")


STABLE_OUTPUT_AT_START = flag_from_env(STABLE_OUTPUT_ENV)


# Where the kernel's history file starts: CI keeps its calls without editing notebooks. Read
# once, at import, as MCP_NB_STABLE_OUTPUT is; a path that cannot be a history file is said in
# one line, and the history stays in memory.
def _history_file_from_env(environ=os.environ) -> str | None:
    value = environ.get(HISTORY_FILE_ENV) or None
    try:
        path = check_writable(value)
    except ValueError as err:  # said once, in one line; the kernel's calls stay in memory
        warnings.warn(f"{HISTORY_FILE_ENV}: {err}; the history is kept in memory only", RuntimeWarning, stacklevel=2)
        return None
    return None if path is None else str(path)


HISTORY_FILE_AT_START = _history_file_from_env()

# How long a server has to start and answer `initialize`, where it differs from a request's
# deadline: a server fetched by `npx -y` or `uvx` on its first run, one that loads a model, or any
# server on a loaded CI machine takes longer to start than a call should take to answer. Read once,
# at import, as the other two are; a value that is no positive number is said, and not used.
CONNECT_TIMEOUT_ENV = "MCP_NB_CONNECT_TIMEOUT"


def _connect_timeout_from_env(environ=os.environ) -> float | None:
    value = environ.get(CONNECT_TIMEOUT_ENV, "").strip()
    if not value:
        return None
    try:
        return check_timeout(float(value), CONNECT_TIMEOUT_ENV)
    except ValueError:  # "later", "0", "nan"
        said = f"{CONNECT_TIMEOUT_ENV} must be a positive number of seconds, got {value!r}"
        warnings.warn(f"{said}; connecting uses the timeout setting", RuntimeWarning, stacklevel=2)
        return None


DEFAULT_WINDOW = 100_000  # calls the kernel keeps in memory when it has a history file
MIN_WINDOW = 1024


def check_window(value: object) -> int:
    """The number of calls kept in memory beside a history file: a whole number, at least MIN_WINDOW."""
    if isinstance(value, bool) or not isinstance(value, int) or value < MIN_WINDOW:
        raise BadValue(f"history_window must be a whole number of calls, at least {MIN_WINDOW}, got {value!r}")
    return value


def check_timeout(value: object, what: str = "timeout") -> float:
    """Return `value` as seconds, or raise ValueError for anything that is not a positive number.

    A non-positive deadline is an error, never "no deadline": that is the rule in the
    documents, where the SDK would instead fail the call at once with -32001.
    """
    seconds = as_float(value) if isinstance(value, (int, float)) else None  # None for 10**400: no clock keeps it
    if seconds is None or seconds <= 0:
        raise BadValue(f"{what} must be a positive number of seconds, got {shown(value)}")
    return seconds


CONNECT_TIMEOUT_AT_START = _connect_timeout_from_env()


class SetAgain(Any):
    """A trait whose observers hear every assignment, the value it already holds included: setting
    `history_file` to the path it names is how a history file whose writing failed is retried (the
    one-line warning of the failure says so), and traitlets tells observers of changes only."""

    def set(self, obj, value) -> None:
        new = self._validate(obj, value)
        old = obj._trait_values.get(self.name, self.default_value)
        obj._trait_values[self.name] = new
        obj._notify_trait(self.name, old, new)


class SharedTraits(HasTraits):
    """The configurable values, declared once for `Settings` and for the magics."""

    timeout = Float(
        DEFAULT_TIMEOUT,
        help="Client-wide deadline of every request, in seconds (a call's own timeout overrides it).",
    ).tag(config=True)
    connect_timeout = Float(
        CONNECT_TIMEOUT_AT_START,
        allow_none=True,
        help=(
            "Seconds a server has to start and answer initialize when a connect gives no timeout. None: the "
            f"timeout setting. Starts from the environment variable {CONNECT_TIMEOUT_ENV}."
        ),
    ).tag(config=True)
    show_server_logs = Bool(
        False,
        help="Also print the server's log records live (they are always kept on the call's Outcome).",
    ).tag(config=True)
    history_rows = Int(20, help="How many of the latest calls `%mcp_history` shows.").tag(config=True)
    stable_output = Bool(
        STABLE_OUTPUT_AT_START,
        help=(
            "Leave out of outcome cards and history tables what changes from run to run (durations, when a "
            "late handler ended, traceback frames), so a checked notebook (nbval) compares equal run after run. "
            f"Starts from the environment variable {STABLE_OUTPUT_ENV}."
        ),
    ).tag(config=True)
    history_file = SetAgain(  # a str or a Path; kept as the absolute path's text
        HISTORY_FILE_AT_START,
        allow_none=True,
        help=(
            "A file (a folder, say calls.mcpnb) that every recorded call is also written to as it is recorded, "
            "so the history survives the kernel: reopen it with mcp_nb.History.open(path) or %mcp_history --file. "
            "Set it again to the same path to retry after a write failed: what the file lacks is written. "
            f"None: the history lives in memory only. Starts from the environment variable {HISTORY_FILE_ENV}."
        ),
    ).tag(config=True)
    history_window = Int(
        DEFAULT_WINDOW,
        help="With a history file, how many of the latest calls the kernel keeps in memory; the others are read back from the file when asked for.",
    ).tag(config=True)
    max_depth = Int(
        MAX_DEPTH,
        help="How deep calls may nest (a tool that calls a tool through mcp_nb...); deeper calls are refused.",
    ).tag(config=True)

    elicit = Any(
        None,
        allow_none=True,
        help=(
            "How calls answer a server's questions (elicitation) when the call gives no elicit=: a function "
            "(message, schema) -> answer, a list of prepared answers, or 'decline' / 'cancel'. None: the panel "
            "shows a form; any other call cancels the question and records why."
        ),
    ).tag(config=True)

    @validate("elicit")
    def _valid_elicit(self, proposal):
        try:
            check_elicit(proposal["value"])
        except (ValueError, TypeError) as err:
            raise TraitError(str(err)) from None
        return proposal["value"]

    @validate("timeout", "connect_timeout")
    def _valid_timeout(self, proposal):
        value, name = proposal["value"], proposal["trait"].name
        if value is None:  # connect_timeout only (timeout allows no None): the request timeout then
            return None
        try:
            return check_timeout(value, name)
        except ValueError as err:
            raise TraitError(str(err)) from None

    @validate("max_depth")
    def _valid_depth(self, proposal):
        value = proposal["value"]
        if not 1 <= value <= DEPTH_CEILING:
            raise TraitError(f"max_depth must be between 1 and {DEPTH_CEILING}, got {value}")
        return value

    @validate("history_file")
    def _valid_history_file(self, proposal):
        try:
            path = check_writable(proposal["value"])
        except ValueError as err:
            raise TraitError(str(err)) from None
        return None if path is None else str(path)

    @validate("history_window")
    def _valid_window(self, proposal):
        try:
            return check_window(proposal["value"])
        except ValueError as err:
            raise TraitError(str(err)) from None

    @validate("history_rows")
    def _valid_rows(self, proposal):
        if proposal["value"] < 1:
            raise TraitError(f"history_rows must be at least 1, got {proposal['value']}")
        return proposal["value"]


class Settings(SharedTraits):
    """The process-wide settings object read by the engine at every call."""


settings = Settings()

CONFIGURABLE = (
    "timeout",
    "connect_timeout",
    "show_server_logs",
    "history_rows",
    "max_depth",
    "stable_output",
    "elicit",
    "history_file",
    "history_window",
)


def configure(**values: object) -> dict[str, object]:
    """Change settings; returns them all. Bad names or values raise and change nothing.

    >>> configure(timeout=10)  # doctest: +SKIP
    """
    unknown = sorted(set(values) - set(CONFIGURABLE))
    if unknown:
        raise BadValue(f"unknown setting(s) {', '.join(unknown)}; known: {', '.join(CONFIGURABLE)}")
    # Validate everything first so a bad value leaves every setting as it was.
    checked = {}
    probe = SharedTraits()
    for name, value in values.items():
        try:
            setattr(probe, name, value)
        except TraitError as err:
            raise BadValue(str(err)) from None
        except OverflowError:  # a Float trait turns 10**400 into a float before any check of ours
            raise BadValue(f"{name} must be a number a float can hold, got {shown(value)}") from None
        checked[name] = getattr(probe, name)
    for name, value in checked.items():
        setattr(settings, name, value)
    return {name: getattr(settings, name) for name in CONFIGURABLE}


def connect_seconds(timeout: object = None) -> float:
    """The seconds a connect may take: its own `timeout`, checked; else the `connect_timeout`
    setting; else the `timeout` setting."""
    if timeout is not None:
        return check_timeout(timeout, "the connect timeout")
    return settings.connect_timeout if settings.connect_timeout is not None else settings.timeout
