"""docs/rules.md against the notebooks: every rule of both guides is shown in a cell and checked by an assert.

The map names cells as `NN:id` (the notebook's number, the two digits its file name starts with,
and the cell's id). A check is an assert under a
comment carrying the rule's tag (`# [C07]`), in a cell the map names. nbval runs the asserts; this
test makes sure the map and the notebooks point at each other, and that every tagged block asserts
something the notebook's run produced, not only constants it wrote itself (see `Observations`).
"""

from __future__ import annotations

import ast
import functools
import re
import textwrap
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager

ROOT = Path(__file__).resolve().parent.parent
MAP = ROOT / "docs" / "rules.md"
NOTEBOOKS = {path.name.split("-", 1)[0]: path for path in sorted((ROOT / "notebooks").glob("*.ipynb"))}  # "00", "01", ...

ROW = re.compile(r"^\| (?P<rule>[CP]\d\d) \| (?P<says>[^|]+) \| (?P<differs>[^|]+) \| (?P<shown>[^|]+) \| (?P<checked>[^|]+) \|$")
CELL = re.compile(r"`(\d\d[a-z]?):([A-Za-z0-9_-]+)`")
TAG = re.compile(r"\[([CP]\d\d)\]")


def rules() -> dict[str, dict[str, str]]:
    found = {}
    for line in MAP.read_text(encoding="utf-8").splitlines():
        match = ROW.match(line)
        if match:
            assert match["rule"] not in found, f"{match['rule']} is in the map twice"
            found[match["rule"]] = {key: value.strip() for key, value in match.groupdict().items()}
    return found


def cells_named(text: str) -> list[tuple[str, str]]:
    named = CELL.findall(text)
    # Nothing else in the column: a cell written any other way would be silently skipped.
    assert CELL.sub("", text).replace(",", "").strip() == "", f"not a list of `NN:id` cells: {text!r}"
    return named


def cell(number: str, cell_id: str):
    assert number in NOTEBOOKS, f"no notebook numbered {number} in notebooks/"
    for each in nbformat.read(NOTEBOOKS[number], as_version=4).cells:
        if each.get("id") == cell_id:
            return each
    raise AssertionError(f"{NOTEBOOKS[number].name} has no cell {cell_id!r}")


def checks(source: str, rule: str) -> list[str]:
    """The blocks of a cell that check `rule`: the lines after a comment tagged with it, to the next blank line."""
    blocks, lines = [], source.splitlines()
    for i, line in enumerate(lines):
        if line.lstrip().startswith("#") and rule in TAG.findall(line):
            block = []
            for following in lines[i + 1 :]:
                if not following.strip():
                    break
                block.append(following)
            blocks.append("\n".join(block))
    return blocks


# -- A check must read what a run produced ---------------------------------------------------------
#
# A tagged block passes only if at least one of its asserts reads an *observation*: something a real
# call, request or process produced in this run, not a value the notebook wrote down itself. The
# notebook's code cells are parsed with `ast` (IPython's magics first turned into the calls they are:
# `%mcp_call ...` is `get_ipython().run_line_magic(...)`), and a name is *observed* when the notebook
# binds it (=, for, with ... as, except ... as, :=) from an expression that
#   - calls a magic, or anything imported from the modules through which a notebook talks to a server
#     or runs a process (OBSERVING_MODULES), or a function of the notebook that does;
#   - or uses a name that is already observed (`frame = history.to_frame()`, `for outcome in (a, b)`),
#     or the exception of a `try` whose body observes (`except ValueError as err`).
# A list, set or dict is observed too when an observation is put into it (`refusals.append(err)`), or
# when it is filled by a handler the notebook hands to the server or transport: a function of a `%%mcp_tool`,
# `%%mcp_resource` or `%%mcp_prompt` cell, one decorated by the server (`@shop.tool()`), or one passed
# to a client (`event_hooks=...`): what such a function records, the server or transport recorded.
# An assert reads an observation when it uses an observed name, calls a magic or anything that observes
# (above), or names something OBSERVING_MODULES provide (the SDK's own names are not the notebook's
# constants). Reading back what the caller itself put into a call (ECHOES: `outcome.timeout_s`,
# `.arguments`, `.name`, `.target`) does not count: that a deadline was recorded says nothing of whether
# it was kept. Names are taken notebook-wide, not by scope. The rule is a floor: a block that passes it
# reads the run, but may still check less than its rule says; that is for docs/rules.md and review.

