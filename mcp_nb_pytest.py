"""mcp_nb's pytest plugin: every case of a cases file is a test item, and so is every change of a
server's surface since its snapshot.

    pytest --mcp-cases cases.json --mcp-notebook tools.ipynb
    pytest --mcp-cases cases.json --mcp-server "python server.py"
    pytest --mcp-cases cases.json --mcp-url https://example.com/mcp --mcp-header "Authorization: Bearer ..."
    pytest --mcp-cases cases.json --mcp-notebook tools.ipynb --mcp-mode 2025-11-25 --mcp-mode 2026-07-28
    pytest --mcp-surface surface.json --mcp-notebook tools.ipynb

With `--mcp-mode`, each case is an item per protocol era (`get_book-1[2025-11-25]`), and an era
whose answer differs from the first era's fails, saying how. With `--mcp-surface`, the server's
surface is taken (once its notebook ran, or it is connected) and compared with the snapshot: one
item per change, which fails when the change reaches `--mcp-fail-on` (by default a breaking change
or one no rule knows), and one passing item when nothing changed.

Installed with mcp_nb (the `pytest11` entry point), so pytest loads it in every run of the
environment. It is a module of its own, outside the `mcp_nb` package, for that reason: a run
that does not ask for cases imports only this file, and mcp_nb's modules (the MCP SDK, pandas)
are imported when `--mcp-cases` or `--mcp-surface` is given.

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
FAIL_ON = ("breaking", "unknown", "any")  # as mcp_nb.records.surface_diff.FAIL_ON, but for "never"
UNCHANGED = "unchanged"  # the one item of a surface with no change


def pytest_addoption(parser) -> None:
    group = parser.getgroup("mcp_nb", "MCP regression cases and surfaces (mcp_nb; see its docs/cases.md)")
    group.addoption(
        "--mcp-cases", action="append", default=[], metavar="PATH", help="a cases file: one test per case (repeatable)"
    )
    group.addoption(
        "--mcp-surface",
        action="append",
        default=[],
        metavar="SNAPSHOT",
        help="a surface snapshot: one test per change of the server's surface since (repeatable)",
    )
    group.addoption(
        "--mcp-fail-on",
        choices=FAIL_ON,
        default="unknown",
        metavar="LEVEL",
        help="with --mcp-surface, a change fails at: breaking; unknown (breaking, or no rule knows it; the default); any",
    )
    group.addoption(
        "--mcp-mode",
        action="append",
        default=[],
        metavar="ERA",
        help="with --mcp-cases, replay each case at this protocol era (repeatable: 2025-11-25, 2026-07-28)",
    )
    group.addoption(
        "--mcp-notebook", metavar="NOTEBOOK", help="run this notebook's code cells first: its tools are the ones tested"
    )
    group.addoption("--mcp-server", metavar="COMMAND", help="start this stdio MCP server for the session and test it")
    group.addoption("--mcp-url", metavar="URL", help="test the streamable HTTP MCP server at this URL")
    group.addoption(
        "--mcp-header", action="append", default=[], metavar="'NAME: VALUE'", help="an HTTP header for --mcp-url (repeatable)"
    )


def pytest_configure(config) -> None:
    paths, surfaces = config.getoption("mcp_cases"), config.getoption("mcp_surface")
    notebook, command, url = (config.getoption(k) for k in ("mcp_notebook", "mcp_server", "mcp_url"))
    headers, modes = config.getoption("mcp_header"), config.getoption("mcp_mode")
    if modes and not paths:
        raise pytest.UsageError("--mcp-mode goes with --mcp-cases PATH (the cases to replay at each era)")
    if not paths and not surfaces:
        given = [flag for flag, value in (("--mcp-notebook", notebook), ("--mcp-server", command), ("--mcp-url", url)) if value]
        if given or headers:
            raise pytest.UsageError(f"{(given or ['--mcp-header'])[0]} goes with --mcp-cases PATH or --mcp-surface SNAPSHOT")
        return  # not asked for: nothing of mcp_nb is loaded
    config.stash[_RUN] = CasesRun(paths, notebook, command, url, headers, surfaces, modes, config.getoption("mcp_fail_on"))


def pytest_collect_file(file_path: Path, parent):
    run = parent.config.stash.get(_RUN, None)
    if run is not None and Path(file_path).resolve() in run.cases:
        return CasesFile.from_parent(parent, path=file_path)
    if run is not None and Path(file_path).resolve() in run.surfaces:
        return SurfaceFile.from_parent(parent, path=file_path)
    return None


@pytest.hookimpl(tryfirst=True)  # before -k and -m deselect: the cases' items are items like any other
def pytest_collection_modifyitems(session, config, items) -> None:
    run = config.stash.get(_RUN, None)
    if run is None:
        return
    # A cases file outside the paths pytest collected (the usual case: `pytest --mcp-cases
    # tests/cases.json` collects `tests/`, or nothing at all) is collected here.
    collected = {Path(item.path).resolve() for item in items if isinstance(item, (CaseItem, EvaluationItem, ChangeItem))}
    for path in run.cases:
        if path not in collected:
            items.extend(CasesFile.from_parent(session, path=path).collect())
    for path in run.surfaces:
        if path not in collected:
            items.extend(SurfaceFile.from_parent(session, path=path).collect())


def pytest_sessionfinish(session) -> None:
    run = session.config.stash.get(_RUN, None)
    if run is not None:
        run.close()


class CasesRun:
    """The session's cases files and the server they run against, started at the first case."""

    def __init__(
        self,
        paths: list[str],
        notebook: str | None,
        command: str | None,
        url: str | None,
        headers: list[str],
        surfaces: list[str] = (),
        modes: list[str] = (),
        fail_on: str = "unknown",
    ) -> None:
        from mcp_nb.calling.era import check_eras
        from mcp_nb.records.cases import CasesError, load_file
        from mcp_nb.records.surface import SurfaceError
        from mcp_nb.records.surface import load as load_snapshot

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
        self.evaluations = {}  # a file's saved evaluations of a model in the loop: an item per task and model
        for path in paths:
            resolved = Path(path).resolve()
            try:
                found = load_file(resolved)  # a bad file stops the run before any test, saying where
            except CasesError as err:
                raise pytest.UsageError(f"--mcp-cases: {err}") from None
            self.cases[resolved], self.evaluations[resolved] = found.cases, found.evaluations
        self.evaluated: dict[str, object] = {}  # an evaluation's id -> its replay's frame, made by its first item
        self.surfaces = {}
        for path in surfaces:
            resolved = Path(path).resolve()
            try:
                self.surfaces[resolved] = load_snapshot(resolved)  # a bad snapshot stops the run before any test
            except SurfaceError as err:
                raise pytest.UsageError(f"--mcp-surface: {err}") from None
        try:
            self.modes = check_eras(list(modes)) if modes else []
        except ValueError as err:
            raise pytest.UsageError(f"--mcp-mode: {err}") from None
        self.fail_on = fail_on
        self.era_frames: dict[str, object] = {}  # a case's id -> its replay across the eras, made by its first item
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

    def evaluation(self, saved):
        """The saved evaluation run again on the session's server (once, by the first of its items)."""
        import mcp_nb
        from mcp_nb.episodes.saved import replay

        if saved.id not in self.evaluated:
            self.evaluated[saved.id] = replay(mcp_nb.engine(), saved, self.server)
        return self.evaluated[saved.id]

    def across_eras(self, case):
        """The case's replay at every era (made once, by the first of its items to run)."""
        import mcp_nb

        if case.id not in self.era_frames:
            self.era_frames[case.id] = mcp_nb.replay([case], self.server, concurrency=1, modes=self.modes)
        return self.era_frames[case.id]


