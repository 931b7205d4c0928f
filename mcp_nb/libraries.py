"""The libraries mcp_nb loads at their first use, named in one place.

`import mcp_nb` and a first call take milliseconds because what only some uses need waits for
them: pandas and numpy for the first frame or history file, pyarrow's Parquet for an old history
file, tenacity for the first retried call, jsonschema for the first output schema, dask's
`distributed` and cloudpickle for the first cluster sweep, tqdm's bars for the first sweep.
And the SDK's modules that `sdk_compat` leans on: `python -m mcp_nb diff` reads sdk_compat's
texts and never loads the SDK (about a second of building its pydantic models).

Each is an attribute of this module, imported by the module's `__getattr__` (PEP 562) when
first read and kept as a plain attribute after, so later reads cost one attribute lookup:

    from mcp_nb import libraries as lib

    lib.pandas.DataFrame(rows)   # pandas is imported here, the first time

Gathered here rather than as an `import` inside each function that needs one: the table is
the whole list of what waits, and a test checks that each entry still puts off a load the
API would otherwise make (tests/test_house.py). An import lock makes two threads' first reads
import once. The leaf of the layers: it imports nothing of mcp_nb.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what each name is, for type checkers and editors
    import cloudpickle as cloudpickle
    import distributed as distributed
    import jsonschema as jsonschema
    import matplotlib.pyplot as pyplot
    import mcp.client.session as sdk_client_session
    import mcp.server as sdk_server
    import mcp.server.mcpserver as sdk_mcpserver
    import mcp.server.mcpserver.resolve as sdk_resolve
    import mcp.server.mcpserver.server as sdk_server_module
    import mcp.server.mcpserver.utilities.context_injection as sdk_context_injection
    import mcp.server.session as sdk_server_session
    import mcp.shared._httpx_utils as sdk_httpx_utils
    import mcp.types as sdk_types
    import mcp_types as mcp_types
    import numpy as numpy
    import pandas as pandas
    import tenacity as tenacity
    import tqdm.auto as tqdm
    from pyarrow import parquet as parquet

# name -> the module it imports, and when (what needs it first)
DEFERRED: dict[str, str] = {
    "pandas": "pandas",  # 0.3-1 s: the first frame (history, sweep, registry, diff tables)
    "numpy": "numpy",  # the first frame, or the CHUNK-th call a history turns into columns
    "parquet": "pyarrow.parquet",  # a history file of format 1, which has Parquet parts
    "tenacity": "tenacity",  # 13 ms of a kernel's start: the first retried call
    "jsonschema": "jsonschema",  # the first tool with an output schema (warmed in a kernel)
    "cloudpickle": "cloudpickle",  # dask's extra: the first cluster= sweep
    "distributed": "distributed",  # dask's extra: the first cluster= sweep, and on its workers
    "tqdm": "tqdm.auto",  # the first progress bar (with ipywidgets in a kernel)
    "pyplot": "matplotlib.pyplot",  # the first plot of an evaluation (matplotlib: the lab extra)
    # the SDK, for sdk_compat, which the commands that need no MCP import for its texts
    "mcp_types": "mcp_types",
    "sdk_types": "mcp.types",
    "sdk_server": "mcp.server",
    "sdk_mcpserver": "mcp.server.mcpserver",
    "sdk_server_module": "mcp.server.mcpserver.server",
    "sdk_context_injection": "mcp.server.mcpserver.utilities.context_injection",
    "sdk_resolve": "mcp.server.mcpserver.resolve",
    "sdk_httpx_utils": "mcp.shared._httpx_utils",
    "sdk_client_session": "mcp.client.session",
    "sdk_server_session": "mcp.server.session",
}


def __getattr__(name: str) -> Any:
    try:
        path = DEFERRED[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    module = importlib.import_module(path)  # an ImportError (a missing extra) reaches the reader
    globals()[name] = module
    return module


def __dir__() -> list[str]:
    return sorted([*globals(), *DEFERRED])
