"""What a dask worker needs to host the kernel's tools, and how it builds its engine from it.

The kernel's registrations travel whole: each `Registration` as the kernel's registry holds
it (the user's function, and everything clients list of it: name, title, description,
annotations, input and output schemas, a resource's URI and MIME type...) with the faults
injected into it now, serialized with cloudpickle, dask's own serializer for functions.
A worker registers each one again and checks that its registry holds the same: a part
of a registration that did not travel, or that the worker makes otherwise, refuses the
sweep before anything runs, rather than let the workers serve another tool than the
kernel lists.

A function defined in a notebook travels by value, with the globals it reads as they are
at the sweep's start; one imported from a module travels by reference, so that module
must be installed on the workers too. A sweep of an outside server ships its address instead (its
`ServerSpec`): the URL and headers of an HTTP server (the workers connect to the same URL), or the
command, environment and folder of a stdio server (each worker starts its own copy), at the era
the kernel's connection was asked for.

Everything is serialized in the kernel before anything runs, registration by
registration, so a tool that cannot travel (it closes over an open file, a lock, a
connection) is named in one line, with the variable that holds what could not be pickled.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp_nb import libraries as lib
from mcp_nb._version import __version__
from mcp_nb.calling.connections import RemoteConnection, ServerSpec
from mcp_nb.calling.engine import Engine
from mcp_nb.mistakes import BadValue, first_line
from mcp_nb.registering.faults import Faults
from mcp_nb.registering.registry import ANNOTATION_FLAGS, Registration

FLAG_NAMES = {camel: flag for flag, camel in ANNOTATION_FLAGS.items()}
FAULT_FIELDS = ("latency", "tool_error", "crash", "protocol_error", "seed")
# The parts of a Registration a worker's own need not equal, and why; every other part must,
# so a part added to Registration later travels, or the sweep says it does not.
NOT_COMPARED = {
    "function": "a copy of the kernel's, by value or by reference",
    "replaced": "a worker registers each once",
    "changes": "what changed since the version it replaced: the kernel's history of the cell, not what it registers",
    "faults": "the faults injected at registration: those in force travel beside it (Shipped.faults)",
}


class NotShippable(BadValue):
    """A registration cannot be serialized for the workers; the message names it and why."""


@dataclass(frozen=True)
class Shipped:
    """One registration, as a worker registers it again."""

    registration: Registration  # the kernel's own, function included
    faults: dict[str, Any] | None = None  # a Faults' fields (a Faults holds a lock, which does not travel)

    @property
    def label(self) -> str:
        r = self.registration
        return f"{r.kind} {r.uri if r.kind == 'resource' else r.name!r}"


@dataclass(frozen=True)
class Toolbox:
    """Everything a worker's engine is built from."""

    version: str  # mcp_nb's, in the kernel: a worker with another version is refused
    registrations: tuple[Shipped, ...] = ()
    remote: ServerSpec | None = None  # an outside server: how to reach it


def faults_fields(faults: Faults | None) -> dict[str, Any] | None:
    return None if faults is None else {name: getattr(faults, name) for name in FAULT_FIELDS}


def pack(engine: Any, server: str | None) -> tuple[bytes, str]:
    """The toolbox for a sweep of `server` (None: the kernel's own), serialized, and its digest.

    Raises NotShippable, naming the registration and what in it could not be pickled."""
    cloudpickle = lib.cloudpickle
    connection = engine.connection_for(server)
    if isinstance(connection, RemoteConnection):
        toolbox = Toolbox(__version__, remote=_address(connection))
    else:
        registrations = tuple(_shipped(entry, engine.registry.faults.get(entry.name)) for entry in engine.registry.entries())
        for shipped in registrations:
            _check(shipped, cloudpickle)
        toolbox = Toolbox(__version__, registrations=registrations)
    blob = cloudpickle.dumps(toolbox)
    return blob, hashlib.sha256(blob).hexdigest()


def unpack(blob: bytes) -> Toolbox:
    return pickle.loads(blob)


def _shipped(entry: Registration, faults: Faults | None) -> Shipped:
    return Shipped(entry, faults_fields(faults) if entry.kind == "tool" else None)


def _address(connection: RemoteConnection) -> ServerSpec:
    """How a worker reaches the server `connection` reaches: its command or URL, headers or
    environment, and era. Not what answers the server's requests (a sampling or roots function,
    an OAuth flow waiting for a person), which stay in the kernel."""
    return dataclasses.replace(connection.spec, auth=None, sampling=None, roots=None, sampling_tools=False)


def _check(shipped: Shipped, cloudpickle: Any) -> None:
    try:
        cloudpickle.dumps(shipped)
    except Exception as err:  # noqa: BLE001 - whatever pickling raised, said in one line
        what = _culprit(shipped.registration.function, cloudpickle)
        raise NotShippable(
            f"{shipped.label} cannot be shipped to the dask workers: {what or 'its function'} cannot be pickled "
            f"({first_line(err, named=True)}); every registration is shipped, since a tool may call the others: open files, "
            "locks and connections inside the function instead, or remove the registration"
        ) from None


def _culprit(fn: Callable[..., Any], cloudpickle: Any) -> str | None:
    """The variable a function reads whose value cannot be pickled, named as the user wrote it."""
    try:
        seen = inspect.getclosurevars(fn)
    except (TypeError, ValueError):
        return None
    places = [("the variable", seen.nonlocals), ("the global", seen.globals)]
    defaults = dict(zip(reversed(fn.__code__.co_varnames[: fn.__code__.co_argcount]), reversed(fn.__defaults__ or ())))
    places.append(("the default of", {**defaults, **(fn.__kwdefaults__ or {})}))
    for kind, values in places:
        for name, value in values.items():
            if inspect.ismodule(value):
                continue  # modules travel by name
            try:
                cloudpickle.dumps(value)
            except Exception:  # noqa: BLE001
                return f"{kind} `{name}` ({type(value).__name__})"
    return None


def build(toolbox: Toolbox) -> Any:
    """An engine of this process's own, hosting the toolbox's registrations (or connected to its server).

    Raises NotShippable when a registration is not the same here as in the kernel."""

    engine = Engine()
    try:
        for shipped in toolbox.registrations:
            _same(shipped, _register(engine.registry, shipped))
        if toolbox.remote is not None:
            engine.connect(toolbox.remote)
    except BaseException:
        engine.close()
        raise
    return engine


def _register(registry: Any, shipped: Shipped) -> Registration:
    r = shipped.registration
    if r.kind == "tool":
        return registry.add_tool(
            r.function,
            name=r.name,
            title=r.title,
            description=r.description,
            annotations={FLAG_NAMES[camel]: True for camel in r.annotations},
            input_schema=r.input_schema,
            inject=Faults(**shipped.faults) if shipped.faults else None,
        )
    if r.kind == "resource":
        return registry.add_resource(
            r.function, r.uri, name=r.name, title=r.title, description=r.description, mime_type=r.mime_type
        )
    return registry.add_prompt(r.function, name=r.name, title=r.title, description=r.description)


def _same(shipped: Shipped, here: Registration) -> None:
    kernel = shipped.registration
    for part in dataclasses.fields(Registration):
        if part.name in NOT_COMPARED:
            continue
        ours, theirs = getattr(kernel, part.name), getattr(here, part.name)
        if ours != theirs:
            raise NotShippable(
                f"{shipped.label} does not register the same on the dask workers: its {part.name} is {theirs!r} there, "
                f"{ours!r} in the kernel (the function changed since it was registered: register it again; or the "
                "workers run other versions of mcp_nb or the mcp SDK: install the same on both)"
            )
