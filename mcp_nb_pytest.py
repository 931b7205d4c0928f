"""mcp_nb's pytest plugin: every case of a cases file is a test item.

    pytest --mcp-cases cases.json --mcp-notebook tools.ipynb
    pytest --mcp-cases cases.json --mcp-server "python server.py"
    pytest --mcp-cases cases.json --mcp-url https://example.com/mcp --mcp-header "Authorization: Bearer ..."

Installed with mcp_nb (the `pytest11` entry point), so pytest loads it in every run of the
environment. It is a module of its own, outside the `mcp_nb` package, for that reason: a run
that does not ask for cases imports only this file (`import mcp_nb` would bring the MCP SDK
and pandas into every test run's start). mcp_nb is imported when `--mcp-cases` is given.

Where the cases go: `--mcp-notebook` runs the notebook's code cells in this process (as
`python -m mcp_nb serve` does), so its tools are the kernel's own, exactly as when the cases
were saved; `--mcp-server` / `--mcp-url` connect to an outside server for the session and
send every case there; with none of them each case goes to the server it names, and
`kernel` is whatever this process registered (a conftest.py that imports your tools).
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

CONNECTION = "cases"  # the name of the session's connection (--mcp-server / --mcp-url)
_RUN = pytest.StashKey["CasesRun"]()


def pytest_addoption(parser) -> None:
    group = parser.getgroup("mcp_nb", "MCP regression cases (mcp_nb; see its docs/cases.md)")
    group.addoption("--mcp-cases", action="append", default=[], metavar="PATH", help="a cases file: one test per case (repeatable)")
    group.addoption("--mcp-notebook", metavar="NOTEBOOK", help="run this notebook's code cells first: its tools are the ones tested")
    group.addoption("--mcp-server", metavar="COMMAND", help="start this stdio MCP server for the session and test it")
    group.addoption("--mcp-url", metavar="URL", help="test the streamable HTTP MCP server at this URL")
    group.addoption(
        "--mcp-header", action="append", default=[], metavar="'NAME: VALUE'", help="an HTTP header for --mcp-url (repeatable)"
    )


def pytest_configure(config) -> None:
    paths = config.getoption("mcp_cases")
    notebook, command, url = (config.getoption(k) for k in ("mcp_notebook", "mcp_server", "mcp_url"))
    headers = config.getoption("mcp_header")
    if not paths:
        given = [flag for flag, value in (("--mcp-notebook", notebook), ("--mcp-server", command), ("--mcp-url", url)) if value]
        if given or headers:
            raise pytest.UsageError(f"{(given or ['--mcp-header'])[0]} goes with --mcp-cases PATH (the cases to run)")
        return  # not asked for: nothing of mcp_nb is loaded
    config.stash[_RUN] = CasesRun(paths, notebook, command, url, headers)


def pytest_collect_file(file_path: Path, parent):
    run = parent.config.stash.get(_RUN, None)
    if run is not None and Path(file_path).resolve() in run.cases:
        return CasesFile.from_parent(parent, path=file_path)
    return None


@pytest.hookimpl(tryfirst=True)  # before -k and -m deselect: the cases' items are items like any other
def pytest_collection_modifyitems(session, config, items) -> None:
    run = config.stash.get(_RUN, None)
    if run is None:
        return
    # A cases file outside the paths pytest collected (the usual case: `pytest --mcp-cases
    # tests/cases.json` collects `tests/`, or nothing at all) is collected here.
    collected = {Path(item.path).resolve() for item in items if isinstance(item, CaseItem)}
    for path in run.cases:
        if path not in collected:
            items.extend(CasesFile.from_parent(session, path=path).collect())


def pytest_sessionfinish(session) -> None:
    run = session.config.stash.get(_RUN, None)
    if run is not None:
        run.close()


class CasesRun:
    """The session's cases files and the server they run against, started at the first case."""

    def __init__(self, paths: list[str], notebook: str | None, command: str | None, url: str | None, headers: list[str]) -> None:
        from mcp_nb.records.cases import CasesError, load

        chosen = [flag for flag, value in (("--mcp-notebook", notebook), ("--mcp-server", command), ("--mcp-url", url)) if value]
        if len(chosen) > 1:
            raise pytest.UsageError(f"give one of --mcp-notebook, --mcp-server and --mcp-url, not {' and '.join(chosen)}")
        if headers and not url:
            raise pytest.UsageError("--mcp-header goes with --mcp-url")
        self.headers = {}
        for header in headers:
            name, colon, value = header.partition(":")
            if not colon or not name.strip():
                raise pytest.UsageError(f"--mcp-header takes 'Name: value', got {header!r}")
            self.headers[name.strip()] = value.strip()
        self.cases = {}
        for path in paths:
            resolved = Path(path).resolve()
            try:
                self.cases[resolved] = load(resolved)  # a bad file stops the run before any test, saying where
            except CasesError as err:
                raise pytest.UsageError(f"--mcp-cases: {err}") from None
        self.notebook = Path(notebook).resolve() if notebook else None
        if self.notebook is not None and not self.notebook.is_file():
            raise pytest.UsageError(f"--mcp-notebook: no notebook at {notebook}")
        self.command, self.url = command, url
        self.server: str | None = None
        self.failure: str | None = None
        self.started = False

    def start(self) -> None:
        """Bring up the server the cases run against, once; a failure fails every case with it."""
        if self.started:
            if self.failure:
                pytest.fail(self.failure, pytrace=False)
            return
        self.started = True
        import mcp_nb

        try:
            if self.notebook is not None:
                from mcp_nb.serving.notebook import NotebookError, run_notebook

                here = os.getcwd()
                try:
                    run_notebook(self.notebook)
                except NotebookError as err:
                    raise RuntimeError(f"--mcp-notebook: {err}") from None
                finally:
                    os.chdir(here)  # the notebook's cells ran in its folder; the test session's stays
            elif self.command or self.url:
                target = self.url if self.url else shlex.split(self.command)
                try:
                    mcp_nb.connect(CONNECTION, target, headers=self.headers or None)
                except Exception as err:  # noqa: BLE001 - said once, on every case
                    raise RuntimeError(f"could not connect to {self.url or self.command}: {err}") from None
                self.server = CONNECTION
        except RuntimeError as err:
            self.failure = str(err).strip().splitlines()[0]
            pytest.fail(self.failure, pytrace=False)

    def close(self) -> None:
        if self.server is not None:
            import mcp_nb

            engine = mcp_nb.engine()
            if not engine.closed and self.server in engine.connections:
                mcp_nb.disconnect(self.server)
            self.server = None


