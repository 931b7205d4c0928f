"""A cell's source to the one function it defines, checked before anything runs."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any

from mcp_nb.mistakes import BadValue


class CellError(BadValue):
    """The cell cannot be registered; the message is one line for the user."""


def function_name(source: str) -> str:
    """The name of the single top-level `def` / `async def` in `source`."""
    try:
        tree = ast.parse(source)
    except SyntaxError as err:
        where = f"line {err.lineno}: " if err.lineno else ""
        raise CellError(f"syntax error in the cell, {where}{err.msg}") from None
    functions = [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if len(functions) == 1:
        return functions[0].name
    if functions:
        names = ", ".join(f.name for f in functions)
        raise CellError(f"the cell defines {len(functions)} functions ({names}); it must define exactly one")
    others = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            others.append("a class")
        elif isinstance(node, (ast.Assign, ast.Expr)) and isinstance(getattr(node, "value", None), ast.Lambda):
            others.append("a lambda")
    hint = f" ({' and '.join(sorted(set(others)))} is not enough)" if others else ""
    raise CellError(f"the cell defines no function{hint}; write one top-level `def` or `async def`")


@contextmanager
def restoring(namespace: MutableMapping[str, Any], name: str) -> Iterator[None]:
    """Put `namespace[name]` back as it was if the block fails, so a bad cell changes nothing."""
    missing = object()
    before = namespace.get(name, missing)
    try:
        yield
    except BaseException:
        if before is missing:
            namespace.pop(name, None)
        else:
            namespace[name] = before
        raise


def defined_function(namespace: MutableMapping[str, Any], name: str) -> Callable[..., Any]:
    fn = namespace.get(name)
    if not callable(fn):
        raise CellError(f"after running the cell, {name!r} is not a function")
    return fn
