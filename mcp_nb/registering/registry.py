"""Functions to tools, resources and prompts on the in-kernel server, replacing on re-run.

The SDK's managers stay the one registry of truth. This module adds what a
notebook needs on top: a re-run cell *replaces* the earlier version (the SDK's
`add_tool` silently keeps the first one), names are checked strictly, each handler
is wrapped by `trace.probe` so a timed-out call's fate can be seen, and every
change bumps `version` so connected clients re-list before their next call.
"""

from __future__ import annotations

import inspect
import json
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from mcp.server import MCPServer
from mcp.server.mcpserver.prompts import Prompt
from mcp.server.mcpserver.tools import Tool
from mcp.shared.tool_name_validation import validate_tool_name
from mcp.shared.uri_template import UriTemplate
from mcp_types import Prompt as ListedPrompt
from mcp_types import PromptArgument as ListedArgument
from mcp_types import Resource as ListedResource
from mcp_types import ResourceTemplate as ListedTemplate
from mcp_types import Tool as ListedTool
from mcp_types import ToolAnnotations

from mcp_nb import libraries as lib
from mcp_nb import sdk_compat
from mcp_nb.mistakes import BadValue
from mcp_nb.records.listeners import Listeners
from mcp_nb.records.surface import entry as surface_entry
from mcp_nb.records.surface_diff import Change, entry_changes
from mcp_nb.registering.faults import Faults
from mcp_nb.registering.loop_watch import LoopWatch
from mcp_nb.registering.probe import probe
from mcp_nb.registering.signatures import (
    check_function,
    check_input_schema,
    sdk_refusals,
)
from mcp_nb.views.cards import registration_html, registration_text

if TYPE_CHECKING:
    import pandas as pd  # imported by `to_frame`, the one place that needs it

KINDS = ("tool", "resource", "prompt")
ANNOTATION_FLAGS = {
    "read_only": "readOnlyHint",
    "idempotent": "idempotentHint",
    "destructive": "destructiveHint",
    "open_world": "openWorldHint",
}


@dataclass(frozen=True, eq=False)
class Registration:
    """What one registration put on the server; shown as a card under the cell."""

    kind: str
    name: str
    uri: str | None = None
    title: str | None = None
    description: str | None = None
    annotations: dict[str, bool] = field(default_factory=dict)
    input_schema: dict[str, Any] | None = None
    output_schema: dict[str, Any] | None = None
    mime_type: str | None = None
    # What an outside server lists beside these, kept as it sent them (None for the kernel's own):
    execution: dict[str, Any] | None = None  # a tool's `execution`, e.g. {"taskSupport": "required"}
    meta: dict[str, Any] | None = None  # the entry's `_meta`
    is_async: bool = False
    replaced: bool = False
    faults: str | None = None  # the faults injected when it was registered, e.g. "latency=0.5,crash=0.1"
    # What changed for clients since the version this one replaced (`surface_diff.Change`s), shown on the card.
    changes: tuple[Change, ...] = ()
    function: Callable[..., Any] | None = field(default=None, repr=False)

    @property
    def key(self) -> str:
        return self.uri if self.kind == "resource" else self.name

    def _repr_html_(self) -> str:
        return registration_html(self)

    def __repr__(self) -> str:
        return registration_text(self)

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(repr(self))


def listed_entry(built: Any) -> tuple[str, dict[str, Any]]:
    """A tool, resource, template or prompt the SDK holds, as its server lists it to clients (the
    fields `MCPServer.list_tools` and its siblings copy), in a snapshot's form: (kind, entry)."""
    if isinstance(built, Tool):
        model: Any = ListedTool(
            name=built.name,
            title=built.title,
            description=built.description,
            input_schema=built.parameters,
            output_schema=built.output_schema,
            annotations=built.annotations,
            icons=built.icons,
            _meta=built.meta,
        )
        kind = "tool"
    elif isinstance(built, Prompt):
        arguments = [ListedArgument(name=a.name, description=a.description, required=a.required) for a in built.arguments or []]
        model = ListedPrompt(
            name=built.name, title=built.title, description=built.description, arguments=arguments, icons=built.icons
        )
        kind = "prompt"
    elif sdk_compat.is_template(built):
        model = ListedTemplate(
            uri_template=built.uri_template,
            name=built.name,
            title=built.title,
            description=built.description,
            mime_type=built.mime_type,
            icons=built.icons,
            annotations=built.annotations,
            _meta=built.meta,
        )
        kind = "template"
    else:
        model = ListedResource(
            uri=built.uri,
            name=built.name or "",
            title=built.title,
            description=built.description,
            mime_type=built.mime_type,
            icons=built.icons,
            annotations=built.annotations,
            _meta=built.meta,
        )
        kind = "resource"
    _, entry = surface_entry(kind, model.model_dump(by_alias=True, exclude_none=True, mode="json"))
    return kind, entry


