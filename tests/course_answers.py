"""Answers to the course's exercises, for tests/test_course_answers.py and tests/test_course_grading.py.

For each notebook, each exercise (by its solution cell's id) has:
- `wrong`: answers its check must fail, the student version's check alone (no hidden tests);
  those marked `# issue 42` are the wrong answers the issue found passing, the others are more
  that a learner would plausibly write;
- `fitted`: wrong answers that the visible check lets through, and the hidden tests must fail;
- `right`: other right answers than the solution version's, which every check must pass.

Each answer is the whole source of the solution cell, as the learner leaves it.
"""

from __future__ import annotations


def predictions(*names: str):
    """The source of a prediction cell that assigns `names` the values given: predictions(...)("a", "b")."""

    def cell(*values: str) -> str:
        return "\n".join(f"{name} = {value}" for name, value in zip(names, values))

    return cell


GET_YEAR = '''%%mcp_tool --read-only
YEARS = {{"Dune": 1965, "Neuromancer": 1984}}

def get_year(title: str) -> str:
    """The year a book of the catalog was first published."""
{body}
'''


def get_year(body: str) -> str:
    return GET_YEAR.format(body="\n".join("    " + line for line in body.strip("\n").splitlines()))


crash = predictions("predicted_outcome", "predicted_cause")
pair = crash

RESERVE = '''%%mcp_tool
RESERVED = []

def reserve(title: str) -> str:
    """Reserve a copy of a book of the catalog."""
{body}
'''


def reserve(body: str) -> str:
    return RESERVE.format(body="\n".join("    " + line for line in body.strip("\n").splitlines()))


