import pytest
from IPython.core.interactiveshell import InteractiveShell

import mcp_nb
from mcp_nb.config import DEFAULT_TIMEOUT, DEFAULT_WINDOW, settings

# The time a server has to start and answer `initialize` in the tests' own processes: the
# parallel pass keeps six workers and their pip, kernels and browser busy on two cores, where
# a Python MCP server that starts in a second on a quiet machine took over 30 s. No test is
# about this default (the tests of connect timeouts give their own); the kernels the tests
# start keep the learner's default, which the course's stored outputs show.
TESTS_CONNECT_S = 180.0

# Notebooks under tests/ are fixtures that tests run themselves (the conformance suite's tools,
# the browser's pages): pytest is not to collect them, with nbval on or off.
collect_ignore_glob = ["*.ipynb"]

# How the parallel pass of .ci/run (`pytest -n 6 --dist loadfile`) is dealt out. pytest-xdist
# hands each worker a group of tests (here: a file, or the one test named below), and a worker
# takes the next group when its own run low. The groups that start processes of their own
# (fresh venvs, kernels, a browser) take minutes; dealt last, the run would wait for the last
# of them alone. So they go first, and the many short files fill in around them. The figures
# are from fresh clones' runs (docs/performance.md); only the order matters.
LONG_FIRST = (
    # What makes something for later tests goes first: the Binder environment (a minute of pip,
    # mostly waiting on the package index), the course's fresh venv, the documentation site.
    "tests/test_binder.py::test_the_kernel_runs",
    "tests/test_documented_commands.py::",  # 1 to 3 min each: the README's first command in a fresh copy, JupyterLab started
    "tests/test_models_llama.py",  # llama.cpp's server started with a real model
    "tests/test_course_grading.py",  # nbgrader through its exchange, three students
    "tests/test_init_course.py",  # 100 to 150 s: a fresh venv with the course's wheel, JupyterLab and nbval
    "tests/test_docs.py",  # the Sphinx build (tests/docs_site.py) the browser's docs pages use too
    "tests/browser/",  # 140 s: JupyterLab, Voila and Chromium
    "tests/test_own_notebooks.py",  # 30 to 80 s each: stored by real kernels, checked by nbval
    "tests/test_course_answers.py::",  # 1 to 8 min each: a notebook in a kernel, answered many times, run all three times
    "tests/test_pytest_plugin.py",  # 10 to 30 s each: pytest in a subprocess
    "tests/test_surface_ci.py",  # 5 to 30 s each: mcp-nb snapshot and pytest in subprocesses, a notebook run in each
    "tests/test_binder.py::test_notebook_runs",  # 15 to 60 s each, once the environment exists
    "tests/test_conformance.py",  # the official suite, a Node process per scenario
    "tests/test_client_conformance.py",  # 30 s: the suite's client scenarios, a Python client process each
    "tests/test_commands.py",
)
# Groups of one test: files whose tests are each long and share nothing but what `once`
# (tests/fresh_venv.py) makes for the whole run.
ALONE = (
    "tests/test_binder.py::test_notebook_runs",
    "tests/test_own_notebooks.py::",
    "tests/test_pytest_plugin.py::",
    "tests/test_surface_ci.py::",
    "tests/test_course_answers.py::",
    "tests/test_documented_commands.py::",
)


# What `pytest -m "not slow"` leaves out, for a quick loop while working: the groups that start
# processes of their own for minutes (fresh venvs, kernels running notebooks, a browser, pytest or
# pip in subprocesses, a language model). The README's test command runs them all.
SLOW = (
    *LONG_FIRST,
    "tests/test_course_notebooks.py",
    "tests/test_history_file_kernel.py",  # kernels killed and restarted
    "tests/test_stored_notebooks.py",
    "tests/test_student_version.py",
    "tests/test_cluster.py",  # dask clusters of processes
    "tests/test_episodes_cluster.py",
)


# The tests that build a fresh machine (a venv installed from the package index, as Binder and a
# course's CI would) get longer than the run's 300 s: pip's install alone took 66 s here on a quiet
# machine and over 300 s with both cores busy. Still a bound: a hang fails in minutes.
FRESH_MACHINE = ("tests/test_binder.py::", "tests/test_init_course.py::test_the_course_")
FRESH_MACHINE_S = 900


def _group(nodeid: str) -> str:
    if nodeid.startswith(ALONE):
        return nodeid
    if nodeid.startswith("tests/browser/"):
        return "tests/browser/"  # one JupyterLab and one Chromium for the folder (its conftest)
    return nodeid.split("::", 1)[0]


def _rank(nodeid: str) -> int:
    return next((i for i, prefix in enumerate(LONG_FIRST) if nodeid.startswith(prefix)), len(LONG_FIRST))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """Every worker sorts its collection the same way: the groups of LONG_FIRST first, in its
    order; each group's tests stay together and in their own order, so a module's fixtures are
    made once."""
    first: dict[str, tuple[int, int]] = {}
    for index, item in enumerate(items):
        group = _group(item.nodeid)
        rank = _rank(item.nodeid)
        if group not in first or rank < first[group][0]:
            first[group] = (rank, first.get(group, (rank, index))[1])
    items[:] = [item for _, item in sorted(enumerate(items), key=lambda pair: (*first[_group(pair[1].nodeid)], pair[0]))]
    for item in items:
        if item.nodeid.startswith(SLOW):
            item.add_marker(pytest.mark.slow)
        if item.nodeid.startswith(FRESH_MACHINE):
            item.add_marker(pytest.mark.timeout(FRESH_MACHINE_S))


def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile`, with the groups above in the collection's order (not by size)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling  # only the controller of a parallel run needs it

    class LongFirst(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _group(nodeid)

    config.option.loadscopereorder = False  # keep the order of pytest_collection_modifyitems
    return LongFirst(config, log)


@pytest.fixture(autouse=True)
def fresh():
    """Every test starts with an empty server and history, and the default settings."""
    settings.history_file = None  # whatever MCP_NB_HISTORY_FILE says where the tests run
    settings.history_window = DEFAULT_WINDOW
    mcp_nb.reset()
    settings.timeout = DEFAULT_TIMEOUT
    settings.connect_timeout = TESTS_CONNECT_S
    settings.show_server_logs = False
    settings.stable_output = False  # whatever MCP_NB_STABLE_OUTPUT says where the tests run
    settings.elicit = None
    yield
    settings.history_file = None
    settings.history_window = DEFAULT_WINDOW
    mcp_nb.reset()
    settings.timeout = DEFAULT_TIMEOUT
    settings.connect_timeout = TESTS_CONNECT_S
    settings.show_server_logs = False
    settings.stable_output = False  # whatever MCP_NB_STABLE_OUTPUT says where the tests run
    settings.elicit = None


@pytest.fixture(scope="session")
def _shell():
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "mcp_nb")
    return shell


@pytest.fixture
def shell(_shell):
    return _shell


def cell(shell, magic: str, line: str, body: str):
    """Run a cell magic the way a notebook does, returning the ExecutionResult."""
    return shell.run_cell(f"%%{magic} {line}\n{body}")