class CasesFile(pytest.File):
    def collect(self):
        run = self.config.stash[_RUN]
        for case in run.cases[Path(self.path).resolve()]:
            yield CaseItem.from_parent(self, name=case.id, case=case)


class CaseFailed(Exception):
    """A case whose call did not come back as expected; the report is its message."""


class CaseItem(pytest.Item):
    def __init__(self, *, case, **kwargs) -> None:
        super().__init__(**kwargs)
        self.case = case

    def runtest(self) -> None:
        import mcp_nb

        from mcp_nb.mistakes import Mistake

        run = self.config.stash[_RUN]
        run.start()
        try:
            frame = mcp_nb.replay([self.case], run.server, concurrency=1)
        except Mistake as err:  # a case the engine refuses: said as a case's failure, not as a traceback
            raise CaseFailed(f"case {self.case.id}: {self.case.target} {self.case.name}: refused before anything was sent: {err}") from None
        row = frame.iloc[0]
        if not row["passed"]:
            raise CaseFailed(report(self.case, row))

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, CaseFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, None, f"case {self.case.id}"


def report(case, row) -> str:
    """What a failed case says in pytest's report: the call, expected, got, and why."""
    import json

    arguments = "" if case.arguments is None else " " + json.dumps(case.arguments, ensure_ascii=False)
    lines = [
        f"case {case.id}: {case.target} {case.name}{arguments} (server {row['server']}, call #{row['call_id']})",
        f"expected: {row['expected']}",
        f"got:      {row['got']}",
    ]
    reason = str(row["reason"]).splitlines()
    lines.append(f"why:      {reason[0]}")
    lines.extend(f"          {line}" for line in reason[1:])
    return "\n".join(lines)
