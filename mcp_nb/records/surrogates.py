"""Lone surrogates: the code points U+D800-U+DFFF, which a Python str may hold and no UTF-8 text
can. Every file mcp_nb writes is UTF-8 (a history file's Arrow texts, a cases file, a surface
snapshot, an export), so each writes them as their JSON escapes. Standard library only: the
files' writers import it without importing each other.
"""

from __future__ import annotations

import re

# A lone surrogate (U+D800-U+DFFF) is a code point a Python str may hold (a JSON "\\ud800" a client
# or server sent, a name decoded with surrogateescape) and no UTF-8 text can: pyarrow, a file opened
# as UTF-8 and a notebook all refuse it.
SURROGATE = re.compile("[\ud800-\udfff]")


def escape_surrogates(text: str) -> str:
    """`text` with each lone surrogate written as its JSON escape (`\\ud800`), as `ensure_ascii`
    writes it, every other character as it is: UTF-8 can hold the result. In JSON text (where a
    surrogate can only stand inside a string) nothing is lost: `json.loads` gives the same str back,
    but for a high surrogate directly followed by a low one, which it reads as the one character
    the pair names. In plain text it is a visible substitution."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # the only characters UTF-8 cannot encode: escaped by the codec's C code
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text
