"""The protocol era a connection speaks, as the user asks for it.

MCP has two lifecycles: the handshake era (an `initialize` request opens a session;
2025-11-25 is its last version) and the stateless era (2026-07-28: every request
carries the protocol version and the client's capabilities in its `_meta`, and
`server/discover` says what a server speaks). The SDK's `Client(mode=...)` takes
"legacy", "auto" or a modern version; users think in versions, so mcp_nb's `mode=`
names the version and this module turns it into the SDK's word.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from mcp.client.client import ConnectMode
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_nb.mistakes import BadValue

HANDSHAKE_ERA = "2025-11-25"  # the last version of the handshake era
MODERN_ERA = "2026-07-28"  # the first version of the stateless era
# mcp_nb's mode -> the SDK's `Client(mode=...)`.
MODES: dict[str, ConnectMode] = {
    "auto": "auto",  # probe server/discover; fall back to the handshake on an older server
    HANDSHAKE_ERA: "legacy",  # the initialize handshake, as every server before 2026 speaks it
    MODERN_ERA: MODERN_ERA,  # adopted directly: no probe, no handshake
}


def check_mode(mode: object) -> str:
    """`mode` as given, when it is one mcp_nb knows; else one line saying which ones are."""
    if not isinstance(mode, str) or mode not in MODES:
        known = ", ".join(repr(m) for m in MODES)
        raise BadValue(f"mode must be one of {known}, got {mode!r}")
    return mode


def sdk_mode(mode: str) -> ConnectMode:
    return MODES[mode]


def is_handshake(protocol: str | None) -> bool:
    """Whether a session speaking `protocol` is of the handshake era (None or "": not known, which
    is what a session that has not said is)."""
    return protocol not in MODERN_PROTOCOL_VERSIONS


ERAS = (HANDSHAKE_ERA, MODERN_ERA)  # the eras a connection can be pinned to ("auto" lets the server choose)


def check_era(mode: object) -> str:
    """`mode` when it names one era (not "auto"); else one line saying which ones do."""
    if not isinstance(mode, str) or mode not in ERAS:
        raise BadValue(f"a protocol era is one of {', '.join(repr(e) for e in ERAS)}, got {mode!r}")
    return mode


def check_eras(modes: object) -> list[str]:
    """The eras of a replay across eras: a list of distinct eras, at least one."""
    if isinstance(modes, str) or not isinstance(modes, (list, tuple)) or not modes:
        raise BadValue(f"modes is a list of protocol eras, such as {list(ERAS)!r}; got {modes!r}")
    eras = [check_era(mode) for mode in cast("Sequence[object]", modes)]
    if len(set(eras)) != len(eras):
        raise BadValue(f"modes names an era twice: {modes!r}")
    return eras
