"""The nbval sanitizer for notebooks that show mcp_nb's outputs.

nbval runs a notebook and compares each cell's outputs with the ones stored in it, after
rewriting both with the `regex:` / `replace:` pairs of a file (`--nbval-sanitize-with`).
This module writes that file:

    python -m mcp_nb nbval-sanitize -o sanitize.cfg
    pytest --nbval --nbval-sanitize-with sanitize.cfg notebooks/

Its first rules are built from the very templates the views print with (`views.theme.VARYING`,
`views.theme.TRACEBACK`) and from the messages that carry a time (`views.theme.BLOCKED_FOR`,
`views.theme.HELD_BY`), so they change when those change. They rewrite a view into the form that
`stable_output` prints, which is why a notebook stored one way and checked the other still
compares equal. The last rules cover what other libraries print into mcp_nb's outputs.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from pathlib import Path

from mcp_nb._version import __version__
from mcp_nb.mistakes import BadValue
from mcp_nb.views.theme import BLOCKED_FOR, HELD_BY, TRACEBACK, VARYING

TEXT = r"[^<]*"  # HTML-escaped text, over as many lines as it takes: it never holds a '<'
ONE_LINE = r"[^<\n]*?"
_FIXED = re.compile(r"\.(\d+)f")  # a format spec such as .1f


@dataclass(frozen=True)
class Rule:
    """One `regex:` / `replace:` pair of the file, in the section that says why it is there."""

    section: str
    regex: str
    replace: str


def _literal(text: str) -> str:
    # Written as \uXXXX, so the file is ASCII and reads the same in any locale's encoding.
    return "".join(c if c.isascii() else f"\\u{ord(c):04x}" for c in re.escape(text))


def pattern(template: str, fields: dict[str, str] | None = None, keep: tuple[str, ...] = ()) -> str:
    """A regex for whatever `template.format(...)` prints.

    Literal text is matched as it is; a fixed-point field (`{ms:.1f}`) as such a number; any
    other field by its pattern in `fields`. A field named in `keep` is a named group, for the
    replacement to put back.
    """
    fields = fields or {}
    parts = []
    for literal, name, spec, _ in string.Formatter().parse(template):
        parts.append(_literal(literal))
        if name is None:
            continue
        fixed = _FIXED.fullmatch(spec or "")
        if fixed:
            body = rf"\d+\.\d{{{fixed.group(1)}}}"
        elif name in fields:
            body = fields[name]
        else:
            raise BadValue(f"no pattern for the field {name!r} of {template!r}")
        parts.append(f"(?P<{name}>{body})" if name in keep else body)
    return "".join(parts)


def replacement(template: str, values: dict[str, str] | None = None) -> str:
    """`re.sub`'s replacement printing `template` with each field's value (`\\g<name>` puts a kept one back)."""
    values = values or {}
    parts = []
    for literal, name, _, _ in string.Formatter().parse(template):
        parts.append(_literal_replacement(literal))
        if name is not None:
            parts.append(values[name])
    return "".join(parts)


def _literal_replacement(text: str) -> str:
    if not text.isascii():  # re.sub reads no \\u escapes in a replacement, and the file stays ASCII
        raise BadValue(f"a replacement must be ASCII: {text!r}")
    return text.replace("\\", "\\\\")


def rules() -> list[Rule]:
    """Every rule of the file, in the order nbval applies them."""
    stable = "mcp_nb's views, rewritten into what stable_output prints"
    timed = "mcp_nb's messages that say how long an async tool held its event loop"
    made = [Rule(stable, pattern(part.printed), _literal_replacement(part.stable)) for part in VARYING]
    made.append(
        Rule(
            stable + " (a traceback's frames change with the install: both forms become TRACEBACK)",
            pattern(TRACEBACK, {"cause": TEXT, "traceback": TEXT}, keep=("cause",)),
            replacement(TRACEBACK, {"cause": r"\g<cause>", "traceback": "TRACEBACK"}),
        )
    )
    made.append(Rule(timed, pattern(BLOCKED_FOR), replacement(BLOCKED_FOR, {"seconds": "SECONDS"})))
    made.append(
        Rule(
            timed,
            pattern(HELD_BY, {"handler": ONE_LINE}, keep=("handler",)),
            replacement(HELD_BY, {"handler": r"\g<handler>", "seconds": "SECONDS"}),
        )
    )
    made += [
        Rule(
            "where a traceback's frames are: the server's log printed live (show_server_logs), as text or HTML",
            r'File (?:"|&quot;)[^"&\n]+(?:"|&quot;), line \d+',
            'File "PATH", line N',
        ),
        Rule(
            "the file of a kernel's cell, named after the kernel's process (a warning pointed at a tool's def)",
            r"""(?:[^\s"'&<>]*[/\\])?ipykernel_\d+[/\\]\d+\.py""",
            "CELL.py",
        ),
        Rule(
            "pydantic's messages (a tool's invalid arguments) link its docs by its version",
            r"errors\.pydantic\.dev/\d+(?:\.\d+)*/",
            "errors.pydantic.dev/VERSION/",
        ),
        Rule(
            "the started_at column of mcp_nb.history().to_frame()",
            r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?",
            "TIMESTAMP",
        ),
        Rule(
            "the default repr of an object in a tool's content or a fallback (<... object at 0x7f...>)",
            r"\bat 0x[0-9a-fA-F]+",
            "at 0xADDRESS",
        ),
    ]
    return made


def sanitizer() -> str:
    """The text of the sanitizer file, as `python -m mcp_nb nbval-sanitize` writes it."""
    lines = [
        f"# nbval sanitizer for notebooks that show mcp_nb's outputs, written by mcp_nb {__version__}:",
        "#   python -m mcp_nb nbval-sanitize -o sanitize.cfg",
        "#   pytest --nbval --nbval-sanitize-with sanitize.cfg NOTEBOOKS",
        "# Write it again rather than edit it, with the mcp_nb the notebooks run on. nbval rewrites",
        "# the stored and the fresh outputs with each `regex:` and the `replace:` after it (Python's",
        "# re.sub), in this order, before it compares them.",
    ]
    section = None
    for rule in rules():
        for line in (rule.regex, rule.replace):
            # nbval reads `regex: (.*)$` and `replace: (.*)$`: one line each, and an editor that
            # strips trailing spaces must not change one.
            if not line or "\n" in line or line != line.rstrip():
                raise BadValue(f"a sanitizer line must be one line, not empty, with no trailing space: {line!r}")
        if rule.section != section:
            section = rule.section
            lines += ["", f"# {section}"]
        lines += [f"regex: {rule.regex}", f"replace: {rule.replace}"]
    return "\n".join(lines) + "\n"


def sanitize(text: str) -> str:
    """`text` rewritten by every rule, as nbval rewrites an output before comparing it."""
    for rule in rules():
        text = re.sub(rule.regex, rule.replace, text)
    return text


# -- python -m mcp_nb nbval-sanitize -------------------------------------------------------------


def arguments(parser) -> None:
    parser.add_argument("-o", "--output", metavar="FILE", help="write it to FILE instead of printing it")


def run(args) -> int:
    text = sanitizer()
    if args.output is None:
        print(text, end="")
    else:
        Path(args.output).write_text(text, encoding="ascii")
    return 0
