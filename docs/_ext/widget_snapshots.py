"""A notebook's progress bars, drawn from their stored state, for a site read offline.

In a stored notebook a widget's output is only a reference to its model; a web page draws
it with ipywidgets' JavaScript, which MyST-NB loads from a CDN. Offline, or where the CDN
is blocked, the reader sees an empty block where `mcp_nb.sweep` showed its progress. A
progress bar (tqdm's: a row of an HTML label, a progress bar and another label) has nothing
left to interact with once its cell ended, so it is drawn here from the last state stored
in the notebook, as plain HTML the page shows without any script. A widget that is not
such a row keeps its live view.
"""

from __future__ import annotations

import html
import json
from typing import Any

VIEW = "application/vnd.jupyter.widget-view+json"
STATE = "application/vnd.jupyter.widget-state+json"
ROWS = {"HBoxModel", "VBoxModel", "BoxModel"}
BARS = {"FloatProgressModel", "IntProgressModel"}


def _part(model: dict[str, Any]) -> str | None:
    """One child of the row as HTML, or None when it is not a label or a bar."""
    name, state = model.get("model_name"), model.get("state", {})
    if name in ("HTMLModel", "HTMLMathModel"):
        return f'<span class="widget-snapshot-text">{state.get("value", "")}</span>'  # the model's value is HTML
    if name == "LabelModel":
        return f'<span class="widget-snapshot-text">{html.escape(str(state.get("value", "")))}</span>'
    if name in BARS:
        style = html.escape(state.get("bar_style") or "plain")
        low, high, value = state.get("min", 0), state.get("max", 100), state.get("value", 0)
        return (
            f'<progress class="widget-snapshot-bar widget-snapshot-{style}" value="{value - low}" max="{high - low}">'
            f"{html.escape(str(value))} of {html.escape(str(high))}</progress>"
        )
    return None


def snapshot(model_id: str, models: dict[str, Any]) -> str | None:
    """The HTML of a row of labels and bars as last stored, or None for any other widget."""
    row = models.get(model_id, {})
    if row.get("model_name") not in ROWS:
        return None
    parts = []
    for child in row.get("state", {}).get("children", []):
        part = _part(models.get(str(child).removeprefix("IPY_MODEL_"), {}))
        if part is None:
            return None
        parts.append(part)
    return f'<div class="widget-snapshot">{"".join(parts)}</div>' if parts else None


def draw_progress_bars(notebook_json: str) -> str:
    """The notebook with each progress bar's output replaced by its snapshot (unchanged if it has none)."""
    notebook = json.loads(notebook_json)
    models = notebook.get("metadata", {}).get("widgets", {}).get(STATE, {}).get("state", {})
    if not models:
        return notebook_json
    live = 0
    for cell in notebook.get("cells", []):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if VIEW not in data:
                continue
            drawn = snapshot(data[VIEW].get("model_id", ""), models)
            if drawn is None:
                live += 1
            else:
                output["data"] = {"text/html": drawn}  # its text/plain is the bar as it started: 0%
    if not live:  # nothing left for ipywidgets' scripts to draw: the page loads none
        del notebook["metadata"]["widgets"]
    return json.dumps(notebook)


def on_source_read(app, docname: str, source: list[str]) -> None:
    if str(app.env.doc2path(docname)).endswith(".ipynb"):
        source[0] = draw_progress_bars(source[0])


def setup(app):
    app.connect("source-read", on_source_read)
    return {"parallel_read_safe": True}
