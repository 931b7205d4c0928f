"""Cells to tools: replacement on re-run, the bad cells, cards, listing and removal."""

import asyncio
import threading

import pytest
from IPython.core.error import UsageError
from mcp import Client

import mcp_nb


def run(shell, source):
    result = shell.run_cell(source)
    return result


def test_cell_runs_in_user_namespace_and_function_stays_callable(shell):
    shell.user_ns["CATALOG"] = {"Dune": "Frank Herbert"}
    result = run(
        shell,
        "%%mcp_tool --read-only --idempotent --title 'Author lookup'\ndef get_author(title: str) -> str:\n    '''Look up an author.'''\n    return CATALOG[title]\n",
    )
    assert result.success
    card = result.result
    assert (card.kind, card.name, card.title, card.description) == ("tool", "get_author", "Author lookup", "Look up an author.")
    assert card.annotations == {"readOnlyHint": True, "idempotentHint": True}
    assert card.input_schema["properties"]["title"]["type"] == "string"
    assert shell.user_ns["get_author"]("Dune") == "Frank Herbert"
    assert mcp_nb.call("get_author", {"title": "Dune"}).content == "Frank Herbert"
    tools = asyncio.run(mcp_nb.server().list_tools())
    (tool,) = [t for t in tools if t.name == "get_author"]
    assert tool.annotations.read_only_hint is True and tool.annotations.idempotent_hint is True
    assert tool.annotations.destructive_hint is None and tool.title == "Author lookup"


def test_options_override_name_and_description(shell):
    result = run(
        shell,
        "%%mcp_tool --name lookup --description 'Find it.' --destructive --open-world\ndef f(x: int) -> int:\n    return x\n",
    )
    card = result.result
    assert (card.name, card.description) == ("lookup", "Find it.")
    assert card.annotations == {"destructiveHint": True, "openWorldHint": True}
    assert "lookup" in repr(card) and "destructiveHint" in card._repr_html_()


def test_rerun_replaces_and_a_connected_client_sees_the_new_schema(shell):
    run(shell, "%%mcp_tool\ndef greet(name: str) -> str:\n    return 'v1 ' + name\n")
    assert mcp_nb.call("greet", {"name": "a"}).content == "v1 a"  # the engine's client is now connected
    second = run(shell, "%%mcp_tool\ndef greet(name: str, times: int) -> str:\n    return 'v2 ' + name * times\n").result
    assert second.replaced
    o = mcp_nb.call("greet", {"name": "a", "times": 2})
    assert (o.outcome, o.content) == ("result", "v2 aa")
    assert mcp_nb.call("greet", {"name": "a"}).cause == "invalid_arguments"  # the old schema is gone

    async def listed_schema():
        async with Client(mcp_nb.server(), cache=None) as client:
            await client.call_tool("greet", {"name": "b", "times": 1})
            run(shell, "%%mcp_tool\ndef greet(who: str) -> str:\n    return 'v3 ' + who\n")
            listing = await client.list_tools()
            result = await client.call_tool("greet", {"who": "c"})
            return [t.input_schema for t in listing.tools if t.name == "greet"][0], result

    schema, result = asyncio.run(listed_schema())
    assert list(schema["properties"]) == ["who"]
    assert result.content[0].text == "v3 c"


def test_rerun_replaces_resources_and_prompts(shell):
    run(shell, "%%mcp_resource books://catalog\ndef catalog() -> str:\n    return 'v1'\n")
    run(shell, "%%mcp_resource books://catalog\ndef catalog() -> str:\n    return 'v2'\n")
    assert mcp_nb.read("books://catalog").content == "v2"
    run(shell, "%%mcp_resource books://{title}\ndef book(title: str) -> str:\n    return 'v1 ' + title\n")
    run(shell, "%%mcp_resource books://{title}\ndef book(title: str) -> str:\n    return 'v2 ' + title\n")
    assert mcp_nb.read("books://x").content == "v2 x"
    run(shell, "%%mcp_prompt\ndef ask(q: str) -> str:\n    return 'v1 ' + q\n")
    run(shell, "%%mcp_prompt --name ask\ndef ask2(q: str) -> str:\n    return 'v2 ' + q\n")
    assert mcp_nb.get_prompt("ask", {"q": "?"}).content == "user: v2 ?"


