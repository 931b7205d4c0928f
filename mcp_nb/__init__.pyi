# The package's public names and the module each lives in: one list, read twice. Type checkers
# and editors read it as the package's stub; at run time `__init__.py` hands it to lazy_loader
# (Scientific Python's SPEC 1), which imports a name's module at the name's first use, so that
# `import mcp_nb` alone imports neither the SDK nor pandas. Only `from .module import name as name`
# lines are read that way (the `as name` is how a stub says it re-exports); their names are
# `mcp_nb.__all__`.

__version__: str

from .api import (
    acall as acall,
    aget_prompt as aget_prompt,
    aread as aread,
    asweep as asweep,
    call as call,
    complete_auth as complete_auth,
    connect as connect,
    connect_config as connect_config,
    diff as diff,
    disconnect as disconnect,
    engine as engine,
    get_prompt as get_prompt,
    history as history,
    inject as inject,
    panel as panel,
    plot_evaluation as plot_evaluation,
    prompt as prompt,
    read as read,
    reconnect as reconnect,
    registered as registered,
    remove as remove,
    replay as replay,
    reset as reset,
    resource as resource,
    save_evaluation as save_evaluation,
    serve as serve,
    server as server,
    servers as servers,
    snapshot as snapshot,
    sweep as sweep,
    tool as tool,
    watch as watch,
)
from .calling.connections import ConnectError as ConnectError
from .calling.oauth import OAuth as OAuth, TokenFile as TokenFile
from .calling.retry import Retry as Retry
from .calling.sampling import Sampling as Sampling
from .config import configure as configure, settings as settings
from .elicitation import Answer as Answer, Elicitation as Elicitation
from .episodes.episode import Episode as Episode
from .episodes.faces import aagent as aagent, agent as agent, evaluate as evaluate
from .episodes.policy import HostPolicy as HostPolicy
from .history_file import HistoryFileError as HistoryFileError
from .models.anthropic import Anthropic as Anthropic
from .models.budget import Budget as Budget
from .models.chat_completions import OpenAICompatible as OpenAICompatible
from .models.errors import ModelError as ModelError
from .models.keys import Key as Key
from .models.standin import StandIn as StandIn
from .notebook.magics import (
    load_ipython_extension as load_ipython_extension,
    unload_ipython_extension as unload_ipython_extension,
)
from .records.expect import CheckFailed as CheckFailed, check_prediction as check_prediction, expect as expect
from .records.history import COLUMNS as COLUMNS, History as History, HistoryFileWarning as HistoryFileWarning
from .records.outcome import (
    CAUSE_DOC as CAUSE_DOC,
    CAUSES as CAUSES,
    OUTCOMES as OUTCOMES,
    Outcome as Outcome,
)
from .records.surface_diff import BreakingChanges as BreakingChanges
from .records.trace import ServerLog as ServerLog
from .registering.faults import Faults as Faults
from .registering.registry import Registration as Registration
