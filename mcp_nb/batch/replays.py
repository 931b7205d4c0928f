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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd


from mcp_nb.batch.core import Lanes, check_concurrency, wait
from mcp_nb.calling.retry import Retry
from mcp_nb.records.cases import REPLAYED, Case, CasesError, Replies, judge, load
from mcp_nb.mistakes import BadValue, Mistake, first_line

COLUMNS = ["case", "target", "name", "server", "passed", "expected", "got", "reason", "call_id", "duration_ms"]
REPLAY_SERVER = "replay"  # the connection a replay opens for itself (`connect=`), then closes


class Replay:
    """The cases' calls, in lanes: each call that may overlap others is a lane of its own."""

    def __init__(self, engine, cases: list[Case], concurrency: int, server: str | None) -> None:
        check_concurrency(concurrency)
        if server is not None:
            engine.connection_for(server)  # a server that is not connected is the caller's mistake, not a case's
        self.cases = cases
        self.replies: list[Replies] = []
        calls = []
        for case in cases:
            where = server if server is not None else (None if case.server == "kernel" else case.server)
            try:
                replies = Replies(case)
                call = prepared(engine, case, where, replies)
            except Mistake as err:  # the case's call is refused by a check (or a secret is not set): the file's mistake
                raise CasesError(f"case {case.id!r}: {first_line(err)}") from None
            self.replies.append(replies)
            calls.append(call)
        ordered = [i for i, call in enumerate(calls) if not _may_overlap(call)]
        lanes = [[i] for i, call in enumerate(calls) if _may_overlap(call)]
        if ordered:
            lanes.insert(0, ordered)
        self.lanes = Lanes(engine, calls, concurrency, lanes)

    def frame(self, interrupted: bool) -> pd.DataFrame:
        rows = []
        for case, replies, got in zip(self.cases, self.replies, self.lanes.outcomes(), strict=True):
            if got is None:
                continue  # never made: the replay was stopped first
            # Different questions first: they are why the answer differs, when it does.
            reason = "; ".join(why for why in (replies.why(), judge(case, got)) if why)
            rows.append(
                {
                    "case": case.id, "target": case.target, "name": case.name, "server": got.server,
                    "passed": not reason, "expected": _said(case.expect.outcome, case.expect.cause),
                    "got": _said(got.outcome, got.cause), "reason": reason, "call_id": got.call_id,
                    "duration_ms": got.duration_ms,
                }  # fmt: skip
            )
        import pandas as pd  # pandas: loaded with the first frame, so `import mcp_nb` stays light

        frame = pd.DataFrame(rows, columns=COLUMNS)
        frame["passed"] = frame["passed"].astype(bool)
        passed = int(frame["passed"].sum())
        frame.attrs.update(cases=len(self.cases), passed=passed, failed=len(frame) - passed, interrupted=interrupted)
        return frame


def prepared(engine, case: Case, server: str | None, replies: Replies):
    """The case's call, with the options it was made with, marked as a replay's."""
    call = engine.prepare(
        case.target, case.name, case.arguments, case.timeout, _rule(case), server,
        reset_on_progress=case.reset_on_progress, max_timeout=case.max_timeout,
        elicit=replies.answer,  # the recorded answers, or a cancel: never the settings' default, never a wait
    )  # fmt: skip
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
) -> pd.DataFrame:
    """See `mcp_nb.replay`."""
    cases = load(cases)
    if server is not None and connect is not None:
        raise BadValue("give server= (a connection's name) or connect= (a server to start for the replay), not both")
    if headers is not None and connect is None:
        raise BadValue("headers= go with connect= (a URL)")
    opened = None
    if connect is not None:
        opened = _free_name(engine)
        engine.connect(opened, connect, headers=headers)
        server = opened
    try:
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
