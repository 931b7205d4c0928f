"""Kernels the tests start, reached over Unix sockets (ZeroMQ's `ipc` transport), not TCP ports.

jupyter_client chooses a kernel's five TCP ports by binding port 0 and letting go of it; the kernel
binds them a second or two later, once it has imported itself. While other tests open connections
all the time (every client takes a port of the same range), another process can take one of those
ports in between, and the kernel dies before it answers: nbval says "Kernel died before replying to
kernel_info" for every cell, and the notebook never ran. Over `ipc` there is no port to lose, and
nothing a notebook does depends on the transport. (JupyterLab's kernels, in the browser tests and
the README's first command, are the server's to start: those stay on TCP, as a learner has them.)

A socket's path must fit in 107 bytes, so the sockets live under a short folder of /tmp of their
own, not in a runtime folder deep in pytest's temporary tree.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import sys
import tempfile
import uuid

import warm
from jupyter_client.manager import KernelManager

_FOLDER: str | None = None

# A kernel of another environment's interpreter (Binder's venv), started warm: the test process
# started a warm process of that interpreter (`warm.kernels_of`) and names it to the nbval it runs
# here, as `[python, socket]` in JSON; a kernel whose command is that interpreter's
# `-m ipykernel_launcher` is forked from it. The variable is not passed on to the kernel.
WARM_KERNELS = "MCP_NB_TESTS_WARM_KERNELS"


def ipc_prefix() -> str:
    """A path for one kernel's five sockets (`PREFIX-1` ... `PREFIX-5`), short enough for any of them."""
    global _FOLDER
    if _FOLDER is None or not os.path.isdir(_FOLDER):
        _FOLDER = tempfile.mkdtemp(prefix="k", dir="/tmp")
        atexit.register(shutil.rmtree, _FOLDER, ignore_errors=True)
    return os.path.join(_FOLDER, uuid.uuid4().hex[:12])


class IpcKernelManager(KernelManager):
    """A KernelManager whose kernel listens on Unix sockets (nbclient's `kernel_manager_class=`:
    the client then owns the manager, and shuts its kernel down when it is done)."""

    warm = False  # see WarmIpcKernelManager

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("transport", "ipc")
        kwargs.setdefault("ip", ipc_prefix())
        super().__init__(**kwargs)

    async def _async_launch_kernel(self, kernel_cmd, **kw):
        # The kernel's temporary files (a notebook's TemporaryDirectory, ipykernel's cell files) in
        # a folder beside its sockets, removed with them: the tests end their kernels at once, as
        # nbval does, and a kernel ended so removes nothing of its own.
        kw["env"] = {**(kw.get("env") or os.environ), "TMPDIR": tempfile.mkdtemp(dir=os.path.dirname(self.ip))}
        other = kw["env"].pop(WARM_KERNELS, None)
        if self.warm or other is not None:
            # The interpreter whose kernel is forked warm, and its warm process (None: this
            # process's own, started at the first kernel)
            python, socket = (sys.executable, None) if self.warm else json.loads(other)
            launcher = [part for part in kernel_cmd if part != "-Xfrozen_modules=off"]  # only for a debugger
            if launcher[:3] == [python, "-m", "ipykernel_launcher"]:
                kernel_cmd = warm.launched(python, socket or warm.socket_path("kernels"), *launcher[1:])
        return await super()._async_launch_kernel(kernel_cmd, **kw)


class WarmIpcKernelManager(IpcKernelManager):
    """One whose kernel, a kernel of this environment, is started warm (tests/warm.py): forked
    from a process that imported ipykernel and the SDK once, not mcp_nb. Its manager's signals
    reach it (an interrupt, through its launcher), and killing its launcher kills it. For the many
    kernels a test process starts; a process that starts one kernel (nbval's) starts it cold."""

    warm = True


def start_new_kernel(kernel_name: str = "python3", startup_timeout: float = 60, *, warm: bool = True, **kwargs):
    """As `jupyter_client.manager.start_new_kernel`, over `ipc`: the manager and a ready client.
    Started warm unless `warm` is false (the tests about what outlives a kernel)."""
    manager = (WarmIpcKernelManager if warm else IpcKernelManager)(kernel_name=kernel_name)
    manager.start_kernel(**kwargs)
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=startup_timeout)
    except RuntimeError:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
        raise
    return manager, client


def notebook_client(notebook, folder, timeout: float = 120, allow_errors: bool = False):
    """nbclient's NotebookClient for `notebook` (nbformat's, changed in place as it runs), its kernel
    over `ipc` with `folder` as its working folder: the client starts and shuts down the kernel."""
    from nbclient import NotebookClient

    return NotebookClient(
        notebook,
        timeout=timeout,
        kernel_name="python3",
        kernel_manager_class=WarmIpcKernelManager,
        allow_errors=allow_errors,
        resources={"metadata": {"path": str(folder)}},
    )


def execute(notebook, folder, timeout: float = 120, allow_errors: bool = False) -> None:
    """Run every cell of `notebook` in a kernel over `ipc` whose working folder is `folder`, as
    nbclient does; the kernel is shut down after."""
    notebook_client(notebook, folder, timeout, allow_errors).execute()


# nbval, in a process of its own, with the kernels it starts reached over `ipc` (this module's
# manager): the arguments after these are pytest's. nbval makes its KernelManager itself, with no
# configuration to take. This folder leaves the path once the module is imported. nbval is the one
# plugin it loads: the test environment's others (hypothesis, xdist, playwright...) would cost
# each run half a second of CPU, and none of them acts on a notebook. (Given as a module, not by
# `-p nbval`: imported already, pytest would warn that its asserts cannot be rewritten.) Started
# warm (tests/warm.py): pytest and what the kernel's client imports are imported once per worker.
NBVAL_OVER_IPC = (
    "import sys\n"
    f"sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})\n"
    "import kernels\n"
    "del sys.path[0]\n"
    "import nbval.kernel\n"
    "import nbval.plugin\n"
    "nbval.kernel.KernelManager = kernels.IpcKernelManager\n"
    "import pytest\n"
    "sys.exit(pytest.main(['--disable-plugin-autoload', *sys.argv[1:]], plugins=[nbval.plugin]))\n"
)


def nbval_over_ipc(*args) -> list[str]:
    """The command that runs nbval so, with pytest's arguments `args`."""
    return warm.python("-c", NBVAL_OVER_IPC, *args)
