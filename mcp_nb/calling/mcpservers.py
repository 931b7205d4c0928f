"""The `mcpServers` configuration that Claude Desktop, Cursor and VS Code read, as connections.

One entry per server: `command` (with `args`, `env`, `cwd`) for a stdio server, or `url`
(with `headers`, and `oauth`: `true` or `{"scopes", "callback", "client_id",
"client_secret_env", "client_metadata_url"}` for mcp_nb's OAuth flow) for streamable HTTP.
A client secret is never written in the file: `client_secret_env` names the environment
variable that holds it. VS Code writes the same under `servers`, with a
`type`; both are read. Every entry is checked before anything is connected, and a
mistake names the server and the field. An entry marked `"disabled": true` is left out
unless it is asked for by name.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mcp_nb.calling.oauth import OAuth
from mcp_nb.mistakes import BadJson, BadValue, one_line, read_json

_STDIO = {"command", "args", "env", "cwd", "type"}
_HTTP = {"url", "headers", "type", "oauth"}
_OAUTH = {"scopes", "callback", "client_id", "client_secret_env", "client_metadata_url"}
_IGNORED = {"disabled", "autoApprove", "alwaysAllow", "timeout", "description", "envFile"}  # other clients' own keys


class ConfigError(BadValue):
    """A configuration that cannot be connected; the message names the server and the field."""


def read_config(config: str | Path | Mapping[str, Any], names: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """The entries of `config` (a path or a decoded dict) as `mcp_nb.connect` keyword arguments, by name."""
    if isinstance(config, (str, Path)):
        try:
            path = Path(config).expanduser()
        except RuntimeError as err:  # ~name of a user this machine does not know
            raise ConfigError(f"cannot find the configuration file {str(config)!r}: {err}") from None
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(f"no configuration file at {str(path)!r}") from None
        except (OSError, ValueError) as err:  # a directory, no permission, not UTF-8, a NUL in the path
            raise ConfigError(f"cannot read {str(path)!r}: {one_line(err)}") from None
        try:
            data = read_json(text)
        except BadJson as err:
            said = "is not valid JSON" if err.lineno is not None else "cannot be read as JSON"
            raise ConfigError(f"{str(path)!r} {said}: {err}") from None
    elif isinstance(config, Mapping):
        data = config
    else:
        raise ConfigError(f"config must be a path or a dict, got {type(config).__name__}")
    if not isinstance(data, Mapping):
        raise ConfigError("the configuration must be a JSON object with an 'mcpServers' object")
    servers = data.get("mcpServers", data.get("servers"))
    if not isinstance(servers, Mapping):
        raise ConfigError("the configuration has no 'mcpServers' object (nor VS Code's 'servers')")
    for name in servers:
        if not isinstance(name, str) or not name:
            raise ConfigError(f"server names are non-empty strings, got {name!r}")
    if names is not None:
        if isinstance(names, (str, bytes, Mapping)) or not isinstance(names, Iterable):
            raise ConfigError("names must be a list of server names")
        names = list(names)
        if not all(isinstance(n, str) for n in names):
            raise ConfigError("names must be a list of server names")
        unknown = [n for n in names if n not in servers]
        if unknown:
            raise ConfigError(
                f"no server named {', '.join(map(repr, unknown))} in the configuration (it has: {', '.join(map(repr, servers))})"
            )
        servers = {n: servers[n] for n in names}
    else:  # Claude Desktop and Cursor keep a server they do not start under "disabled": true
        servers = {n: spec for n, spec in servers.items() if not (isinstance(spec, Mapping) and spec.get("disabled") is True)}
    return {name: _entry(name, spec) for name, spec in servers.items()}


def _entry(name: str, spec: Any) -> dict[str, Any]:
    where = f"server {name!r}"
    if not isinstance(spec, Mapping):
        raise ConfigError(f"{where}: expected an object, got {type(spec).__name__}")
    keys = set(spec) - _IGNORED
    if "url" in spec and "command" in spec:
        raise ConfigError(f"{where}: has both 'url' and 'command'; a server is one or the other")
    if "url" in spec:
        unknown = keys - _HTTP
        if unknown:
            raise ConfigError(f"{where}: unexpected field(s) {_fields(unknown)} for a URL server")
        url = spec["url"]
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigError(f"{where}: 'url' must be an http:// or https:// URL, got {_shown(url)}")
        entry = {"target": url, "headers": _strings(spec.get("headers"), where, "headers")}
        if spec.get("oauth") not in (None, False):
            entry["auth"] = _oauth(spec["oauth"], where)
        return entry
    if "command" in spec:
        unknown = keys - _STDIO
        if unknown:
            raise ConfigError(f"{where}: unexpected field(s) {_fields(unknown)} for a command server")
        command = spec["command"]
        if not isinstance(command, str) or not command.strip():
            raise ConfigError(f"{where}: 'command' must be a non-empty string, got {_shown(command)}")
        args = spec.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, (str, int, float)) for a in args):
            raise ConfigError(f"{where}: 'args' must be a list of strings")
        cwd = spec.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise ConfigError(f"{where}: 'cwd' must be a string")
        # A command is one program, never split: configurations give its arguments apart.
        return {"target": [command, *map(str, args)], "env": _strings(spec.get("env"), where, "env"), "cwd": cwd}
    raise ConfigError(f"{where}: needs 'command' (a stdio server) or 'url' (an HTTP server)")


def _oauth(given: Any, where: str) -> Any:
    """An entry's `oauth` as an `mcp_nb.OAuth`."""
    if given is True:
        return OAuth()
    if not isinstance(given, Mapping):
        raise ConfigError(f"{where}: 'oauth' is true or an object of {_fields(_OAUTH)}, got {_shown(given)}")
    if "client_secret" in given:
        raise ConfigError(
            f"{where}: a client secret is not kept in a configuration file: give 'client_secret_env', the environment variable that holds it"
        )
    unknown = set(given) - _OAUTH
    if unknown:
        raise ConfigError(f"{where}: unexpected field(s) {_fields(unknown)} in 'oauth' (known: {_fields(_OAUTH)})")
    options = {key: given[key] for key in ("scopes", "callback", "client_id", "client_metadata_url") if key in given}
    variable = given.get("client_secret_env")
    if variable is not None:
        if not isinstance(variable, str) or variable not in os.environ:
            raise ConfigError(f"{where}: 'client_secret_env' names {_shown(variable)}, which is not set in this environment")
        options["client_secret"] = os.environ[variable]
    try:
        return OAuth(**options)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{where}: 'oauth': {err}") from None


def _fields(keys: set[Any]) -> str:
    """Field names for a message: as they are when printable, else as repr() spells them."""
    names = sorted(key if isinstance(key, str) and key.isprintable() else repr(key) for key in keys)
    return ", ".join(names)


def _shown(value: Any) -> str:
    """A value for a message: a string as repr() spells it, anything else by its type."""
    if isinstance(value, str):
        return repr(value)
    if value is None:
        return "null"
    kind = type(value).__name__
    return f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind}"


def _strings(value: Any, where: str, field: str) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, (str, int, float)) for k, v in value.items()
    ):
        raise ConfigError(f"{where}: {field!r} must be an object of strings")
    return {k: str(v) for k, v in value.items()}
