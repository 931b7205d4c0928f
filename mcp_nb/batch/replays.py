"""Cases replayed against a server, and judged: expected against got, one row per case.

A replay is a batch whose calls are not one tool's: every case is prepared as a `Call`
first (a case the engine would refuse fails the replay before anything is sent, naming
the case), then the calls run on mcp_nb's loop in lanes (`core.Lanes`), each recorded in
the history like any other call, and the caller waits as for a sweep.

Each call is made with every option its case saved (the retry policy, a deadline reset on
progress, the answers to the server's questions, given in order), so that an unchanged tool
replays green; and each is marked `via` "replay" in the history, so that saving the history
afterwards does not save the replay again as new cases.

Concurrency goes as far as the server allows it: reading a resource, getting a prompt and
calling a tool annotated read-only or idempotent may overlap; a tool that declares neither
may have side effects whose order matters, so those calls run one after another, in the
file's order, in one lane beside the others.

Across protocol eras (`modes=`), the whole file is replayed under each era in turn, over
connections pinned to it (`Engine.at_era`: a client of its own for the kernel's server, the same
command or URL at that era for an outside one), each case judged under each era; then each
case's answers are compared between the eras, by structure (`records/compare.py`). A server
that answers one era otherwise than another is a finding: the `era_difference` column says
where, and the report counts it as a failure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd


from mcp_nb import libraries as lib
from mcp_nb.batch.core import Lanes, check_concurrency, wait
from mcp_nb.calling.connections import ConnectError, ServerSpec
from mcp_nb.calling.era import check_eras
from mcp_nb.calling.retry import Retry
from mcp_nb.mistakes import BadValue, Mistake, first_line
from mcp_nb.records.cases import REPLAYED, Case, CasesError, Replies, judge, load
from mcp_nb.records.compare import outcome_differences, said

COLUMNS = ["case", "target", "name", "server", "passed", "expected", "got", "reason", "call_id", "duration_ms"]
# Across eras: which era each row was replayed at, the protocol the call went over, and how the
# case's answer at this era differs from its answer at the first era ("" when the same).
ERA_COLUMNS = [
    "case",
    "target",
    "name",
    "server",
    "mode",
    "protocol",
    "passed",
    "expected",
    "got",
    "reason",
    "era_difference",
    "call_id",
    "duration_ms",
]
REPLAY_SERVER = "replay"  # the connection a replay opens for itself (`connect=`), then closes
NOT_REACHED = "not reached"  # the `got` of a case whose server could not be reached at an era


class Replay:
    """The cases' calls, in lanes: each call that may overlap others is a lane of its own."""

    def __init__(self, engine, cases: list[Case], concurrency: int, server: str | None, eras: dict | None = None) -> None:
        """`eras`, across eras: the connection each case's server is reached by at this era, by
        `target(case, server)`, or why it could not be (a string): such a case makes no call."""
        check_concurrency(concurrency)
        if server is not None:
            engine.connection_for(server)  # a server that is not connected is the caller's mistake, not a case's
        self.cases = cases
        self.replies: list[Replies] = []
        self.unreached: dict[int, str] = {}  # case number -> why its server could not be reached
        calls, self.made = [], []  # the prepared calls, and the number of the case of each
        for number, case in enumerate(cases):
            where = target(case, server)
            connection = eras.get(where) if eras is not None else None
            try:
                replies = Replies(case)
                self.replies.append(replies)
                if isinstance(connection, str):
                    self.unreached[number] = connection
                    continue
                call = prepared(engine, case, where, replies, connection)
            except Mistake as err:  # the case's call is refused by a check (or a secret is not set): the file's mistake
                raise CasesError(f"case {case.id!r}: {first_line(err)}") from None
            calls.append(call)
            self.made.append(number)
        ordered = [i for i, call in enumerate(calls) if not _may_overlap(call)]
        lanes = [[i] for i, call in enumerate(calls) if _may_overlap(call)]
        if ordered:
            lanes.insert(0, ordered)
        self.lanes = Lanes(engine, calls, concurrency, lanes)

    def outcomes(self) -> list[Any]:
        """Each case's Outcome, in the file's order: None for a call never made (the replay was
        stopped first), why for a case whose server was not reached."""
        got: list[Any] = [self.unreached.get(number) for number in range(len(self.cases))]
        for number, outcome in zip(self.made, self.lanes.outcomes(), strict=True):
            got[number] = outcome
        return got

    def row(self, number: int, got: Any) -> dict[str, Any]:
        """The frame's row of case `number`, judged against what it `got`."""
        case, replies = self.cases[number], self.replies[number]
        expected = _said(case.expect.outcome, case.expect.cause)
        if isinstance(got, str):
            return {
                "case": case.id,
                "target": case.target,
                "name": case.name,
                "server": case.server,
                "passed": False,
                "expected": expected,
                "got": NOT_REACHED,
                "reason": got,
                "call_id": None,
                "duration_ms": None,
            }
        # Different questions first: they are why the answer differs, when it does.
        reason = "; ".join(why for why in (replies.why(), judge(case, got)) if why)
        return {
            "case": case.id,
            "target": case.target,
            "name": case.name,
            "server": got.server,
            "passed": not reason,
            "expected": expected,
            "got": _said(got.outcome, got.cause),
            "reason": reason,
            "call_id": got.call_id,
            "duration_ms": got.duration_ms,
        }

    def frame(self, interrupted: bool) -> pd.DataFrame:
        rows = [self.row(number, got) for number, got in enumerate(self.outcomes()) if got is not None]
        return _framed(rows, COLUMNS, len(self.cases), interrupted)


