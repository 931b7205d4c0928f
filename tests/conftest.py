import pytest
from IPython.core.interactiveshell import InteractiveShell

import mcp_nb
from mcp_nb.config import DEFAULT_TIMEOUT, settings

# Notebooks under tests/ are fixtures that tests run themselves (the conformance suite's tools,
# the browser's pages): pytest is not to collect them, with nbval on or off.
collect_ignore_glob = ["*.ipynb"]


@pytest.fixture(autouse=True)
def fresh():
    """Every test starts with an empty server and history, and the default settings."""
    mcp_nb.reset()
    settings.timeout = DEFAULT_TIMEOUT
    settings.show_server_logs = False
    settings.stable_output = False  # whatever MCP_NB_STABLE_OUTPUT says where the tests run
    settings.elicit = None
    yield
    mcp_nb.reset()
    settings.timeout = DEFAULT_TIMEOUT
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
