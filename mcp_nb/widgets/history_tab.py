"""The history tab: the latest calls, how each name's calls ended, and calls pinned as cases.

Computed from `History.to_frame()`, like every other view of the history: the panel
keeps no second store. A frame is not free on a long history, so the tab is rebuilt
only while it is on screen, at most a few times a second, on the kernel's thread after
a short delay (never on mcp_nb's loop thread, where it would hold up calls); while
hidden it only remembers that it is out of date.

With Pin on, choosing a call pins it (again: unpins it) instead of loading it; the pinned
calls are saved as a cases file (`mcp_nb.cases`), as `%mcp_save_cases` saves the history.
Two pinned calls of the same tool (or resource, or prompt) can be compared: where their
arguments and their answers differ, by structure (`records/compare.py`).
"""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Callable
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

import ipywidgets as w

from mcp_nb import libraries as lib
from mcp_nb.records.cases import CasesError, from_frame, save
from mcp_nb.records.compare import outcome_differences
from mcp_nb.records.outcome import OUTCOMES, Outcome
from mcp_nb.views.surface import comparison_html
from mcp_nb.views.theme import CELL, ERROR, INKS, MUTED, badge, border, compact_json
from mcp_nb.widgets.callbacks import Guard
from mcp_nb.widgets.form import close_tree
from mcp_nb.widgets.style import note_html

LATEST = 50  # rows in the list of calls
COUNTED = ["call_id", "target", "name", "outcome", "session"]  # the columns of every call the tab reads
PIN = "\U0001f4cc "  # before a pinned call's line
DEBOUNCE_S = 0.3


