"""A magic's options: the words of its line (`lines.split`) read by its argparse parser.

Each magic declares what it takes with IPython's `@magic_arguments` / `@argument`, so its parser
is an argparse parser whose `error()` raises a one-line `UsageError` (IPython's
`MagicArgumentParser`, as JupySQL's `CmdParser`), and `%magic?` prints the help that parser
writes. The words come split by the shell's rules, quotes read, before argparse sees them: a
quoted value holds any text, ` -- ` and `#` included.

argparse before Python 3.13 can drop an option's value when it is `--` (`--title=--` gives
`[]`): such a value reaches the parser as a stand-in and is put back after.

Two magics take free text after their options, `%mcp_connect` the command that starts a server
and the calling magics a call's arguments. There the first `--` word ends the options, as for any
POSIX utility (and argparse), and the words after it are handed on exactly as typed. Those
magics read the words before it in any order, options among positionals
(`parse_intermixed_args`); the one `--` is taken off first, because argparse's intermixed
reading does not keep it.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from contextlib import contextmanager

from IPython.core.error import UsageError

from mcp_nb.notebook.lines import split

END_OF_OPTIONS = "--"
_NO_VALUE = re.compile(r"argument (--[\w-]+): expected one argument")
_A_VALUE = re.compile(r"argument (--[\w-]+): ignored explicit argument (.*)")
_REQUIRED = "the following arguments are required: "
_NUMBER = re.compile(r"-\d+|-\d*\.\d+")  # what argparse reads as a negative number, not an option


def read(parser: argparse.ArgumentParser, line: str) -> argparse.Namespace:
    """What `line` says to `parser`, or a one-line `UsageError` (a `LineError` if it does not split)."""
    words = split(line, keep_json=True, loose=True)
    stand_in = _stand_in(words)
    with _explained(parser, stand_in):
        options, extras = parser.parse_known_args(_held(words, stand_in))
        _refuse(parser, extras)
    return _put_back(options, stand_in)


def read_with_tail(
    parser: argparse.ArgumentParser, line: str, arguments: bool = False
) -> tuple[argparse.Namespace, list[str] | None]:
    """The words of `line` before the first `--`, read by `parser` in any order, and the words
    after it as typed (None: no `--`). With `arguments` (a call's), a word that starts like JSON
    must be JSON."""
    words = split(line, keep_json=True, loose=not arguments)
    head, tail = words, None
    if END_OF_OPTIONS in words:
        at = words.index(END_OF_OPTIONS)
        head, tail = words[:at], words[at + 1 :]
    stand_in = _stand_in(head)
    with _explained(parser, stand_in):
        options, extras = parser.parse_known_intermixed_args(_held(head, stand_in))
        _refuse(parser, extras)
    return _put_back(options, stand_in), tail


def actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """What `parser` knows, each option and positional as declared (argparse keeps them in
    `_actions`, which argcomplete and sphinx-argparse read too: it has no public accessor)."""
    return list(parser._actions)


def option_names(parser: argparse.ArgumentParser) -> list[str]:
    """Every option `parser` knows."""
    return [name for action in actions(parser) for name in action.option_strings]


def takes_value(parser: argparse.ArgumentParser) -> dict[str, bool]:
    """Each option `parser` knows, and whether a value follows it (`--timeout 5`, not `--quiet`)."""
    return {name: action.nargs != 0 for action in actions(parser) for name in action.option_strings}


def _refuse(parser: argparse.ArgumentParser, extras: list[str]) -> None:
    """What the parser did not take, as argparse says it, and what is known instead."""
    if not extras:
        return
    first = extras[0]
    if first.startswith("-") and first != "-" and " " not in first and not _NUMBER.fullmatch(first):
        known = ", ".join(option_names(parser)) or "none"
        why = f"unknown option {first.partition('=')[0]}; known: {known}"
    elif not any(not action.option_strings for action in actions(parser)):
        why = f"%{parser.prog} takes no arguments"
    else:
        why = None
    raise UsageError(f"unrecognized arguments: {' '.join(extras)}" + (f" ({why})" if why else ""))


def _stand_in(words: list[str]) -> str:
    stand_in = "\x00--"
    while any(stand_in in word for word in words):
        stand_in += "\x00"
    return stand_in


def _held(words: list[str], stand_in: str) -> list[str]:
    """`words`, an option's value `--` (`--title=--`) replaced by the stand-in."""
    held = []
    for word in words:
        option, equals, value = word.partition("=")
        held.append(f"{option}={stand_in}" if option.startswith("-") and equals and value == END_OF_OPTIONS else word)
    return held


def _put_back(options: argparse.Namespace, stand_in: str) -> argparse.Namespace:
    for name, value in vars(options).items():
        if value == stand_in:
            setattr(options, name, END_OF_OPTIONS)
        elif isinstance(value, list):
            setattr(options, name, [END_OF_OPTIONS if each == stand_in else each for each in value])
    return options


@contextmanager
def _explained(parser: argparse.ArgumentParser, stand_in: str) -> Iterator[None]:
    """argparse's own message, with a `--` value as typed, and what to do: for an option whose
    value is missing, how to give one that starts with `-` (which argparse reads as another
    option); for a flag given a value, that it takes none. Of the missing positionals, only those
    that may not be left out are named (argparse's intermixed reading names the optional ones too)."""
    try:
        yield
    except UsageError as err:
        text = str(err).replace(repr(stand_in), repr(END_OF_OPTIONS)).replace(stand_in, END_OF_OPTIONS)
        if found := _NO_VALUE.fullmatch(text):
            text += f" (a value that starts with - is written {found.group(1)}=VALUE)"
        elif found := _A_VALUE.fullmatch(text):
            text += f" ({found.group(1)} takes no value)"
        elif text.startswith(_REQUIRED):
            optional = {
                action.metavar or action.dest
                for action in actions(parser)
                if not action.option_strings and action.nargs in ("?", "*")
            }
            text = _REQUIRED + ", ".join(name for name in text[len(_REQUIRED) :].split(", ") if name not in optional)
        raise UsageError(text) from None
