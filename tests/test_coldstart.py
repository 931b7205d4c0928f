"""A notebook's first minutes import nothing they do not use.

Cold start, measured (benchmarks/bench_coldstart.py): a kernel's first call used to import
`jsonschema` inside the SDK's client, about a second in a Jupyter environment, and
`%load_ext mcp_nb` imported pandas and numpy before any history was looked at. Timing
belongs to the benchmark; these tests pin what the figures depend on: which modules a
fresh interpreter has imported after loading the extension, registering tools of every
common return type and calling each through the magics, with the outcome cards rendered.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

# The modules a first call must not wait for: jsonschema with the URI grammar it pulls in
# (the SDK imports it to check structured results), and the history's frame libraries.
AVOIDED = ("jsonschema", "rfc3987_syntax", "referencing", "pandas", "numpy", "pyarrow", "tenacity")

NOTEBOOK = r'''
import json, sys, threading, time
from IPython.core.interactiveshell import InteractiveShell

AVOIDED = {avoided!r}
shell = InteractiveShell.instance()
seen = {{}}

def imported():
    return sorted(m for m in AVOIDED if m in sys.modules)

def run(source):
    result = shell.run_cell(source, store_history=True)
    assert result.success, (source, result.error_before_exec, result.error_in_exec)
    if result.result is not None:  # what a kernel sends for the cell: every repr, the card's HTML too
        shell.display_formatter.format(result.result)
    return result.result

run("%load_ext mcp_nb")
seen["after %load_ext"] = imported()
run("import mcp_nb")
run("""
import enum
from typing import Annotated, Any, Literal, Optional, TypedDict
from pydantic import BaseModel, Field

class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"

class Address(BaseModel):
    street: str = Field(min_length=1)
    zip: int | None = None

class Person(BaseModel):
    name: Annotated[str, Field(pattern=r"^[A-Z]")]
    age: Annotated[int, Field(ge=0, le=150)]
    step: Annotated[float, Field(multiple_of=0.5)] = 0.0
    addresses: list[Address] = []
    tags: set[str] = set()
    colour: Colour = Colour.RED

class Node(BaseModel):
    value: int
    children: list["Node"] = []

class Point(TypedDict):
    x: int
    y: str
""")
TOOLS = {{
    "t_int": ("int", "return 1"), "t_float": ("float", "return 0.5"), "t_str": ("str", "return 'x'"),
    "t_bool": ("bool", "return True"), "t_none": ("None", "return None"), "t_list": ("list[str]", "return ['a']"),
    "t_dict": ("dict[str, int]", "return {{'a': 1}}"), "t_any": ("dict[str, Any]", "return {{'a': [1, None]}}"),
    "t_optional": ("Optional[int]", "return None"), "t_union": ("int | str", "return 'x'"),
    "t_tuple": ("tuple[int, str]", "return (1, 'a')"), "t_set": ("set[int]", "return {{1, 2}}"),
    "t_literal": ("Literal['a', 'b']", "return 'b'"), "t_point": ("Point", "return {{'x': 1, 'y': 'a'}}"),
    "t_person": ("Person", "return Person(name='Ann', age=3, step=1.5, addresses=[Address(street='Elm')], tags={{'a'}})"),
    "t_node": ("Node", "return Node(value=1, children=[Node(value=2)])"),
}}
for name, (returns, body) in TOOLS.items():
    run(f"%%mcp_tool\ndef {{name}}() -> {{returns}}:\n    {{body}}\n")
    outcome = run(f"%mcp_call {{name}}")
    assert outcome.outcome == "result", (name, outcome.outcome, outcome.message)
run("%%mcp_tool\ndef add(a: int, b: int) -> int:\n    return a + b\n")
assert run("%mcp_call add a=1 b=2").content == "3"
assert run("mcp_nb.call('add', {{'a': 1, 'b': 1}})").structured_content == {{"result": 2}}
run("%%mcp_resource books://catalog\ndef catalog() -> str:\n    return 'Dune'\n")
assert run("%mcp_read books://catalog").outcome == "result"
run("%%mcp_prompt\ndef greet(name: str) -> str:\n    return 'Hello ' + name\n")
assert run("%mcp_get_prompt greet name=Ann").outcome == "result"
seen["after the calls"] = imported()
assert len(run("mcp_nb.history()")) == len(TOOLS) + 4  # the history still renders, and imports what it needs
seen["after showing the history"] = imported()
print(json.dumps(seen))
'''


def test_a_notebooks_first_calls_import_nothing_they_do_not_use():
    code = textwrap.dedent(NOTEBOOK.format(avoided=AVOIDED))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["after %load_ext"] == []
    assert seen["after the calls"] == []
    assert {"pandas", "numpy"} <= set(seen["after showing the history"])
    assert "jsonschema" not in seen["after showing the history"]


def test_the_session_opens_at_load_without_importing_them():
    # `%load_ext` opens the client session in the background (the first call then finds
    # it open); that must not bring in what the first call avoids either.
    code = textwrap.dedent(
        f"""
        import sys, time
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance()
        shell.run_line_magic("load_ext", "mcp_nb")
        import mcp_nb
        engine = mcp_nb.engine()
        deadline = time.monotonic() + 60
        while not engine.connection.is_open and time.monotonic() < deadline:
            time.sleep(0.01)
        print(engine.connection.is_open, sorted(m for m in {AVOIDED!r} if m in sys.modules))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "[]"]
