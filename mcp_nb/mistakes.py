"""mcp_nb's exceptions: one root, a user's mistakes and mcp_nb's failures under it.

Everything mcp_nb raises on purpose descends from `McpNbError`, so a face decides by class: a
magic says an `McpNbError` in one line, and anything else is a bug that keeps its traceback, to
be reported. The classes live with the code that raises them (the module in brackets); the root
and its two branches live here, in the leaf module every layer imports. The tree:

    McpNbError                               anything mcp_nb raises on purpose
    ├── Mistake                              the user's input is wrong; the message says how, and nothing changed
    │   ├── BadValue (ValueError)            a value mcp_nb refuses
    │   │   ├── BadJson                      text that is not JSON Python can read
    │   │   ├── LineError                    a magic's line that does not split         [notebook/lines.py]
    │   │   │   └── ArgumentsError           a magic's line that does not read          [notebook/arguments.py]
    │   │   ├── CellError                    a cell that cannot be registered           [notebook/cells.py]
    │   │   ├── Invalid                      a panel form that cannot be sent           [calling/input_schema.py]
    │   │   ├── CasesError                   a cases file                               [records/cases.py]
    │   │   ├── SurfaceError                 a snapshot                                 [records/surface.py]
    │   │   ├── NotTabular                   a structured result that is no table       [records/structured.py]
    │   │   ├── ConfigError                  an mcpServers configuration                [calling/mcpservers.py]
    │   │   ├── HistoryFileError             a history file                             [history_file.py]
    │   │   └── NotShippable                 a registration dask workers cannot take    [batch/cluster/toolbox.py]
    │   ├── BadType (TypeError)              a value of a kind mcp_nb cannot take
    │   ├── NotARegularFile (OSError)        a path to read or write that is a folder, a FIFO, a device [records/files.py]
    │   ├── CallDepthError (RuntimeError)    calls nested past settings.max_depth       [calling/call.py]
    │   ├── ResetRefused (ToolError)         reset() from inside a handler              [calling/engine.py]
    │   └── NotebookError (RuntimeError)     a notebook to serve that cannot be run     [serving/notebook.py]
    ├── Failure                              what mcp_nb was asked to do did not happen, for a reason
    │   │                                    outside the input: a server, the SDK, a check
    │   ├── ConnectError (RuntimeError)      a server could not be connected            [calling/connections/]
    │   ├── ConnectionLost (RuntimeError)    a connection went away                     [calling/connections/]
    │   ├── AuthorizationPending             nobody approved an OAuth flow in time      [calling/oauth.py]
    │   ├── NonJsonNumber (ValueError)       a server's answer holds NaN or an infinity [records/structured.py]
    │   ├── BreakingChanges (AssertionError) a surface diff reached its fail_on level   [records/surface_diff.py]
    │   ├── CheckFailed (AssertionError)     an expect() or a prediction that did not hold [records/expect.py]
    │   ├── Misnamed (ValueError)            a history file's part of other rows than named [records/disk.py]
    │   ├── ModelError                       a model gave no reply (its `kind` says why) [models/errors.py]
    │   │   └── BadReply                     a reply not in the chat-completions shape  [models/errors.py]
    │   └── SDKMismatch (RuntimeError)       the installed SDK moved what mcp_nb uses   [sdk_compat.py]
    └── Stopped                              a batch's waiter was cancelled             [batch/core.py]

Each keeps the built-in class it had (a `BadValue` is still a ValueError for whoever catches
those). Not in the tree, on purpose: warnings (a separate hierarchy, as in httpx), and what
stands for a tool's own behaviour, recorded on its call as the tool's: `InjectedCrash` (a fault
injected to look like any bug), `HandlerExit` (a handler's SystemExit and the like) and
`NotAResult` (a handler's return value that is none) [registering/].

Every check of mcp_nb that refuses the user's input raises a `Mistake`. Anything not in the
tree is a bug: a ValueError or a TypeError that Python raised inside mcp_nb (`None + 1`, a call
with the wrong arguments), or that a library raised. The line between the two is drawn where
the error is raised, on purpose, not guessed where it is caught.

A leaf module: every layer's checks raise these.
"""

from __future__ import annotations

import json
import operator
import re
import unicodedata
from itertools import accumulate
from typing import Any


class McpNbError(Exception):
    """The root: anything mcp_nb raises on purpose (the tree is drawn in this module's docstring)."""


class Mistake(McpNbError):
    """The user's input is wrong, and the message says how (one line)."""


class Failure(McpNbError):
    """What mcp_nb was asked to do did not happen, for a reason outside the input (a server that
    cannot be reached, the SDK, a check that failed); the message says which, in one line."""


