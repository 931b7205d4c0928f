"""Functions the SDK would turn into a broken or misleading tool, resource or prompt are refused.

Through a cell: a one-line UsageError naming the parameter or the reason, and nothing
changes (the previous version stays registered, callable and bound). Through the
decorators: a TypeError with the same message.
"""

import functools
import sys

import pytest
from IPython.core.error import UsageError

import mcp_nb

# What the cell magics register under one name each; the bad variants reuse the name.
KINDS = {
    "tool": ("%%mcp_tool", "lookup"),
    "prompt": ("%%mcp_prompt", "lookup"),
    "resource": ("%%mcp_resource books://{q}", "lookup"),
}

# (label, the function with NAME for its name, what the message must say)
BAD = [
    (
        "plain class",
        "def NAME(q: Plain) -> str:\n    return 'x'\n",
        "parameter 'q' of NAME: type Plain cannot be described in JSON Schema",
    ),
    (
        "callable",
        "def NAME(q: Callable[[int], int]) -> str:\n    return 'x'\n",
        "parameter 'q' of NAME: type Callable[[int], int] cannot be described",
    ),
    (
        "nested class",
        "def NAME(q: list[Plain]) -> str:\n    return 'x'\n",
        "parameter 'q' of NAME: type list[Plain] cannot be described",
    ),
    ("*args", "def NAME(*q) -> str:\n    return 'x'\n", "parameter *q of NAME:"),
    ("**kwargs", "def NAME(**q) -> str:\n    return 'x'\n", "parameter **q of NAME:"),
    ("both", "def NAME(*args, **kwargs) -> str:\n    return 'x'\n", "parameter *args of NAME:"),
    ("named then *rest", "def NAME(q: str, *rest: str) -> str:\n    return q\n", "parameter *rest of NAME:"),
    ("positional-only", "def NAME(q: str, /) -> str:\n    return q\n", "parameter 'q' of NAME is positional-only"),
    ("generator", "def NAME(q: str):\n    yield q\n", "NAME is a generator function (it uses yield)"),
    ("async generator", "async def NAME(q: str):\n    yield q\n", "NAME is an async generator function (it uses yield)"),
    ("underscore", "def NAME(q: str, _hidden: int = 0) -> str:\n    return q\n", "parameter '_hidden' of NAME starts with '_'"),
    (
        "unresolvable",
        "def NAME(q: 'Undefined') -> str:\n    return q\n",
        "the annotations of NAME cannot be evaluated: name 'Undefined' is not defined",
    ),
]


@pytest.fixture
def namespace(shell):
    import threading
    from collections.abc import Callable
    from dataclasses import dataclass, field

    class Plain:
        pass

    @dataclass
    class HoldsALock:
        lock: threading.Lock = field(default_factory=threading.Lock)

    shell.user_ns.update(Plain=Plain, HoldsALock=HoldsALock, Callable=Callable)
    yield shell.user_ns
    for name in ("Plain", "HoldsALock", "Callable", "lookup"):
        shell.user_ns.pop(name, None)


def register_good(shell, kind):
    magic, name = KINDS[kind]
    result = shell.run_cell(f"{magic}\ndef {name}(q: str) -> str:\n    return 'v1 ' + q\n")
    assert result.success, result.error_in_exec
    return shell.user_ns[name]


