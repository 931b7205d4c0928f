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
with_code = predictions("predicted_outcome", "predicted_cause", "predicted_code")
with_fate = predictions("predicted_outcome", "predicted_cause", "predicted_fate")
batch = predictions("predicted_code", "predicted_status")
gave_up = predictions("predicted_attempts", "predicted_outcome", "predicted_cause")


raises = predictions("predicted_raises", "predicted_is_error")
stop = predictions(
    "predicted_soon_cause", "predicted_soon_code", "predicted_soon_timeout_s", "predicted_stopped_cause", "predicted_stopped_code"
)


def my_test(asserts: str) -> str:
    lines = "\n".join("    " + line for line in asserts.strip("\n").splitlines())
    return (
        "MY_TEST = '''\\\n@pytest.mark.anyio\nasync def test_an_unknown_title_is_an_error_result():\n"
        "    async with Client(mcp, raise_exceptions=True) as client:\n"
        '        result = await client.call_tool("get_author", {"title": "Solaris"})\n' + lines + "\n'''\n"
    )


def my_log_test(asserts: str) -> str:
    lines = "\n".join("    " + line for line in asserts.strip("\n").splitlines())
    return (
        "MY_LOG_TEST = '''\\\n@pytest.mark.anyio\nasync def test_the_crash_is_in_the_log(caplog):\n"
        "    async with Client(mcp, raise_exceptions=True) as client:\n"
        '        await client.call_tool("get_author", {"title": "Solaris"})\n' + lines + "\n'''\n"
    )


failing = predictions("predicted_failing")


def loosened(checks: str, keep_content: bool = False) -> str:
    return (
        'quote_cases = json.loads((folder / "quote_exact.json").read_text())\n'
        'quoted = quote_cases["cases"][0]["expect"]\n'
        + ("" if keep_content else 'del quoted["content"]\n')
        + f'quoted["checks"] = {checks}\n'
        + '(folder / "quote_cases.json").write_text(json.dumps(quote_cases, indent=2))\n'
    )


RIGHT_DECISIONS = {
    "A": ("tool_error", "raised"),
    "B": ("tool_error", "invalid_arguments"),
    "C": ("protocol_error", "mcp_error"),
    "D": ("protocol_error", "not_found"),
    "E": ("tool_error", "crash"),
    "F": ("tool_error", "raised"),
    "G": ("timeout", "deadline"),
    "H": ("result", "ok"),
}


def decisions(reading: str = '"python"', **changed) -> str:
    chosen = {**RIGHT_DECISIONS, **changed}
    return f"DECISIONS = {chosen!r}\nF_READING = {reading}\n"


PRICE = '''%%mcp_tool --read-only
def price(title: str) -> float:
    """The shop's price of a book of its catalog."""
{body}
'''


def price(body: str) -> str:
    return PRICE.format(body="\n".join("    " + line for line in body.strip("\n").splitlines()))


COVER = '''%%mcp_resource cover://{{title}}
def cover(title: str) -> str:
    """What the cover of a book shows."""
{body}
'''


def cover(body: str) -> str:
    return COVER.format(body="\n".join("    " + line for line in body.strip("\n").splitlines()))


GATE = '''INVENTORY = False  # the warehouse is closed for inventory while this is on (the check turns it on)


async def inventory_gate(ctx, call_next):
    """Refuse every tool call while the warehouse is closed; let everything else through."""
{body}


put_middleware(mcp_nb.server(), inventory_gate)
'''


def gate(body: str) -> str:
    return GATE.format(body="\n".join("    " + line for line in body.strip("\n").splitlines()))


ORDER = '''%%mcp_tool
SUPPLIER_ANSWERS = True  # whether the supplier's system answers today (the check turns it off)
ORDERS = []  # the orders placed: (title, copies)

Copies = int  # the type hint of copies: give it its rule (B)
{copies}

def order(title: str, copies: Copies):
    """Order copies of a book of the catalog from the supplier."""
    if title not in PRICES:
        raise ToolError(f"No book titled {{title!r}} in the catalog.")
    if not SUPPLIER_ANSWERS:  # F: the supplier did not answer, and nothing was ordered
        ...  # fail the way your F_READING says
{supplier}
    ORDERS.append((title, copies))
    return f"Ordered {{copies}} copies of {{title}}."
'''
RAISED = 'raise ToolError("The supplier did not answer; nothing was ordered. Try again later.")'


def order(copies: str = "Copies = Annotated[int, Field(ge=1, le=10)]", supplier: str = RAISED) -> str:
    return ORDER.format(copies=copies, supplier="\n".join("        " + line for line in supplier.strip("\n").splitlines()))


REPORT = "mcp_nb.configure(timeout=30)  # the host's deadline for every call\n"


ANNOUNCE = '''%%mcp_prompt
UPCOMING = {{"Dune Messiah": "Monday 09:00"}}  # announced, not out yet: when each is out

def announce(title: str) -> str:
    """Ask for a short announcement of a book."""
{body}
    return f"Write a short announcement of {{title}} by {{CATALOG[title]}}."
'''


def announce(body: str) -> str:
    return ANNOUNCE.format(body="\n".join("    " + line for line in body.strip("\n").splitlines()))