def test_async_functions_register(shell):
    card = run(shell, "%%mcp_tool\nasync def later(x: int) -> int:\n    return x + 1\n").result
    assert card.is_async
    assert mcp_nb.call("later", {"x": 1}).content == "2"


BAD_CELLS = [
    ("mcp_tool", "", "def broken(:\n    pass\n", "syntax error in the cell, line 1"),
    ("mcp_tool", "", "x = 1\n", "the cell defines no function"),
    ("mcp_tool", "", "def a():\n    pass\ndef b():\n    pass\n", "the cell defines 2 functions (a, b)"),
    ("mcp_tool", "", "f = lambda x: x\n", "a lambda is not enough"),
    ("mcp_tool", "", "class Tool:\n    pass\n", "a class is not enough"),
    ("mcp_tool", "--name 'bad name!'", "def good():\n    pass\n", "invalid tool name 'bad name!'"),
    ("mcp_tool", "--nme x", "def good():\n    pass\n", "unrecognized arguments: --nme x"),
    ("mcp_tool", "--read-only=yes", "def good():\n    pass\n", "ignored explicit argument"),
    (
        "mcp_resource",
        "books://{title",
        "def book(title: str) -> str:\n    return title\n",
        "invalid URI template 'books://{title'",
    ),
    ("mcp_resource", "no-scheme", "def book() -> str:\n    return ''\n", "invalid resource URI 'no-scheme'"),
    ("mcp_resource", "books://{title}", "def book(name: str) -> str:\n    return name\n", "Mismatch between URI parameters"),
    ("mcp_resource", "", "def book() -> str:\n    return ''\n", "the following arguments are required: uri"),
    ("mcp_prompt", "--name ''", "def p() -> str:\n    return ''\n", "invalid tool name ''"),
]


@pytest.mark.parametrize("magic, line, body, message", BAD_CELLS)
def test_bad_cells_give_one_line_usage_error_and_change_nothing(shell, magic, line, body, message):
    # A good version first: it must stay registered, callable, and bound in the namespace.
    run(shell, "%%mcp_tool\ndef good() -> str:\n    return 'still here'\n")
    run(shell, "%%mcp_resource books://{title}\ndef book(title: str) -> str:\n    return 'kept ' + title\n")
    before = mcp_nb.registered().to_dict("records")
    bound = shell.user_ns["good"], shell.user_ns["book"]
    result = run(shell, f"%%{magic} {line}\n{body}")
    assert isinstance(result.error_in_exec, UsageError)
    text = str(result.error_in_exec)
    assert message in text and "\n" not in text
    assert mcp_nb.registered().to_dict("records") == before
    assert (shell.user_ns["good"], shell.user_ns["book"]) == bound
    assert mcp_nb.call("good").content == "still here"
    assert mcp_nb.read("books://x").content == "kept x"


def test_quiet_cells_register_and_show_nothing(shell):
    # A dashboard (Voila) shows whatever a cell displays: --quiet registers without the card.
    shell.user_ns["CATALOG"] = {"Dune": "Frank Herbert"}
    cells = [
        "%%mcp_tool --quiet --read-only\ndef get_author(title: str) -> str:\n    return CATALOG[title]\n",
        "%%mcp_resource books://{title} --quiet\ndef book(title: str) -> str:\n    return 'the book ' + title\n",
        "%%mcp_prompt --quiet\ndef review(title: str) -> str:\n    return 'Review ' + title\n",
    ]
    for cell in cells:
        result = run(shell, cell)
        assert result.success and result.result is None, cell
    assert mcp_nb.registered()[["kind", "name"]].values.tolist() == [
        ["tool", "get_author"],
        ["resource", "book"],
        ["prompt", "review"],
    ]
    assert mcp_nb.call("get_author", {"title": "Dune"}).content == "Frank Herbert"
    assert mcp_nb.read("books://Dune").content == "the book Dune"
    assert shell.user_ns["get_author"]("Dune") == "Frank Herbert"
    # re-run quietly: replaced all the same; the card is still there without the flag
    run(shell, "%%mcp_tool --quiet\ndef get_author(title: str) -> str:\n    return 'replaced'\n")
    assert mcp_nb.call("get_author", {"title": "Dune"}).content == "replaced"
    assert run(shell, "%%mcp_tool\ndef get_author(title: str) -> str:\n    return 'shown'\n").result.replaced
    # a bad cell is refused as loudly as ever
    bad = run(shell, "%%mcp_tool --quiet\nx = 1\n")
    assert isinstance(bad.error_in_exec, UsageError)
    assert mcp_nb.call("get_author", {"title": "Dune"}).content == "shown"


