"""A magic's line to its words, as typed: shell quoting, JSON kept whole, `# comments` dropped.

IPython hands a magic its line as one string (mcp_nb's magics opt out of variable
expansion, so `{title}` and `$user` arrive as typed). Every magic splits it here, so
every line follows the same rules:

- words are separated by spaces; `'...'` and `"..."` group words and are removed, as in
  a POSIX shell (a backslash keeps the next character literal);
- a word starting with `#` ends the line: ` # result` is a comment, `a#b` is one word,
  and a `#` inside quotes or inside a JSON string is data;
- with `keep_json=True`, a JSON object or array that starts a word or follows `key=` is kept
  exactly as typed, inner quotes and spaces included, so `d={"k": "v"}` still reads as JSON
  when the value is converted. On the lines that carry a call's arguments, a word that starts
  like JSON and is none is refused (`{bad json}`); elsewhere (`loose=True`: an option's value,
  `--input-schema {"type": "object"}`) such a word is read as any other, by the shell's rules.
"""

from __future__ import annotations

from mcp_nb.mistakes import BadJson, BadValue, read_json_at

_SPACE = " \t\r\n\f\v"


class LineError(BadValue):
    """The line cannot be split; the message is one line for the user."""


def split(line: str, keep_json: bool = False, loose: bool = False) -> list[str]:
    """The words of `line` (see the module docstring for the rules)."""
    words: list[str] = []
    i, n = 0, len(line)
    while True:
        while i < n and line[i] in _SPACE:
            i += 1
        if i >= n or line[i] == "#":
            return words
        word, i = _word(line, i, keep_json, loose)
        words.append(word)


def _word(line: str, i: int, keep_json: bool, loose: bool) -> tuple[str, int]:
    parts: list[str] = []
    start, n = i, len(line)
    after_key = False  # the previous character was the first `=` of a key=value word
    seen_equals = False
    while i < n and line[i] not in _SPACE:
        char = line[i]
        if keep_json and char in "{[" and (i == start or after_key):
            end = _json_end(line, i)
            if end is None and not loose:
                if i == start:
                    _raise_invalid_json(line, i)
                # Not JSON after key=: the value is text, kept as typed (quotes too) up to the next space.
                end = _verbatim_end(line, i)
            if end is not None:
                parts.append(line[i:end])
                i, after_key = end, False
                continue
        after_key = False
        if char == "'":
            close = line.find("'", i + 1)
            if close < 0:
                raise LineError(f"no closing quotation: the ' at column {i + 1} is never closed")
            parts.append(line[i + 1 : close])
            i = close + 1
        elif char == '"':
            text, i = _double_quoted(line, i)
            parts.append(text)
        elif char == "\\":
            if i + 1 >= n:
                raise LineError("no escaped character: the line ends with a backslash")
            parts.append(line[i + 1])
            i += 2
        else:
            if char == "=" and not seen_equals:
                seen_equals = after_key = True
            parts.append(char)
            i += 1
    return "".join(parts), i


def _double_quoted(line: str, i: int) -> tuple[str, int]:
    """The text of the double-quoted part at `i` and the index after it (POSIX: only \\" and \\\\ escape)."""
    out: list[str] = []
    j, n = i + 1, len(line)
    while j < n:
        char = line[j]
        if char == '"':
            return "".join(out), j + 1
        if char == "\\" and j + 1 < n and line[j + 1] in '"\\':
            out.append(line[j + 1])
            j += 2
            continue
        out.append(char)
        j += 1
    raise LineError(f'no closing quotation: the " at column {i + 1} is never closed')


def _json_end(line: str, i: int) -> int | None:
    """Where the JSON value starting at `i` ends, or None if no JSON value starts there."""
    try:
        _, end = read_json_at(line, i)
    except BadJson:
        return None
    return end


def _verbatim_end(line: str, i: int) -> int:
    """The end of the word at `i`, quotes kept as they are but still grouping spaces."""
    n = len(line)
    while i < n and line[i] not in _SPACE:
        if line[i] in "'\"":
            close = line.find(line[i], i + 1)
            if close < 0:
                raise LineError(f"no closing quotation: the {line[i]} at column {i + 1} is never closed")
            i = close + 1
        else:
            i += 1
    return i


def _raise_invalid_json(line: str, i: int) -> None:
    try:
        read_json_at(line, i)
    except BadJson as err:  # where, when Python's reader found it; else JSON, but too deep or an integer too long
        at = "" if err.pos is None else f" at column {err.pos + 1}"
        raise LineError(f"invalid JSON arguments: {err.msg}{at}") from None