HOLIDAY = '''HOLIDAY = False  # the shop is closed for a holiday while this is on (the check turns it on)


async def holiday_gate(ctx, call_next):
    """Refuse every tool call on a holiday; let everything else through."""
{body}


put_middleware(mcp_nb.server(), holiday_gate)
'''


def holiday(body: str) -> str:
    return HOLIDAY.format(body="\n".join("    " + line for line in body.strip("\n").splitlines()))


HOURS = '''CACHED_HOURS = "9 to 17 (last known)"  # what the host kept from an earlier read


def opening_hours(branch: str) -> tuple[str, str | None]:
    """The hours a host shows its user for a branch, and a notice when they may be out of date."""
{body}
'''


def hours(body: str) -> str:
    return HOURS.format(body="\n".join("    " + line for line in body.strip("\n").splitlines()))


def availability(value: str) -> str:
    return f"availability_policy = {value}"


def policy(value: str) -> str:
    return f"policy = {value}"


def body(value: str) -> str:
    return f"call_body = {value}"


pair = crash

RESERVE = '''%%mcp_tool
RESERVED = []

def reserve(title: str) -> str:
    """Reserve a copy of a book of the catalog."""
{body}
'''


RENEW = '''%%mcp_tool
RENEWALS = []  # the weeks of each renewal the function made

Weeks = int  # the type hint of weeks: give it its rule
{weeks}

def renew(title: str, weeks: Weeks) -> str:
    """Renew the loan of a book of the catalog."""
{body}
'''
RENEW_BODY = '''if title not in CATALOG:  # a rule the schema cannot say
    raise ToolError(f"No book titled {title!r} in the catalog.")
RENEWALS.append(weeks)
return f"{title} is renewed for {weeks} more weeks."'''


def renew(weeks: str, body: str = RENEW_BODY) -> str:
    return RENEW.format(weeks=weeks.strip("\n"), body="\n".join("    " + line for line in body.strip("\n").splitlines()))


STOCK = '''%%mcp_resource stock://{{title}}
STOCK = {{"Dune": 3, "Neuromancer": 1}}

def stock(title: str) -> str:
    """How many copies of a book of the catalog the shop has."""
{body}
'''


def stock(body: str) -> str:
    return STOCK.format(body="\n".join("    " + line for line in body.strip("\n").splitlines()))


RENEW_LOAN = '''%%mcp_tool --idempotent
LIBRARY_DELAY = 0.0  # how long the library's system takes to answer, in seconds (the check makes it slow)
WEEKS_LEFT = {{"Dune": 1}}  # the weeks left on each loan
RENEWED = set()  # the renewal_ids already done

def renew_loan(title: str, renewal_id: str) -> str:
    """Renew the loan of a book for two more weeks. Repeating a call with the same renewal_id renews nothing more."""
{sleep}{body}
    WEEKS_LEFT[title] += 2
    return f"Renewal {{renewal_id}}: {{title}} is due in {{WEEKS_LEFT[title]}} weeks."
'''


