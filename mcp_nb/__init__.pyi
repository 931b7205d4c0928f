# The package's public names and the module each lives in: one list, read twice. Type checkers
# and editors read it as the package's stub; at run time `__init__.py` hands it to lazy_loader
# (Scientific Python's SPEC 1), which imports a name's module at the name's first use, so that
# `import mcp_nb` alone imports neither the SDK nor pandas. Only `from .module import name`
# lines are read that way; the names they bring are `mcp_nb.__all__`.

__version__: str

from .api import (
    acall,
    aget_prompt,
    aread,
    asweep,
    call,
    complete_auth,
    connect,
    connect_config,
    diff,
    disconnect,
    engine,
    get_prompt,
    history,
    inject,
    panel,
    prompt,
    read,
    reconnect,
    registered,
    remove,
    replay,
    reset,
    resource,
    serve,
    server,
    servers,
    snapshot,
    sweep,
    tool,
    watch,
)
from .calling.connections import ConnectError
from .calling.oauth import OAuth, TokenFile
from .calling.retry import Retry
from .calling.sampling import Sampling
from .config import configure, settings
from .elicitation import Answer, Elicitation
from .history_file import HistoryFileError
from .notebook.magics import load_ipython_extension, unload_ipython_extension
from .records.expect import expect
from .records.history import COLUMNS, History, HistoryFileWarning
from .records.outcome import CAUSE_DOC, CAUSES, OUTCOMES, Outcome
from .records.surface_diff import BreakingChanges
from .records.trace import ServerLog
from .registering.faults import Faults
from .registering.registry import Registration