class HistoryTab:
    """The widget of the tab, and `refresh()` from the history's frame."""

    def __init__(self, history, choose: Callable[[Any], None], guard: Guard) -> None:
        self.history = history
        self.choose = choose  # called with the chosen call (a row of the frame, as attributes)
        self.guard = guard
        self.summary = w.HTML()
        self.summary.add_class("mcp-nb-history-summary")
        self.counts = w.HTML()
        self.counts.add_class("mcp-nb-history-counts")
        self.calls = w.Select(options=[], value=None, rows=12, layout=w.Layout(width="auto"))
        self.calls.add_class("mcp-nb-history-calls")
        self.calls.observe(guard("choosing a call from the history", self._chosen), "value")
        self.pinning = w.ToggleButton(
            value=False,
            description="Pin",
            icon="thumb-tack",
            layout=w.Layout(width="auto"),
            tooltip="while on, choosing a call pins it as a regression case (choosing it again unpins it)",
        )
        self.pinning.add_class("mcp-nb-pinning")
        self.pinned: dict[Any, None] = {}  # calls (`call_key`), in the order they were pinned
        self.cases_path = w.Text(value="cases.json", placeholder="cases.json", layout=w.Layout(width="220px"))
        self.cases_path.add_class("mcp-nb-cases-path")
        self.save_button = w.Button(description="Save pinned as cases", disabled=True, layout=w.Layout(width="auto"))
        self.save_button.add_class("mcp-nb-save-cases")
        self.save_button.on_click(guard.settled("saving the pinned calls", self.save_pinned))  # to the path as typed
        guard.settle.watch(self.cases_path)
        self.cases_status = w.HTML()
        self.cases_status.add_class("mcp-nb-cases-status")
        self.widget = w.VBox(
            [
                self.summary,
                self.counts,
                w.HTML(note_html("The latest calls, newest first. Choose one to load its arguments into the form.")),
                self.calls,
                w.HBox([self.pinning, self.cases_path, self.save_button], layout=w.Layout(align_items="center")),
                self.cases_status,
            ],
            layout=w.Layout(width="100%", padding="4px 2px"),
        )
        self.widget.add_class("mcp-nb-history")
        # Two pinned calls of one tool, compared (added below the rest of the tab).
        self.compare_button = w.Button(
            description="Compare pinned",
            disabled=True,
            layout=w.Layout(width="auto"),
            tooltip="pin two calls of the same tool, resource or prompt to see where they differ",
        )
        self.compare_button.add_class("mcp-nb-compare-pinned")
        self.compare_button.on_click(guard.settled("comparing the pinned calls", self.compare_pinned))
        self.comparison = w.HTML()
        self.comparison.add_class("mcp-nb-comparison")
        self.widget.children = (*self.widget.children, self.compare_button, self.comparison)
        self.visible = False
        self.stale = True
        self._rows: dict[int, Any] = {}
        self._frame_sessions: Any = None  # the frame shown last, which says whether it holds calls of several sessions
        self._cancel_timer: Callable[[], None] | None = None  # set while a rebuild is due
        self._quiet = False
        self.on_count: Callable[[int], None] | None = None  # the panel shows the count in the tab title

    # -- when to rebuild ---------------------------------------------------------------------------

    def recorded(self) -> None:
        """A call was recorded: rebuild soon if shown. However many calls end meanwhile, one
        rebuild is due at a time."""
        self.stale = True
        if self._cancel_timer is None:
            self._cancel_timer = self.guard.thread.later(DEBOUNCE_S, self._due)

    def _due(self) -> None:
        self._cancel_timer = None
        self.guard.run("refreshing the history", self._rebuild)

    def _rebuild(self) -> None:
        if self.on_count is not None:
            self.on_count(len(self.history))
        if self.visible:
            self.refresh()

    def show(self, visible: bool) -> None:
        self.visible = visible
        if visible and self.stale:
            self.refresh()

    def close(self) -> None:
        if self._cancel_timer is not None:
            self._cancel_timer()
            self._cancel_timer = None
        close_tree(self.widget)

    # -- the view ------------------------------------------------------------------------------

    def refresh(self) -> None:
        self.stale = False
        # Only what the tab shows: the counts' columns of every call, and the latest calls whole (a
        # history file holds millions, read from disk for the counts' columns alone).
        frame = self.history.to_frame(columns=COUNTED)
        self.summary.value = _summary_html(frame)
        self.counts.value = counts_html(frame)
        latest = self.history.to_frame(last=LATEST).iloc[::-1]
        # Keyed by row, not call id: the attempts of a retried call share its id.
        rows = dict(zip(latest.index.tolist(), latest.itertuples(index=False)))
        options = [((PIN if call_key(r, frame) in self.pinned else "") + call_label(r), row) for row, r in rows.items()]
        self._rows = rows
        self._frame_sessions = frame
        if self.on_count is not None:
            self.on_count(len(frame))
        self._quiet = True  # replacing the options must not read as the user choosing a row
        try:
            self.calls.options = options
            self.calls.value = None
        finally:
            self._quiet = False

    def _chosen(self, change) -> None:
        chosen = change["new"]
        if self._quiet or chosen is None:
            return
        row = self._rows.get(chosen)
        if row is None:
            return
        if self.pinning.value:
            self.pin(call_key(row, self._frame_sessions))
            return
        self.choose(as_call(row))
        self.clear_choice()

    # -- pinned calls, saved as cases ------------------------------------------------------------

    def pin(self, call_id: Any) -> None:
        """Pin a call as a case, or unpin it if it is pinned (its id; with the calls of several
        sessions, as a reopened history file has, its (session, id): `call_key`)."""
        if call_id in self.pinned:
            del self.pinned[call_id]
        else:
            self.pinned[call_id] = None
        count = len(self.pinned)
        self.save_button.disabled = not count
        self.save_button.description = f"Save {count} pinned as cases" if count else "Save pinned as cases"
        self.cases_status.value = ""
        self.refresh()
        self.compare_button.disabled = self.comparable() is None

    def comparable(self) -> pd.DataFrame | None:
        """The final attempts of the two pinned calls, when exactly two are pinned and they went
        to the same tool (or resource, or prompt) of the same server; else None."""
        if len(self.pinned) != 2:
            return None
        frame = self.history.to_frame()
        chosen = frame[pinned_rows(frame, self.pinned)]
        keys = ["session", "call_id"] if several_sessions(frame) else ["call_id"]
        finals = chosen[~chosen[keys].duplicated(keep="last")]
        if len(finals) != 2 or finals[["server", "target", "name"]].astype(str).drop_duplicates().shape[0] != 1:
            return None
        return finals

    def compare_pinned(self) -> None:
        """Show where the two pinned calls differ: arguments, how each ended, its answer."""
        finals = self.comparable()
        if finals is None:
            self.comparison.value = (
                f'<span style="{ERROR.text}">pin two calls of the same tool, resource or prompt to compare them</span>'
            )
            return
        first, second = (as_call(r) for r in finals.itertuples(index=False))
        self.comparison.value = comparison_html(first, second, outcome_differences(first, second, arguments=True))

    def save_pinned(self) -> None:
        """Write the pinned calls to the cases file named in the box (one case per call, by its final attempt)."""
        frame = self.history.to_frame()
        chosen = frame[pinned_rows(frame, self.pinned)]  # the cases come in the order the calls started
        path = self.cases_path.value.strip()
        try:
            if not path:
                raise CasesError("name the cases file to write (cases.json, say)")
            left_out: list = []
            cases = save_cases(chosen, path, left_out)
        except CasesError as err:
            self.cases_status.value = f'<span style="{ERROR.text}">{html.escape(str(err))}</span>'
            return
        left = len(self.pinned) - len(cases) - len(left_out)
        skipped = f" ({left} cancelled or disconnected left out: a replay could not repeat them)" if left else ""
        skipped += "".join(f"; left out {call}" for call in left_out)
        self.cases_status.value = (
            f'<span style="{MUTED}">saved {len(cases)} case{"s" if len(cases) != 1 else ""} to '
            f"<code>{html.escape(path)}</code>{html.escape(skipped)}</span>"
        )

    def clear_choice(self) -> None:
        """Clear the chosen row, so choosing the same call again loads it again."""
        if self.calls.value is None:
            return
        self._quiet = True
        try:
            self.calls.value = None
        finally:
            self._quiet = False


