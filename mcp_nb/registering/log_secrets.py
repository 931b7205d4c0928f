"""What no log record holds: a secret of mcp_nb's, whoever logs it.

The SDK's HTTP client logs every message it sends at DEBUG (`Sending client message: ...`, an
elicitation's answer with its password inside) and the URL it connects to; httpx2 logs each
request's URL at INFO, a URL's password or `?api_key=` with it; an OAuth flow that fails logs
the token endpoint's whole answer with its traceback. A user who turns DEBUG on for `mcp` to see
what goes over the wire must find none of the secrets there, nor in a call's own log, which
mcp_nb files from the same records (registering/logs.py).

So a record of a logger that carries a connection's traffic is scrubbed when it is made: mcp_nb's
record factory calls `hide(record)` before a call's log files it and before any handler sees it;
filters on the loggers known to log traffic do it again (a no-op on a record already seen) should
another record factory take the place of mcp_nb's. Only the text of the record changes; the
user's levels, handlers, filters and root logger stay theirs.

What is a secret: every value a provider (`watch`) names (the engine's: its connections' header
values, URL credentials and OAuth tokens, a served kernel's token, the secret fields of the
answers its calls in flight are sending), as given and as repr() or JSON would spell it, and
anything `records.redact` recognises by its form (a URL's password, a bearer token, a query
parameter named like a secret).
"""

from __future__ import annotations

import json
import logging
import threading
import weakref
from collections.abc import Callable, Iterable
from typing import Any

from mcp_nb.records.redact import scrubber
from mcp_nb.records.trace import EXCEPTIONS, exception_chain

# The loggers whose records may quote a connection's traffic: the SDK's client and its shared
# parts, the SDK's HTTP servers (a served kernel), the HTTP client and its connection pool, the
# served kernel's web server, and mcp_nb's own. The rest of the SDK (a kernel call's "Processing
# request") is not looked at: a call costs what it cost.
WATCHED = ("mcp.client", "mcp.shared", "mcp.server.streamable_http", "mcp.server.sse", "httpx2", "httpcore2", "uvicorn", "mcp_nb")
# The loggers that get the filter as well (the factory sees every logger; a filter sees only its own).
FILTERED = (
    "mcp.client.streamable_http",
    "mcp.client.sse",
    "mcp.client.auth.oauth2",
    "mcp.client.auth",
    "httpx2",
    "uvicorn.access",
)
# A traceback in a record of these loggers is cut there: an OAuth failure's carries the endpoint's
# whole answer (8 MB of an error page, once).
TRACEBACK_CHARS = 20_000

_providers: list[Callable[[], Callable[[], Iterable[str]] | None]] = []
_lock = threading.Lock()
_formatter = logging.Formatter()


def watch(known: Callable[[], Iterable[str]]) -> None:
    """Keep the values `known()` names out of every watched record from now on (a bound method
    is held weakly: an engine that is gone names nothing)."""
    ref: Callable[[], Callable[[], Iterable[str]] | None]
    if hasattr(known, "__self__") and hasattr(known, "__func__"):
        ref = weakref.WeakMethod(known)  # type: ignore[arg-type]
    else:
        ref = lambda: known  # noqa: E731 - a plain function lives as long as its module
    with _lock:
        _providers.append(ref)


def known() -> list[str]:
    """Every secret the providers name now, with the spellings repr() and JSON give it."""
    found: set[str] = set()
    with _lock:
        providers = list(_providers)
    for ref in providers:
        provider = ref()
        if provider is None:  # an engine that is gone
            with _lock:
                if ref in _providers:
                    _providers.remove(ref)
            continue
        try:
            values = list(provider())
        except Exception:  # noqa: BLE001 - a provider that fails names nothing; the patterns still apply
            continue
        for value in values:
            if isinstance(value, str) and value:
                found.add(value)
                found.add(repr(value)[1:-1])  # "pa'ss\\word" as a dict's repr shows it
                found.add(json.dumps(value)[1:-1])  # and as a JSON body carries it
    return sorted(found, key=len, reverse=True)  # the longest first: a secret inside another goes with it


_scrub = scrubber(known)


def watched(name: str) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in WATCHED)


def hide(record: logging.LogRecord) -> logging.LogRecord:
    """`record` with every secret taken out of its message and its traceback (in place)."""
    if getattr(record, "_mcp_nb_seen", False) or not watched(record.name):
        return record
    record._mcp_nb_seen = True  # type: ignore[attr-defined]
    try:
        text = record.getMessage()
    except Exception:  # noqa: BLE001 - arguments that do not format: logging itself says so when it emits
        return record
    clean = _scrub(text)
    if clean is not text:
        _rewrite(record, clean)
    if record.exc_info and record.exc_info[1] is not None:
        shown = _formatter.formatException(record.exc_info)
        clean = _scrub(shown)
        if clean is not shown or len(clean) > TRACEBACK_CHARS:
            if len(clean) > TRACEBACK_CHARS:
                clean = (
                    clean[:TRACEBACK_CHARS]
                    + f"\n... ({len(clean) - TRACEBACK_CHARS:,} more characters of the traceback left out)"
                )
            # The formatted traceback takes the exception's place: a handler prints `exc_text`
            # as it would have printed the exception, and nothing can format the original again.
            # The exceptions' names and scrubbed texts stay on the record for the call's log,
            # whose cause the error model reads from them (`records.trace.log_from_record`).
            setattr(record, EXCEPTIONS, tuple((kind, _scrub(text)) for kind, text in exception_chain(record.exc_info[1])))
            record.exc_info, record.exc_text = None, clean
    return record


def _rewrite(record: logging.LogRecord, clean: str) -> None:
    """Take the secrets out of the record's template and arguments one by one, so that a formatter
    that reads the arguments themselves (uvicorn's access log unpacks five) still finds them; where
    a secret spans them, the whole message takes the template's place."""
    if isinstance(record.msg, str) and isinstance(record.args, tuple):
        args = tuple(_clean(arg) for arg in record.args)
        msg = _scrub(record.msg)
        try:
            text = msg % args if args else msg
        except (TypeError, ValueError):  # an argument that became text where a number was formatted
            text = None
        if text is not None and _scrub(text) is text:
            record.msg, record.args = msg, args
            return
    record.msg, record.args = clean, ()


def _clean(arg: Any) -> Any:
    """A record's argument as it was, or as scrubbed text when its text holds a secret."""
    if isinstance(arg, (int, float)):
        return arg
    shown = str(arg)
    clean = _scrub(shown)
    return arg if clean is shown else clean


class _Hidden(logging.Filter):
    """`hide` as a logger's filter: it only rewrites the record, never drops it."""

    def filter(self, record: logging.LogRecord) -> bool:
        hide(record)
        return True


_hidden = _Hidden()


def install() -> None:
    """Put the filter on the loggers known to log a connection's traffic (once each)."""
    for name in FILTERED:
        logger = logging.getLogger(name)
        if _hidden not in logger.filters:
            logger.addFilter(_hidden)
