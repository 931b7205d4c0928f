"""An outside server as `mcp_nb.connect` names it: one frozen spec, checked once, where it is made.

`ServerSpec.of(name, target, ...)` reads what `connect` is given (a command split as a shell
line splits, `args` after it; or a URL and its headers) and the spec checks itself as it is made
(`__post_init__`): whoever holds one holds a server that can be reached as far as can be told
without trying, and nothing is checked again further down. Nothing changes a spec. Another era
(a replay across eras), other roots (`set_roots`), a copy for a cluster's workers: each is a new
one, `dataclasses.replace(spec, mode=...)`, checked in its turn.

A spec holds what no record may (a header's token, a URL's password, an environment's API key):
it names those (`secret_values`) and shows its target without them (`shown`, `shown_url`).
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Literal
from urllib.parse import urlsplit

import httpx2

from mcp_nb.calling.era import check_mode
from mcp_nb.calling.oauth import OAuth
from mcp_nb.calling.roots import RootsSource, check_roots
from mcp_nb.calling.sampling import SamplingSource, check_sampling
from mcp_nb.mistakes import BadValue
from mcp_nb.records.redact import REDACTED

KERNEL = "kernel"  # the name of the kernel's own server among the connections: no outside server's

# A URL may carry a secret: a password (or a token in place of a user), or a query parameter
# named like one. Shown or saved anywhere, the URL has them replaced; only the connection keeps them.
SECRET_NAME = re.compile(r"token|key|secret|pass|pwd|auth|sig|credential|session|code", re.I)
# Variables a shell or a desktop sets whose names look like a secret's and whose values are none:
# the working directories (a "pwd"), the agents' sockets, X's cookie file's path, a desktop
# session's bus and kind. A server given the user's environment would otherwise have every path
# under the working directory written *** in each log record and history file.
NOT_SECRET_ENV = frozenset(
    {"PWD", "OLDPWD", "SSH_AUTH_SOCK", "XAUTHORITY", "DBUS_SESSION_BUS_ADDRESS", "PYTHONDONTWRITEBYTECODE"}
)
NOT_SECRET_ENV_PREFIXES = ("XDG_SESSION_",)


def secret_env_name(name: str) -> bool:
    """Whether an environment variable's value is taken for a secret, by its name."""
    return SECRET_NAME.search(name) is not None and name not in NOT_SECRET_ENV and not name.startswith(NOT_SECRET_ENV_PREFIXES)


# An HTTP header's name is a "token" (RFC 9110, 5.1): what httpx would refuse when it sends.
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")

Auth = httpx2.Auth | OAuth  # how an HTTP server is authorized: one of httpx2's (the SDK's providers), or a notebook's flow


@dataclasses.dataclass(frozen=True, slots=True)
class ServerSpec:
    """An outside server, and how to reach it: a command over stdio, or a URL over streamable HTTP.

    name:           the connection's name (`server=name` on every face)
    transport:      "stdio" or "http"
    url, headers:   the URL and the headers sent with every request (HTTP)
    auth:           an `httpx2.Auth` or an `mcp_nb.OAuth` (HTTP)
    command, env, cwd: the program and its arguments, added environment, directory (stdio)
    mode:           the protocol era: "auto", "2025-11-25" or "2026-07-28"
    sampling:       who answers the server's sampling requests (a function, prepared replies, None)
    roots:          the roots offered the server (paths, URIs, a function), None for none
    sampling_tools: the client's model can use the tools a sampling request offers
    """

    name: str
    transport: Literal["stdio", "http"]
    url: str = ""
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict[str, str])
    auth: Auth | None = None
    command: tuple[str, ...] = ()
    env: Mapping[str, str] = dataclasses.field(default_factory=dict[str, str])
    cwd: str | os.PathLike[str] | None = None
    mode: str = "auto"
    sampling: SamplingSource = None
    roots: RootsSource = None
    sampling_tools: bool = False

    @classmethod
    def of(
        cls,
        name: str,
        target: str | Sequence[str],
        *,
        args: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        headers: Mapping[str, str] | None = None,
        auth: Auth | None = None,
        mode: str = "auto",
        sampling: SamplingSource = None,
        roots: RootsSource = None,
        sampling_tools: bool = False,
    ) -> ServerSpec:
        """The spec of what `mcp_nb.connect(name, target, ...)` is given: `target` a URL (http://,
        https://) or a command (text split as a shell line splits it, or a list), `args` appended."""
        if isinstance(target, str) and _scheme(target) in ("http", "https"):
            if args or env or cwd:
                raise BadValue("args, env and cwd are for a command (a stdio server), not a URL")
            return cls(
                name,
                "http",
                url=target,
                headers=dict(headers or {}),
                auth=auth,
                mode=mode,
                sampling=sampling,
                roots=roots,
                sampling_tools=sampling_tools,
            )
        if headers:
            raise BadValue("headers are for a URL (an HTTP server), not a command")
        if auth is not None:
            raise BadValue("auth is for a URL (an HTTP server); a stdio server gets its credentials from env=")
        command = shlex.split(target) if isinstance(target, str) else [str(part) for part in target]
        if not command or not command[0]:
            raise BadValue("the command to start is empty")
        return cls(
            name,
            "stdio",
            command=(*command, *(str(a) for a in args or ())),
            env={str(k): str(v) for k, v in (env or {}).items()},
            cwd=cwd,
            mode=mode,
            sampling=sampling,
            roots=roots,
            sampling_tools=sampling_tools,
        )

    def __post_init__(self) -> None:
        check_server_name(self.name)
        check_mode(self.mode)
        _check_auth(self.auth)
        check_sampling(self.sampling)
        if not isinstance(self.sampling_tools, bool):
            raise BadValue(f"sampling_tools is True or False, got {self.sampling_tools!r}")
        if self.sampling_tools and self.sampling is None:
            raise BadValue("sampling_tools=True says the client's model can use tools: give sampling= too")
        check_roots(self.roots)
        if self.transport == "http":
            _check_headers(self.headers)
        else:
            # What the operating system would refuse when the process starts, refused now.
            if any("\x00" in part for part in self.command):
                raise BadValue("the command holds a NUL character, which no program's arguments can")
            for key, value in self.env.items():
                if not key or "=" in key or "\x00" in key + value:
                    raise BadValue(f"env names are non-empty, without '=' or NUL, and values have no NUL, got {key!r}")

    @property
    def oauth(self) -> OAuth | None:
        """The notebook's OAuth flow, when the server is authorized with one (a flow is made per connection)."""
        return self.auth if isinstance(self.auth, OAuth) else None

    def shown(self) -> str:
        """The server's URL or command as it may be shown or saved (`shown_url`)."""
        return shown_url(self.url) if self.transport == "http" else shlex.join(self.command)

    def secret_values(self) -> list[str]:
        """What this spec holds that no record may: its headers' values (an Authorization header's
        token, an API key), its URL's password and secret query values, an OAuth's client secret,
        its stdio server's environment values named like secrets."""
        if self.transport == "http":
            values = [value for value in self.headers.values() if value]
            values += [
                part for value in values for part in value.split() if len(part) >= 8
            ]  # "Bearer TOKEN": the token alone too
            oauth = self.oauth
            return values + url_secrets(self.url) + (oauth.secret_values() if oauth is not None else [])
        return [value for key, value in self.env.items() if value and secret_env_name(key)]


