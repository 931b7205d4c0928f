"""A real JupyterLab, a Voila server and the docs site, read by Debian's Chromium through Playwright.

The browser is the system's Chromium (`/usr/bin/chromium`, or MCP_NB_CHROMIUM):
Playwright's own browser download cannot run on these machines. `.ci/run` installs it
where it is missing. Without it (or without Voila, or Sphinx) a developer's run skips
these tests; CI (`CI=true`) fails instead, so a green CI always means they ran.

One JupyterLab serves every test of the session (its theme is switched in the page, as a
person would), each server listens on 127.0.0.1 with a token of its own, and the docs
site is built once and read from its files.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from browser_pages import STORED
from lab_server import CHROMIUM, CHROMIUM_ARGS, DidNotStart, Server, free_port, jupyterlab, local_only, stop, wait_until_up

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
ARTIFACTS = ROOT / "artifacts" / "browser"  # git-ignored: screenshots of every step

# The notebook is a fixture for the browser, not a notebook for nbval to execute.
collect_ignore_glob = ["*.ipynb"]


def _unavailable(why: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"browser test cannot run in CI: {why}", pytrace=False)
    pytest.skip(why)


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """JupyterLab serving a copy of the demo notebooks (Lab autosaves outputs into what it
    serves) and of a stored notebook, which it opens untrusted: its data folder, where the
    signatures of trusted notebooks are kept, starts empty."""
    base = tmp_path_factory.mktemp("lab")
    served = base / "notebooks"
    served.mkdir()
    for demo in ("panel_demo.ipynb", "looks_demo.ipynb", "question_demo.ipynb"):
        shutil.copy(HERE / demo, served / demo)
    # The same panel in a kernel of its own, for the test that keeps that kernel busy.
    shutil.copy(HERE / "panel_demo.ipynb", served / "panel_busy.ipynb")
    shutil.copy(STORED, served / STORED.name)
    # question_demo.ipynb finds the pinned peers through tests/peers.py
    try:
        with jupyterlab(base, served, {"MCP_NB_TESTS": str(HERE.parent)}) as server:
            yield server
    except DidNotStart as err:
        pytest.fail(str(err), pytrace=False)


@pytest.fixture(scope="session")
def voila(tmp_path_factory):
    """Voila serving the dashboard demo: each page it renders starts a kernel of its own."""
    try:
        import voila  # noqa: F401
    except ImportError:
        _unavailable("Voila is not installed (pip install -e '.[test]')")
    base = tmp_path_factory.mktemp("voila")
    served = base / "notebooks"
    served.mkdir()
    shutil.copy(HERE / "voila_demo.ipynb", served / "voila_demo.ipynb")
    port, token = free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(base / "config"), "JUPYTER_RUNTIME_DIR": str(base / "runtime")}
    log_path = base / "voila.log"
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "voila",
                "--no-browser",
                f"--port={port}",
                "--Voila.ip=127.0.0.1",
                "--Voila.port_retries=0",
                f"--token={token}",
                str(served),
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=served,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            # The tree page answers without starting a kernel (a notebook's page starts one).
            try:
                wait_until_up(server, f"{url}/?token={token}", log_path, "Voila")
            except DidNotStart as err:
                pytest.fail(str(err), pytrace=False)
            yield Server(url, token)
        finally:
            stop(server)


@pytest.fixture(scope="session")
def docs_site(tmp_path_factory) -> Path:
    """The documentation site, built once for the run, as tests/test_docs.py checks it."""
    try:
        import furo  # noqa: F401
        import myst_nb  # noqa: F401
        import sphinx  # noqa: F401
    except ImportError:
        _unavailable("the documentation dependencies are not installed (pip install -e '.[docs]')")
    import docs_site as site  # tests/docs_site.py

    return site.built(tmp_path_factory)


# Module-scoped, not session: Playwright's sync API keeps an event loop running in this
# thread while it is open, which would break every later test that calls asyncio.run().
@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        _unavailable(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed (pip install -e '.[test]')")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    # The test's outcome, for the page fixture: a failed test leaves its screen behind.
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture
def page(browser, request):
    context = browser.new_context(viewport={"width": 1400, "height": 1800})
    page = context.new_page()
    console: list[str] = []
    page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))

    # Nothing leaves the machine, as on a reader's machine offline: the docs site's pages are read from their files.
    page.route("**/*", local_only)
    page.set_default_timeout(30_000)
    try:
        yield page
    finally:
        report = getattr(request.node, "report_call", None)
        if report is not None and report.failed:
            # What was on screen when it failed, and what the page logged (widget messages,
            # front-end errors): CI keeps artifacts/, so a failure far away can be read here.
            name = request.node.name.replace("/", "_")
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            try:
                page.screenshot(path=str(ARTIFACTS / f"failed-{name}.png"), full_page=True)
            except Exception as err:  # a page that crashed: its log is still worth keeping
                console.append(f"(no screenshot: {err})")
            (ARTIFACTS / f"failed-{name}.console.txt").write_text("\n".join(console) + "\n")
        context.close()