class BadValue(Mistake, ValueError):
    """A value the user gave that mcp_nb refuses."""


class BadType(Mistake, TypeError):
    """A value of a kind mcp_nb cannot take where the user gave it."""


class BadJson(BadValue):
    """Text that is not JSON Python can read: why (`msg`) and where (`lineno`, `colno`, `pos`;
    None where the text is JSON but not for Python: nested too deeply, an integer too long)."""

    def __init__(self, msg: str, lineno: int | None = None, colno: int | None = None, pos: int | None = None) -> None:
        self.msg, self.lineno, self.colno, self.pos = msg, lineno, colno, pos
        # Python's own message may end in "at" ("Invalid control character at"), which the place completes.
        said = msg[: -len(" at")] if msg.endswith(" at") else msg
        super().__init__(msg if lineno is None else f"{said} at line {lineno}, column {colno}")


# JSON is read to at most this many levels of arrays and objects. Nothing deeper crosses MCP (the
# SDK's reader, pydantic's, stops at 200 levels), though a tool's text may hold deeper JSON, which
# replays compare. Python's reader recurses, and at the interpreter's limit (1000 by default)
# whatever else Python runs in that moment (a finalizer the garbage collector calls, a callback)
# fails for want of stack and its work is lost: half the default is read, half left to the rest.
JSON_DEPTH = 500
_TOO_DEEP = f"nested too deeply (more than {JSON_DEPTH} levels)"
_NOT_BRACKET = bytes(set(range(256)) - set(b"[]{}"))
_TWO_FOR_OPENING = bytes.maketrans(b"[]{}", b"\x02\x00\x02\x00")


def nested_past(text: str | bytes | bytearray, limit: int = JSON_DEPTH) -> bool:
    """Whether JSON `text` opens more than `limit` arrays or objects inside one another (brackets
    inside strings do not count), found without parsing it: no recursion, so at any depth, and
    in C but for one cumulative sum. Text with at most `limit` opening brackets in all, nearly
    any text, costs two counts."""
    if isinstance(text, str):
        if text.count("[") + text.count("{") <= limit:
            return False
        raw = text.encode("utf-8", "surrogatepass")
    elif isinstance(text, (bytes, bytearray)):  # in UTF-16 or -32 too, each bracket holds its byte
        if text.count(b"[") + text.count(b"{") <= limit:
            return False
        # as Python's reader takes bytes: UTF-8, or UTF-16 or -32 by their first bytes
        encoding = json.detect_encoding(text)
        raw = bytes(text) if encoding == "utf-8" else text.decode(encoding, "replace").encode("utf-8", "surrogatepass")
    else:
        return False  # not text: the reader says so itself (a TypeError)
    # A backslash stands only inside a string, and escapes the character after it: without the
    # escaped backslashes, then the escaped quotes, every quote left opens or closes a string.
    outside = b"".join(raw.replace(b"\\\\", b"").replace(b'\\"', b"").split(b'"')[::2])
    # Each opening bracket as 2, each closing one as 0: after i + 1 brackets the running sum is
    # twice the openings, and the depth there is that sum less i + 1.
    twos = outside.translate(_TWO_FOR_OPENING, _NOT_BRACKET)
    return any(map(operator.gt, accumulate(twos), range(limit + 1, limit + 1 + len(twos))))


def value_nested_past(value: Any, limit: int = JSON_DEPTH) -> bool:
    """Whether a Python value holds more than `limit` lists, tuples or dicts inside one another:
    the JSON written from it would be refused when read (`read_json`). Level by level, a loop,
    not recursion (and a value that holds itself is deeper than any limit)."""
    containers = (dict, list, tuple)
    level, depth = ([value] if isinstance(value, containers) else []), 0
    while level:
        depth += 1
        if depth > limit:
            return True
        level = [
            inner
            for node in level
            for inner in (node.values() if isinstance(node, dict) else node)
            if isinstance(inner, containers)
        ]
    return False


def read_json(text: str | bytes | bytearray, **options: Any) -> Any:
    """The value of JSON the user (or a file, or a server) wrote, or a `BadJson` saying why not;
    `options` go to `json.loads` (`parse_int=`, say).

    Python's own reader has three ways to refuse: a JSONDecodeError for text that is not JSON,
    a RecursionError for arrays or objects nested past the interpreter's limit, and a ValueError
    for an integer of more digits than `sys.get_int_max_str_digits()` allows. Each reader of
    text from outside needs all three said in one line, so they are said here once; and text
    nested past `JSON_DEPTH` is refused before Python's reader descends into it (see there).
    """
    if nested_past(text):
        raise BadJson(_TOO_DEEP)
    try:
        return json.loads(text, **options)
    except json.JSONDecodeError as err:
        raise BadJson(err.msg, err.lineno, err.colno, err.pos) from None
    except RecursionError:  # a limit set lower than JSON_DEPTH's margin needs
        raise BadJson(_TOO_DEEP) from None
    except ValueError as err:  # an integer of more than 4300 digits (or a str that is not text)
        raise BadJson(first_line(err)) from None


