"""What OAuth costs per call: a connection authorized by `mcp_nb.OAuth` against one that sends
the same token as a fixed header, to the same OAuth-protected server (notebooks/servers/protected.py,
a separate process), in the same run.

Both connections carry the same bearer token on every request; the OAuth one has the SDK's
provider in its httpx client (its lock, its token checks, its 401 handling), the other a plain
`Authorization` header. Paired blocks of calls on mcp_nb's loop, the order alternating; the
figure is the median of the per-pair ratios (target <= 1.05).

Usage: python benchmarks/bench_auth.py [--pairs 30] [--block 100]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import httpx2
from _common import alternate, machine, median, p10_p90, write_json

import mcp_nb

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from helpers import protected_server  # noqa: E402 - the tests' one way to start the protected server

TARGET = 1.05


def measured(url: str, folder: str, pairs: int, block_calls: int) -> tuple[dict, set]:
    """The paired figure, and the outcomes the calls had, over two connections to `url`."""
    follow = lambda link: httpx2.get(link, follow_redirects=True, timeout=30)  # noqa: E731 - the approving browser
    mcp_nb.connect("oauth", url, auth=mcp_nb.OAuth(callback="loopback", open_browser=follow))
    (kept,) = Path(folder, "oauth").glob("*.json")
    token = json.loads(kept.read_text())["tokens"]["access_token"]
    mcp_nb.connect("header", url, headers={"Authorization": f"Bearer {token}"})
    eng = mcp_nb.engine()

    def block(server: str):
        async def run() -> float:
            t0 = time.perf_counter()
            for _ in range(block_calls):
                await eng.prepare("tool", "whoami", {}, 30.0, server=server).run()
            return (time.perf_counter() - t0) / block_calls

        return run

    async def measure() -> dict:
        await block("header")()
        await block("oauth")()  # warm-up pair, not kept
        plain, authorized, ratios = await alternate(block("header"), block("oauth"), pairs, eng.history.clear)
        return {
            "header_us": median(plain) * 1e6,
            "oauth_us": median(authorized) * 1e6,
            "ratio": median(ratios),
            "ratio_p10_p90": p10_p90(ratios),
        }

    result = eng.loop.run(measure())
    return result, set(mcp_nb.history().to_frame()["outcome"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=30)
    parser.add_argument("--block", type=int, default=100)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="mcp_nb-bench-auth-")
    os.environ["MCP_NB_CONFIG_DIR"] = folder  # this run's tokens, not the user's
    with protected_server() as (url, _):
        try:
            result, outcomes = measured(url, folder, args.pairs, args.block)
        finally:
            mcp_nb.reset()  # the sessions closed before the server stops
    assert outcomes <= {"result"}, outcomes
    ok = result["ratio"] <= TARGET
    low, high = result["ratio_p10_p90"]
    print(
        f"{args.pairs} pairs of {args.block}-call blocks: fixed header {result['header_us']:.1f} us, "
        f"mcp_nb.OAuth {result['oauth_us']:.1f} us per call"
    )
    print(
        f"{'PASS' if ok else 'FAIL'}  oauth/header {result['ratio']:.3f} (10th-90th percentile of pairs {low:.2f}-{high:.2f}; target <= {TARGET})"
    )
    path = write_json("auth.json", {"benchmark": "auth", "machine": machine(), "target": TARGET, **result})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
