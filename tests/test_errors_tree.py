"""One exception root: everything mcp_nb raises on purpose descends from `McpNbError`, the tree
drawn in `mcp_nb/mistakes.py` is the tree the code has, every public exception name keeps its
built-in class, and a magic decides "one line or a traceback" by that root alone."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
from IPython.core.error import UsageError

import mcp_nb
import mcp_nb.api
from mcp_nb import mistakes
from mcp_nb.mistakes import Failure, McpNbError, Mistake

# What stands for a tool's own behaviour, recorded on its call as the tool's (the docstring says why).
THE_TOOLS_OWN = {"InjectedCrash", "HandlerExit", "NotAResult"}


def exceptions_of_mcp_nb() -> dict[str, type[BaseException]]:
    """Every exception class a module of mcp_nb defines, warnings aside, by name."""
    found = {}
    for module in pkgutil.walk_packages(mcp_nb.__path__, "mcp_nb."):
        if module.name.endswith("__main__"):
            continue
        for name, value in vars(importlib.import_module(module.name)).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and not issubclass(value, Warning)
                and value.__module__ == module.name
            ):
                assert found.get(name, value) is value, f"two exceptions named {name}"
                found[name] = value
    return found


def test_every_exception_mcp_nb_defines_descends_from_the_one_root():
    found = exceptions_of_mcp_nb()
    assert len(found) >= 25, sorted(found)  # the walk sees the package
    outside = sorted(name for name, cls in found.items() if not issubclass(cls, McpNbError))
    assert outside == sorted(THE_TOOLS_OWN), outside
    assert {cls.__name__ for cls in (Mistake, Failure)} <= set(found)
    for name, cls in found.items():
        if issubclass(cls, McpNbError) and cls not in (McpNbError, Mistake, Failure):
            assert issubclass(cls, (Mistake, Failure)) or name == "Stopped", f"{name} is under the root but in no branch"


def test_the_tree_in_the_docstring_names_every_exception():
    drawn = mistakes.__doc__
    for name in exceptions_of_mcp_nb():
        assert name in drawn, f"{name} is not drawn in mcp_nb/mistakes.py"


@pytest.mark.parametrize(
    "name, builtin",
    [("ConnectError", RuntimeError), ("HistoryFileError", ValueError), ("BreakingChanges", AssertionError)],
)
def test_every_public_exception_keeps_its_name_and_its_builtin_class(name, builtin):
    cls = getattr(mcp_nb, name)
    assert cls.__name__ == name and issubclass(cls, (builtin, McpNbError))
    assert issubclass(cls, builtin) and issubclass(cls, McpNbError)


def test_a_forms_invalid_is_a_mistake_and_still_a_value_error():
    from mcp_nb.widgets import Invalid

    assert issubclass(Invalid, Mistake) and issubclass(Invalid, ValueError)


def raising(err: BaseException):
    def raise_it(*args, **kwargs):
        raise err

    return raise_it


@pytest.mark.parametrize(
    "module, name, args",
    [
        ("mcp_nb.calling.connections", "ConnectionLost", ("the server went away",)),
        ("mcp_nb.calling.oauth", "AuthorizationPending", ("nobody approved within 1 s",)),
        ("mcp_nb.sdk_compat", "SDKMismatch", ("mcp_nb does not fit the installed mcp",)),
        ("mcp_nb.serving.notebook", "NotebookError", ("no notebook at x.ipynb",)),
        ("mcp_nb.batch.core", "Stopped", ("stopped",)),
    ],
)
def test_a_magic_says_anything_under_the_root_in_one_line(shell, monkeypatch, module, name, args):
    err = getattr(importlib.import_module(module), name)(*args)
    monkeypatch.setattr(mcp_nb.api, "servers", raising(err))
    result = shell.run_cell("%mcp_servers")
    assert isinstance(result.error_in_exec, UsageError) and str(result.error_in_exec) == args[0]


def test_a_magic_shows_the_traceback_of_anything_else(shell, monkeypatch):
    monkeypatch.setattr(mcp_nb.api, "servers", raising(RuntimeError("a bug inside mcp_nb")))
    result = shell.run_cell("%mcp_servers")
    assert type(result.error_in_exec) is RuntimeError