def test_error_inside_the_cell_code_is_a_normal_error_and_registers_nothing(shell):
    result = run(shell, "%%mcp_tool\ndef broken(x: int = undefined_name) -> int:\n    return x\n")
    assert isinstance(result.error_in_exec, NameError)
    assert "broken" not in shell.user_ns
    assert mcp_nb.registered().empty


def test_help_lists_every_option(shell, capsys):
    shell.run_cell("%%mcp_tool?")
    shell.run_line_magic("pinfo", "%%mcp_tool")
    out = capsys.readouterr().out
    for option in [
        "--name",
        "--title",
        "--description",
        "--read-only",
        "--idempotent",
        "--destructive",
        "--open-world",
        "--quiet",
    ]:
        assert option in out


def test_list_and_remove(shell, capsys):
    run(shell, "%%mcp_tool\ndef a(x: int) -> int:\n    return x\n")
    run(shell, "%%mcp_resource books://{title}\ndef b(title: str) -> str:\n    return title\n")
    run(shell, "%%mcp_prompt\ndef c(q: str) -> str:\n    return q\n")
    frame = shell.run_line_magic("mcp_list", "")
    assert frame[["kind", "name"]].values.tolist() == [["tool", "a"], ["resource", "b"], ["prompt", "c"]]
    assert frame["uri"].fillna("").tolist() == ["", "books://{title}", ""]
    shell.run_line_magic("mcp_remove", "a")
    assert "removed tool a" in capsys.readouterr().out
    assert mcp_nb.call("a", {"x": 1}).cause == "unknown_tool"
    shell.run_line_magic("mcp_remove", "books://{title}")
    assert mcp_nb.read("books://x").cause == "not_found"
    with pytest.raises(UsageError, match="nothing named 'zzz' is registered"):
        shell.run_line_magic("mcp_remove", "zzz")
    assert mcp_nb.registered()["name"].tolist() == ["c"]


def test_python_decorators_work_without_ipython():
    @mcp_nb.tool(read_only=True)
    def add(a: int, b: int) -> int:
        return a + b

    assert add(1, 2) == 3  # the function is returned unchanged
    assert mcp_nb.call("add", {"a": 1, "b": 2}).structured_content == {"result": 3}
    with pytest.raises(TypeError, match="lambda"):
        mcp_nb.tool()(lambda: 1)


@pytest.mark.parametrize("kind", ["static resource", "template", "tool", "prompt"])
def test_re_registering_is_atomic_for_concurrent_readers(kind):
    # Measured before: 2,808 of 3,000 reads of a static resource came back not_found while
    # its cell was re-run in a loop. No reader may ever find a registered name missing.
    def register(version: int) -> None:
        if kind == "static resource":

            def catalog() -> str:
                return f"v{version}"

            mcp_nb.resource("books://catalog")(catalog)
        elif kind == "template":

            def book(title: str) -> str:
                return f"{title} v{version}"

            mcp_nb.resource("books://{title}")(book)
        elif kind == "tool":

            def lookup() -> str:
                return f"v{version}"

            mcp_nb.tool("lookup")(lookup)
        else:

            def review() -> str:
                return f"v{version}"

            mcp_nb.prompt("review")(review)

    def read():
        if kind == "static resource":
            return mcp_nb.read("books://catalog")
        if kind == "template":
            return mcp_nb.read("books://Dune")
        if kind == "tool":
            return mcp_nb.call("lookup")
        return mcp_nb.get_prompt("review")

    register(0)
    stop = threading.Event()

    def churn():
        version = 1
        while not stop.is_set():
            register(version)
            version += 1

    writer = threading.Thread(target=churn)
    writer.start()
    try:
        outcomes = [read() for _ in range(60)]
    finally:
        stop.set()
        writer.join(10)
    assert [o.cause for o in outcomes if not o.ok] == []
    assert len({o.content for o in outcomes}) > 1  # the registrations really changed under the reads