def fetch(kind, name):
    if kind == "tool":
        return mcp_nb.call(name, {"q": "a"}).content
    if kind == "prompt":
        return mcp_nb.get_prompt(name, {"q": "a"}).content
    return mcp_nb.read("books://a").content


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("label, source, message", BAD, ids=[b[0] for b in BAD])
def test_a_cell_that_cannot_become_a_handler_is_refused_and_changes_nothing(shell, namespace, kind, label, source, message):
    magic, name = KINDS[kind]
    bound = register_good(shell, kind)
    before = mcp_nb.registered().to_dict("records")
    result = shell.run_cell(f"{magic}\n{source.replace('NAME', name)}")
    assert isinstance(result.error_in_exec, UsageError), result.error_in_exec
    text = str(result.error_in_exec)
    assert message.replace("NAME", name) in text and "\n" not in text, text
    assert mcp_nb.registered().to_dict("records") == before
    assert shell.user_ns[name] is bound
    assert fetch(kind, name) in ("v1 a", "user: v1 a")


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("label, source, message", BAD, ids=[b[0] for b in BAD])
def test_the_decorators_refuse_the_same_functions_with_a_type_error(namespace, kind, label, source, message):
    scope = dict(namespace)
    exec(source.replace("NAME", "lookup"), scope)
    decorate = {"tool": mcp_nb.tool(), "prompt": mcp_nb.prompt(), "resource": mcp_nb.resource("books://{q}")}[kind]
    with pytest.raises(TypeError) as caught:
        decorate(scope["lookup"])
    assert message.replace("NAME", "lookup") in str(caught.value)
    assert mcp_nb.registered().empty


@pytest.mark.filterwarnings("ignore::pydantic.warnings.ArbitraryTypeWarning")  # pydantic's word on the lock field
@pytest.mark.parametrize("kind", ["prompt", "resource"])
def test_a_prompt_or_resource_parameter_pydantic_cannot_validate_is_refused(shell, namespace, kind):
    # A tool's argument model allows any class (checked by isinstance); the SDK's validate_call
    # for prompts and resources does not, and says so with advice a notebook user cannot follow.
    magic, name = KINDS[kind]
    register_good(shell, kind)
    result = shell.run_cell(f"{magic}\ndef {name}(q: HoldsALock) -> str:\n    return 'x'\n")
    assert isinstance(result.error_in_exec, UsageError)
    assert str(result.error_in_exec).startswith(f"parameter 'q' of {name}: type HoldsALock cannot be validated by pydantic")
    assert fetch(kind, name) in ("v1 a", "user: v1 a")


def not_a_def():
    def add(a: int, b: int) -> int:
        return a + b

    class Adder:
        async def __call__(self, a: int) -> int:
            return a

    return [
        (functools.partial(add, b=1), "got functools.partial"),
        (Adder(), "got an Adder object"),
        (len, "got builtin_function_or_method"),
        (Adder, "got a class"),
        (lambda a: a, "a lambda cannot be registered"),
        ("add", "got str"),
    ]


@pytest.mark.parametrize("index", range(6))
def test_only_functions_are_registered(index):
    fn, message = not_a_def()[index]
    for decorate in (mcp_nb.tool(name="t"), mcp_nb.prompt(name="p"), mcp_nb.resource("books://x", name="r")):
        with pytest.raises(TypeError, match=message):
            decorate(fn)
    assert mcp_nb.registered().empty


def test_a_union_with_call_tool_result_is_the_sdks_refusal_in_one_line(shell):
    shell.user_ns["CallToolResult"] = __import__("mcp_types").CallToolResult
    register_good(shell, "tool")
    result = shell.run_cell("%%mcp_tool\ndef lookup(q: str) -> CallToolResult | None:\n    return None\n")
    assert isinstance(result.error_in_exec, UsageError)
    text = str(result.error_in_exec)
    assert text.startswith("lookup cannot be a tool: ") and "CallToolResult cannot be used in Union" in text
    assert fetch("tool", "lookup") == "v1 a"