class CasesFile(pytest.File):
    def collect(self):
        run = self.config.stash[_RUN]
        for case in run.cases[Path(self.path).resolve()]:
            if not run.modes:
                yield CaseItem.from_parent(self, name=case.id, case=case)
            for mode in run.modes:
                yield CaseItem.from_parent(self, name=f"{case.id}[{mode}]", case=case, mode=mode)
        from mcp_nb.episodes.saved import item_name

        for saved in run.evaluations[Path(self.path).resolve()]:
            for row in saved.expect:
                yield EvaluationItem.from_parent(self, name=f"{saved.id}[{item_name(row)}]", saved=saved, row=row)


class CaseFailed(Exception):
    """A case whose call did not come back as expected; the report is its message."""


class CaseItem(pytest.Item):
    def __init__(self, *, case, mode: str | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.mode = mode

    def runtest(self) -> None:
        import mcp_nb
        from mcp_nb.mistakes import Mistake

        run = self.config.stash[_RUN]
        run.start()
        try:
            if self.mode is None:
                frame = mcp_nb.replay([self.case], run.server, concurrency=1)
            else:
                frame = run.across_eras(self.case)
                frame = frame[frame["mode"] == self.mode]
        except Mistake as err:  # a case the engine refuses: said as a case's failure, not as a traceback
            raise CaseFailed(
                f"case {self.case.id}: {self.case.target} {self.case.name}: refused before anything was sent: {err}"
            ) from None
        if frame.empty:  # the replay across eras was stopped before this era
            raise CaseFailed(f"case {self.case.id}: not replayed at {self.mode} (the replay was stopped)")
        row = frame.iloc[0]
        if not row["passed"] or (self.mode is not None and row["era_difference"]):
            raise CaseFailed(report(self.case, row))

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, CaseFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, None, f"case {self.case.id}" + (f" at {self.mode}" if self.mode else "")


class EvaluationItem(pytest.Item):
    """One task and model of a saved evaluation: run again (the whole evaluation, once), and judged
    against what was saved."""

    def __init__(self, *, saved, row, **kwargs) -> None:
        super().__init__(**kwargs)
        self.saved = saved
        self.row = row

    def runtest(self) -> None:
        from mcp_nb.episodes.saved import judged, row_of
        from mcp_nb.mistakes import McpNbError

        run = self.config.stash[_RUN]
        run.start()
        try:
            frame = run.evaluation(self.saved)
        except McpNbError as err:  # a model whose key is not set, a tool the server lacks: said as this item's failure
            raise CaseFailed(f"evaluation {self.saved.id}: cannot run: {err}") from None
        why = judged(self.row, self.saved.models[self.row.model].deterministic, row_of(frame, self.row))
        if why:
            raise CaseFailed(f"evaluation {self.saved.id}: {why}")

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, CaseFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, None, f"evaluation {self.saved.id}: {self.row.task_id} with {self.row.model}"


def report(case, row) -> str:
    """What a failed case says in pytest's report: the call, expected, got, and why (and across
    eras, the era and how its answer differs from the first era's)."""
    import json

    arguments = "" if case.arguments is None else " " + json.dumps(case.arguments, ensure_ascii=False)
    era = f", at {row['mode']} (protocol {row['protocol'] or 'none'})" if "mode" in row else ""
    call = f"call #{row['call_id']}" if str(row["call_id"]) not in ("<NA>", "None", "nan") else "no call"
    lines = [
        f"case {case.id}: {case.target} {case.name}{arguments} (server {row['server']}, {call}{era})",
        f"expected: {row['expected']}",
        f"got:      {row['got']}",
    ]
    if row["reason"]:
        reason = str(row["reason"]).splitlines()
        lines.append(f"why:      {reason[0]}")
        lines.extend(f"          {line}" for line in reason[1:])
    if "era_difference" in row and row["era_difference"]:
        lines.append(f"eras:     {row['era_difference']}")
    return "\n".join(lines)


# -- surfaces ------------------------------------------------------------------------------------------


class SurfaceFile(pytest.File):
    """A snapshot: its items are the changes of the server's surface since, taken when collected."""

    def collect(self):
        import mcp_nb
        from mcp_nb.mistakes import Mistake

        run = self.config.stash[_RUN]
        try:
            run.start()
            frame = mcp_nb.diff(run.surfaces[Path(self.path).resolve()], run.server)
        except (pytest.fail.Exception, Mistake) as err:  # the server did not come up, or could not be listed
            yield ChangeItem.from_parent(self, name="snapshot", change=None, failure=str(err).strip().splitlines()[0])
            return
        if frame.empty:
            yield ChangeItem.from_parent(self, name=UNCHANGED, change=None)
            return
        seen: dict[str, int] = {}
        for change in frame.itertuples(index=False):
            name = f"{change.kind} {change.name} {change.where}".replace("  ", " ")
            seen[name] = seen.get(name, 0) + 1
            yield ChangeItem.from_parent(self, name=name if seen[name] == 1 else f"{name} #{seen[name]}", change=change)


class ChangeFailed(Exception):
    """A change of the surface that fails at --mcp-fail-on; the report is its message."""


class ChangeItem(pytest.Item):
    def __init__(self, *, change, failure: str | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.change = change
        self.failure = failure

    def runtest(self) -> None:
        if self.failure is not None:
            raise ChangeFailed(f"no surface to compare: {self.failure}")
        if self.change is None:
            return  # unchanged
        fail_on = self.config.stash[_RUN].fail_on
        verdict = _verdict(self.change.breaking)
        if fail_on == "any" or verdict == "breaking" or (fail_on == "unknown" and verdict == "unknown"):
            raise ChangeFailed(change_report(self.change))

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, ChangeFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, None, f"surface {self.name}"


def _verdict(breaking) -> str:
    if breaking is True:
        return "breaking"
    return "compatible" if breaking is False else "unknown"


def change_report(change) -> str:
    """What a failing change says in pytest's report, in the cases' style: the change, its
    verdict and rule, why, and the values before and after."""
    import json

    def shown(value) -> str:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
        return text if len(text) <= 200 else text[:199] + "…"

    entry = "the server" if change.kind == "server" else f"{change.kind} {change.name}"
    return "\n".join(
        [
            f"change: {entry} {change.where} ({change.change})",
            f"verdict: {_verdict(change.breaking)} (rule {change.rule})",
            f"why:     {change.why}",
            f"before:  {shown(change.before)}",
            f"after:   {shown(change.after)}",
        ]
    )