_DECODER = json.JSONDecoder()


def read_json_at(text: str, start: int) -> tuple[Any, int]:
    """The JSON value that starts at `start` in `text` and where it ends (a magic's line holds
    more after it), or a `BadJson` as `read_json` says it; `pos` counts from `start`."""
    if nested_past(text[start:]):  # what follows the value counts too: only when it nests as deep
        raise BadJson(_TOO_DEEP)
    try:
        return _DECODER.raw_decode(text, start)
    except json.JSONDecodeError as err:
        raise BadJson(err.msg, err.lineno, err.colno, err.pos - start) from None
    except RecursionError:
        raise BadJson(_TOO_DEEP) from None
    except ValueError as err:
        raise BadJson(first_line(err)) from None


def first_line(err: BaseException, named: bool = False) -> str:
    """What `err` says, in one line: the first line of its message (its type's name when it
    says nothing); with `named`, after its type's name ("OSError: ..."), for errors that are
    not mcp_nb's own and whose type tells as much as their text."""
    text = str(err).strip()
    line = text.splitlines()[0] if text else ""
    if named:
        return f"{type(err).__name__}: {line}" if line else type(err).__name__
    return line or type(err).__name__


# What a peer wrote (a server's error message, an HTTP body, a stderr line, an OAuth error page) is
# shown in one line of at most this many characters: a message holds its cause, not the page.
LINE_LIMIT = 300
# Where a line ends, as str.splitlines() has it.
_LINE_BREAK = re.compile(r"[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
# A terminal's colours (SGR): formatting, not text, so taken out rather than shown escaped.
_COLOUR = re.compile(r"\x1b\[[0-9;]*m")
_TEXT = re.compile(r"\S")


def one_line(text: Any, limit: int = LINE_LIMIT) -> str:
    """What someone else wrote, safe to put in a one-line message: its first line that is not
    blank, at most `limit` characters (then "…"; also when lines were left out), and every
    control or format character shown as its escape (`\\x1b`, `\\u202e`), so that nothing it
    holds can break a line, fake a traceback under the message, recolour a terminal or
    reorder what is read. Linear in `limit`, not in the text: an 8 MB body costs a slice.
    """
    text = str(text)
    first = _TEXT.search(text)
    start = first.start() if first is not None else len(text)
    head = text[start : start + 4 * limit + 2]  # enough for `limit` characters once colours are gone
    broken = _LINE_BREAK.search(head)
    line = (head[: broken.start()] if broken else head).rstrip()
    rest = start + (broken.start() if broken else len(head))
    cut = _TEXT.search(text, rest) is not None  # anything but blanks left out
    line = _COLOUR.sub("", line)
    if not line.isprintable():
        line = "".join(c if c.isprintable() or unicodedata.category(c) == "Zs" else repr(c)[1:-1] for c in line)
    if len(line) > limit:
        line, cut = line[:limit].rstrip(), True
    return line + " …" if cut else line


# What is never shown as it is in a view of someone else's text of several lines (a tool's result,
# a server's log, an error message): the control characters but tab, newline and carriage return
# (a terminal's escapes, a NUL, a backspace), the bidirectional embeddings, overrides and isolates
# (which reorder what is read, as in "Trojan Source"), and lone surrogates (no UTF-8 text holds
# one: a notebook holding one cannot be saved). Zero-width joiners and marks stay: Hindi and emoji
# are written with them.
_UNSAFE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


_BREAK = re.compile(r"[\n\r\u2028\u2029]")


def visible(text: Any, inline: bool = False) -> str:
    """`text` of many lines, safe to show: each unsafe character (`_UNSAFE`) shown as its escape
    (`\\x1b`, `\\u202e`, `\\ud800`), every other character and line as it is. A view splits
    the lines itself (a card indents them): this keeps them. With `inline`, for what a view shows
    on a line of its own making (a name, a version), its line breaks are shown as escapes too."""
    text = str(text)
    if _UNSAFE.search(text) is not None:
        text = _UNSAFE.sub(_escaped, text)
    if inline and _BREAK.search(text) is not None:
        text = _BREAK.sub(_escaped, text)
    return text


def _escaped(found: re.Match) -> str:
    return repr(found.group())[1:-1]