GOOD = [
    "def NAME(q: str, ctx: Context) -> str:\n    return q\n",
    "def NAME(q: str, ctx: Context | None = None) -> str:\n    return q\n",
    "def NAME(q: Annotated[str, Field(description='the query')]) -> str:\n    return q\n",
    "def NAME(q: Literal['a', 'b']) -> str:\n    return q\n",
    "def NAME(q: Color) -> str:\n    return q.value\n",
    "def NAME(q) -> str:\n    return q\n",
    "async def NAME(q: str) -> str:\n    return q\n",
    # a resource template's parameters are its URI variables, so these two are for tools and prompts
    "def NAME(q: str, *, limit: int = 3) -> str:\n    return q\n",
    "def NAME(q: str, schema: str = 'shadows a BaseModel method') -> str:\n    return q\n",
]


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("source", GOOD)
def test_functions_the_sdk_handles_still_register(shell, kind, source):
    import enum
    from typing import Annotated, Literal

    from mcp.server.mcpserver import Context
    from pydantic import Field

    shell.user_ns.update(
        Context=Context, Annotated=Annotated, Field=Field, Literal=Literal, Color=enum.Enum("Color", {"a": "a", "b": "b"})
    )
    if kind == "resource" and source in GOOD[-2:]:
        magic = "%%mcp_resource books://{q}{?limit,schema}"
        source = source.replace("limit: int = 3", "limit: int = 3, schema: str = ''")
        source = source.replace("schema: str = 'shadows a BaseModel method'", "limit: int = 3, schema: str = ''")
    else:
        magic = KINDS[kind][0]
    result = shell.run_cell(f"{magic}\n{source.replace('NAME', 'lookup')}")
    assert result.success, result.error_in_exec
    assert fetch(kind, "lookup") in ("a", "user: a")


def test_model_dataclass_and_typeddict_parameters_register_for_tools():
    from dataclasses import dataclass

    from pydantic import BaseModel
    from typing_extensions import TypedDict

    class Book(BaseModel):
        title: str

    @dataclass
    class Shelf:
        name: str

    class Query(TypedDict):
        text: str

    @mcp_nb.tool()
    def shelve(book: Book, shelf: Shelf, query: Query, tags: set[str] | None = None) -> str:
        return f"{book.title} on {shelf.name} for {query['text']}"

    o = mcp_nb.call("shelve", {"book": {"title": "Dune"}, "shelf": {"name": "SF"}, "query": {"text": "q"}})
    assert o.content == "Dune on SF for q"


def test_a_decorated_function_that_keeps_its_signature_registers():
    @mcp_nb.tool()
    @functools.lru_cache
    def square(x: int) -> int:
        return x * x

    assert mcp_nb.call("square", {"x": 3}).content == "9"


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="pydantic reads typing.TypedDict from Python 3.12 on")
def test_typing_typeddict_before_python_3_12_is_refused_with_pydantics_advice(shell):
    from typing import TypedDict

    class Query(TypedDict):
        text: str

    shell.user_ns["Query"] = Query
    register_good(shell, "tool")
    result = shell.run_cell("%%mcp_tool\ndef lookup(q: Query) -> str:\n    return 'x'\n")
    assert isinstance(result.error_in_exec, UsageError)
    text = str(result.error_in_exec)
    assert text.startswith("parameter 'q' of lookup: type Query cannot be described in JSON Schema")
    assert "typing_extensions.TypedDict" in text and "\n" not in text
    assert fetch("tool", "lookup") == "v1 a"


def test_a_cell_compiles_as_any_cell_does_without_mcp_nbs_own_future_imports(shell):
    # mcp_nb's modules use `from __future__ import annotations`; the cell must not inherit it,
    # or every annotation turns into a string and a forward reference into a string of a string.
    shell.run_cell("def plain(q: int) -> str:\n    return str(q)\n")
    shell.run_cell("%%mcp_tool\ndef lookup(q: int) -> str:\n    return str(q)\n")
    assert shell.user_ns["lookup"].__annotations__ == shell.user_ns["plain"].__annotations__ == {"q": int, "return": str}
    # The user's own future imports still apply, as in any later cell.
    shell.run_cell("from __future__ import annotations")
    try:
        shell.run_cell("%%mcp_tool\ndef lookup(q: int) -> str:\n    return str(q)\n")
        assert shell.user_ns["lookup"].__annotations__ == {"q": "int", "return": "str"}
        assert mcp_nb.call("lookup", {"q": 2}).content == "2"
    finally:
        shell.compile.flags &= ~__import__("__future__").annotations.compiler_flag
    shell.user_ns.pop("plain", None)
