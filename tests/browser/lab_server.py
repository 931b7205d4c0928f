"""JupyterLab on 127.0.0.1 and Debian's Chromium, for the browser tests and the docs' pictures.

The browser tests (conftest.py) and `tests/browser/screenshots.py` start both the same way:
a JupyterLab serving a copy of some notebooks (Lab autosaves outputs into what it serves),
with its configuration, data, settings and workspaces in a folder of its own (no news popup,
every cell rendered), listening on 127.0.0.1 with a token; and the system's Chromium, which
Playwright drives (its own browser download cannot run on these machines).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

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


class DidNotStart(RuntimeError):
    """A server the caller started did not answer in time (the message ends with its log)."""


@dataclass(frozen=True)
class Server:
    """A server the tests started: its address and its token."""

    url: str
    token: str

    def open(self, path: str, **query: str) -> str:
        """The address of `path`, with the token (the first request of a browser context logs in)."""
        return f"{self.url}/{path}?" + "&".join(f"{k}={v}" for k, v in {**query, "token": self.token}.items())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_up(server: subprocess.Popen, status: str, log: Path, what: str) -> None:
    deadline = time.monotonic() + 90
    while True:
        try:
            with urllib.request.urlopen(status, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if server.poll() is not None or time.monotonic() > deadline:
            raise DidNotStart(f"{what} did not start:\n" + log.read_text()[-3000:])
        time.sleep(0.25)


def stop(server: subprocess.Popen) -> None:
    server.terminate()
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


@contextmanager
def jupyterlab(base: Path, served: Path, env: Mapping[str, str] = {}) -> Iterator[Server]:
    """JupyterLab serving the folder `served`, its own files under `base`, until the block ends."""
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
    port, token = free_port(), secrets.token_hex(16)
    environment = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_DATA_DIR": str(base / "data"),
        "JUPYTERLAB_SETTINGS_DIR": str(base / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(base / "workspaces"),
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        **env,
    }
    log_path = base / "lab.log"
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyterlab",
                "--no-browser",
                "--allow-root",
                "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={port}",
                "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={token}",
                "--ServerApp.password=",
                f"--ServerApp.root_dir={served}",
                "--LabApp.news_url=None",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            ],
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=served,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            wait_until_up(server, f"{url}/api/status?token={token}", log_path, "JupyterLab")
            yield Server(url, token)
        finally:
            stop(server)


def local_only(route) -> None:
    """A Playwright route handler: nothing leaves the machine (Lab would try CDN fonts; they fail
    harmlessly), as on a reader's machine offline."""
    url = route.request.url
    host = url.split("/")[2].split(":")[0] if "://" in url else ""
    if url.startswith("file://") or host in ("127.0.0.1", "localhost"):
        route.continue_()
    else:
        route.abort()