def check_tool_name(name: str) -> str:
    result = validate_tool_name(name)
    if not result.is_valid:
        raise BadValue(f"invalid tool name {name!r}: {'; '.join(result.warnings)}")
    return name


def check_uri(uri: str) -> UriTemplate:
    if not isinstance(uri, str) or "://" not in uri:
        raise BadValue(f"invalid resource URI {uri!r}: expected scheme://path, e.g. books://{{title}}")
    try:
        return UriTemplate.parse(uri)
    except ValueError as err:
        raise BadValue(f"invalid URI template {uri!r}: {err}") from None


def _annotations(flags: dict[str, bool] | None) -> tuple[ToolAnnotations | None, dict[str, bool]]:
    chosen = {ANNOTATION_FLAGS[k]: True for k, v in (flags or {}).items() if v}
    unknown = set(flags or {}) - set(ANNOTATION_FLAGS)
    if unknown:
        raise BadValue(f"unknown annotation(s) {sorted(unknown)}; known: {sorted(ANNOTATION_FLAGS)}")
    if not chosen:
        return None, {}
    return ToolAnnotations.model_validate(chosen), chosen


class Registry:
    def __init__(self, server: MCPServer) -> None:
        self.server = server
        # Who holds this server's loop right now: every async handler registered here is timed on it.
        self.watch = LoopWatch()
        self._entries: dict[tuple[str, str], Registration] = {}
        self._lock = threading.Lock()
        self.version = 0
        self._listeners = Listeners("registry listener")
        self.faults: dict[str, Faults] = {}  # tool name -> faults injected on purpose
        # What clients saw of each entry at its first registration in this session (reset() starts
        # a new one): (its kind in a snapshot, its listed entry), for `changes_since_first`.
        self._first: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
        # The SDK keeps its registries in its managers' dicts (sdk_compat reaches them);
        # mcp_nb replaces an entry with one assignment, so a concurrent call never finds
        # the name missing.
        self._tools = sdk_compat.tools(server)
        self._resources = sdk_compat.resources(server)
        self._templates = sdk_compat.templates(server)
        self._prompts = sdk_compat.prompts(server)

    # -- registering ----------------------------------------------------------------------------

    def add_tool(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: dict[str, bool] | None = None,
        inject: Faults | None = None,
        input_schema: dict[str, Any] | None = None,
    ) -> Registration:
        _require_function(fn, "tool")
        name = check_tool_name(name or fn.__name__)
        hints, chosen = _annotations(annotations)
        declared = check_input_schema(fn, input_schema) if input_schema is not None else None
        faults = self.faults
        with _refusals(fn, "tool"):
            tool = Tool.from_function(
                probe(fn, self.watch, lambda: faults.get(name), name, "tool"),
                name=name,
                title=title,
                description=description or inspect.getdoc(fn),
                annotations=hints,
            )
        if declared is not None:
            tool.parameters = declared  # what clients list and validate against
        with self._lock:
            replaced = name in self._tools
            changes = self._changes(("tool", name), self._tools.get(name), tool)
            self._tools[name] = tool
            # The cell is the source of truth: re-running it without --inject ends the injection.
            if inject is None:
                self.faults.pop(name, None)
            else:
                self.faults[name] = inject
            entry = self._remember(
                Registration(
                    kind="tool",
                    name=name,
                    title=title,
                    description=tool.description,
                    annotations=chosen,
                    input_schema=tool.parameters,
                    output_schema=tool.output_schema,
                    is_async=inspect.iscoroutinefunction(fn),
                    replaced=replaced,
                    faults=inject.describe() if inject is not None else None,
                    changes=changes,
                    function=fn,
                )
            )
        self._notify()  # outside the lock: a listener may read the registry
        return entry

    def add_resource(
        self,
        fn: Callable[..., Any],
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
    ) -> Registration:
        _require_function(fn, "resource")
        template = check_uri(uri)
        # Built first (the SDK's decorator checks template variables against parameters),
        # then swapped in with one assignment: a reader never finds the URI missing.
        with _refusals(fn, "resource"):
            built = sdk_compat.build_resource(
                probe(fn, self.watch, label=uri, kind="resource"),
                uri,
                name=name,
                title=title,
                description=description or inspect.getdoc(fn),
                mime_type=mime_type,
            )
        with self._lock:
            installed, other = (
                (self._templates, self._resources) if sdk_compat.is_template(built) else (self._resources, self._templates)
            )
            replaced = uri in installed or uri in other
            changes = self._changes(("resource", uri), installed.get(uri, other.get(uri)), built)
            installed[uri] = built
            other.pop(uri, None)
            entry = self._remember(
                Registration(
                    kind="resource",
                    name=name or fn.__name__,
                    uri=uri,
                    title=title,
                    description=description or inspect.getdoc(fn),
                    input_schema=_template_schema(template) if template.variable_names else None,
                    mime_type=mime_type or "text/plain",
                    is_async=inspect.iscoroutinefunction(fn),
                    replaced=replaced,
                    changes=changes,
                    function=fn,
                )
            )
        self._notify()  # outside the lock: a listener may read the registry
        return entry

    def add_prompt(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
    ) -> Registration:
        _require_function(fn, "prompt")
        name = check_tool_name(name or fn.__name__)
        with _refusals(fn, "prompt"):
            prompt = Prompt.from_function(
                probe(fn, self.watch, label=name, kind="prompt"),
                name=name,
                title=title,
                description=description or inspect.getdoc(fn),
            )
        with self._lock:
            replaced = name in self._prompts
            changes = self._changes(("prompt", name), self._prompts.get(name), prompt)
            self._prompts[name] = prompt
            entry = self._remember(
                Registration(
                    kind="prompt",
                    name=name,
                    title=title,
                    description=prompt.description,
                    input_schema=prompt_schema(prompt.arguments),
                    is_async=inspect.iscoroutinefunction(fn),
                    replaced=replaced,
                    changes=changes,
                    function=fn,
                )
            )
        self._notify()  # outside the lock: a listener may read the registry
        return entry

    def _changes(self, key: tuple[str, str], old: Any, new: Any) -> tuple[Change, ...]:
        """What clients see change from `old` (what the server held under `key`, or None) to `new`,
        the SDK's objects; the first version of `key` in this session is kept for `changes_since_first`."""
        kind, listed = listed_entry(new)
        self._first.setdefault(key, (kind, listed))
        if old is None:
            return ()
        was_kind, was = listed_entry(old)
        if was_kind != kind:  # a resource that became a template, or back: one gone, another new
            return (*entry_changes(was_kind, key[1], was, None), *entry_changes(kind, key[1], None, listed))
        return tuple(entry_changes(kind, key[1], was, listed))

    def changes_since_first(self, kind: str, key: str) -> list[Change]:
        """What clients see changed in `key` (a tool or prompt name, a resource's URI) since its first
        registration in this session: [] when it has not changed, or is not registered."""
        first = self._first.get((kind, key))
        built = self._built(kind, key)
        if first is None or built is None:
            return []
        now_kind, now = listed_entry(built)
        if now_kind != first[0]:
            return [*entry_changes(first[0], key, first[1], None), *entry_changes(now_kind, key, None, now)]
        return entry_changes(now_kind, key, first[1], now)

    def _built(self, kind: str, key: str) -> Any:
        if kind == "tool":
            return self._tools.get(key)
        if kind == "prompt":
            return self._prompts.get(key)
        return self._resources.get(key) or self._templates.get(key)

    def _remember(self, entry: Registration) -> Registration:
        self._entries[(entry.kind, entry.key)] = entry
        self.version += 1
        return entry

    # -- listeners (a panel that re-reads the server when a cell is re-run) -------------------------

    def subscribe(self, listener: Callable[[], None]) -> None:
        """Call `listener()` after every registration or removal. A bound method is held weakly
        (a view that is gone stops listening by itself); a function until `unsubscribe`."""
        self._listeners.add(listener)

    def unsubscribe(self, listener: Callable[[], None]) -> None:
        self._listeners.remove(listener)

    def _notify(self) -> None:
        # Called with the lock released, so a listener may read the registry; one that fails
        # is logged, and does not break registering.
        self._listeners()

    # -- removing and listing -------------------------------------------------------------------

    def remove(self, key: str, kind: str | None = None) -> Registration:
        """Remove what `key` (a tool or prompt name, or a resource URI) names on the server."""
        if kind is not None and kind not in KINDS:
            raise BadValue(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
        with self._lock:
            matches = [k for k in self._entries if k[1] == key and (kind is None or k[0] == kind)]
            if not matches:
                raise BadValue(f"nothing named {key!r} is registered" + (f" as a {kind}" if kind else ""))
            if len(matches) > 1:
                kinds = " and ".join(k[0] for k in matches)
                raise BadValue(f"{key!r} names a {kinds}; say which with kind=")
            entry_kind, _ = matches[0]
            if entry_kind == "tool":
                if key in self._tools:
                    self.server.remove_tool(key)
                self.faults.pop(key, None)
            elif entry_kind == "prompt":
                if key in self._prompts:
                    self.server.remove_prompt(key)
            else:  # the SDK has no public way to remove a resource
                self._resources.pop(key, None)
                self._templates.pop(key, None)
            self.version += 1
            removed = self._entries.pop(matches[0])
        self._notify()  # outside the lock: a listener may read the registry
        return removed

    def inject(self, name: str, faults: Faults | None) -> Faults | None:
        """Make a registered tool slow or failing on purpose; None ends it. Returns what was set."""
        tool = self._tools.get(name)
        if tool is None:
            raise BadValue(f"no tool named {name!r} is registered")
        if not _probed(tool.fn):
            raise BadValue(f"tool {name!r} was not registered through mcp_nb, so faults cannot be injected into it")
        if faults is None:
            self.faults.pop(name, None)
        else:
            self.faults[name] = faults
        return faults

    def entries(self) -> list[Registration]:
        with self._lock:
            return list(self._entries.values())

    def get(self, kind: str, key: str) -> Registration | None:
        return self._entries.get((kind, key))

    def to_frame(self) -> pd.DataFrame:
        """One row per entry. Every text column holds "" where there is nothing to say (a
        tool's `uri`, no title, no annotations, no parameters, no faults), never NaN."""
        return entries_frame(self.entries(), self.faults)

    # -- for the engine -------------------------------------------------------------------------

    def reaches_request(self, name: str) -> bool:
        """Whether tool `name` can reach its request (send progress, ask the client a question,
        ask for a completion, log through it): a handler mcp_nb wrapped can only through a Context
        parameter or a resolver (the SDK has no other way to reach the request); any other
        handler, or a name not registered, may."""
        fn = sdk_compat.handler_of(self._tools.get(name))
        return not _probed(fn) or getattr(fn, "__mcp_nb_reaches__", True)

    def observes(self, target: str, key: str) -> bool:
        """Whether the handler a call to `key` reaches is one mcp_nb wrapped in its probe."""
        if target == "tool":
            return _probed(sdk_compat.handler_of(self._tools.get(key)))
        if target == "prompt":
            return _probed(sdk_compat.handler_of(self._prompts.get(key)))
        reached = self._resource_for(key)
        if reached is None:
            return False
        resource, _ = reached
        if sdk_compat.is_template(resource):
            # The SDK's resource manager stops at the first template whose pattern matches, then
            # checks the values (no `..` escaping the path...): a read it refuses there reaches
            # no handler, and no later template is tried.
            try:
                resource.matches(key)
            except Exception:  # noqa: BLE001 - its ResourceSecurityError, or whatever else ends the read there
                return False
        return _probed(sdk_compat.handler_of(resource))

    def reached(self, target: str, key: str) -> tuple[Registration, dict[str, Any] | None] | None:
        """The registration a call to `key` reaches, and for a template read the variables of
        its URI; None when it reaches none of mcp_nb's (or nothing at all)."""
        if target != "resource":
            entry = self._entries.get((target, key))
            return None if entry is None else (entry, None)
        found = self._resource_for(key)
        if found is None:
            return None
        resource, variables = found
        entry = self._entries.get(("resource", getattr(resource, "uri_template", None) or key))
        return None if entry is None else (entry, variables)

    def _resource_for(self, uri: str) -> tuple[Any, dict[str, Any] | None] | None:
        """The SDK's resource a read of `uri` reaches, as its resource manager looks: the static
        resource of that URI, else the first template, in the server's order, that matches."""
        resource = self._resources.get(uri)
        if resource is not None:
            return resource, None
        templates = list(self._templates.values())
        return first_template(uri, ((getattr(t, "parsed_template", None) or t.uri_template, t) for t in templates))

    def annotations(self, name: str):
        """The tool's MCP annotations as the server holds them (None when it declares none)."""
        tool = self._tools.get(name)
        return None if tool is None else tool.annotations

    def input_schema(self, target: str, key: str) -> dict[str, Any] | None:
        """The input schema the server holds now (for tools registered any way)."""
        if target == "tool":
            tool = self._tools.get(key)
            return None if tool is None else tool.parameters
        if target == "prompt":
            entry = self._entries.get(("prompt", key))
            if entry is not None:
                return entry.input_schema
            prompt = self._prompts.get(key)  # registered on the server without mcp_nb
            return None if prompt is None else prompt_schema(prompt.arguments)
        return None


def entries_frame(entries: list[Registration], faults: dict[str, Faults] | None = None, listed: bool = False) -> pd.DataFrame:
    """What a server offers as a table, one row per entry (the kernel's registry or an outside server's lists).

    `listed`: the entries are an outside server's listing, whose `execution` and `_meta` (what the
    kernel's own entries never have) get two columns more, as compact JSON ("" where absent)."""
    faults = faults or {}
    rows = [
        {
            "kind": e.kind,
            "name": e.name,
            "uri": e.uri or "",
            "title": e.title or "",
            "description": (e.description or "").strip().splitlines()[0] if (e.description or "").strip() else "",
            "annotations": ", ".join(sorted(e.annotations)),
            "parameters": ", ".join((e.input_schema or {}).get("properties", {})),
            "async": e.is_async,
            "faults": faults[e.name].describe() if e.kind == "tool" and e.name in faults else "",
        }
        for e in entries
    ]
    columns = ["kind", "name", "uri", "title", "description", "annotations", "parameters", "async", "faults"]
    if listed:
        for row, e in zip(rows, entries):
            row["execution"] = _compact(e.execution)
            row["meta"] = _compact(e.meta)
        columns += ["execution", "meta"]
    return lib.pandas.DataFrame(rows, columns=columns)


def _compact(value: Any) -> str:
    return "" if value is None else json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)