# lesson_tools is the course's helper module, next to the notebooks: it starts the HTTP server and the pytest runs the
# notebooks observe, and what it returns is what those produced (it holds no constants a notebook asserts).
OBSERVING_MODULES = ("mcp_nb", "mcp", "subprocess", "httpx", "httpx2", "lesson_tools")
ECHOES = frozenset({"timeout_s", "arguments", "name", "target"})
HANDLER_MAGICS = ("mcp_tool", "mcp_resource", "mcp_prompt")
MUTATORS = frozenset({"append", "extend", "add", "update", "insert", "setdefault", "appendleft"})

# The tagged blocks (rule, cell) that read no observation yet, each with why. Every other tagged block
# must read one, and these must not: take one out once its block observes.
NOT_YET_OBSERVING: frozenset[tuple[str, str]] = frozenset()  # none today: every tagged block reads one


def parse(source: str) -> ast.Module:
    python = TransformerManager().transform_cell(source)
    return compile(python, "<cell>", "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


def root(node: ast.AST) -> str | None:
    """The name an expression starts from: `mcp_nb` for `mcp_nb.history().to_frame()`."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def names_in(node: ast.AST) -> set[str]:
    return {each.id for each in ast.walk(node) if isinstance(each, ast.Name)}


class Observations:
    """The names a notebook binds from an observation (see above), found once for all its cells."""

    def __init__(self, sources: list[str]):
        self.trees = [parse(source) for source in sources]
        self.origins = {"get_ipython"}  # every magic: it runs through mcp_nb
        for tree in self.trees:
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    self.origins |= {
                        (a.asname or a.name).split(".")[0] for a in node.names if a.name.split(".")[0] in OBSERVING_MODULES
                    }
                elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in OBSERVING_MODULES:
                    self.origins |= {a.asname or a.name for a in node.names}
        self.provided = set(self.origins)  # what the modules provide: not the notebook's constants
        self.observed: set[str] = set()
        handlers = [
            parse(source.split("\n", 1)[1]) for source in sources if source.startswith(tuple(f"%%{m}" for m in HANDLER_MAGICS))
        ]
        while True:  # to a fixed point: an observed name makes what is bound from it observed
            before = len(self.origins) + len(self.observed)
            for tree in self.trees:
                self._bind(tree)
            for tree in handlers:
                self.observed |= self._mutated(tree)
            if len(self.origins) + len(self.observed) == before:
                break

    def observes(self, expr: ast.AST) -> bool:
        return any(
            (isinstance(node, ast.Call) and root(node.func) in self.origins)
            or (isinstance(node, ast.Name) and node.id in self.observed)
            for node in ast.walk(expr)
        )

    def _mutated(self, tree: ast.AST) -> set[str]:
        """The containers a function fills: `X.append(...)`, `X[k] = ...`, `X[k] += ...`."""
        filled = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
                filled.add(root(node.func))
            elif isinstance(node, (ast.Assign, ast.AugAssign)):
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    if isinstance(target, ast.Subscript):
                        filled.add(root(target))
        return filled - {None}

    def _bind(self, tree: ast.AST) -> None:
        for node in ast.walk(tree):
            pairs = []
            if isinstance(node, ast.Assign):
                pairs = [(target, node.value) for target in node.targets]
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                pairs = [(node.target, node.value)]
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                pairs = [(node.target, node.iter)]
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                pairs = [(item.optional_vars, item.context_expr) for item in node.items if item.optional_vars]
            elif isinstance(node, ast.Try) and any(self.observes(each) for each in node.body):
                self.observed |= {handler.name for handler in node.handlers if handler.name}
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
                if any(self.observes(arg) for arg in node.args):
                    self.observed.add(root(node.func))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if any(self.observes(each) for each in node.body):
                    self.origins.add(node.name)  # calling it makes a call, a request or a process
                if any(self.observes(each) or root(each) in self.origins for each in node.decorator_list) or self._handed_over(
                    node.name
                ):
                    self.observed |= self._mutated(node)
            for target, value in pairs:
                if self.observes(value):
                    self.observed |= names_in(target)
        self.observed.discard(None)

    def _handed_over(self, function: str) -> bool:
        """Whether the notebook passes `function` to a call of the SDK or a client (a hook, a callback)."""
        return any(
            isinstance(node, ast.Call)
            and root(node.func) in self.provided
            and any(function in names_in(arg) for arg in [*node.args, *(k.value for k in node.keywords)])
            for tree in self.trees
            for node in ast.walk(tree)
        )

    def reads(self, test: ast.AST) -> bool:
        """Whether an assert's test reads an observation (an echo of the call's own input does not count)."""
        parents = {child: node for node in ast.walk(test) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(test):
            if isinstance(node, ast.Call) and root(node.func) in self.origins:
                return True
            if isinstance(node, ast.Name) and (node.id in self.observed or node.id in self.provided):
                up = parents.get(node)
                echo = (isinstance(up, ast.Attribute) and up.attr in ECHOES) or (
                    isinstance(up, ast.Subscript) and isinstance(up.slice, ast.Constant) and up.slice.value in ECHOES
                )
                if not echo:
                    return True
        return False

    def block_reads(self, block: str) -> bool:
        asserts = [node for node in ast.walk(parse(textwrap.dedent(block))) if isinstance(node, ast.Assert)]
        return any(self.reads(each.test) for each in asserts)


MAPPED = rules()


def test_every_notebook_has_a_number_of_its_own():
    # The map names a notebook by what comes before the first "-" of its file's name: two notebooks
    # with the same number would make one of them unreachable from the map.
    assert len(NOTEBOOKS) == len(list((ROOT / "notebooks").glob("*.ipynb")))


def test_the_map_has_every_rule_of_both_guides_once_in_order():
    for guide, count in (("C", 37), ("P", 25)):
        ids = [rule for rule in MAPPED if rule.startswith(guide)]
        assert ids == [f"{guide}{n:02d}" for n in range(1, count + 1)], f"the {guide} rules are not numbered 1..{count} in order"


@pytest.mark.parametrize("rule", sorted(MAPPED))
def test_every_rule_is_shown_in_a_cell_that_ran_and_checked_by_a_tagged_assert(rule):
    row = MAPPED[rule]
    assert row["says"] and row["differs"], f"{rule}: say what the guide says and what the SDK and mcp_nb do"
    shown = cells_named(row["shown"])
    checked = cells_named(row["checked"])
    assert shown and checked, f"{rule} needs a cell that shows it and one that checks it"
    for number, cell_id in shown:
        showing = cell(number, cell_id)
        assert showing.cell_type == "code" and showing.execution_count, f"{rule}: {number}:{cell_id} is not a code cell that ran"
    for number, cell_id in checked:
        checking = cell(number, cell_id)
        assert checking.cell_type == "code", f"{rule}: {number}:{cell_id} is not a code cell"
        blocks = checks(checking.source, rule)
        assert blocks, f"{rule}: {number}:{cell_id} has no comment tagged [{rule}]"
        for block in blocks:
            assert re.search(r"^\s*assert\b", block, re.M), f"{rule}: no assert follows its tag in {number}:{cell_id}"


def test_every_tag_in_the_notebooks_is_a_rule_of_the_map_checked_where_the_map_says():
    named = {rule: set(cells_named(row["checked"])) for rule, row in MAPPED.items()}
    for number, path in NOTEBOOKS.items():
        for each in nbformat.read(path, as_version=4).cells:
            if each.cell_type != "code":
                continue
            for line in each.source.splitlines():
                if not line.lstrip().startswith("#"):
                    continue
                for rule in TAG.findall(line):
                    assert rule in MAPPED, f"{path.name}:{each.id} checks {rule}, which is not in docs/rules.md"
                    assert (number, each.id) in named[rule], (
                        f"{path.name}:{each.id} checks {rule}, but docs/rules.md does not name that cell"
                    )


@functools.cache
def notebook_observations(number: str) -> Observations:
    cells = nbformat.read(NOTEBOOKS[number], as_version=4).cells
    return Observations([each.source for each in cells if each.cell_type == "code"])


@pytest.mark.parametrize("rule", sorted(MAPPED))
def test_every_tagged_block_reads_what_a_run_produced(rule):
    for number, cell_id in cells_named(MAPPED[rule]["checked"]):
        observations = notebook_observations(number)
        for block in checks(cell(number, cell_id).source, rule):
            reads = observations.block_reads(block)
            if (rule, f"{number}:{cell_id}") in NOT_YET_OBSERVING:
                assert not reads, f"{rule} at {number}:{cell_id} reads an observation now: take it out of NOT_YET_OBSERVING"
            else:
                assert reads, (
                    f"{rule}: no assert under its tag in {number}:{cell_id} reads what a call, request or process "
                    f"of the notebook produced (only the notebook's own constants, or a call's own input read back):\n{block}"
                )


def test_a_block_that_reads_only_the_notebooks_own_constants_is_rejected():
    """The rule on a small notebook: the weak blocks are those 06:c40 (C19, C21) and 09:rules (P24) held before."""
    notebook = Observations(
        [
            "%load_ext mcp_nb\nimport mcp_nb\nfrom pathlib import Path\nCATALOG = {'Dune': 'Frank Herbert'}",
            "%%mcp_tool\nRUNS = []\n\ndef get_author(title: str) -> str:\n    RUNS.append(title)\n    return CATALOG[title]",
            "quick = %mcp_call get_author title=Dune\nown = mcp_nb.call('get_author', {'title': 'Dune'}, timeout=5)\n"
            "magic = %mcp_call get_author title=Dune --timeout 2.5",
            "refusals = []\ntry:\n    mcp_nb.call('get_author', {'title': 'Dune'}, timeout=0)\nexcept ValueError as err:\n    refusals.append(err)",
            "source = Path('test_bookshop.py').read_text()",
        ]
    )
    weak = [
        "assert len(CATALOG) == 1",  # the notebook's own constant
        "assert quick.timeout_s == 30.0",  # the old C19: the deadline recorded, not kept
        "assert (own.timeout_s, magic.timeout_s) == (5.0, 2.5)",  # the old C21: the calls' own input, read back
        # the old P24: a grep of the test file's text
        'assert source.index("import mcp_nb") < source.index("def test_a_crash_is_a_bare_result_and_a_traceback_in_the_log(caplog)")\n'
        'assert "isinstance(crash.exc_info[1].__cause__, KeyError)" in source',
    ]
    observing = [
        "assert (quick.outcome, quick.content) == ('result', 'Frank Herbert')",  # a magic's Outcome
        "assert 300 <= own.duration_ms < 1000",  # what the call did, not what it was asked
        "assert RUNS == ['Dune', 'Dune', 'Dune']",  # filled by the handler as the server ran it
        "assert [str(e) for e in refusals] == ['timeout must be a positive number of seconds, got 0']",  # raised by a call
        "assert len(mcp_nb.history()) == 3",  # mcp_nb's own record of the run
    ]
    assert [notebook.block_reads(block) for block in weak] == [False] * len(weak)
    assert [notebook.block_reads(block) for block in observing] == [True] * len(observing)