def renew_loan(body: str, sleep: bool = True) -> str:
    lines = "\n".join("    " + line for line in body.strip("\n").splitlines())
    return RENEW_LOAN.format(sleep="    time.sleep(LIBRARY_DELAY)\n" if sleep else "", body=lines)


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
                get_year("""
try:
    return str(YEARS[title])
except Exception:
    raise ToolError(f"No book titled {title!r} in the catalog.")
"""),
                # issue 42: a message that names the title, but says something false
                get_year("""
if title not in YEARS:
    raise ToolError(f"{title} was first published in 1965.")
return str(YEARS[title])
"""),
                get_year("""
if title not in YEARS:
    message = f"No book titled {title!r} in the catalog."
    return message
return str(YEARS[title])
"""),
                get_year("""
if title not in YEARS:
    raise ToolError("No such book.")
return str(YEARS[title])
"""),
                get_year("""
if title not in YEARS:
    from mcp import MCPError
    raise MCPError(code=-32602, message=f"No book titled {title!r} in the catalog.")
return str(YEARS[title])
"""),
                get_year("""
if title not in YEARS:
    raise ValueError(f"No book titled {title!r} in the catalog.")
return str(YEARS[title])
"""),
                get_year("""
raise ToolError(f"No book titled {title!r} in the catalog.")
"""),
                get_year("""
from mcp.types import CallToolResult, TextContent
if title not in YEARS:
    return CallToolResult(content=[TextContent(type="text", text=f"No book titled {title!r} in the catalog.")])
return str(YEARS[title])
"""),
                get_year("""
try:
    return str(YEARS[title])
except BaseException as err:
    raise ToolError(f"No book titled {title!r} in the catalog ({err}).")
"""),
                get_year("""
return str(YEARS.get(title, f"No book titled {title!r} in the catalog."))
"""),
            ],
            "fitted": [
                get_year("""
if title not in YEARS:
    raise ToolError("No book titled 'Solaris' in the catalog.")
return str(YEARS[title])
"""),
                get_year("""
if title not in YEARS:
    raise ToolError(f"No book titled {title!r} in the catalog.")
return {"Dune": "1965"}.get(title, "")
"""),
            ],
            "right": [
                get_year("""
try:
    return str(YEARS[title])
except KeyError:
    raise ToolError(f"No book titled {title!r} in the catalog.") from None
"""),
                get_year("""
from mcp.types import CallToolResult, TextContent
if title not in YEARS:
    return CallToolResult(content=[TextContent(type="text", text=f"No book titled {title!r} in the catalog.")], is_error=True)
return str(YEARS[title])
"""),
                get_year("""
year = YEARS.get(title)
if year is None:
    raise ToolError(f"{title!r} is not in the catalog: ask for one of {', '.join(YEARS)}.")
return str(year)
"""),
            ],
        },
    },
    "03-choosing-the-error.ipynb": {
        "ex-reserve": {
            "wrong": [
                reserve("""
try:
    author = CATALOG[title]
except Exception:  # issue 42: every bug becomes a tool error
    raise ToolError(f"No book titled {title!r} in the catalog.")
RESERVED.append(title)
return f"Reserved {title} by {author}."
"""),
                reserve("""
RESERVED.append(title)
return f"Reserved {title} by {CATALOG[title]}."
"""),
                reserve("""
if title not in CATALOG:
    raise ToolError("That book cannot be reserved.")
RESERVED.append(title)
return f"Reserved {title} by {CATALOG[title]}."
"""),
                reserve("""
if title not in CATALOG:
    raise ToolError(f"{title} is reserved already.")
RESERVED.append(title)
return f"Reserved {title} by {CATALOG[title]}."
"""),
                reserve("""
RESERVED.append(title)
if title not in CATALOG:
    raise ToolError(f"No book titled {title!r} in the catalog.")
return f"Reserved {title} by {CATALOG[title]}."
"""),
                reserve("""
if title not in CATALOG:
    raise MCPError(code=-32602, message=f"No book titled {title!r} in the catalog.")
RESERVED.append(title)
return f"Reserved {title} by {CATALOG[title]}."
"""),
                reserve("""
if title not in CATALOG:
    raise LookupError(f"No book titled {title!r} in the catalog.")
RESERVED.append(title)
return f"Reserved {title} by {CATALOG[title]}."
"""),
                reserve("""
from mcp.types import CallToolResult, TextContent
if title not in CATALOG:
    return CallToolResult(content=[TextContent(type="text", text=f"No book titled {title!r} in the catalog.")], is_error=True)
RESERVED.append(title)
return f"Reserved {title} by {CATALOG[title]}."
"""),
                reserve("""
if title not in CATALOG:
    return f"No book titled {title!r} in the catalog."
RESERVED.append(title)
return f"Reserved {title} by {CATALOG[title]}."
"""),
                reserve("""
raise ToolError(f"No book titled {title!r} in the catalog.")
"""),
            ],
            "fitted": [
                reserve("""
if title not in CATALOG:
    raise ToolError("No book titled 'Solaris' in the catalog.")
RESERVED.append(title)
return f"Reserved {title} by {CATALOG[title]}."
"""),
                reserve("""
if title == "Solaris":
    raise ToolError(f"No book titled {title!r} in the catalog.")
RESERVED.append(title)
return f"Reserved {title} by {CATALOG[title]}."
"""),
            ],
            "right": [
                reserve("""
try:
    author = CATALOG[title]
except KeyError:
    raise ToolError(f"{title!r} is not in the catalog; the shop has {', '.join(CATALOG)}.") from None
RESERVED.append(title)
return f"Reserved {title} by {author}."
"""),
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
        "ex-holiday": {
            "wrong": [
                holiday("return await call_next(ctx)"),
                holiday("""
if ctx.method == "tools/call" and HOLIDAY:
    raise MCPError(code=-32051, message="Closed for the holiday.", data={"retry_after_s": 86400})
return await call_next(ctx)
"""),
                holiday("""
if ctx.method == "tools/call" and HOLIDAY:
    raise MCPError(code=-32603, message="Closed for the holiday.", data={"retry_after_s": 86400})
return await call_next(ctx)
"""),
                holiday("""
if ctx.method == "tools/call" and HOLIDAY:
    raise MCPError(code=-32001, message="Closed for the holiday.", data={"retry_after_s": 86400})
return await call_next(ctx)
"""),
                holiday("""
if ctx.method == "tools/call" and HOLIDAY:
    raise MCPError(code=-32060, message="Closed for the holiday.")
return await call_next(ctx)
"""),
                holiday("""
if ctx.method == "tools/call" and HOLIDAY:
    raise RuntimeError("Closed for the holiday.")
return await call_next(ctx)
"""),
                holiday("""
if ctx.method == "tools/call" and HOLIDAY:
    raise ToolError("Closed for the holiday.")
return await call_next(ctx)
"""),
                holiday("""
if ctx.method == "tools/call":
    raise MCPError(code=-32060, message="Closed for the holiday.", data={"retry_after_s": 86400})
return await call_next(ctx)
"""),
            ],
            "fitted": [],
            "right": [
                holiday("""
if HOLIDAY and ctx.method == "tools/call":
    raise MCPError(code=-32099, message="Closed today: a holiday.", data={"open_at": "tomorrow 09:00"})
return await call_next(ctx)
"""),
            ],
        },
    },
    "04-bad-arguments.ipynb": {
        "ex-predict": {
            "wrong": [
                pair("None", "None"),
                pair('"tool_error"', "mcp_nb.CAUSES"),
                pair('"tool_error"', '("invalid_arguments", "crash")'),
                pair('"protocol_error"', '"invalid_arguments"'),
                pair('"tool_error"', '"raised"'),
                pair('"tool_error"', '"crash"'),
                pair('"tool_error"', '"invalid arguments"'),
                pair("...", '"invalid_arguments"'),
            ],
            "fitted": [],
            "right": [],
        },
        "ex-hint": {
            "wrong": [
                renew("Weeks = Annotated[int, Field(ge=1, le=5)]"),  # issue 42
                renew("Weeks = Annotated[int, Field(gt=0, lt=6)]"),  # issue 42
                renew("from typing import Literal\nWeeks = Literal[1, 2]"),  # issue 42
                renew("""
from pydantic import AfterValidator

def within_four(weeks: int) -> int:
    if not 1 <= weeks <= 4:
        raise ValueError("weeks must be from 1 to 4")
    return weeks

Weeks = Annotated[int, AfterValidator(within_four)]  # issue 42: the rule, but not in the schema
"""),
                renew("Weeks = Annotated[int, Field(ge=0, le=4)]"),
                renew("Weeks = Annotated[int, Field(ge=1)]"),
                renew("Weeks = Annotated[int, Field(le=4)]"),
                renew("Weeks = Annotated[int, Field(gt=1, lt=4)]"),
                renew("Weeks = Annotated[float, Field(ge=1, le=4)]"),
                renew("Weeks = Annotated[int, Field(description='from 1 to 4')]"),
                renew(
                    "",
                    """
if not 1 <= weeks <= 4:
    raise ToolError("weeks must be from 1 to 4")
if title not in CATALOG:
    raise ToolError(f"No book titled {title!r} in the catalog.")
RENEWALS.append(weeks)
return f"{title} is renewed for {weeks} more weeks."
""",
                ),
            ],
            "fitted": [
                renew(
                    "Weeks = Annotated[int, Field(ge=1, le=4)]",
                    """
RENEWALS.append(weeks)
return f"{title} is renewed for {weeks} more weeks."
""",
                ),
            ],
            "right": [
                renew("Weeks = Annotated[int, Field(gt=0, lt=5)]"),
                renew("from typing import Literal\nWeeks = Literal[1, 2, 3, 4]"),
                renew("from pydantic import conint\nWeeks = conint(ge=1, le=4)"),
            ],
        },
    },
    "05-resources-and-prompts.ipynb": {
        "ex-not-found": {
            "wrong": [
                stock("""
try:
    return f"{title}: {STOCK[title]} in stock"
except Exception as err:  # issue 42: sends the KeyError's text, and turns every bug into "not found"
    raise ResourceNotFoundError(str(err))
"""),
                stock("""
try:
    return f"{title}: {STOCK[title]} in stock"
except Exception:
    raise ResourceNotFoundError(f"No book titled {title!r} in the catalog.")
"""),
                stock("""
if title not in CATALOG:
    from mcp.server.mcpserver.exceptions import ResourceError
    raise ResourceError(f"No book titled {title!r} in the catalog.")
return f"{title}: {STOCK[title]} in stock"
"""),
                stock("""
if title not in CATALOG:
    from mcp import MCPError
    raise MCPError(code=-32051, message=f"No book titled {title!r} in the catalog.")
return f"{title}: {STOCK[title]} in stock"
"""),
                stock("""
if title not in CATALOG:
    return f"No book titled {title!r} in the catalog."
return f"{title}: {STOCK[title]} in stock"
"""),
                stock("""
if title not in CATALOG:
    raise ResourceNotFoundError("Not found.")
return f"{title}: {STOCK[title]} in stock"
"""),
                stock("""
if title not in CATALOG:
    raise KeyError(f"No book titled {title!r} in the catalog.")
return f"{title}: {STOCK[title]} in stock"
"""),
                stock("""
if title not in CATALOG:
    from mcp.server.mcpserver.exceptions import ToolError
    raise ToolError(f"No book titled {title!r} in the catalog.")
return f"{title}: {STOCK[title]} in stock"
"""),
                stock("""
raise ResourceNotFoundError(f"No book titled {title!r} in the catalog.")
"""),
            ],
            "fitted": [
                stock("""
if title not in CATALOG:
    raise ResourceNotFoundError("No book titled 'Solaris' in the catalog.")
return f"{title}: {STOCK[title]} in stock"
"""),
                stock("""
if title == "Solaris":
    raise ResourceNotFoundError(f"No book titled {title!r} in the catalog.")
return f"{title}: {STOCK[title]} in stock"
"""),
            ],
            "right": [
                stock("""
try:
    count = STOCK[title]
except KeyError:
    raise ResourceNotFoundError(f"{title!r} is not in the catalog.") from None
return f"{title}: {count} in stock"
"""),
                stock("""
from mcp import MCPError
from mcp.types import INVALID_PARAMS
if title not in STOCK:
    raise MCPError(code=INVALID_PARAMS, message=f"No book titled {title!r} in the catalog.", data={"uri": f"stock://{title}"})
return f"{title}: {STOCK[title]} in stock"
"""),
            ],
        },
        "ex-predict": {
            "wrong": [
                with_code("...", "...", "-32603"),  # issue 42: only the code answered
                with_code("None", "None", "None"),
                with_code('"protocol_error"', '"crash"', '"-32603"'),
                with_code('"protocol_error"', '"crash"', "-32602"),
                with_code('"protocol_error"', '"not_found"', "-32602"),
                with_code('"tool_error"', '"crash"', "-32603"),
                with_code('"protocol_error"', '"crash"', "(-32603, -32602)"),
                with_code('"protocol_error"', "mcp_nb.CAUSES", "-32603"),
                with_code('"protocol_error"', '"crash"', "None"),
                with_code('"protocol_error"', '"resource_error"', "-32603"),
            ],
            "fitted": [],
            "right": [],
        },
        "ex-announce": {
            "wrong": [
                announce("pass"),
                announce("""
if title in UPCOMING:
    raise MCPError(code=-32603, message=f"{title!r} is not out yet.", data={"title": title, "ready_at": UPCOMING[title]})
"""),
                announce("""
if title in UPCOMING:
    raise MCPError(code=NOT_READY, message="Not out yet.", data={"title": title, "ready_at": UPCOMING[title]})
"""),
                announce("""
if title in UPCOMING:
    raise MCPError(code=NOT_READY, message=f"{title!r} is not out yet.")
"""),
                announce("""
if title in UPCOMING:
    raise MCPError(code=-32051, message=f"{title!r} is not out yet.", data={"title": title, "ready_at": UPCOMING[title]})
"""),
                announce("""
if title in UPCOMING:
    from mcp.server.mcpserver.exceptions import ToolError
    raise ToolError(f"{title!r} is not out yet.")
"""),
                announce("""
if title in UPCOMING:
    return f"{title} is not out yet."
"""),
            ],
            "fitted": [
                announce("""
if title in UPCOMING:
    raise MCPError(code=NOT_READY, message=f"{title!r} is not out yet.", data={"title": title, "ready_at": "Monday 09:00"})
"""),
            ],
            "right": [
                announce("""
if title in UPCOMING:
    raise MCPError(code=NOT_READY, message=f"{title} is announced, and out on {UPCOMING[title]}.",
                   data={"title": title, "ready_at": UPCOMING[title], "announced": True})
"""),
            ],
        },
    },
    "06-timeouts.ipynb": {
        "ex-predict": {
            "wrong": [
                with_fate("...", "...", '"completed"'),  # issue 42: only the fate answered
                with_fate("None", "None", "None"),
                with_fate('"timeout"', '"deadline"', '"cancelled"'),
                with_fate('"timeout"', '"cancelled"', '"completed"'),
                with_fate('"result"', '"ok"', '"completed"'),
                with_fate('"timeout"', '"deadline"', '("completed", "cancelled")'),
                with_fate('"timeout"', '"deadline"', '"finished"'),
                with_fate('"timeout"', "mcp_nb.CAUSES", '"completed"'),
                with_fate('"protocol_error"', '"deadline"', '"completed"'),
            ],
            "fitted": [],
            "right": [],
        },
        "ex-renew": {
            "wrong": [
                renew_loan("pass"),
                renew_loan("""
if title in RENEWED:
    return f"{title} was renewed already."
RENEWED.add(title)
"""),
                renew_loan("""
if renewal_id in RENEWED:
    return f"Renewal {renewal_id} was already done."
"""),
                renew_loan("""
from mcp.server.mcpserver.exceptions import ToolError
if renewal_id in RENEWED:
    raise ToolError(f"Renewal {renewal_id} was already done.")
RENEWED.add(renewal_id)
"""),
                renew_loan("""
RENEWED.add(renewal_id)
if renewal_id in RENEWED:
    return f"Renewal {renewal_id} was already done."
"""),
                renew_loan(
                    """
if renewal_id in RENEWED:
    return f"Renewal {renewal_id} was already done."
RENEWED.add(renewal_id)
""",
                    sleep=False,
                ),
                renew_loan("""
if RENEWED:
    return "A renewal was already done."
RENEWED.add(renewal_id)
"""),
            ],
            "fitted": [
                renew_loan("""
global LAST_ID
if renewal_id == globals().get("LAST_ID"):
    return f"Renewal {renewal_id} was already done."
LAST_ID = renewal_id
"""),
            ],
            "right": [
                renew_loan("""
if renewal_id not in RENEWED:
    RENEWED.add(renewal_id)
else:
    return f"{title}: renewal {renewal_id} is done already ({WEEKS_LEFT[title]} weeks left)."
"""),
            ],
        },
        "ex-stop": {
            "wrong": [
                stop("...", "-32001", "...", "...", "-32800"),  # only the codes answered
                stop("None", "None", "None", "None", "None"),
                stop('"deadline"', "-32001", "120", '"cancelled"', "-32800"),
                stop('"deadline"', "-32800", "0.2", '"cancelled"', "-32001"),
                stop('"deadline"', "-32001", "0.2", '"deadline"', "-32001"),
                stop('"deadline"', "-32001", '"0.2"', '"cancelled"', "-32800"),
                stop('"cancelled"', "-32001", "0.2", '"cancelled"', "-32800"),
                stop('"deadline"', "-32001", "0.5", '"cancelled"', "-32800"),
            ],
            "fitted": [],
            "right": [stop('"deadline"', "-32001", "0.20", '"cancelled"', "-32800")],
        },
    },
    "07-over-the-wire.ipynb": {
        "ex-predict": {
            "wrong": [
                batch("None", "None"),
                batch("...", "400"),
                batch("-32700", "400"),
                batch("-32600", "200"),
                batch('"-32600"', '"400"'),
                batch("(-32600, -32700)", "400"),
                batch("-32601", "404"),
                batch("-32600.0", "400"),
                batch("True", "400"),
            ],
            "fitted": [],
            "right": [],
        },
        "ex-accepted": {
            "wrong": [
                body(
                    '{"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "weigh_parcel", "arguments": {"seconds": 0}, "_meta": META}}'
                ),
                body('request("tools/call", name="count_shelves", arguments={"seconds": 0})'),
                body('request("tools/list")'),
                body('request("tools/call", name="weigh_parcel", arguments={})'),
                body('b\'{"jsonrpc": "2.0", "id": 1, "method": "tools/call"\''),
                body('[json.loads(request("tools/call", name="weigh_parcel", arguments={"seconds": 0}))]'),
                body('request("tools/call", name="weigh_parcel", seconds=0)'),
                body("None"),
            ],
            "fitted": [
                body('request("tools/call", name="weigh_parcel", arguments={"seconds": 1})'),
                body('request("tools/call", name="weigh_parcel", arguments={"seconds": "0"})'),
            ],
            "right": [
                body(
                    '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "weigh_parcel", "arguments": {"seconds": 0}, "_meta": META}}'
                ),
                body('request("tools/call", name="weigh_parcel", arguments={"seconds": 0.0}).decode()'),
            ],
        },
    },
    "08-retries-and-degradation.ipynb": {
        "ex-predict": {
            "wrong": [
                gave_up("3", "...", "..."),  # issue 42: only the attempts answered
                gave_up("None", "None", "None"),
                gave_up("2", '"timeout"', '"deadline"'),
                gave_up("4", '"timeout"', '"deadline"'),
                gave_up("3", '"protocol_error"', '"deadline"'),
                gave_up("3", '"timeout"', '"cancelled"'),
                gave_up('"3"', '"timeout"', '"deadline"'),
                gave_up("(2, 3)", '"timeout"', '"deadline"'),
                gave_up("3", '"timeout"', '"max_timeout"'),
                gave_up("0", '"timeout"', '"deadline"'),
            ],
            "fitted": [],
            "right": [],
        },
        "ex-busy": {
            "wrong": [
                policy("Retry(retries=2, codes=tuple(range(-32768, -31999)), backoff=0.01)"),  # issue 42: every code
                policy("Retry(retries=2, codes=(BUSY,), backoff=0)"),  # issue 42
                policy("Retry(retries=2, codes=(BUSY,), backoff=0.01, tool_errors=True)"),  # issue 42
                policy("Retry()"),
                policy("Retry(retries=3, codes=(BUSY,), backoff=0.01)"),
                policy("Retry(retries=2, codes=(BUSY,))"),
                policy("Retry(retries=2, codes=(BUSY, -32603), backoff=0.01)"),
                policy("Retry(retries=1, codes=(BUSY,), backoff=0.01)"),
                policy("3"),
                policy("Retry(retries=2, codes=(BUSY,), backoff=0.01, force=True)"),
                policy("Retry(retries=2, codes=(BUSY,), backoff=10)"),
            ],
            "fitted": [
                policy("Retry(retries=2, codes=(BUSY,), backoff=0.01, jitter=1.0)"),
            ],
            "right": [
                policy("Retry(retries=2, codes=(-32050,), backoff=0.01, max_backoff=1.0)"),
                policy("Retry(codes=[BUSY], retries=2, backoff=10 / 1000)"),
            ],
        },
        "ex-hours": {
            "wrong": [
                hours('return mcp_nb.read(f"hours://{branch}").content, None'),
                hours('read = mcp_nb.read(f"hours://{branch}", fallback=CACHED_HOURS)\nreturn read.content, None'),
                hours(
                    'read = mcp_nb.read(f"hours://{branch}", fallback=CACHED_HOURS)\nreturn read.content, ("Server Error" if read.fallback else None)'
                ),
                hours(
                    'read = mcp_nb.read(f"hours://{branch}", fallback=CACHED_HOURS)\n'
                    'return read.content, ("Out of date: The hours service is being updated; try again at noon." if read.fallback else None)'
                ),
                hours(
                    'read = mcp_nb.read(f"hours://{branch}", fallback=CACHED_HOURS)\nreturn read.content, f"Out of date? {read.message}"'
                ),
                hours('read = mcp_nb.read(f"hours://{branch}")\nreturn CACHED_HOURS, read.message'),
            ],
            "fitted": [
                hours(
                    'read = mcp_nb.read("hours://Leith", fallback=CACHED_HOURS)\nreturn read.content, (read.message if read.fallback else None)'
                ),
            ],
            "right": [
                hours(
                    'read = mcp_nb.read(f"hours://{branch}", fallback=CACHED_HOURS)\n'
                    'return (read.content, f"{read.message} (the hours shown are the last known)") if read.fallback else (read.content, None)'
                ),
            ],
        },
    },
    "09-testing.ipynb": {
        "ex-predict": {
            "wrong": [
                raises("None", "None"),
                raises("True", "True"),
                raises("False", "False"),
                raises('"False"', '"True"'),
                raises("...", "True"),
                raises("0", "1"),
                raises("True", "False"),
            ],
            "fitted": [],
            "right": [],
        },
        "ex-write": {
            "wrong": [
                my_test("pass"),
                my_test("assert result.is_error"),
                my_test('assert result.content[0].text == "Error executing tool get_author"'),
                my_test('assert result.is_error\nassert result.content[0].text.startswith("Error executing tool get_author")'),
                my_test("assert not result.is_error"),
                my_test('assert result.is_error\nassert "Error" in result.content[0].text'),
                my_test('assert result.is_error\nassert result.content[0].text == "Error executing tool get_author: KeyError"'),
            ],
            "fitted": [
                my_test(
                    'assert result.is_error\nassert "Solaris" not in result.content[0].text and "KeyError" not in result.content[0].text'
                ),
            ],
            "right": [
                my_test(
                    'assert result.is_error is True\nassert [block.text for block in result.content] == ["Error executing tool get_author"]'
                ),
            ],
        },
        "ex-caplog": {
            "wrong": [
                my_log_test("pass"),
                my_log_test("assert caplog.records"),
                my_log_test(
                    '(crash,) = [r for r in caplog.records if r.levelname == "ERROR"]\nassert isinstance(crash.exc_info[1], KeyError)'
                ),
                my_log_test('assert any(r.levelname == "WARNING" for r in caplog.records)'),
                my_log_test('assert "Traceback" not in caplog.text'),
            ],
            "fitted": [
                my_log_test(
                    "assert any(r.getMessage() == \"Tool 'get_author' raised an unexpected exception\" for r in caplog.records)"
                ),
                my_log_test('assert "ERROR" in caplog.text'),
                my_log_test('assert [r.levelname for r in caplog.records] == ["ERROR"]'),
            ],
            "right": [
                my_log_test(
                    "assert \"Tool 'get_author' raised an unexpected exception\" in caplog.text\nassert \"KeyError: 'Solaris'\" in caplog.text"
                ),
            ],
        },
    },
    "10-regression-cases.ipynb": {
        "ex-predict": {
            "wrong": [
                failing("None"),
                failing('{"get_book-1"}'),
                failing('{"get_book-2"}'),
                failing('{"get_book-1", "get_book-2", "stock-2"}'),
                failing('["get_book-1", "get_book-2"]'),
                failing('"get_book-1, get_book-2"'),
                failing('{"get_book-1", "get_book-2", "getbook-3"}'),
                failing("set()"),
            ],
            "fitted": [],
            "right": [failing('frozenset({"get_book-2", "get_book-1"})')],
        },
        "ex-quote": {
            "wrong": [
                # issue 42: a tolerance centred on 11.9
                loosened('[{"path": "$.title", "equals": "Dune"}, {"path": "$.price", "approx": 11.9, "tolerance": 0.6}]'),
                loosened('[{"path": "$.price", "approx": 12, "tolerance": 0.5}]'),
                loosened(
                    '[{"path": "$.title", "equals": "Dune"}, {"path": "$.price", "approx": 12, "tolerance": 0.5}]',
                    keep_content=True,
                ),
                loosened('[{"path": "$.title", "equals": "dune"}, {"path": "$.price", "approx": 12, "tolerance": 0.5}]'),
                loosened('[{"path": "$.title", "equals": "Dune"}, {"path": "$.price", "approx": 12, "tolerance": 1}]'),
                loosened('[{"path": "$.title", "equals": "Dune"}, {"path": "$.price", "approx": 12, "tolerance": 0.3}]'),
                loosened("[]"),
                loosened('[{"path": "$.title", "equals": "Dune"}]'),
            ],
            "fitted": [
                loosened(
                    '[{"path": "$.price", "approx": 12, "tolerance": 0.45}, {"path": "$.title", "equals": "Dune"}, '
                    '{"path": "$.price", "approx": 12, "tolerance": 0.5}]'
                ),
            ],
            "right": [
                loosened('[{"path": "$.price", "approx": 12.0, "tolerance": 0.5}, {"path": "$.title", "equals": "Dune"}]'),
            ],
        },
    },
    "11-capstone.ipynb": {
        "ex-classify": {
            "wrong": [
                "DECISIONS = {letter: ... for letter in 'ABCDEFGH'}\nF_READING = ...",
                decisions(reading='"cpp"'),  # F raised, but the C++ reading returns an error result
                decisions(reading='"both"'),
                decisions(A=("protocol_error", "mcp_error")),
                decisions(E=("tool_error", "raised")),
                decisions(D=("tool_error", "raised")),
                decisions(G=("protocol_error", "mcp_error")),
                decisions(C=("tool_error", "raised")),
                decisions(H=("protocol_error", "mcp_error")),
                decisions(B=["tool_error", "invalid_arguments"]),
                decisions(F=("tool_error", "crash")),
            ],
            "fitted": [],
            "right": [decisions(reading='"cpp"', F=("tool_error", "returned"))],
        },
        "ex-price": {
            "wrong": [
                price("""
try:
    return PRICES[title]
except Exception:
    raise ToolError(f"No book titled {title!r} in the catalog.")
"""),
                price("""
if title not in PRICES:
    raise ToolError("Unknown.")
return PRICES[title]
"""),
                price("""
if title not in PRICES:
    raise MCPError(code=-32602, message=f"No book titled {title!r} in the catalog.")
return PRICES[title]
"""),
                price("return PRICES[title]"),
            ],
            "fitted": [
                price("""
if title not in PRICES:
    raise ToolError("No book titled 'Solaris' in the catalog.")
return PRICES[title]
"""),
            ],
            "right": [],
        },
        "ex-order": {
            "wrong": [
                order("Copies = Annotated[int, Field(ge=0, le=10)]"),
                order("Copies = Annotated[int, Field(ge=1, le=100)]"),
                order("Copies = int"),
                order(supplier="pass"),
                order(supplier='return "The supplier did not answer: not ordered."'),
                order(supplier='ORDERS.append((title, copies))\nraise ToolError("The supplier did not answer.")'),
                order(
                    supplier='return CallToolResult(content=[TextContent(type="text", text="The supplier did not answer.")], is_error=True)'
                ),
                order(supplier='raise RuntimeError("The supplier did not answer.")'),
            ],
            "fitted": [],
            "right": [order("Copies = Annotated[int, Field(gt=0, lt=11)]")],
        },
        "ex-cover": {
            "wrong": [
                cover("""
try:
    return COVERS[title]
except Exception as err:
    raise ResourceNotFoundError(f"No cover for {title!r}: {err}")
"""),
                cover("""
if title not in COVERS:
    from mcp.server.mcpserver.exceptions import ResourceError
    raise ResourceError(f"No cover on file for {title!r}.")
return COVERS[title]
"""),
                cover("""
if title not in COVERS:
    raise ResourceNotFoundError("No cover on file.")
return COVERS[title]
"""),
                cover("""
if title not in COVERS:
    return "no cover"
return COVERS[title]
"""),
            ],
            "fitted": [
                cover("""
if title not in COVERS:
    raise ResourceNotFoundError("No cover on file for 'Ubik'.")
return COVERS[title]
"""),
            ],
            "right": [],
        },
        "ex-gate": {
            "wrong": [
                gate("""
if ctx.method == "tools/call" and INVENTORY:
    raise MCPError(code=-32051, message="Closed for inventory.", data={"retry_after_s": 3600})
return await call_next(ctx)
"""),
                gate("""
if ctx.method == "tools/call" and INVENTORY:
    raise MCPError(code=-32603, message="Closed for inventory.", data={"retry_after_s": 3600})
return await call_next(ctx)
"""),
                gate("""
if INVENTORY:
    raise MCPError(code=-32060, message="Closed for inventory.", data={"retry_after_s": 3600})
return await call_next(ctx)
"""),
                gate("""
if ctx.method == "tools/call" and INVENTORY:
    raise MCPError(code=-32060, message="Closed for inventory.")
return await call_next(ctx)
"""),
                gate("""
if ctx.method == "tools/call" and INVENTORY:
    raise RuntimeError("Closed for inventory.")
return await call_next(ctx)
"""),
            ],
            "fitted": [],
            "right": [
                gate("""
if INVENTORY and ctx.method == "tools/call":
    raise MCPError(code=-32070, message="The warehouse is closed for inventory.", data={"open_at": "tomorrow 09:00"})
return await call_next(ctx)
"""),
            ],
        },
        "ex-report": {
            "wrong": [
                REPORT + 'report = mcp_nb.call("stock_report", timeout=1)',
                REPORT + 'mcp_nb.configure(timeout=0.2)\nreport = mcp_nb.call("stock_report")',
                REPORT + 'report = mcp_nb.call("stock_report")',
                REPORT + "report = None",
                REPORT + 'report = mcp_nb.call("price", {"title": "Dune"}, timeout=0.2)',
            ],
            "fitted": [],
            "right": [REPORT + "report = %mcp_call stock_report --timeout 0.2"],
        },
        "ex-retry": {
            "wrong": [
                availability("Retry()"),
                availability("Retry(retries=3, codes=(-32050,))"),
                availability("Retry(retries=2, codes=tuple(range(-32099, -31999)))"),
                availability("Retry(retries=2, codes=(-32050,), tool_errors=True)"),
            ],
            "fitted": [availability("Retry(retries=2, codes=(-32050,), force=True)")],
            "right": [],
        },
    },
}