def prompt_schema(arguments: Iterable[Any] | None) -> dict[str, Any]:
    """The input schema of a prompt's arguments (the SDK's or the protocol's `PromptArgument`s):
    each one a string, as MCP sends them, with its description, and required where it says so.
    The one spelling for the kernel's prompts and an outside server's."""
    arguments = list(arguments or [])
    return {
        "type": "object",
        "properties": {
            a.name: {"type": "string", **({"description": a.description} if a.description else {})} for a in arguments
        },
        "required": [a.name for a in arguments if a.required],
    }


T = TypeVar("T")


def first_template(uri: str, templates: Iterable[tuple[str | UriTemplate, T]]) -> tuple[T, dict[str, Any]] | None:
    """The first of `templates` (pairs of a URI template and what it stands for, in the server's
    order) whose pattern matches `uri`, with the variables of `uri`; None when none does.

    The one search of a read's template, for the kernel's registry and for what an outside
    server lists, as the SDK's resource manager searches. A template that cannot be parsed
    (an outside server's, in syntax the SDK does not know) cannot be told to match: it is
    passed over, and the search goes on.
    """
    for template, item in templates:
        try:
            parsed = template if isinstance(template, UriTemplate) else UriTemplate.parse(template)
            variables = parsed.match(uri)
        except ValueError:  # the parser's refusal: this template cannot say
            continue
        if variables is not None:
            return item, variables
    return None