def _framed(rows: list[dict[str, Any]], columns: list[str], cases: int, interrupted: bool, **attrs: Any) -> pd.DataFrame:
    frame = lib.pandas.DataFrame(rows, columns=columns)
    frame["passed"] = frame["passed"].astype(bool)
    if frame["call_id"].isna().any():
        frame["call_id"] = frame["call_id"].astype("Int64")  # a case that made no call has none
    passed = int(frame["passed"].sum())
    frame.attrs.update(cases=cases, passed=passed, failed=len(frame) - passed, interrupted=interrupted, **attrs)
    return frame


def target(case: Case, server: str | None) -> str | None:
    """The connection a case's call goes to: `server` when given, else the one it names (None: the kernel's)."""
    return server if server is not None else (None if case.server == "kernel" else case.server)


def prepared(engine, case: Case, server: str | None, replies: Replies, connection: Any = None):
    """The case's call, with the options it was made with, marked as a replay's."""
    call = engine.prepare(
        case.target,
        case.name,
        case.arguments,
        case.timeout,
        _rule(case),
        server,
        reset_on_progress=case.reset_on_progress,
        max_timeout=case.max_timeout,
        elicit=replies.answer,  # the recorded answers, or a cancel: never the settings' default, never a wait
        connection=connection,
    )
    call.via = REPLAYED
    return call


def _rule(case: Case) -> Retry | None:
    if case.retry is not None:
        return Retry(**case.retry.given())
    # A file written before the policy was saved: as many retries as the call took.
    return Retry(retries=case.retries) if case.retries else None


def _may_overlap(call) -> bool:
    if call.target != "tool":
        return True  # reads and gets change nothing
    hints = call.connection.annotations(call.name)
    return hints is not None and bool(hints.read_only_hint or hints.idempotent_hint)


def _said(outcome: str, cause: str) -> str:
    return f"{outcome} ({cause})"


def run_replay(
    engine,
    cases: Any,
    *,
    server: str | None = None,
    connect: str | list[str] | None = None,
    headers: dict[str, str] | None = None,
    concurrency: int = 8,
    progress: bool = False,
    modes: list[str] | None = None,
) -> pd.DataFrame:
    """See `mcp_nb.replay`."""
    cases = load(cases)
    eras = None if modes is None else check_eras(modes)
    if server is not None and connect is not None:
        raise BadValue("give server= (a connection's name) or connect= (a server to start for the replay), not both")
    if headers is not None and connect is None:
        raise BadValue("headers= go with connect= (a URL)")
    opened = None
    if connect is not None:
        opened = _free_name(engine)
        engine.connect(ServerSpec.of(opened, connect, headers=headers))
        server = opened
    try:
        if eras is not None:
            return _across_eras(engine, cases, concurrency, server, eras, progress)
        replay = Replay(engine, cases, concurrency, server)
        return replay.frame(wait(replay.lanes, len(cases), "replay" if progress else None, "replay", "cases run"))
    finally:
        if opened is not None and not engine.closed and opened in engine.connections:
            engine.disconnect(opened)


def _free_name(engine) -> str:
    name, n = REPLAY_SERVER, 1
    while name in engine.connections:
        n += 1
        name = f"{REPLAY_SERVER}-{n}"
    return name


def _across_eras(
    engine, cases: list[Case], concurrency: int, server: str | None, eras: list[str], progress: bool
) -> pd.DataFrame:
    """Every case under each era in turn; each row judged, and each case's answers compared between eras."""
    if server is not None:
        engine.connection_for(server)  # the caller's mistake, said before any era is opened
    for case in cases:
        where = target(case, server)
        if where is not None and where not in engine.connections:
            raise CasesError(
                f"case {case.id!r}: no server named {where!r} is connected (connected: {', '.join(engine.connections)})"
            )
    answers: dict[str, list[Any]] = {}
    rows: list[dict[str, Any]] = []
    interrupted = False
    for mode in eras:
        opened: dict[str | None, Any] = {}
        try:
            for where in dict.fromkeys(target(case, server) for case in cases):
                try:
                    opened[where] = engine.at_era(where, mode)
                except (ConnectError, BadValue) as err:
                    opened[where] = f"{where or 'kernel'} could not be reached at {mode}: {first_line(err)}"
            replay = Replay(engine, cases, concurrency, server, opened)
            interrupted = wait(replay.lanes, len(cases), f"replay at {mode}" if progress else None, "replay", "cases run")
            got = answers[mode] = replay.outcomes()
            for number, outcome in enumerate(got):
                if outcome is not None:
                    row = replay.row(number, outcome)
                    row["mode"] = mode
                    row["protocol"] = "" if isinstance(outcome, str) else (outcome.protocol or "")
                    row["era_difference"] = _between(eras[0], answers[eras[0]][number], mode, outcome)
                    rows.append(row)
        finally:
            for connection in opened.values():
                if not isinstance(connection, str) and not engine.closed:
                    engine.close_era(connection)
        if interrupted:
            break
    differing = sorted({row["case"] for row in rows if row["era_difference"]})
    return _framed(rows, ERA_COLUMNS, len(cases), interrupted, modes=list(eras), differing=differing)


def _between(first: str, then: Any, mode: str, now: Any) -> str:
    """How a case's answer at `mode` differs from its answer at the first era ("" when the same, or at the first era)."""
    if mode == first or then is None:
        return ""
    if isinstance(then, str) or isinstance(now, str):
        return (
            ""
            if isinstance(then, str) and isinstance(now, str)
            else f"reached at one era only ({first if not isinstance(then, str) else mode})"
        )
    differences = outcome_differences(then, now)
    return f"{mode} answers otherwise than {first}: {said(differences)}" if differences else ""
