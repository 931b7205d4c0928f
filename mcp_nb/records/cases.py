"""Cases: recorded calls written down as expectations, to be replayed as regression tests.

A cases file is JSON: the standard library reads and writes it, it round-trips a call's
arguments exactly (the arguments were sent as JSON in the first place), and every editor
and CI system knows it. It is read through pydantic models, so a file edited by hand
that says something mcp_nb cannot check is refused whole, with one line naming the case
and the field.

    {"mcp_nb_cases": 1, "cases": [
      {"id": "get_author-1", "target": "tool", "name": "get_author",
       "arguments": {"title": "Dune"}, "server": "kernel", "timeout": 30.0,
       "expect": {"outcome": "result", "cause": "ok", "content": "Frank Herbert"}}]}

A case holds every option its call had (the retry policy, a deadline reset on progress, the
answers to the server's questions), so that an unchanged tool replays green: what made the
call pass is what its replay is given.

This module knows nothing of the engine or IPython: it turns history rows into cases,
reads and writes files, judges one Outcome against one case, and gives a replay the answers
its case recorded.
"""

from __future__ import annotations

import difflib
import fnmatch
import json
import os
import re
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    ValidationError,
    field_validator,
    model_validator,
)

from mcp_nb import libraries as lib
from mcp_nb.elicitation import ACTIONS, Answer, is_secret
from mcp_nb.mistakes import BadJson, BadValue, first_line, one_line, read_json
from mcp_nb.numbers import is_number
from mcp_nb.records.compare import same_content
from mcp_nb.records.files import read_text, write_whole
from mcp_nb.records.outcome import CAUSES, OUTCOMES, TARGETS
from mcp_nb.records.saved_evaluations import SavedEvaluation
from mcp_nb.records.structured import json_equal
from mcp_nb.records.surrogates import escape_surrogates

if TYPE_CHECKING:
    import pandas as pd

FORMAT = 1  # the value of "mcp_nb_cases": a later format gets a new number, and this one stays readable
# Causes that say what the caller or the machine did, not what the tool does: a replay
# could not reproduce them, so such calls are never written as cases.
UNREPEATABLE = ("cancelled", "worker_lost", "disconnected")
# Causes whose content is the tool's own words (what it returned, the ToolError it raised).
# Other tool errors carry the SDK's text (a validation error quoting pydantic's version, a
# crash's stand-in): the outcome and cause are the regression worth catching there.
OWN_WORDS = ("ok", "raised", "returned")
REPLAYED = "replay"  # the `via` of a replay's calls: the saved cases again, not new ones
# An answer's field that holds a secret (`elicitation.is_secret`) is never written to a file: the
# case names the environment variable its replay reads it from instead (`{"env": "MCP_NB_PASSWORD"}`).
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class CasesError(BadValue):
    """A cases file that cannot be read or checked; the message names the case and the field."""


# -- the format ------------------------------------------------------------------------------

_PATH_STEP = re.compile(r"\.([A-Za-z_][\w-]*)|\[(\d+)\]|\['([^']*)'\]|\[\"([^\"]*)\"\]")


def path_steps(path: str) -> list[str | int]:
    """A JSON path of the simple kind (`$.book.authors[0]`, `$['a key']`) as keys and indexes."""
    if not path.startswith("$"):
        raise BadValue(f"a JSON path starts with $ (as in $.price or $.items[0]), got {path!r}")
    steps: list[str | int] = []
    at = 1
    while at < len(path):
        match = _PATH_STEP.match(path, at)
        if match is None:
            raise BadValue(f"cannot read the JSON path {path!r} from {path[at:]!r} (use .key, [index] or ['key'])")
        key, index, single, double = match.groups()
        steps.append(int(index) if index is not None else next(s for s in (key, single, double) if s is not None))
        at = match.end()
    return steps


