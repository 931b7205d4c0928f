"""The episodes of a model in the loop, in a history file beside the calls they made.

The calls of an episode are rows of the file like any other (with their `episode` and `turn`);
the episode itself (its task, model, how it ended, what the model was told after each call) is a
small JSON file of its own in the same folder, `SESSION.episode.000000000042.json`, written as
the episode ends: under a temporary name, 0600, renamed into place whole (records/disk.py), every
text through the file's scrub first, as a call's are. An episode ends once and holds a few dozen
values, so one file each costs a fraction of a millisecond and nothing waits for a batch: a
kernel killed after an episode ended has written it. Episode ids are the process's (never reused
after a reset), and the session tells kernels apart, so no two episodes share a name.

Read back (`History.open(path).episodes()`): every session's episodes, each row with its session,
in the order the sessions began, then the episodes did. A file that cannot be read is left out
and said, as a part cut short is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp_nb.history_file import HistoryFileError, open_regular
from mcp_nb.mistakes import read_json
from mcp_nb.records.disk import why, write_json
from mcp_nb.records.episode_log import row_of
from mcp_nb.records.json_text import ENCODE

_NAME = re.compile(r"^(?P<session>[0-9A-Za-z-]+)\.episode\.(?P<id>\d{12})\.json$")
KEY = "mcp_nb_episode"  # what an episode file says it is: {"mcp_nb_episode": 1, "session": ..., "kept": [...]}


def name_of(session: str, episode_id: int) -> str:
    return f"{session}.episode.{episode_id:012d}.json"


def write(folder: Path, session: str, kept: tuple[Any, ...], scrub: Callable[[str], str]) -> None:
    """Write an episode kept as a tuple (`Episode.kept`) to the history file at `folder`, its JSON
    text scrubbed as a part's nested values are (the secrets are known in their JSON spelling too).
    Raises OSError; a value JSON cannot carry is written as its text (`json_text.ENCODE`), never raised."""
    text = scrub(ENCODE({KEY: 1, "session": session, "kept": kept}))
    write_json(folder, name_of(session, kept[0]), text.encode("utf-8"))


def read(folder: Path, problems: list[str]) -> list[dict[str, Any]]:
    """Every episode of the history file at `folder`, as rows (`episode_log.row_of`) with their
    `session`, the sessions in the order they began, each one's episodes in the order they began;
    a file that cannot be read is said in `problems` and left out."""
    rows = []
    try:
        named = sorted((name, match["session"]) for name in os.listdir(folder) if (match := _NAME.match(name)))
    except OSError as err:
        problems.append(f"{folder.name} (its episodes cannot be listed: {err.strerror or err})")
        return []
    for name, session in named:
        try:
            # as a part is opened: no link followed, no wait on a named pipe put in its place
            with os.fdopen(open_regular(folder / name), "rb") as f:
                saved = read_json(f.read())
            if not isinstance(saved, dict) or saved.get(KEY) != 1 or not isinstance(saved.get("kept"), list):
                raise ValueError("not an episode of mcp_nb's")
            row = row_of(tuple(saved["kept"]))
        except (HistoryFileError, OSError, ValueError, TypeError, KeyError) as err:
            problems.append(f"{name} ({why(err)})")
            continue
        row["session"] = session  # its name's: the file a session wrote
        rows.append(row)
    rows.sort(key=lambda row: (row["session"], row["started_at"] or 0, row["episode"]))
    return rows