def several_sessions(frame: Any) -> bool:
    """Whether `frame` holds the calls of more than one session (a reopened history file's kernels,
    which each number their calls from 1)."""
    return frame is not None and "session" in frame.columns and frame["session"].nunique() > 1


def call_key(r, frame: Any = None) -> Any:
    """What tells a call of the tab apart: its id; with several sessions shown, (session, id)."""
    return (str(r.session), int(r.call_id)) if several_sessions(frame) else int(r.call_id)


def pinned_rows(frame: pd.DataFrame, pinned: dict) -> Any:
    """The rows of `frame` whose calls are pinned (by `call_key`)."""
    keys = list(pinned)
    if not several_sessions(frame):
        return frame["call_id"].isin([k[1] if isinstance(k, tuple) else k for k in keys])
    wanted = lib.pandas.MultiIndex.from_tuples([k if isinstance(k, tuple) else (None, k) for k in keys] or [(None, -1)])
    return lib.pandas.MultiIndex.from_arrays([frame["session"].astype(str), frame["call_id"]]).isin(wanted)


def save_cases(frame: pd.DataFrame, path: str, left_out: list | None = None) -> list:
    """The calls of `frame` written as cases to `path`; the cases written (the calls no case
    can hold are added to `left_out`, with why)."""
    cases = from_frame(frame, left_out=left_out)
    save(cases, path)
    return cases


def call_label(r) -> str:
    """One line per call in a monospace list: id, time, duration, outcome (cause), target, name, arguments.

    The columns of fixed width come first; the name and the arguments, as long as they
    are, come last, so a narrow list cuts off only the end of the arguments.
    """
    when = r.started_at.tz_convert(None).strftime("%H:%M:%S") if lib.pandas.notna(r.started_at) else "--:--:--"
    args = "" if r.target == "resource" or r.arguments is None else compact_json(r.arguments, 48)
    what = f"{r.outcome} ({r.cause})"
    attempt = getattr(r, "attempt", 1)
    call = f"#{r.call_id}" + (f".{attempt}" if attempt and attempt > 1 else "")
    # An <option> collapses runs of spaces: pad with no-break spaces to keep the columns.
    took = f"{r.duration_ms:,.1f} ms"
    # A column a value outgrows (a call's id past 99,999, "protocol_error (invalid_arguments)")
    # still ends in a space: the next column never joins it.
    head = f"{call:<6} {when} {took:>11}  {what:<33} {r.target:<9}".replace(" ", "\u00a0")
    server = str(getattr(r, "server", None) or "kernel")
    where = "" if server == "kernel" else f"@{server}"
    via = str(getattr(r, "via", "kernel"))
    sender = "" if via == "kernel" else f"  ← {via}" + (f" {r.client}" if isinstance(getattr(r, "client", None), str) else "")
    return f"{head}{r.name}{where} {args}".rstrip() + sender


