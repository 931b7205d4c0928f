"""The public API's bodies: registering, calling, sweeping, replaying, connecting, serving.

`mcp_nb/__init__.py` re-exports these names and nothing else. Each function hands plain
values to the default engine (`calling.default`), which owns the server, the connections
and the history; none of them knows of IPython.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from typing import Any

from mcp import MCPError
from mcp.server import MCPServer

from mcp_nb import libraries as lib
from mcp_nb.batch.cluster import sweep as cluster_sweep
from mcp_nb.batch.replays import run_replay
from mcp_nb.batch.sweeps import arun_sweep, run_sweep
from mcp_nb.calling import default
from mcp_nb.calling.connections import ServerSpec
from mcp_nb.calling.engine import Engine
from mcp_nb.calling.mcpservers import ConfigError, read_config
from mcp_nb.calling.retry import Retry
from mcp_nb.calling.surface import take as take_snapshot
from mcp_nb.calling.watching import Watch, check_uri
from mcp_nb.config import connect_seconds, settings
from mcp_nb.episodes import evaluate as evaluation
from mcp_nb.episodes import saved as saved_evaluations
from mcp_nb.mistakes import BadValue
from mcp_nb.records.history import History
from mcp_nb.records.outcome import Outcome
from mcp_nb.records.surface import SurfaceError
from mcp_nb.records.surface import load as load_snapshot
from mcp_nb.records.surface import save as save_snapshot
from mcp_nb.records.surface_diff import BreakingChanges, changes, failing
from mcp_nb.records.surface_diff import frame as changes_frame
from mcp_nb.registering.faults import Faults
from mcp_nb.registering.registry import Registration, entries_frame
from mcp_nb.views.live import live, show
from mcp_nb.views.live import watch as progress_view


def engine() -> Engine:
    """The process-wide engine (server, client, history), created on first use."""
    return default.engine()


def reset() -> None:
    """Start over: a new empty server and an empty history (the settings stay).

    Calls still in flight on the old server are cancelled (each is recorded as
    `cancelled` in the old history, and whoever waits for it gets an answer). From then
    on the old engine refuses calls with a RuntimeError, and a panel of the old server
    says it was replaced and sends nothing. From inside a tool it is refused (the call's
    Outcome says so): a cell or a script resets. A handler that holds the loop without
    awaiting is waited for 2 s at most, and named on the `mcp_nb` logger.
    """
    default.reset()


def server() -> MCPServer:
    """The in-kernel `MCPServer`, for whatever the SDK offers that mcp_nb does not wrap."""
    return engine().server


def history() -> History:
    """Every call made through mcp_nb in this kernel, whatever its outcome."""
    return engine().history


# -- registering --------------------------------------------------------------------------------


def tool(
    name: str | None = None,
    *,
    title: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    idempotent: bool = False,
    destructive: bool = False,
    open_world: bool = False,
    inject: Faults | str | Mapping[str, Any] | None = None,
    input_schema: Mapping[str, Any] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register the function as a tool, replacing any tool of the same name.

    `inject`: faults to inject on purpose, spelled as for `mcp_nb.inject`.
    `input_schema`: the JSON Schema clients see, where the signature cannot say it (2020-12
    keywords such as `if`/`then` or `allOf`); its properties must be the function's parameters.
    """
    flags = {"read_only": read_only, "idempotent": idempotent, "destructive": destructive, "open_world": open_world}
    faults = None if inject is None else Faults.from_spec(inject)

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        engine().registry.add_tool(
            fn, name=name, title=title, description=description, annotations=flags, inject=faults, input_schema=input_schema
        )
        return fn

    return register