def check_server_name(name: object) -> None:
    if not isinstance(name, str) or not name.strip() or name != name.strip():
        raise BadValue(f"a server's name must be a non-empty string without surrounding spaces, got {name!r}")
    if name == KERNEL:
        raise BadValue(f"{KERNEL!r} is the kernel's own server; give the connection another name")


def shown_url(url: str) -> str:
    """`url` without its secrets: `https://ann:***@host/mcp?api_key=***&team=data`."""
    return _without_secrets(url)[0]


def url_secrets(url: str) -> list[str]:
    """The secrets `url` carries: its password (or a token in place of its user), and the values of
    its query parameters named like secrets."""
    return _without_secrets(url)[1]


def _without_secrets(url: str) -> tuple[str, list[str]]:
    """`url` as it may be shown, and the secrets taken out of it."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return REDACTED, []  # not a URL anyone can read safely
    secrets: list[str] = []
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, colon, password = userinfo.partition(":")
        secrets.append(password if colon else user)  # https://TOKEN@host: the user is the secret
        netloc = f"{user}:{REDACTED}@{host}" if colon else f"{REDACTED}@{host}"
    pairs: list[str] = []
    for name, equals, value in (pair.partition("=") for pair in parts.query.split("&")) if parts.query else ():
        if equals and value and SECRET_NAME.search(name):
            secrets.append(value)
            value = REDACTED
        pairs.append(f"{name}{equals}{value}")
    return parts._replace(netloc=netloc, query="&".join(pairs)).geturl(), [secret for secret in secrets if secret]


def _check_headers(headers: Mapping[str, str]) -> None:
    for key, value in headers.items():
        if not isinstance(key, str) or not isinstance(value, str) or not key.strip() or "\n" in key + value:
            raise BadValue(f"headers must map names to text on one line, got {key!r}: {value!r}")
        if not _HEADER_NAME.fullmatch(key) or "\r" in value or "\x00" in value:
            raise BadValue(
                f"{key!r} is not a header an HTTP request can carry (a name is letters, digits and !#$%&'*+-.^_`|~; a value has no CR or NUL)"
            )
        if not value.isascii():  # httpx sends a value as ASCII bytes, and raised on any other character
            raise BadValue(
                f"the value of header {key!r} is not ASCII text, which an HTTP header carries (percent-encode or base64 the rest)"
            )


def _check_auth(auth: object) -> None:
    """`auth` when the SDK's HTTP transport can authenticate requests with it: an `httpx2.Auth`
    (the SDK's OAuth providers are ones; the SDK's transport is built on httpx2), or an `OAuth`."""
    if auth is None or isinstance(auth, (httpx2.Auth, OAuth)):
        return
    if type(auth).__module__.split(".")[0] == "httpx":
        raise BadValue(
            f"auth is an {type(auth).__name__} of the httpx package, but the SDK's transport is built on httpx2: "
            "make it with httpx2 (httpx2.BasicAuth, a subclass of httpx2.Auth)"
        )
    raise BadValue(
        f"auth must be an httpx2.Auth (one of the SDK's providers, such as mcp.client.auth.OAuthClientProvider), "
        f"got {type(auth).__name__}; a fixed token goes in headers={{'Authorization': 'Bearer ...'}}"
    )


def _scheme(target: str) -> str:
    try:
        return urlsplit(target).scheme
    except ValueError as err:  # "http://[::1": said as the user's mistake it is
        raise BadValue(f"invalid URL {target!r}: {err}") from None