ANSWERS: dict[str, dict[str, dict[str, list[str]]]] = {
    "02-tool-errors.ipynb": {
        "ex-predict": {
            "wrong": [
                crash("None", "None"),  # issue 42
                crash('"tool_error"', "mcp_nb.CAUSES"),  # issue 42
                crash('"tool_error"', '("crash", "raised")'),
                crash("mcp_nb.OUTCOMES", '"crash"'),
                crash('"tool_error"', "None"),
                crash("...", '"crash"'),
                crash('"protocol_error"', '"crash"'),
                crash('"tool_error"', '"raised"'),
                crash('"result"', '"ok"'),
                crash('"tool error"', '"crash"'),
                crash('["tool_error"]', '["crash"]'),
            ],
            "fitted": [],
            "right": [crash('"tool_error"', '"crash"')],
        },
        "ex-fix-string": {
            "wrong": [
                # issue 42: a lookup wrapped in `except Exception`, raising ToolError: every bug becomes a tool error
                get_year('''
try:
    return str(YEARS[title])
except Exception:
    raise ToolError(f"No book titled {title!r} in the catalog.")
'''),
                # issue 42: a message that names the title, but says something false
                get_year('''
if title not in YEARS:
    raise ToolError(f"{title} was first published in 1965.")
return str(YEARS[title])
'''),
                get_year('''
if title not in YEARS:
    message = f"No book titled {title!r} in the catalog."
    return message
return str(YEARS[title])
'''),
                get_year('''
if title not in YEARS:
    raise ToolError("No such book.")
return str(YEARS[title])
'''),
                get_year('''
if title not in YEARS:
    from mcp import MCPError
    raise MCPError(code=-32602, message=f"No book titled {title!r} in the catalog.")
return str(YEARS[title])
'''),
                get_year('''
if title not in YEARS:
    raise ValueError(f"No book titled {title!r} in the catalog.")
return str(YEARS[title])
'''),
                get_year('''
raise ToolError(f"No book titled {title!r} in the catalog.")
'''),
                get_year('''
from mcp.types import CallToolResult, TextContent
if title not in YEARS:
    return CallToolResult(content=[TextContent(type="text", text=f"No book titled {title!r} in the catalog.")])
return str(YEARS[title])
'''),
                get_year('''
try:
    return str(YEARS[title])
except BaseException as err:
    raise ToolError(f"No book titled {title!r} in the catalog ({err}).")
'''),
                get_year('''
return str(YEARS.get(title, f"No book titled {title!r} in the catalog."))
'''),
            ],
            "fitted": [
                get_year('''
if title not in YEARS:
    raise ToolError("No book titled 'Solaris' in the catalog.")
return str(YEARS[title])
'''),
                get_year('''
if title not in YEARS:
    raise ToolError(f"No book titled {title!r} in the catalog.")
return {"Dune": "1965"}.get(title, "")
'''),
            ],
            "right": [
                get_year('''
try:
    return str(YEARS[title])
except KeyError:
    raise ToolError(f"No book titled {title!r} in the catalog.") from None
'''),
                get_year('''
from mcp.types import CallToolResult, TextContent
if title not in YEARS:
    return CallToolResult(content=[TextContent(type="text", text=f"No book titled {title!r} in the catalog.")], is_error=True)
return str(YEARS[title])
'''),
                get_year('''
year = YEARS.get(title)
if year is None:
    raise ToolError(f"{title!r} is not in the catalog: ask for one of {', '.join(YEARS)}.")
return str(year)
'''),
            ],
        },
    },
    "03-choosing-the-error.ipynb": {
        "ex-reserve": {
            "wrong": [
                reserve('''
try:
    author = CATALOG[title]
except Exception:  # issue 42: every bug becomes a tool error
    raise ToolError(f"No book titled {title!r} in the catalog.")
RESERVED.append(title)
return f"Reserved {title} by {author}."
'''),
                reserve('''
RESERVED.append(title)
return f"Reserved {title} by {CATALOG[title]}."
'''),
                reserve('''
if title not in CATALOG:
    raise ToolError("That book cannot be reserved.")
RESERVED.append(title)
return f"Reserved {title} by {CATALOG[title]}."
'''),
                reserve('''
if title not in CATALOG:
    raise ToolError(f"{title} is reserved already.")
RESERVED.append(title)
return f"Reserved {title} by {CATALOG[title]}."
'''),
                reserve('''
RESERVED.append(title)
if title not in CATALOG:
    raise ToolError(f"No book titled {title!r} in the catalog.")
return f"Reserved {title} by {CATALOG[title]}."
'''),
                reserve('''
if title not in CATALOG:
    raise MCPError(code=-32602, message=f"No book titled {title!r} in the catalog.")
RESERVED.append(title)
return f"Reserved {title} by {CATALOG[title]}."
'''),
                reserve('''
if title not in CATALOG:
    raise LookupError(f"No book titled {title!r} in the catalog.")
RESERVED.append(title)
return f"Reserved {title} by {CATALOG[title]}."
'''),
                reserve('''
from mcp.types import CallToolResult, TextContent
if title not in CATALOG:
    return CallToolResult(content=[TextContent(type="text", text=f"No book titled {title!r} in the catalog.")], is_error=True)
RESERVED.append(title)
return f"Reserved {title} by {CATALOG[title]}."
'''),
                reserve('''
if title not in CATALOG:
    return f"No book titled {title!r} in the catalog."
RESERVED.append(title)
return f"Reserved {title} by {CATALOG[title]}."
'''),
                reserve('''
raise ToolError(f"No book titled {title!r} in the catalog.")
'''),
            ],
            "fitted": [
                reserve('''
if title not in CATALOG:
    raise ToolError("No book titled 'Solaris' in the catalog.")
RESERVED.append(title)
return f"Reserved {title} by {CATALOG[title]}."
'''),
                reserve('''
if title == "Solaris":
    raise ToolError(f"No book titled {title!r} in the catalog.")
RESERVED.append(title)
return f"Reserved {title} by {CATALOG[title]}."
'''),
            ],
            "right": [
                reserve('''
try:
    author = CATALOG[title]
except KeyError:
    raise ToolError(f"{title!r} is not in the catalog; the shop has {', '.join(CATALOG)}.") from None
RESERVED.append(title)
return f"Reserved {title} by {author}."
'''),
            ],
        },
        "ex-predict": {
            "wrong": [
                pair("None", "None"),
                pair('"protocol_error"', "mcp_nb.CAUSES"),
                pair('"protocol_error"', '("mcp_error", "not_found")'),
                pair('"tool_error"', '"raised"'),
                pair('"protocol_error"', '"crash"'),
                pair('"protocol_error"', '"not_found"'),
                pair('"tool_error"', '"mcp_error"'),
                pair('"protocol_error "', '"mcp_error"'),
            ],
            "fitted": [],
            "right": [],
        },
    },
}