def _na(value: Any) -> Any:
    try:
        return None if value is None or lib.pandas.isna(value) else value
    except (TypeError, ValueError):  # containers: pd.isna answers element-wise
        return value


class PastCall(SimpleNamespace):
    """A call read back from the history's frame, with the attributes of an `Outcome`.

    The frame's columns give the values; an `Outcome` field without a column takes its
    default, and any other attribute reads None, so views written for `Outcome` keep
    working as it grows.
    """

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return None


_OUTCOME_DEFAULTS = {f.name: f.default for f in dataclasses.fields(Outcome) if f.default is not dataclasses.MISSING}


def as_call(r) -> PastCall:
    """A row of the frame as a `PastCall`, for `outcome_html` and for loading the form."""
    fields = dict(_OUTCOME_DEFAULTS)
    fields.update({name: _na(getattr(r, name)) for name in r._fields})
    for name in ("target", "name", "outcome", "cause", "server_fate", "fate_outcome", "fate_cause"):
        if fields.get(name) is not None:
            fields[name] = str(fields[name])
    if fields.get("code") is not None:
        fields["code"] = int(fields["code"])
    if fields.get("is_error") is not None:
        fields["is_error"] = bool(fields["is_error"])
    fields["server_logs"] = tuple(fields.get("server_logs") or ())
    return PastCall(**fields)


def _summary_html(frame: pd.DataFrame) -> str:
    if frame.empty:
        return f'<div style="{MUTED}">No calls yet: call something from the Call tab, or from any cell.</div>'
    counts = frame["outcome"].value_counts()
    parts = " ".join(f"{badge(o)} {int(counts.get(o, 0))}" for o in OUTCOMES)
    return f"<div><b>{len(frame)} call{'s' if len(frame) != 1 else ''}</b> &nbsp; {parts}</div>"


def counts_html(frame: pd.DataFrame) -> str:
    """Outcome counts per (target, name), busiest first; every outcome type is a column."""
    if frame.empty:
        return ""
    table = (
        frame.groupby(["target", "name", "outcome"], observed=True)
        .size()
        .unstack("outcome", fill_value=0)
        .reindex(columns=list(OUTCOMES), fill_value=0)
    )
    table["total"] = table.sum(axis=1)
    table = table.sort_values("total", ascending=False, kind="stable")
    line = border("-top")
    td = f'style="{CELL};text-align:right;{line}"'
    head = "".join(f'<th style="{CELL};text-align:right">{badge(o)}</th>' for o in OUTCOMES)
    body = []
    for (target, name), row in table.iterrows():
        # a count in its outcome's ink, a zero muted
        looks = {o: f"{INKS[o].text};font-weight:600" if row[o] else MUTED for o in OUTCOMES}
        cells = "".join(f'<td {td}><span style="{looks[o]}">{int(row[o])}</span></td>' for o in OUTCOMES)
        body.append(
            f'<tr><td style="{CELL};padding-left:0;{line}"><span style="{MUTED}">{html.escape(str(target))}</span></td>'
            f'<td style="{CELL};padding-left:0;{line}"><code>{html.escape(str(name))}</code></td>{cells}'
            f"<td {td}><b>{int(row['total'])}</b></td></tr>"
        )
    return (
        f'<table class="mcp-nb-counts" style="border-collapse:collapse;font-size:0.9em;margin:6px 0">'
        f'<thead><tr><th style="text-align:left;{CELL};padding-left:0">target</th>'
        f'<th style="text-align:left;{CELL};padding-left:0">name</th>{head}<th style="{CELL};text-align:right">total</th></tr></thead><tbody>{"".join(body)}</tbody></table>'
    )
