"""What a dask worker needs to host the kernel's tools, and how it builds its engine from it.

The kernel's registrations travel as they are: the user's function (`Registration.function`)
with its options (name, title, description, annotations, and the faults injected into it),
serialized with cloudpickle, dask's own serializer for functions. A function defined in
a notebook travels by value, with the globals it reads as they are at the sweep's start;
one imported from a module travels by reference, so that module must be installed on the
workers too. A sweep of an outside server ships its address instead: the URL and headers
of an HTTP server (the workers connect to the same URL), or the command, environment and
folder of a stdio server (each worker starts its own copy).

Everything is serialized in the kernel before anything runs, registration by
registration, so a tool that cannot travel (it closes over an open file, a lock, a
connection) is named in one line, with the variable that holds what could not be pickled.
"""

from __future__ import annotations

import hashlib
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

from mcp_nb._version import __version__
from mcp_nb.calling.engine import Engine
from mcp_nb.registering.faults import Faults
from mcp_nb.registering.registry import ANNOTATION_FLAGS

FLAG_NAMES = {camel: flag for flag, camel in ANNOTATION_FLAGS.items()}
FAULT_FIELDS = ("latency", "tool_error", "crash", "protocol_error", "seed")


class NotShippable(ValueError):
    """A registration cannot be serialized for the workers; the message names it and why."""


@dataclass(frozen=True)
class Shipped:
    """One registration, as a worker re-registers it."""

    kind: str  # tool | resource | prompt
    function: Callable[..., Any]
    name: str
    uri: str | None = None
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    flags: dict[str, bool] = field(default_factory=dict)  # read_only, idempotent, ...
    faults: dict[str, Any] | None = None  # a Faults' fields (a Faults holds a lock, which does not travel)

    @property
    def label(self) -> str:
        return f"{self.kind} {self.uri if self.kind == 'resource' else self.name!r}"


@dataclass(frozen=True)
class Toolbox:
    """Everything a worker's engine is built from."""

    version: str  # mcp_nb's, in the kernel: a worker with another version is refused
    registrations: tuple[Shipped, ...] = ()
    remote: dict[str, Any] | None = None  # an outside server: name, transport, and how to reach it


def faults_fields(faults: Faults | None) -> dict[str, Any] | None:
    return None if faults is None else {name: getattr(faults, name) for name in FAULT_FIELDS}


def pack(engine: Any, server: str | None) -> tuple[bytes, str]:
    """The toolbox for a sweep of `server` (None: the kernel's own), serialized, and its digest.

    Raises NotShippable, naming the registration and what in it could not be pickled."""
    import cloudpickle

    connection = engine.connection_for(server)
    if server is None or connection is engine.connection:
        registrations = tuple(_shipped(entry, engine.registry.faults.get(entry.name)) for entry in engine.registry.entries())
        for shipped in registrations:
            _check(shipped, cloudpickle)
        toolbox = Toolbox(__version__, registrations=registrations)
    else:
        toolbox = Toolbox(__version__, remote=_address(connection))
    blob = cloudpickle.dumps(toolbox)
    return blob, hashlib.sha256(blob).hexdigest()


def unpack(blob: bytes) -> Toolbox:
    import pickle

    return pickle.loads(blob)


def _shipped(entry: Any, faults: Faults | None) -> Shipped:
    return Shipped(
        kind=entry.kind,
        function=entry.function,
        name=entry.name,
        uri=entry.uri,
        title=entry.title,
        description=entry.description,
        mime_type=entry.mime_type if entry.kind == "resource" else None,
        flags={FLAG_NAMES[camel]: True for camel in entry.annotations if camel in FLAG_NAMES},
        faults=faults_fields(faults) if entry.kind == "tool" else None,
    )


def _address(connection: Any) -> dict[str, Any]:
    if connection.transport == "http":
        return {"name": connection.name, "target": connection.url, "headers": dict(connection.headers)}
    return {"name": connection.name, "target": list(connection.command), "env": dict(connection.env), "cwd": connection.cwd}


def _check(shipped: Shipped, cloudpickle: Any) -> None:
    try:
        cloudpickle.dumps(shipped)
    except Exception as err:  # noqa: BLE001 - whatever pickling raised, said in one line
        what = _culprit(shipped.function, cloudpickle)
        raise NotShippable(
            f"{shipped.label} cannot be shipped to the dask workers: {what or 'its function'} cannot be pickled "
            f"({_one_line(err)}); every registration is shipped, since a tool may call the others: open files, "
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


def _one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()[0] if str(err).strip() else ""
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def build(toolbox: Toolbox) -> Any:
    """An engine of this process's own, hosting the toolbox's registrations (or connected to its server)."""

    engine = Engine()
    try:
        registry = engine.registry
        for shipped in toolbox.registrations:
            if shipped.kind == "tool":
                faults = Faults(**shipped.faults) if shipped.faults else None
                registry.add_tool(
                    shipped.function, name=shipped.name, title=shipped.title, description=shipped.description,
                    annotations=shipped.flags, inject=faults,
                )  # fmt: skip
            elif shipped.kind == "resource":
                registry.add_resource(
                    shipped.function, shipped.uri, name=shipped.name, title=shipped.title,
                    description=shipped.description, mime_type=shipped.mime_type,
                )  # fmt: skip
            else:
                registry.add_prompt(shipped.function, name=shipped.name, title=shipped.title, description=shipped.description)
        if toolbox.remote is not None:
            remote = dict(toolbox.remote)
            engine.connect(remote.pop("name"), remote.pop("target"), **remote)
    except BaseException:
        engine.close()
        raise
    return engine