def resource(
    uri: str, *, name: str | None = None, title: str | None = None, description: str | None = None, mime_type: str | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register the function as a resource (static URI) or resource template (`books://{title}`)."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        engine().registry.add_resource(fn, uri, name=name, title=title, description=description, mime_type=mime_type)
        return fn

    return register


def prompt(
    name: str | None = None, *, title: str | None = None, description: str | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register the function as a prompt, replacing any prompt of the same name."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        engine().registry.add_prompt(fn, name=name, title=title, description=description)
        return fn

    return register


def remove(key: str, kind: str | None = None) -> Registration:
    """Remove a tool or prompt (by name) or a resource (by URI); `kind` settles ambiguity."""
    return engine().registry.remove(key, kind)


def registered(server: str | None = None):
    """What a server offers, one row per tool, resource and prompt (a DataFrame): by default
    what mcp_nb registered on the kernel's own server."""
    if server is None:
        return engine().registry.to_frame()
    return entries_frame(engine().connection_for(server).entries(), listed=True)


# -- calling: one implementation, two faces ------------------------------------------------------

_NO_FALLBACK = object()


def call(
    name: str,
    arguments: Mapping[str, Any] | None = None,
    *,
    timeout: float | None = None,
    retry: Retry | int | bool | None = None,
    server: str | None = None,
    reset_on_progress: bool = False,
    max_timeout: float | None = None,
    progress: bool = True,
    elicit: Any = None,
) -> Outcome:
    """Call a tool and wait for its Outcome. Never raises for the four outcome types.

    `retry`: a `Retry` policy, a number of retries, or True for the default (100, 200,
    400 ms); only for tools annotated idempotent or read-only, unless `Retry(force=True)`.
    `server`: the name of a connection (`mcp_nb.connect`); the kernel's own server by default.
    `reset_on_progress`: each progress event the server sends restarts the deadline, never
    past `max_timeout` seconds (default: 10 timeouts). `progress`: while the server reports
    progress, show it (a bar in a notebook, text in a terminal).
    `elicit`: answers the questions the tool asks the user while it runs: a function
    `(message, schema) -> answer`, a list of prepared answers (`Answer.accept({...})`,
    `Answer.decline()`, `Answer.cancel()`) used in order, or "decline" / "cancel".
    """
    return engine().run(
        "tool",
        name,
        arguments,
        timeout,
        retry,
        server,
        progress_view if progress else None,
        reset_on_progress=reset_on_progress,
        max_timeout=max_timeout,
        elicit=elicit,
    )


async def acall(
    name: str,
    arguments: Mapping[str, Any] | None = None,
    *,
    timeout: float | None = None,
    retry: Retry | int | bool | None = None,
    server: str | None = None,
    reset_on_progress: bool = False,
    max_timeout: float | None = None,
    elicit: Any = None,
) -> Outcome:
    """`await` form of `call`, usable from any event loop (top-level await in a cell too); no live bar.

    In a notebook a person is looking at, a question the tool asks that neither `elicit` nor the
    configured default answers shows as a form in the cell's output (the cell waits for it).
    """
    return await engine().arun(
        "tool",
        name,
        arguments,
        timeout,
        retry,
        server,
        ask=_cell_form(elicit),
        reset_on_progress=reset_on_progress,
        max_timeout=max_timeout,
        elicit=elicit,
    )


def _cell_form(elicit: Any):
    """The form in the cell for `await acall(...)`, when nothing else would answer and a person can.

    None for a call a handler makes on mcp_nb's own loop: no cell waits for that one, and the
    form's first import (ipywidgets, half a second) would hold the loop every call shares."""
    if elicit is not None or settings.elicit is not None or engine().loop.in_loop():
        return None
    try:
        from mcp_nb.widgets.question import cell_asker  # ipywidgets: loaded for the first awaited call
    except ImportError:  # no ipywidgets: no form
        return None
    return cell_asker()


def _with_fallback(outcome: Outcome, fallback: Any) -> Outcome:
    if fallback is _NO_FALLBACK or outcome.outcome == "result":
        return outcome
    # The failed attempt stays in the history as it was; the caller gets the fallback content,
    # flagged, with the failure's outcome, cause and message still there to see.
    return dataclasses.replace(outcome, content=fallback if isinstance(fallback, str) else repr(fallback), fallback=True)


def read(
    uri: str,
    *,
    timeout: float | None = None,
    retry: Retry | int | bool | None = None,
    fallback: Any = _NO_FALLBACK,
    server: str | None = None,
    elicit: Any = None,
) -> Outcome:
    """Read a resource and wait for its Outcome.

    `fallback`: content to use when the read fails (cached or default content); the
    returned Outcome then has `fallback=True` and the failure's outcome and cause.
    `elicit`: answers the server's questions, as for `call`.
    """
    return _with_fallback(engine().run("resource", uri, None, timeout, retry, server, elicit=elicit), fallback)


async def aread(
    uri: str,
    *,
    timeout: float | None = None,
    retry: Retry | int | bool | None = None,
    fallback: Any = _NO_FALLBACK,
    server: str | None = None,
    elicit: Any = None,
) -> Outcome:
    outcome = await engine().arun("resource", uri, None, timeout, retry, server, ask=_cell_form(elicit), elicit=elicit)
    return _with_fallback(outcome, fallback)


def get_prompt(
    name: str,
    arguments: Mapping[str, Any] | None = None,
    *,
    timeout: float | None = None,
    retry: Retry | int | bool | None = None,
    server: str | None = None,
    elicit: Any = None,
) -> Outcome:
    """Get a prompt and wait for its Outcome (`elicit`: as for `call`)."""
    return engine().run("prompt", name, arguments, timeout, retry, server, elicit=elicit)


async def aget_prompt(
    name: str,
    arguments: Mapping[str, Any] | None = None,
    *,
    timeout: float | None = None,
    retry: Retry | int | bool | None = None,
    server: str | None = None,
    elicit: Any = None,
) -> Outcome:
    return await engine().arun("prompt", name, arguments, timeout, retry, server, ask=_cell_form(elicit), elicit=elicit)


def sweep(
    name: str,
    grid,
    *,
    concurrency: int = 8,
    timeout: float | None = None,
    retry: Retry | int | bool | None = None,
    progress: bool = True,
    server: str | None = None,
    cluster=None,
    partition_size: int | None = None,
    reset_on_progress: bool = False,
    max_timeout: float | None = None,
    elicit: Any = None,
):
    """Call a tool over many argument sets, `concurrency` at a time; returns a DataFrame.

    `grid` is a dict of value lists (every combination), a DataFrame (one call per row)
    or a list of argument dicts. The frame has the argument columns, then call_id,
    attempt, outcome, cause, duration_ms, content, code and message, in input order.
    Interrupting stops the sweep promptly and returns the calls that finished.

    `cluster`: a dask.distributed `Client`, cluster object or scheduler address: the grid
    runs on its workers in partitions of `partition_size` calls, each worker hosting the
    tools itself, `concurrency` calls at a time per partition; the frame gains a `worker`
    column (needs `pip install 'mcp-notebook[dask]'`; see the guide's page on clusters).
    `reset_on_progress`, `max_timeout`: as for `call`, for every call of the sweep (not on a cluster).
    `elicit`: as for `call`, for every call of the sweep (each call starts from the first prepared
    answer; not on a cluster).
    """
    limits = {"reset_on_progress": reset_on_progress, "max_timeout": max_timeout, "elicit": elicit}
    if cluster is not None:
        return _on_cluster(limits).run_cluster_sweep(
            engine(),
            name,
            grid,
            cluster=cluster,
            concurrency=concurrency,
            timeout=timeout,
            retry=retry,
            progress=progress,
            server=server,
            partition_size=partition_size,
        )
    if partition_size is not None:
        raise BadValue("partition_size is for a sweep on a cluster (cluster=...)")
    return run_sweep(
        engine(),
        name,
        grid,
        concurrency=concurrency,
        timeout=timeout,
        retry=retry,
        progress=progress,
        server=server,
        **limits,
    )


def _on_cluster(limits: dict):
    """batch/cluster/sweep.py, once the options a sweep on a cluster cannot take are refused."""
    if limits["reset_on_progress"] or limits["max_timeout"] is not None:
        raise BadValue("reset_on_progress and max_timeout are not available for a sweep on a cluster (cluster=...)")
    if limits["elicit"] is not None:
        raise BadValue(
            "elicit= is for sweeps in the kernel; a cluster's workers answer with their own settings (none: cancelled)"
        )
    return cluster_sweep


async def asweep(
    name: str,
    grid,
    *,
    concurrency: int = 8,
    timeout: float | None = None,
    retry=None,
    server: str | None = None,
    cluster=None,
    partition_size: int | None = None,
    reset_on_progress: bool = False,
    max_timeout: float | None = None,
    elicit: Any = None,
):
    """`await` form of `sweep` (no progress bar)."""
    limits = {"reset_on_progress": reset_on_progress, "max_timeout": max_timeout, "elicit": elicit}
    if cluster is not None:
        return await _on_cluster(limits).arun_cluster_sweep(
            engine(),
            name,
            grid,
            cluster=cluster,
            concurrency=concurrency,
            timeout=timeout,
            retry=retry,
            server=server,
            partition_size=partition_size,
        )
    if partition_size is not None:
        raise BadValue("partition_size is for a sweep on a cluster (cluster=...)")
    return await arun_sweep(engine(), name, grid, concurrency=concurrency, timeout=timeout, retry=retry, server=server, **limits)


# -- regression cases ---------------------------------------------------------------------------


def replay(
    cases,
    server: str | None = None,
    *,
    connect: str | list[str] | None = None,
    headers: Mapping[str, str] | None = None,
    concurrency: int = 8,
    progress: bool = False,
    modes: list[str] | None = None,
):
    """Replay cases (a cases file's path, its JSON, or a list of `Case`) and judge each one.

    Returns a DataFrame, one row per case: `passed`, `expected` and `got` (outcome and cause),
    and a readable `reason` when it failed (a diff for content). Each case goes to the server
    it names (the kernel's own by default); `server=` sends every case to that connection
    instead, and `connect=` (a command or a URL, `headers=` for a URL) starts one for the replay
    and closes it after. Calls that may overlap run `concurrency` at a time; tools annotated
    neither read-only nor idempotent keep the file's order. Replayed calls are in the history.
    A bad file raises `mcp_nb.records.cases.CasesError` (a ValueError) naming the case and the field.

    `modes`: protocol eras, e.g. `["2025-11-25", "2026-07-28"]`: every case is replayed under each
    era in turn (the kernel's server through a client of its own at that era, an outside server
    through the same command or URL at that era), one row per case and era, with the columns
    `mode`, `protocol` and `era_difference`: how the case's answer differs from its answer at
    the first era, by structure (JSON content as JSON), "" when alike.
    """
    return run_replay(
        engine(),
        cases,
        server=server,
        connect=connect,
        headers=dict(headers) if headers is not None else None,
        concurrency=concurrency,
        progress=progress,
        modes=list(modes) if isinstance(modes, tuple) else modes,
    )


# -- a model in the loop ---------------------------------------------------------------------------


def save_evaluation(table, path: str | os.PathLike):
    """Write the evaluation `table` came from (`mcp_nb.evaluate`) into a cases file, to be run again
    as regression cases (`pytest --mcp-cases PATH`, one item per task and model): its tasks and their
    checks, its models (the stand-in, or an endpoint with the name of its key's environment variable,
    never a key), its settings and what it measured. Added to the file's cases and evaluations when
    it exists. One that cannot be run elsewhere (a function as model or check, variants) is refused,
    saying why. Returns the path."""
    return saved_evaluations.save_evaluation(table, path)


def plot_evaluation(table, measure: str = "success_rate", ax: Any = None):
    """A bar per row of an evaluation's frame: `measure` ("success_rate" or "recovery_rate") with
    its 95% interval; returns the matplotlib axes (`ax`: draw on these)."""
    return evaluation.plot(table, measure, ax)


# -- surfaces -------------------------------------------------------------------------------------


def snapshot(server: str | None = None, *, path: str | os.PathLike | None = None) -> dict:
    """Everything a server offers its clients, as a JSON document (a dict): its name, version,
    instructions and capabilities, then its tools (input and output schemas, annotations, title,
    description), resources, resource templates and prompts with their arguments, as a client
    lists them. `server`: a connection's name (the kernel's own by default). `path`: also write it
    there, keys sorted and indented, so that it diffs well in git. No URL, header or token is in it.
    """
    eng = engine()
    doc = eng.loop.run(take_snapshot(eng.connection_for(server)))
    if path is not None:
        save_snapshot(doc, path)
    return doc


def diff(old, new=None, *, fail_on: str | None = None):
    """What changed for clients from `old` to `new`: a DataFrame, one row per change, with
    `kind` (server / tool / resource / template / prompt), `name`, `where` (a JSON path into the
    entry), `change` (added / removed / changed), `before`, `after`, `breaking` (True, False, or
    "unknown" when no rule knows the change), the `rule` that judged it and `why`, in a sentence.

    `old` and `new` are each a snapshot (a dict), a snapshot file's path, or the name of a
    connected server (taken now); `new` left out is the kernel's own server, now. The rules are
    in docs/cases.md. `fail_on` ("breaking", "unknown", "any"): raise `BreakingChanges` when a change
    reaches that level (for scripts and tests); the frame is on the exception.
    """
    eng = engine()
    before, old_label = _surface_of(eng, old)
    after, new_label = _surface_of(eng, new)
    rows = changes(before, after)
    frame = changes_frame(rows)
    frame.attrs.update(old=old_label, new=new_label)
    if fail_on is not None and failing(rows, fail_on):
        raise BreakingChanges(frame, fail_on)
    return frame


def _surface_of(eng: Engine, source) -> tuple[dict, str]:
    """A snapshot and how to name it: a dict as it is, a connection's name taken now, else a file."""
    if source is None:
        return eng.loop.run(take_snapshot(eng.connection)), "kernel"
    if isinstance(source, str) and source in eng.connections:
        return eng.loop.run(take_snapshot(eng.connections[source])), source
    if isinstance(source, dict):
        return load_snapshot(source), "snapshot"
    if isinstance(source, (str, os.PathLike)):
        return load_snapshot(os.fspath(source)), os.path.basename(os.fspath(source)) or os.fspath(source)
    raise SurfaceError(
        f"a surface is a snapshot (a dict), a snapshot file's path or a connected server's name, not {type(source).__name__}"
    )


# -- other servers ------------------------------------------------------------------------------


def connect(
    name: str,
    target: str | list[str],
    *,
    args: list[str] | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float | None = None,
    auth: Any = None,
    mode: str = "auto",
    sampling: Any = None,
    roots: Any = None,
    sampling_tools: bool = False,
):
    """Connect to an outside MCP server and name the connection; returns it (it shows what the server offers).

    `target` is an `http://` or `https://` URL (streamable HTTP, `headers` on every request,
    `auth` an httpx Auth such as the SDK's OAuth providers) or a command, a string split like a
    shell line or a list, started as a stdio server (`args` appended, `env` added to the
    environment, `cwd` its directory). `mode` is the protocol era: "auto" (ask the server
    with `server/discover`, and fall back to the initialize handshake), "2025-11-25" (the
    handshake) or "2026-07-28" (stateless, no probe). `sampling` answers the server's requests
    for a completion: a function `(messages, request) -> reply` or a list of prepared replies
    (without one, each request is refused, and the call records why); `sampling_tools=True`
    says that model can use the tools a request offers. `roots` are the folders
    the server may work in: paths, URIs, or a function returning them. Connecting again under a name replaces
    the old connection once the new one is up. Then every face takes `server=name`:
    `mcp_nb.call("echo", {...}, server="everything")`.
    """
    spec = ServerSpec.of(
        name,
        target,
        args=args,
        env=env,
        cwd=cwd,
        headers=headers,
        auth=auth,
        mode=mode,
        sampling=sampling,
        roots=roots,
        sampling_tools=sampling_tools,
    )
    eng = engine()
    return _authorized(eng, eng.connect(spec, timeout), connect_seconds(timeout))


def _authorized(eng: Engine, connection, seconds: float):
    """A connection whose OAuth flow waits for the person: on this machine, its link shown and
    the approval waited for; on a remote kernel (the paste flow), returned as it is, its card
    saying what to do (`complete_auth`)."""
    if connection.state != "authorizing" or connection.oauth.callback == "paste":
        return connection
    show(connection)  # the link, before this thread waits for the person to approve in the browser
    return eng.authorized(connection, seconds)


def complete_auth(url: str, *, timeout: float | None = None):
    """Finish an OAuth flow that waits for the person (`OAuth(callback="paste")`, a remote kernel):
    `url` is the whole address the browser landed on after approving. Returns the connection, connected."""
    if not isinstance(url, str) or not url.strip():
        raise BadValue("complete_auth takes the address the browser landed on after approving, as text")
    eng = engine()
    connection = eng.hand_back(url)
    return eng.authorized(connection, connect_seconds(timeout))


def disconnect(name: str):
    """Close a connection (a stdio server's process ends) and forget it."""
    return engine().disconnect(name)


def reconnect(name: str, *, timeout: float | None = None):
    """Connect again to a server whose connection was lost (its process exited, say)."""
    return engine().reconnect(name, timeout=timeout)


def watch(uri: str, *, server: str | None = None) -> Watch:
    """Watch a resource: each time the server says it changed, it is read (a read in the history
    like any other) and kept on the returned `Watch` (`.updates`); `.stop()` ends it. On the
    handshake era this is `resources/subscribe`, at 2026-07-28 a `subscriptions/listen` stream.
    In a notebook the watch's output shows the latest update as it comes."""
    eng = engine()
    connection = eng.connection_for(server)
    watched = Watch(eng, connection, check_uri(uri))
    try:
        eng.loop.run(watched.start())
    except MCPError as err:
        raise BadValue(f"{connection.name!r} does not let {uri!r} be watched: {err.error.message}") from None
    live(watched)
    return watched


def connect_config(
    config, names: list[str] | None = None, *, timeout: float | None = None, auth: Mapping[str, Any] | None = None
) -> dict:
    """Connect the servers of an `mcpServers` configuration (Claude Desktop, Cursor, VS Code).

    `config` is a path to the JSON file or the decoded dict; `names` picks some of its
    servers (all but those marked `"disabled": true`, by default). Returns the connections
    by name. Every entry is checked, as `connect` would check it, before any is connected;
    a server that fails to connect raises, and the ones already connected stay. An HTTP
    entry's `"oauth"` (true, or its options) authorizes with `mcp_nb.OAuth`; `auth` gives
    any other httpx2 Auth by server name (`auth={"tracker": provider}`).
    """
    entries = read_config(config, names)
    if auth is not None:
        if not isinstance(auth, Mapping):
            raise ConfigError(f"auth is a dict of server names to Auth objects, got {type(auth).__name__}")
        unknown = [name for name in auth if name not in entries]
        if unknown:
            raise ConfigError(f"auth names {', '.join(map(repr, unknown))}, which the configuration does not connect")
        for name, given in auth.items():
            entries[name]["auth"] = given
    seconds = connect_seconds(timeout)
    specs = []
    for name, entry in entries.items():
        try:
            specs.append(ServerSpec.of(name, **entry))
        except BadValue as err:  # connect's own checks, said for the entry they refused
            raise ConfigError(f"server {name!r}: {err}") from None
    eng = engine()
    checked = [eng.checked(spec) for spec in specs]
    return {connection.name: _authorized(eng, eng.open(connection, seconds), seconds) for connection in checked}


def servers():
    """The connections, one row each: transport, state, the server's name and version, protocol, what it offers."""
    rows = [connection.describe() for connection in engine().connections.values()]
    return lib.pandas.DataFrame(rows).set_index("server")


def inject(name: str, faults: Faults | str | Mapping[str, Any] | None) -> Faults | None:
    """Make a registered tool slow or failing on purpose, reversibly; `None` ends it.

    `faults`: `"latency=0.5,tool_error=0.1,crash=0.05,protocol_error=0.05,seed=1"`, a dict
    of the same, or a `Faults`. Injected faults raise the way real ones do, so they
    classify the same way; with a seed they are reproducible.
    """
    return engine().registry.inject(name, None if faults is None else Faults.from_spec(faults))


def serve(
    port: int = 0,
    host: str = "127.0.0.1",
    *,
    dangerously_no_auth: bool = False,
    allowed_hosts: tuple[str, ...] = (),
    allowed_origins: tuple[str, ...] = (),
    max_body: int = 4 * 1024 * 1024,
    max_connections: int | None = None,
    header_timeout: float = 10.0,
):
    """Serve the kernel's tools, resources and prompts to outside clients over streamable HTTP.

    Returns at once with the handle (`.url`, `.token`, `.stop()`, `.configs()` for Claude
    Desktop, Cursor, VS Code and the Inspector); the server runs in the background and the
    kernel stays free. Every request must carry `Authorization: Bearer <token>`; the Host and
    Origin headers must name this server; bodies over `max_body` bytes are refused. Outside
    clients' calls land in `mcp_nb.history()` with `via="http"` and the client's name.

    `host` other than loopback reaches other machines: the token cannot be turned off there.
    `dangerously_no_auth=True` (loopback only) is for clients that cannot send a header.
    `allowed_hosts` / `allowed_origins` add names this server may be reached by. The server
    waits `header_timeout` seconds at most on a client (for a request's head, its body, or to
    read its answer); past `max_connections` open at once (default: half the process's descriptor
    limit, 1024 at most) a connection waits its turn, and the slowest gives its place
    (docs/serving.md, "Slow and numerous clients"). Serving
    again with the same settings returns the running handle; other settings raise ValueError
    until it is stopped. `mcp_nb.reset()`, kernel shutdown and interpreter exit stop it.
    """
    from mcp_nb.serving import serve as start  # uvicorn and starlette: loaded when the kernel first serves

    return start(
        engine(),
        port=port,
        host=host,
        dangerously_no_auth=dangerously_no_auth,
        allowed_hosts=tuple(allowed_hosts),
        allowed_origins=tuple(allowed_origins),
        max_body=max_body,
        max_connections=max_connections,
        header_timeout=header_timeout,
    )


def panel(engine: Engine | None = None, *, server: str | None = None, history: History | str | None = None):
    """The client panel: pick a server and a tool, resource or prompt, fill in the form built
    from its schema, call it, and see the outcome and the history (ipywidgets, imported on
    first use). `server`: the connection shown first (the kernel's own by default). `history`:
    what the History tab shows, a History or a history file's path (every session's calls);
    the kernel's history by default."""
    if history is not None and not isinstance(history, History):
        history = History.open(history)
    from mcp_nb.widgets import show  # ipywidgets, loaded with the first panel

    return show(engine, server=server, history=history)
