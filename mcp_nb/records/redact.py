"""What is never written to a history file: the secrets a call's record may quote.

A URL's password, a bearer token, a query parameter named like a secret, and every secret the
engine knows (header values, a served kernel's token) are replaced by REDACTED wherever they
appear in a text (an error message quoting a URL, a log line, a result echoing a header); a
connection shows its URL with the same mark. Standard library only: the engine makes its
scrubber when it starts, long before any history file is set.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

REDACTED = "***"
# A URL's password, a bearer token, a query parameter named like a secret: replaced wherever they
# appear in what is written (an error message quoting a URL, a log line, a result echoing a header).
_URL_PASSWORD = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@\"'\x00]+:)[^@\s/\"'\x00]+@")
_BEARER = re.compile(r"(\b[Bb]earer\s+)[A-Za-z0-9._~+/=-]{4,}")
_QUERY_SECRET = re.compile(
    r"([?&][A-Za-z0-9_.-]*(?:token|key|secret|pass|pwd|auth|sig|credential)[A-Za-z0-9_.-]*=)[^&\s\"'#\x00]+", re.I
)


def scrubber(known: Callable[[], Iterable[str]]) -> Callable[[str], str]:
    """`scrub(text)`: `text` without the secrets `known()` names (header values, tokens; four
    characters or more), nor any URL password, bearer token or secret-named query parameter.
    Returns `text` itself when there was nothing to take out (the writer checks for that)."""

    def scrub(text: str) -> str:
        out = text
        for secret in known():
            if secret and len(secret) >= 4 and secret in out:
                out = out.replace(secret, REDACTED)
        if "://" in out or "earer" in out:
            out = _URL_PASSWORD.sub(rf"\g<1>{REDACTED}@", out)
            out = _BEARER.sub(rf"\g<1>{REDACTED}", out)
            out = _QUERY_SECRET.sub(rf"\g<1>{REDACTED}", out)
        return text if out == text else out

    return scrub
