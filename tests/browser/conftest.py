"""A real JupyterLab on 127.0.0.1 and Debian's Chromium, driven by Playwright.

The browser is the system's Chromium (`/usr/bin/chromium`, or MCP_NB_CHROMIUM):
Playwright's own browser download cannot run on these machines. `.ci/run` installs it
where it is missing. Without it a developer's run skips these tests; CI (`CI=true`)
fails instead, so a green CI always means the browser test ran.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
ARTIFACTS = ROOT / "artifacts" / "browser"  # git-ignored: screenshots of every step
CHROMIUM = os.environ.get("MCP_NB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# The notebook is a fixture for the browser, not a notebook for nbval to execute.
collect_ignore_glob = ["*.ipynb"]


def _unavailable(why: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"browser test cannot run in CI: {why}", pytrace=False)
    pytest.skip(why)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab serving a copy of tests/browser (Lab autosaves outputs into what it serves)."""
    base = tmp_path_factory.mktemp("lab")
    served = base / "notebooks"
    served.mkdir()
    shutil.copy(HERE / "panel_demo.ipynb", served / "panel_demo.ipynb")
    config = base / "config"
    (config / "labconfig").mkdir(parents=True)
    # No news popup over the page.
    (config / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}})
    )
    settings = base / "settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    # Render every cell: Lab's windowing would leave off-screen outputs out of the page.
    (settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    port = _free_port()
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTERLAB_SETTINGS_DIR": str(base / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(base / "workspaces"),
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
    }
    log = open(base / "lab.log", "w")
    server = subprocess.Popen(
        [
            sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
            "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
            "--IdentityProvider.token=", "--ServerApp.password=", f"--ServerApp.root_dir={served}",
            "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ],
        env=env, stdout=log, stderr=subprocess.STDOUT, cwd=served,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                log.flush()
                pytest.fail("JupyterLab did not start:\n" + (base / "lab.log").read_text()[-3000:], pytrace=False)
            time.sleep(0.25)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


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


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1800})
    page = context.new_page()

    def local_only(route):
        # Nothing leaves the machine (Lab would try CDN fonts; they fail harmlessly).
        host = route.request.url.split("/")[2] if "://" in route.request.url else ""
        if host.split(":")[0] in ("127.0.0.1", "localhost"):
            route.continue_()
        else:
            route.abort()

    page.route("**/*", local_only)
    page.set_default_timeout(30_000)
    try:
        yield page
    finally:
        context.close()
