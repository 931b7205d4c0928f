"""Nothing heavy is imported on mcp_nb's loop, so no call's deadline pays for mcp_nb's own start-up.

Each test runs in a fresh interpreter, where nothing is imported yet (in this test process the
heavy modules are long loaded, and the first-time cost could not be seen). A call's deadline
measures the server: the first structured answer of an outside server (which makes the SDK
check it with jsonschema), or the first nested `await mcp_nb.acall` of a handler (whose cell
form would import ipywidgets), must not be held by an import on the loop every call shares.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

SHELF = Path(__file__).parent / "servers" / "shelf.py"


def fresh(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )


def test_the_first_structured_answer_of_an_outside_server_is_a_result_under_a_tight_deadline():
    done = fresh(f"""
        import sys, mcp_nb
        mcp_nb.connect("shelf", [sys.executable, {str(SHELF)!r}], timeout=60)
        loaded_before = "jsonschema" in sys.modules
        o = mcp_nb.call("books", server="shelf", timeout=0.5)
        print(loaded_before, o.outcome, o.cause, o.duration_ms < 500)
    """)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "result", "ok", "True"]  # imported by connect, not by the call


def test_a_first_nested_acall_imports_no_widgets_on_the_loop():
    done = fresh("""
        import sys, warnings, mcp_nb
        warnings.simplefilter("error")  # a held-loop warning fails the run

        @mcp_nb.tool()
        def inner(x: int) -> int:
            return 2 * x

        @mcp_nb.tool()
        async def outer(x: int) -> int:
            return (await mcp_nb.acall("inner", {"x": x})).structured_content["result"]

        o = mcp_nb.call("outer", {"x": 2}, timeout=0.5)
        print(o.outcome, o.content, "ipywidgets" in sys.modules, [r.held for r in [o.trace] if r is not None])
    """)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[:3] == ["result", "4", "False"], done.stdout + done.stderr[-1500:]
