"""Sweeps on a dask.distributed cluster: the kernel's tools hosted by every worker, one history.

- `toolbox.py`: what is shipped to the workers (the registrations, or an outside server's
  address) and how a worker builds an engine of its own from it;
- `worker.py`: what runs on a worker (a partition of the grid through that engine);
- `sweep.py`: what runs in the kernel (checks, partitions, waiting as for any batch);
- `ledger.py`: the records that come back, merged into the kernel's one history.

dask.distributed is an optional dependency (`pip install 'mcp-notebook[dask]'`); nothing here
is imported by `import mcp_nb`.
"""

from mcp_nb import libraries as lib

EXTRA = "mcp-notebook[dask]"


def require_distributed():
    """The `distributed` module, or an ImportError of one line that names the extra."""
    try:
        return lib.distributed
    except ImportError:
        raise ImportError(f"cluster= needs dask.distributed: pip install '{EXTRA}'") from None