class Check(BaseModel):
    """One partial check of a result: the value at `path` (or the whole content text, with no
    path) equals a value, matches a regular expression, or is a number within a tolerance."""

    model_config = ConfigDict(extra="forbid")

    path: str | None = None
    equals: Any = None
    matches: str | None = None
    # A check that no number can pass (NaN, an infinite bound) is refused when it is read.
    approx: float | None = Field(default=None, allow_inf_nan=False)
    tolerance: float = Field(default=0.0, ge=0, allow_inf_nan=False)

    @field_validator("path")
    @classmethod
    def _path(cls, value: str | None) -> str | None:
        if value is not None:
            path_steps(value)
        return value

    @field_validator("matches")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as err:
                raise BadValue(f"not a regular expression ({err})") from None
        return value

    @model_validator(mode="after")
    def _one_kind(self) -> Check:
        kinds = [k for k in ("equals", "matches", "approx") if k in self.model_fields_set]
        if len(kinds) != 1:
            raise BadValue(f"a check has exactly one of equals, matches or approx (this one has {', '.join(kinds) or 'none'})")
        if "tolerance" in self.model_fields_set and kinds != ["approx"]:
            raise BadValue("tolerance goes with approx")
        return self

    def describe(self) -> str:
        where = self.path or "content"
        if "equals" in self.model_fields_set:
            return f"{where} == {json.dumps(self.equals, ensure_ascii=False)}"
        if self.matches is not None:
            return f"{where} matches /{self.matches}/"
        return f"{where} ≈ {self.approx} ± {self.tolerance}"


class Expect(BaseModel):
    """What the case expects: the outcome and cause always; the code of a protocol error or a
    timeout; for a result or a tool error its content, whole or checked in parts."""

    model_config = ConfigDict(extra="forbid")

    outcome: Literal[OUTCOMES]  # type: ignore[valid-type]
    cause: Literal[CAUSES]  # type: ignore[valid-type]
    code: int | None = None
    content: str | None = None
    checks: list[Check] = Field(default_factory=list)


class RetryRule(BaseModel):
    """The call's retry policy, as `mcp_nb.Retry` takes it; a field left out is the policy's default."""

    model_config = ConfigDict(extra="forbid")

    retries: StrictInt | None = Field(default=None, ge=0)
    backoff: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    factor: float | None = Field(default=None, ge=1, allow_inf_nan=False)
    max_backoff: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    jitter: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    on_timeout: StrictBool | None = None
    codes: list[StrictInt] | None = None
    tool_errors: StrictBool | None = None
    force: StrictBool | None = None

    def given(self) -> dict[str, Any]:
        """The fields the file gives (the others stay the policy's defaults)."""
        return self.model_dump(exclude_none=True)


