"""The house: the package's layout keeps the rules docs/design.md states.

The layers themselves (and the absence of import circles) are import-linter contracts in
pyproject.toml, checked here and by `lint-imports` in .ci/run; these tests hold what a
contract cannot say.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import pkgutil
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import mcp_nb

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "mcp_nb"
SOURCES = sorted(PACKAGE.rglob("*.py"))
# An import inside a function is kept only to load a heavy dependency on first use (the libraries
# in mcp_nb/libraries.py's table, or a module of mcp_nb's that brings one).
MOST_LATE_IMPORTS = 10


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def _module(path: Path) -> str:
    """The dotted name of the module at `path` (a package's `__init__.py`: the package)."""
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def test_the_layers_and_the_absence_of_circles_hold():
    linter = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    assert linter, "import-linter is a test dependency (pip install -e '.[test]')"
    run = subprocess.run([linter, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    contracts = (ROOT / "pyproject.toml").read_text().count("[[tool.importlinter.contracts]]")
    assert f"{contracts} kept, 0 broken" in run.stdout


def test_at_most_eleven_modules_stand_directly_under_the_package():
    # Ten, and numbers.py: the one check of what a number may be, a leaf every layer asks.
    modules = [p.name for p in PACKAGE.glob("*.py")]
    assert len(modules) <= 11, modules


def test_the_package_face_only_names_the_api():
    functions = [
        node.name for node in _tree(PACKAGE / "__init__.py").body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    assert functions == [], functions  # not even IPython's hooks: they live with the magics they load
    statements = [node for node in _tree(PACKAGE / "__init__.py").body if not isinstance(node, (ast.Import, ast.ImportFrom))]
    kinds = [type(node).__name__ for node in statements]
    assert kinds == ["Expr", "Assign"], kinds  # the docstring, and the names lazy_loader reads from the stub
    # the stub names each public name once, each from the module it lives in, and that is __all__
    stub = _tree(PACKAGE / "__init__.pyi")
    named = [alias.name for node in stub.body if isinstance(node, ast.ImportFrom) for alias in node.names]
    # `name as name`: what tells a type checker that a stub re-exports the name (PEP 484)
    assert all(alias.asname == alias.name for node in stub.body if isinstance(node, ast.ImportFrom) for alias in node.names)
    assert sorted(named) == sorted(set(named)) == sorted(mcp_nb.__all__) == sorted(dir(mcp_nb))
    for node in (n for n in stub.body if isinstance(n, ast.ImportFrom)):
        module = importlib.import_module(f"mcp_nb.{node.module}")
        for alias in node.names:
            assert getattr(mcp_nb, alias.name) is getattr(module, alias.name), alias.name
    assert {"call", "Outcome", "History", "load_ipython_extension"} <= set(mcp_nb.__all__)


def test_import_mcp_nb_alone_imports_neither_the_sdk_nor_pandas():
    code = "import sys, mcp_nb; print(sorted(m for m in ('mcp', 'pandas', 'IPython', 'mcp_nb.api') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.split() == ["[]"], done.stdout + done.stderr
    with pytest.raises(AttributeError, match="nothing_here"):
        mcp_nb.nothing_here  # noqa: B018 - an attribute the package does not have is an AttributeError as usual


def test_a_script_that_calls_and_sweeps_loads_no_notebook_library():
    # A sweep's progress bar once imported tqdm's notebook bar to compare classes with, and with it
    # IPython and ipywidgets, in a script where tqdm.auto had chosen its text bar.
    code = """import sys, mcp_nb

@mcp_nb.tool()
def double(i: int) -> int:
    return 2 * i

frame = mcp_nb.sweep("double", {"i": [1, 2, 3]})
outcome = mcp_nb.call("double", {"i": 4})
print(len(frame), outcome.outcome, *sorted(m for m in ("IPython", "ipykernel", "ipywidgets", "tqdm.notebook") if m in sys.modules))
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["3", "result"], done.stdout


def test_no_public_name_shadows_a_submodule():
    submodules = {info.name for info in pkgutil.iter_modules(mcp_nb.__path__)}
    public = set(mcp_nb.__all__) | {name for name in vars(mcp_nb) if not name.startswith("_")}
    shadowing = sorted(name for name in public & submodules if getattr(mcp_nb, name) is not sys.modules.get(f"mcp_nb.{name}"))
    assert not shadowing, shadowing
    # The module of the same name as a public function used to be shadowed by it.
    assert callable(mcp_nb.call) and callable(mcp_nb.history) and callable(mcp_nb.engine)


def _imports_by_name(path: Path) -> list[int]:
    """The lines of `path` that import a module named by a string (importlib.import_module, __import__)."""
    found = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Call):
            called = node.func
            name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
            if name in ("import_module", "__import__"):
                found.append(node.lineno)
    return found


def test_few_places_import_late():
    # Every place where an import waits for a function to run, of a library or of mcp_nb's own
    # modules, written as a statement or by a module's name: libraries.py's table is one of them.
    places = [f"{path.relative_to(ROOT)}:{line}" for path in SOURCES for line, _ in _function_imports(path)]
    places += [f"{path.relative_to(ROOT)}:{line}" for path in SOURCES for line in _imports_by_name(path)]
    assert len(places) <= MOST_LATE_IMPORTS, places
    # by name: the commands' dispatcher (python -m mcp_nb NAME) and the libraries' table, nowhere else
    by_name = sorted(path.relative_to(ROOT).as_posix() for path in SOURCES if _imports_by_name(path))
    assert by_name == ["mcp_nb/commands/__init__.py", "mcp_nb/libraries.py"], by_name


def _library_uses() -> dict[str, set[str]]:
    """Each name read from mcp_nb.libraries (`lib.pandas`), and the modules that read it."""
    uses: dict[str, set[str]] = {}
    for path in SOURCES:
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "lib":
                uses.setdefault(node.attr, set()).add(_module(path))
    return uses


def test_the_libraries_table_loads_nothing_until_read_and_each_entry_is_used():
    from mcp_nb import libraries

    loaded = _loaded_by("import mcp_nb.libraries")
    assert not {path for path in libraries.DEFERRED.values() if path in loaded}
    uses = _library_uses()
    assert set(uses) == set(libraries.DEFERRED), set(uses) ^ set(libraries.DEFERRED)
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        libraries.nothing_here  # noqa: B018


def test_each_library_of_the_table_puts_off_a_load_its_readers_would_not_make():
    """As for an import inside a function: what `import mcp_nb.api` loads anyway (or, for the
    modules of the commands that need no MCP, what those commands load) has no place in the table."""
    from mcp_nb import libraries

    needless = []
    for name, readers in _library_uses().items():
        needless += [f"{reader}: lib.{name}" for reader in readers if libraries.DEFERRED[name] in _loaded_anyway(reader)]
    assert not needless, needless


def _function_imports(path: Path) -> list[tuple[int, list[str]]]:
    """Every import written inside a function of `path`: its line and the modules it may load
    (`from package import module` loads the module, `from module import name` the module)."""
    found: dict[int, list[str]] = {}
    for node in ast.walk(_tree(path)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom):
                    module = _absolute(path, inner)
                    found[inner.lineno] = [
                        module,
                        *(f"{module}.{alias.name}" for alias in inner.names if _is_module(f"{module}.{alias.name}")),
                    ]
                elif isinstance(inner, ast.Import):
                    found[inner.lineno] = [alias.name for alias in inner.names]
    return sorted(found.items())


def _absolute(path: Path, node: ast.ImportFrom) -> str:
    """The module a `from ... import` names, a relative one resolved against `path`'s package."""
    if not node.level:
        return node.module or ""
    package = _module(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a parent that is no package: `name` is an attribute
        return False


def _loaded_by(code: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", f"import sys\n{code}\nprint(*sys.modules)"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


# What the commands that need no MCP (`diff`, `student-version`, `nbval-sanitize`) import.
LIGHT_COMMANDS = "import mcp_nb.commands.diff, mcp_nb.commands.student, mcp_nb.notebook.nbval"


@functools.cache
def _loads() -> tuple[set[str], set[str]]:
    """What `import mcp_nb.api` loads, and what the commands that need no MCP load."""
    return _loaded_by("import mcp_nb.api"), _loaded_by(LIGHT_COMMANDS)


def _loaded_anyway(module: str) -> set[str]:
    """What is loaded wherever `module` runs: the light commands' set for one of their modules
    (so that they keep not loading the SDK), the API's for any other."""
    api, light = _loads()
    return light if module in light else api


def test_every_import_inside_a_function_says_what_it_puts_off():
    # Of a library as of mcp_nb's own modules: a reader sees on the line why it is not at the top.
    silent = []
    for path in SOURCES:
        lines = path.read_text().splitlines()
        silent += [f"{path.relative_to(ROOT)}:{line}" for line, _ in _function_imports(path) if "#" not in lines[line - 1]]
    assert not silent, silent


def test_an_import_inside_a_function_defers_a_load_the_api_would_not_make():
    """A late import is worth its place only if it puts off loading something: what the API loads
    anyway (the SDK, pydantic, the standard library it already uses) is imported at the top; IPython
    is not among it (a script calls without it). The
    modules the commands that need no MCP import (`diff`, `student-version`, `nbval-sanitize`)
    measure against what those commands load, so that they keep not loading the SDK."""
    needless = []
    for path in SOURCES:
        loaded = _loaded_anyway(_module(path))
        needless += [
            f"{path.relative_to(ROOT)}:{line} {targets[0]}" for line, targets in _function_imports(path) if set(targets) <= loaded
        ]
    assert not needless, needless


def test_no_module_imports_another_modules_private_names():
    borrowed = []
    for path in SOURCES:
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mcp_nb") and node.module != "mcp_nb._version":
                borrowed += [f"{path.relative_to(ROOT)}:{node.lineno} {a.name}" for a in node.names if a.name.startswith("_")]
    assert not borrowed, borrowed


CONFLICT = re.compile(r"^(<<<<<<< |>>>>>>> |\|\|\|\|\|\|\| |=======$)", re.M)


def _text_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, timeout=60)
    if listed.returncode != 0:  # not a checkout (an unpacked sdist): every file there is the package's
        return [p for p in ROOT.rglob("*") if p.is_file() and ".venv" not in p.parts and ".peers" not in p.parts]
    return [ROOT / name for name in listed.stdout.decode().split("\0") if name]


def test_no_file_holds_a_merge_conflict_marker():
    marked = []
    for path in _text_files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue  # a binary file, or one deleted in the working tree
        if "\0" in text:
            continue
        marked += [f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}" for m in CONFLICT.finditer(text)]
    assert not marked, marked


def test_the_marker_check_finds_a_marker(tmp_path):
    # The check above must be able to fail: a file with a conflict in it is found.
    text = "one\n<<<<<<< HEAD\ntwo\n=======\nthree\n>>>>>>> branch\n"
    assert [m.group(0).strip() for m in CONFLICT.finditer(text)] == ["<<<<<<<", "=======", ">>>>>>>"]
