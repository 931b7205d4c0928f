"""Who may talk to a served kernel: the address it listens on, the token, the Host and Origin it accepts.

The rules, from the MCP specification's security guidance and from the DNS-rebinding
attack on MCP Inspector's local proxy (CVE-2025-49596, a web page reaching an
unauthenticated server on 127.0.0.1):

- the loopback address unless the user names another one;
- a random bearer token on every request, compared in constant time; the one way to go
  without it (`dangerously_no_auth`) exists for clients that cannot send a header, and
  is refused on any address other machines can reach;
- a Host header naming the address the server was reached at, so a DNS name rebound to
  127.0.0.1 is refused; an Origin header, when a browser sends one, naming the same;
- request bodies capped.

A `Policy` is decided once the port is known (port 0 picks a free one) and does not change.
"""

from __future__ import annotations

import ipaddress
import secrets
import socket
from dataclasses import dataclass

from mcp_nb.mistakes import BadValue

DEFAULT_MAX_BODY = 4 * 1024 * 1024  # bytes; the SDK's own default cap
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")  # how a local client may name a loopback server
WILDCARDS = ("0.0.0.0", "::", "")


def is_loopback(host: str) -> bool:
    """Whether `host` is an address only this machine can reach."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host[1:-1] if host.startswith("[") else host).is_loopback
    except ValueError:
        return False


def new_token() -> str:
    """A bearer token: 32 random bytes from `secrets`, URL-safe text."""
    return secrets.token_urlsafe(32)


def url_host(host: str) -> str:
    """`host` as it appears in a URL or a Host header (IPv6 in brackets)."""
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        return f"[{bare}]" if ipaddress.ip_address(bare).version == 6 else bare
    except ValueError:
        return host


@dataclass(frozen=True)
class Policy:
    """The checks every request to one served kernel passes, in the order they run."""

    host: str  # the address listened on
    port: int
    token: str | None  # None only with dangerously_no_auth, on loopback
    hosts: frozenset[str]  # accepted Host header values
    origins: frozenset[str]  # accepted Origin header values (a request without one is not from a page)
    max_body: int

    @property
    def url(self) -> str:
        shown = "127.0.0.1" if self.host in WILDCARDS else url_host(self.host)
        return f"http://{shown}:{self.port}/mcp"


def check_address(host: str, port: int, dangerously_no_auth: bool, max_body: int) -> None:
    """Refuse what may not be served, before anything listens."""
    if not isinstance(host, str) or not host.strip():
        raise BadValue(f"host must be an address or a host name, got {host!r}")
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise BadValue(f"port must be a whole number from 0 to 65535 (0 picks a free one), got {port!r}")
    if isinstance(max_body, bool) or not isinstance(max_body, int) or max_body < 1:
        raise BadValue(f"max_body must be a positive number of bytes, got {max_body!r}")
    if dangerously_no_auth and not is_loopback(host):
        raise BadValue(
            f"dangerously_no_auth is refused on {host}: other machines can reach it, so the token stays "
            "required there; serve on 127.0.0.1 to go without one"
        )


def decide(
    host: str,
    port: int,
    *,
    dangerously_no_auth: bool = False,
    allowed_hosts: tuple[str, ...] = (),
    allowed_origins: tuple[str, ...] = (),
    max_body: int = DEFAULT_MAX_BODY,
) -> Policy:
    """The policy for a server listening on `host`:`port` (the real port, once bound)."""
    check_address(host, port, dangerously_no_auth, max_body)
    names = {url_host(name) for name in _names_of(host)}
    hosts = {f"{name}:{port}" for name in names} | {_with_port(name.lower(), port) for name in allowed_hosts}
    if port == 80:  # a client leaves the default port out of the Host header
        hosts |= names
    origins = {f"http://{value}" for value in hosts} | {origin.lower().rstrip("/") for origin in allowed_origins}
    return Policy(
        host=host,
        port=port,
        token=None if dangerously_no_auth else new_token(),
        hosts=frozenset(hosts),
        origins=frozenset(origins),
        max_body=max_body,
    )


def _names_of(host: str) -> list[str]:
    """The names a client may use for a server listening on `host`."""
    if is_loopback(host):
        return [*LOOPBACK_NAMES, host]
    if host in WILDCARDS:
        # Every interface: this machine's names and addresses, and loopback.
        names = [*LOOPBACK_NAMES, socket.gethostname().lower(), socket.getfqdn().lower()]
        try:
            names += [str(info[4][0]) for info in socket.getaddrinfo(socket.gethostname(), None)]
        except OSError:
            pass
        return names
    return [host.lower()]


def _with_port(name: str, port: int) -> str:
    """A Host value the user allowed ("name" or "name:port"), with this server's port when it has none."""
    name = url_host(name)
    if name.startswith("["):
        return name if "]:" in name else f"{name}:{port}"
    return name if ":" in name else f"{name}:{port}"