class Asked(BaseModel):
    """A question the server asked during the call and the answer it got; a replay gives the
    same answer to the same question, in the same order."""

    model_config = ConfigDict(extra="forbid")

    message: str
    action: Literal[ACTIONS]  # type: ignore[valid-type]
    content: dict[str, Any] | None = None

    @field_validator("content")
    @classmethod
    def _secrets_named(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        for field, given in (value or {}).items():
            if isinstance(given, dict) and not _env_name(given):
                raise BadValue(
                    f'{field!r}: a secret is written {{"env": "NAME"}}, NAME the environment variable it is read from; '
                    f"got {json.dumps(given, ensure_ascii=False, default=str)}"
                )
        return value

    @model_validator(mode="after")
    def _an_answer(self) -> Asked:
        Answer(self.action, self.content)  # the answer's own checks: content goes with accept only
        return self

    def secrets(self) -> dict[str, str]:
        """The fields read from the environment, and the variable each is read from."""
        return {field: given["env"] for field, given in (self.content or {}).items() if isinstance(given, dict)}

    def answer(self) -> Answer:
        """The answer to give, its secrets read from the environment (all set: see `Replies`)."""
        if self.content is None:
            return Answer(self.action)
        secrets = self.secrets()
        return Answer(self.action, {f: os.environ[secrets[f]] if f in secrets else v for f, v in self.content.items()})


def _env_name(given: dict[str, Any]) -> bool:
    name = given.get("env")
    return set(given) == {"env"} and isinstance(name, str) and _ENV_NAME.fullmatch(name) is not None


class Case(BaseModel):
    """One call, with every option it had, and what it must come back with."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    target: Literal[TARGETS] = "tool"  # type: ignore[valid-type]
    name: str = Field(min_length=1)
    arguments: dict[str, Any] | None = None
    server: str = "kernel"
    timeout: float | None = Field(default=None, gt=0)
    retries: int = Field(default=0, ge=0)  # the retries the call took; without `retry`, the replay allows as many
    retry: RetryRule | None = None
    reset_on_progress: StrictBool = False
    max_timeout: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    elicit: list[Asked] = Field(default_factory=list)
    note: str | None = None  # for the reader: mcp_nb never reads it
    expect: Expect

    @model_validator(mode="after")
    def _options_agree(self) -> Case:
        if self.max_timeout is not None and not self.reset_on_progress:
            raise BadValue(
                "max_timeout goes with reset_on_progress: true (it is the ceiling of a deadline that resets on progress)"
            )
        allowed = self.retry.retries if self.retry is not None else None
        if allowed is not None and self.retries > allowed:
            raise BadValue(
                f"retries ({self.retries}, the retries the call took) is more than retry.retries ({allowed}), the most its policy allows"
            )
        return self

    @field_validator("arguments")
    @classmethod
    def _finite(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            try:
                json.dumps(value, allow_nan=False)  # NaN cannot have come from a sent call
            except TypeError as err:  # a set, an object: given as a dict, not read from a file
                raise BadValue(f"not JSON: {err}") from None
            except RecursionError:
                raise BadValue("not JSON: nested too deeply") from None
        return value


class CaseFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mcp_nb_cases: Literal[1]
    cases: list[Case]
    # Saved evaluations of a model in the loop (`records/saved_evaluations.py`), replayed beside the cases.
    evaluations: list[SavedEvaluation] = Field(default_factory=list)


# -- reading and writing ------------------------------------------------------------------------


def load(source: str | Path | list[Any] | dict[str, Any]) -> list[Case]:
    """The cases of a file (a path), of its decoded JSON, or a list of Cases (returned as is).

    Anything that is not a valid cases file raises CasesError, one line, naming the case and
    the field at fault."""
    if isinstance(source, list) and all(isinstance(c, Case) for c in source):
        return list(source)
    return load_file(source).cases


def load_evaluations(source: str | Path | dict[str, Any]) -> list[SavedEvaluation]:
    """The saved evaluations of a cases file (none in most), checked as `load` checks its cases."""
    return load_file(source).evaluations


def load_file(source: str | Path | list[Any] | dict[str, Any]) -> CaseFile:
    """A whole cases file: its cases and its saved evaluations (CasesError, one line, for a bad one)."""
    where = "the cases"
    if isinstance(source, (str, Path)):
        where = _printable(str(source))
        try:
            text = read_text(source)  # a FIFO or a device is refused, not waited on
        except FileNotFoundError:
            raise CasesError(f"no cases file at {where}") from None
        except (OSError, ValueError) as err:  # a directory, no permission, not UTF-8, a NUL in the path
            raise CasesError(f"cannot read {where}: {_printable(str(err), quoted=False)}") from None
        try:
            data = read_json(text)
        except BadJson as err:
            said = "is not JSON" if err.lineno is not None else "cannot be read as JSON"
            raise CasesError(f"{where} {said}: {err}") from None
    else:
        data = source
    if isinstance(data, list):
        data = {"mcp_nb_cases": FORMAT, "cases": data}
    try:
        found = CaseFile.model_validate(data)
    except ValidationError as err:
        raise CasesError(f"{where}: {_first_error(err, data)}") from None
    seen: dict[str, int] = {}
    for i, case in enumerate(found.cases):
        if case.id in seen:
            raise CasesError(
                f"{where}: case {case.id!r} (number {i + 1}): field id: the same id as case number {seen[case.id] + 1}"
            )
        seen[case.id] = i
    return found


def _printable(text: str, quoted: bool = True) -> str:
    """`text` as it is when it prints on one line; else quoted and escaped (a path of several
    lines is still one path), or, unquoted, in one safe line (`mistakes.one_line`)."""
    if text.isprintable():
        return text
    return repr(text) if quoted else one_line(text)


def _first_error(err: ValidationError, data: Any) -> str:
    errors = err.errors(include_url=False)
    first = errors[0]
    location = list(first["loc"])
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    message = _printable(first["msg"].removeprefix("Value error, "), quoted=False)
    if len(location) >= 2 and location[0] == "cases" and isinstance(location[1], int):
        number = location[1]
        raw = data["cases"][number] if isinstance(data, dict) and isinstance(data.get("cases"), list) else None
        name = raw.get("id") if isinstance(raw, dict) else None
        who = f"case {name!r} (number {number + 1})" if isinstance(name, str) and name else f"case number {number + 1}"
        field = _dotted(location[2:])
        return f"{who}: " + (f"field {field}: " if field else "") + message + more
    return (f"field {_dotted(location)}: " if location else "") + message + more


def _dotted(location: Sequence[str | int]) -> str:
    out = ""
    for part in location:
        # pydantic names the branch of a union or a literal it tried: not a field of the file
        if isinstance(part, str) and (
            part.startswith(("literal[", "function-")) or part in ("str", "int", "float", "dict[str,any]")
        ):
            continue
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            name = _printable(str(part))
            out += f".{name}" if out else name
    return out


def dump(cases: list[Case], evaluations: Sequence[SavedEvaluation] = ()) -> str:
    """The file's text: indented for reading and editing, keys in the documented order."""
    document: dict[str, Any] = {"mcp_nb_cases": FORMAT, "cases": [_plain(case) for case in cases]}
    if evaluations:
        document["evaluations"] = [evaluation.model_dump(exclude_none=True) for evaluation in evaluations]
    # non-ASCII kept for reading, a lone surrogate (no UTF-8 file holds one) as its JSON escape
    return escape_surrogates(json.dumps(document, indent=2, ensure_ascii=False)) + "\n"


def _plain(case: Case) -> dict[str, Any]:
    out = case.model_dump(exclude_defaults=True)
    out.setdefault("target", case.target)
    out.setdefault("server", case.server)
    expect = case.expect.model_dump(exclude_defaults=True)
    expect["checks"] = [c.model_dump(exclude_unset=True) for c in case.expect.checks]
    if not expect["checks"]:
        del expect["checks"]
    out["expect"] = expect
    if case.retry is not None:
        out["retry"] = case.retry.given()
    if case.elicit:
        out["elicit"] = [asked.model_dump(exclude_none=True) for asked in case.elicit]
    order = [
        "id",
        "target",
        "name",
        "arguments",
        "server",
        "timeout",
        "retries",
        "retry",
        "reset_on_progress",
        "max_timeout",
        "elicit",
        "note",
        "expect",
    ]
    return {key: out[key] for key in order if key in out}


def save(cases: list[Case], path: str | os.PathLike[str], evaluations: Sequence[SavedEvaluation] = ()) -> Path:
    """Write the cases file (and the evaluations saved beside its cases), whole or not at all
    (`records/files.py`): a crash or a second writer never leaves half a file."""
    path = Path(path)
    text = dump(cases, evaluations)
    try:
        write_whole(path, text)
    except OSError as err:
        raise CasesError(f"cannot write {_printable(str(path))}: {_printable(str(err.strerror or err), quoted=False)}") from None
    except ValueError as err:  # a NUL in the path
        raise CasesError(f"cannot write {_printable(str(path))}: {err}") from None
    return path


# -- from the history --------------------------------------------------------------------------


def from_frame(
    frame: pd.DataFrame,
    *,
    last: int | None = None,
    name: str | None = None,
    server: str | None = None,
    replayed: bool = True,
    left_out: list[LeftOut] | None = None,
) -> list[Case]:
    """One case per call of the history's frame, by its final attempt (a retried call is
    what its caller finally got, and the case says how many retries that took), with every
    option the call had: its retry policy, a deadline reset on progress, and the answers to
    the server's questions (every attempt's, in order; a secret named, never written).

    `last`: only the latest N calls; `name`: a glob on the tool's name or the URI (`get_*`);
    `server`: only calls to that server; `replayed=False`: not the calls a replay made (the
    history's own `to_cases` leaves them out by default; given rows, as the panel's pinned
    calls, are saved as given). Calls an outside client made (`via` http or stdio)
    are cases like any other: the tool answered them, and replaying sends the same request.
    Calls whose cause is the caller's or the machine's doing (cancelled, disconnected, a lost
    worker) are left out: nothing about the tool would repeat them. So is a call no case can
    hold (arguments JSON cannot carry, an empty name, both sent by an outside client): each is
    added to `left_out`, when given, with the reason.
    """
    if last is not None and (not isinstance(last, int) or isinstance(last, bool) or last < 1):
        raise BadValue(f"last must be a whole number >= 1, got {last!r}")
    if frame.empty:
        return []
    calls = call_keys(frame)
    ordered = frame.sort_values([*calls, "attempt"], kind="stable")
    final = ~ordered.duplicated(calls, keep="last")
    asked_before = _questions_before(ordered[~final], calls)
    finals = ordered[final]
    finals = finals[~finals["cause"].astype(str).isin(UNREPEATABLE)]
    if not replayed and "via" in finals:
        finals = finals[finals["via"].astype(str) != REPLAYED]
    if server is not None:
        finals = finals[finals["server"].astype(str) == server]
    if name is not None:
        finals = finals[[fnmatch.fnmatchcase(str(n), name) for n in finals["name"]]]
    if last is not None:
        finals = finals.tail(last)
    counts: dict[str, int] = {}
    cases = []
    row: Any  # a call's row: its columns as attributes
    for row in finals.itertuples(index=False):
        key = str(row.name)
        try:
            case = case_of(row, f"{key}-{counts.get(key, 0) + 1}", asked_before.get(_call_of(row, calls), ()))
        except ValueError as err:  # a call no case can hold: said, and the others are still saved
            if left_out is not None:
                left_out.append(LeftOut(int(row.call_id), str(row.target), key, _why(err)))
            continue
        counts[key] = counts.get(key, 0) + 1
        cases.append(case)
    return cases


class LeftOut(NamedTuple):
    """A recorded call that no case can hold (what an outside client sent, say), and why."""

    call_id: int
    target: str
    name: str
    why: str

    def __str__(self) -> str:
        return f"call #{self.call_id} ({self.target} {self.name!r}): {self.why}"


class CallsLeftOut(UserWarning):
    """Some recorded calls could not be saved as cases; the message says which and why."""


def _why(err: ValueError) -> str:
    if isinstance(err, ValidationError):
        return _first_error(err, None)
    return first_line(err)


def call_keys(frame: pd.DataFrame) -> list[str]:
    """The columns that tell one call from another: its id, and its session where the frame has
    one (a history file's kernels each number their calls from 1)."""
    return ["session", "call_id"] if "session" in frame.columns else ["call_id"]


def _call_of(row: Any, calls: list[str]) -> tuple[Any, ...]:
    return tuple(str(getattr(row, c)) if c == "session" else int(getattr(row, c)) for c in calls)


def _questions_before(attempts: pd.DataFrame, calls: list[str]) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    """The questions asked during the attempts before each call's final one, by call: a
    retried call's replay is asked them again, and answers them as the call did."""
    asked: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    if "elicitations" not in attempts:
        return asked
    for row, questions in zip(attempts[calls].itertuples(index=False), attempts["elicitations"]):
        if isinstance(questions, (list, tuple)) and questions:
            asked.setdefault(_call_of(row, calls), []).extend(questions)
    return asked


def case_of(row: Any, case_id: str, asked_before: Any = ()) -> Case:
    """The case for one row of the history's frame (or anything with its attributes); the
    questions of the call's earlier attempts, when it was retried, in `asked_before`."""
    outcome, cause = str(row.outcome), str(row.cause)
    code = None if row.code is None or _missing(row.code) else int(row.code)
    expect: dict[str, Any] = {"outcome": outcome, "cause": cause}
    if outcome in ("protocol_error", "timeout") and code is not None:
        expect["code"] = code
    if cause in OWN_WORDS and row.content is not None and not _missing(row.content):
        expect["content"] = str(row.content)
    attempts = int(row.attempt) if not _missing(row.attempt) else 1
    return Case(
        id=case_id,
        target=str(row.target),
        name=str(row.name),
        arguments=row.arguments if isinstance(row.arguments, dict) else None,
        server=str(row.server) if row.server is not None and not _missing(row.server) else "kernel",
        timeout=float(row.timeout_s) if not _missing(row.timeout_s) and row.timeout_s > 0 else None,
        retries=attempts - 1,
        **_options(row, [*asked_before, *(getattr(row, "elicitations", None) or ())]),
        expect=Expect(**expect),
    )


def _options(row: Any, questions: list[dict[str, Any]]) -> dict[str, Any]:
    """The call's options a case keeps, from its row: what made the call come back as it did."""
    options: dict[str, Any] = {}
    retry = getattr(row, "retry", None)
    if isinstance(retry, dict):
        options["retry"] = RetryRule(**retry)
    ceiling: Any = getattr(row, "max_timeout_s", None)
    if not _missing(ceiling):
        options["reset_on_progress"], options["max_timeout"] = True, float(ceiling)
    if questions:
        options["elicit"] = [_asked(question) for question in questions]
    return options


def _asked(question: dict[str, Any]) -> Asked:
    """A recorded question as a case keeps it: an answer's secret fields named, never written."""
    content = question.get("content")
    if content is not None:
        content = {f: {"env": secret_variable(f)} if is_secret(f, question.get("schema")) else v for f, v in content.items()}
    return Asked(message=str(question.get("message") or ""), action=question["action"], content=content)


def secret_variable(field: str) -> str:
    """The environment variable a case's replay reads a secret answer from: MCP_NB_ and the field's name."""
    return "MCP_NB_" + (re.sub(r"[^A-Za-z0-9]+", "_", field).strip("_").upper() or "SECRET")


def _missing(value: Any) -> bool:
    """None, NaN or pandas' NA (a frame's empty cell); a container is never missing."""
    if value is None:
        return True
    try:
        return bool(lib.pandas.isna(value))
    except (TypeError, ValueError):
        return False


# -- answering a replay's questions ------------------------------------------------------------


class Replies:
    """The answers a case recorded, given in order to the questions its replay is asked (across
    its attempts, as the call was asked them). A question that differs from the recorded one, or
    one more than recorded, is cancelled at once, never waited on; `why()` says so afterwards."""

    def __init__(self, case: Case) -> None:
        for number, asked in enumerate(case.elicit, 1):
            for field, variable in asked.secrets().items():
                if variable not in os.environ:
                    raise BadValue(
                        f"answer {number}'s field {field!r} is read from the environment variable {variable}, which is not set"
                    )
        self.recorded = case.elicit
        self.asked: list[str] = []
        self.differed: list[str] = []

    async def answer(self, message: str, schema: Any) -> Answer:
        number = len(self.asked) + 1
        self.asked.append(message)
        if number > len(self.recorded):
            self.differed.append(f"question {number} {message!r} is not in the case (cancelled)")
            return Answer.cancel()
        expected = self.recorded[number - 1]
        if message != expected.message:
            self.differed.append(f"question {number}: expected {expected.message!r}, got {message!r} (cancelled)")
            return Answer.cancel()
        return expected.answer()

    def why(self) -> str:
        """How the questions differed from the recorded ones ("" when they did not)."""
        unasked = [
            f"question {number} {asked.message!r} was not asked"
            for number, asked in enumerate(self.recorded[len(self.asked) :], len(self.asked) + 1)
        ]
        return "; ".join([*self.differed, *unasked])


# -- judging ----------------------------------------------------------------------------------


def judge(case: Case, got: Any) -> str:
    """Why `got` (an Outcome) does not meet the case, or "" when it does.

    The outcome and cause come first (if they differ, nothing else is worth comparing),
    then the code, the content (as a diff), and each partial check."""
    expect = case.expect
    if got.outcome != expect.outcome or got.cause != expect.cause:
        said = got.content if got.content is not None else got.message
        return f"expected {expect.outcome} ({expect.cause}), got {got.outcome} ({got.cause})" + (
            f": {_line(said)}" if said else ""
        )
    reasons = []
    if expect.code is not None and got.code != expect.code:
        reasons.append(f"code: expected {expect.code}, got {got.code}")
    if expect.content is not None and not same_content(expect.content, got.content):
        reasons.append(content_diff(expect.content, got.content))
    for check in expect.checks:
        failed = _check(check, got)
        if failed:
            reasons.append(failed)
    return "; ".join(reasons)


def content_diff(expected: str, got: str | None) -> str:
    """A short readable difference: one line each way, or a unified diff of the lines."""
    if got is None:
        return f"content: expected {_line(expected)!r}, got no content"
    if "\n" not in expected and "\n" not in got:
        return f"content: expected {expected!r}, got {got!r}"
    lines = difflib.unified_diff(expected.splitlines(), got.splitlines(), "expected", "got", lineterm="", n=1)
    return "content differs:\n" + "\n".join(lines)


def _check(check: Check, got: Any) -> str:
    if check.path is None:
        value: Any = got.content
    else:
        document = got.structured_content
        if document is None:
            try:
                document = read_json(got.content) if got.content is not None else None
            except BadJson:  # whatever the server sent: a check of it fails, never the replay
                return f"{check.path}: the result has no structured content, and its content is not JSON"
        found, value = _at(document, path_steps(check.path))
        if not found:
            return f"{check.path}: not in the result"
    if "equals" in check.model_fields_set:
        return (
            ""
            if json_equal(value, check.equals)
            else f"{check.describe()}: got {json.dumps(value, ensure_ascii=False, default=str)}"
        )
    if check.matches is not None:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        return "" if re.search(check.matches, text) else f"{check.describe()}: got {_line(text)!r}"
    number = _number(value)
    if number is None:
        return f"{check.describe()}: got {_line(repr(value))}, not a number"
    assert check.approx is not None
    within = abs(number - Decimal(check.approx)) <= Decimal(check.tolerance)
    return "" if within else f"{check.describe()}: got {_line(value if isinstance(value, str) else _digits(value))}"


def _digits(value: Any) -> str:
    """A number as a reader takes it in: as Python writes it, or an integer of more than 20 digits
    in scientific notation (one of 5,000 digits has no other text Python writes)."""
    if isinstance(value, int) and not -(10**20) < value < 10**20:
        return format(Decimal(value), ".6e")
    return repr(value)


def _at(document: Any, steps: list[str | int]) -> tuple[bool, Any]:
    for step in steps:
        if isinstance(step, int) and isinstance(document, list) and -len(document) <= step < len(document):
            document = document[step]
        elif isinstance(step, str) and isinstance(document, dict) and step in document:
            document = document[step]
        else:
            return False, None
    return True, document


# Text that is a JSON number ("12.5", "-3e8"): what an approx check reads in a string. Not what
# Python's float() also takes ("nan", "Infinity", " 12 ", "1_000"): those are no numbers in JSON.
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def _number(value: Any) -> Decimal | None:
    """The number an approx check compares, exactly (a Decimal: an int of 400 digits has no float),
    or None when `value` is no number JSON carries, nor text that is one."""
    if isinstance(value, str):
        return Decimal(value) if len(value) <= _LONGEST_NUMBER and _JSON_NUMBER.fullmatch(value) else None
    if not is_number(value):
        return None
    try:
        return Decimal(value)
    except (TypeError, ValueError, ArithmeticError):  # a real type of numpy's or another library's
        return Decimal(float(value))


_LONGEST_NUMBER = 5000  # characters of a number in text an approx check reads (Decimal's cost grows with them)


def _line(text: str, limit: int = 120) -> str:
    first = " ".join(str(text).split())
    return first if len(first) <= limit else first[: limit - 1] + "…"