def reached_entry(entries: Iterable[Registration], target: str, key: str) -> tuple[Registration, dict[str, Any] | None] | None:
    """Among `entries` (what an outside server lists), the one a call to `key` reaches, and for a
    template read the variables of its URI: a static resource of that URI first, then the first
    template that matches (`first_template`)."""
    entries = list(entries)
    for entry in entries:
        if entry.kind == target and entry.key == key and (target != "resource" or entry.input_schema is None):
            return entry, None
    if target != "resource":
        return None
    return first_template(key, ((e.uri, e) for e in entries if e.kind == "resource" and e.input_schema is not None and e.uri))


def _probed(fn: Any) -> bool:
    return bool(getattr(fn, "__mcp_nb_probe__", False))


@contextmanager
def _refusals(fn: Any, kind: str) -> Iterator[None]:
    """What the SDK refuses while building the handler of `fn`: the user's mistake, said by
    mcp_nb. Its signature refusals become one-line TypeErrors (`sdk_refusals`); a ValueError
    its builders raise on purpose (URI parameters that do not match the function's...) is
    raised again here as a `BadValue`: the user's mistake, said in one line (`mcp_nb.mistakes`)."""
    with sdk_refusals(fn, kind):
        try:
            yield
        except ValueError as err:
            raise BadValue(str(err).strip() or f"{getattr(fn, '__name__', fn)} cannot be a {kind}") from err


def _require_function(fn: Any, kind: str) -> None:
    # Before anything changes: a function the SDK would misread is refused in one line.
    check_function(fn, kind)


def template_schema(uri: str) -> dict[str, Any]:
    """The input schema of a URI template: one string per variable (query variables optional)."""
    return _template_schema(UriTemplate.parse(uri))


def _template_schema(template: UriTemplate) -> dict[str, Any]:
    names = list(template.variable_names)
    query = set(getattr(template, "query_variable_names", ()) or ())
    return {
        "type": "object",
        "properties": {n: {"type": "string"} for n in names},
        "required": [n for n in names if n not in query],
    }
