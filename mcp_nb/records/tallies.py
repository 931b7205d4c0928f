"""The history's tallies, computed from its frame: counts per tool and outcome, the sessions side by
side, and which tools keep failing. Nothing here is stored: each is a view of `History.to_frame()`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from mcp_nb import libraries as lib
from mcp_nb.mistakes import BadValue
from mcp_nb.records.cases import call_keys
from mcp_nb.records.outcome import OUTCOMES

if TYPE_CHECKING:
    import pandas as pd


def text_index(index: Any, names: list[str]) -> Any:
    """The (server, target, name) rows of a table as text. pandas makes text Arrow's, which cannot
    hold a lone surrogate (a name an outside peer sent); then the levels stay Python's str."""
    pd = lib.pandas
    rows = [tuple(map(str, row)) for row in index]
    try:
        return pd.MultiIndex.from_tuples(rows, names=names)
    except UnicodeEncodeError:
        levels = [pd.Index([row[i] for row in rows], dtype=object) for i in range(len(names))]
        return pd.MultiIndex.from_arrays(levels, names=names)


def summarize(frame: pd.DataFrame) -> pd.DataFrame:
    """Counts per (server, target, name) × outcome, every outcome type a column, plus totals."""
    pd = lib.pandas

    keys = ["server", "target", "name"]
    counts = (
        frame.groupby([*keys, "outcome"], observed=True)
        .size()
        .unstack("outcome", fill_value=0)
        .reindex(columns=list(OUTCOMES), fill_value=0)
    )
    counts.columns = pd.Index(list(OUTCOMES), name="outcome")
    counts.index = text_index(counts.index, keys)
    counts["total"] = counts.sum(axis=1)
    totals = pd.DataFrame([counts.sum(axis=0)], index=pd.MultiIndex.from_tuples([("total", "", "")], names=keys))
    return pd.concat([counts, totals]).astype("int64")


def by_session(frame: pd.DataFrame) -> pd.DataFrame:
    """The sessions side by side: one row per (server, target, name), and for each session (in the
    order they began) its calls per outcome, their total, and the median and 90th-percentile
    duration in ms. A tool a session did not call has zeros and empty durations there."""
    pd = lib.pandas

    keys = ["server", "target", "name"]
    measures = [*OUTCOMES, "total", "median_ms", "p90_ms"]
    sessions = [str(s) for s in frame["session"].cat.categories if (frame["session"] == s).any()] if len(frame) else []
    if not sessions:
        return pd.DataFrame(columns=pd.MultiIndex.from_product([[], measures], names=["session", ""]))
    grouped = frame.groupby(["session", *keys], observed=True)
    counts = grouped["outcome"].value_counts().unstack("outcome", fill_value=0).reindex(columns=list(OUTCOMES), fill_value=0)
    counts["total"] = counts.sum(axis=1)
    durations = grouped["duration_ms"]
    counts["median_ms"] = durations.median()
    counts["p90_ms"] = durations.quantile(0.9)
    table = cast("pd.DataFrame", counts.unstack("session"))  # (measure, session) columns: a frame, its index being a MultiIndex
    table = table.swaplevel(axis=1).reindex(columns=pd.MultiIndex.from_product([sessions, measures]))
    for session in sessions:
        for outcome in [*OUTCOMES, "total"]:
            table[(session, outcome)] = table[(session, outcome)].fillna(0).astype("int64")
    table.columns.names = ["session", ""]
    table.index = text_index(table.index, keys)
    return table


def health(frame: pd.DataFrame, last: int = 20) -> pd.DataFrame:
    """Per (server, target, name), over its latest `last` calls: calls, attempts, failures,
    failure_rate, and the latest outcome and cause; the worst first.

    A call is counted once, by its final attempt (so a call that succeeded after two timeouts
    is a success), and `attempts` counts the attempts those calls took. A failure is a call
    whose final attempt is anything but `result`.
    """
    pd = lib.pandas

    if not isinstance(last, int) or isinstance(last, bool) or last < 1:
        raise BadValue(f"last must be a whole number >= 1, got {last!r}")
    keys = ["server", "target", "name"]
    columns = ["calls", "attempts", "failures", "failure_rate", "latest_outcome", "latest_cause"]
    if frame.empty:
        return pd.DataFrame(columns=keys + columns).set_index(keys)
    # Latest by start (call ids are given out as calls start), not by arrival: concurrent
    # calls finish in any order, and the view should not depend on it.
    calls = call_keys(frame)
    ordered = frame.sort_values([*calls, "attempt"], kind="stable")
    by_call = ordered.groupby(calls, sort=False, observed=True)
    finals = by_call.tail(1).assign(attempts=by_call["attempt"].transform("size"))
    recent = finals.groupby(keys, observed=True, sort=False).tail(last)
    failed = recent["outcome"].astype(str) != "result"
    grouped = recent.assign(failed=failed).groupby(keys, observed=True)
    table = pd.DataFrame(
        {
            "calls": grouped.size(),
            "attempts": grouped["attempts"].sum().astype("int64"),
            "failures": grouped["failed"].sum().astype("int64"),
            "latest_outcome": grouped["outcome"].last().astype(str),
            "latest_cause": grouped["cause"].last().astype(str),
        }
    )
    table["failure_rate"] = table["failures"] / table["calls"]
    table.index = text_index(table.index, keys)
    table = table[columns]
    return table.sort_values(["failure_rate", "failures"], ascending=False, kind="stable")
