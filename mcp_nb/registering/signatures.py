"""What a function must look like to become a tool, resource or prompt, checked before registering.

The SDK builds a handler from the function's signature: every parameter becomes a named
argument with a JSON schema, and a call passes the arguments by name. Some functions it
accepts anyway and turns into something broken or misleading (`*args` becomes a required
string argument called "args"; a generator "succeeds" with the text
`<async_generator object ...>`); others it refuses with an exception a notebook shows as a
raw traceback (a parameter type with no JSON schema). `check_function` refuses all of
them first, with one line naming the parameter or the reason, so nothing is registered or
replaced; `sdk_refusals` turns what the SDK still refuses into the same kind of line.
"""

from __future__ import annotations

import collections.abc
import inspect
import json
import sys
import types
import typing
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pydantic
from mcp.server.mcpserver import Context, Resolve
from mcp.server.mcpserver.exceptions import InvalidSignature
from pydantic.errors import PydanticInvalidForJsonSchema, PydanticUserError

from mcp_nb.mistakes import BadType, BadValue, first_line

JSON_TYPES_HINT = "use JSON types (str, int, float, bool, list, dict) or a pydantic model, dataclass or TypedDict"


class _Arguments(pydantic.BaseModel):
    # As the SDK's argument model: a class pydantic does not know validates by isinstance,
    # so the JSON schema, not the model, is where such a type fails.
    model_config = pydantic.ConfigDict(arbitrary_types_allowed=True)


def check_function(fn: Any, kind: str) -> None:
    """Raise TypeError, one line, if `fn` cannot become a `kind` ("tool", "resource", "prompt")."""
    _require_def(fn)
    name = fn.__name__
    if inspect.isasyncgenfunction(fn):
        raise BadType(
            f"{name} is an async generator function (it uses yield), but a {kind} returns one value: return a list or a str"
        )
    if inspect.isgeneratorfunction(fn):
        raise BadType(f"{name} is a generator function (it uses yield), but a {kind} returns one value: return a list or a str")
    try:
        # As the SDK reads it: string annotations evaluated, functools.wraps followed.
        signature = inspect.signature(fn, eval_str=True)
    except Exception as err:  # NameError, SyntaxError...: whatever evaluating the annotations raised
        raise BadType(f"the annotations of {name} cannot be evaluated: {first_line(err)}") from None
    typed: dict[str, Any] = {}
    for parameter in signature.parameters.values():
        _check_parameter(parameter, name)
        if parameter.annotation is not parameter.empty and not _injected(parameter.annotation):
            typed[parameter.name] = parameter.annotation
    # One model for every parameter costs one build; only a failure is looked at one by one.
    if typed and not _schemas_build(list(typed.values()), kind):
        for label, annotation in typed.items():
            _check_type(label, annotation, name, kind)


def check_input_schema(fn: Any, schema: Any) -> dict[str, Any]:
    """A copy of the input schema declared for tool `fn`, checked against its parameters.

    For a schema the signature cannot say (JSON Schema 2020-12's `if`/`then`, `allOf`,
    `$defs`...). It is what clients list and validate against; the function still gets its
    arguments as the SDK validates them from the signature, so every property must be a
    parameter, and every parameter without a default must be required.
    """
    name = getattr(fn, "__name__", "the tool")
    if not isinstance(schema, collections.abc.Mapping):
        raise BadType(f"input_schema must be a JSON Schema object (a dict), got {type(schema).__name__}")
    try:
        declared = json.loads(json.dumps(schema))
    except (TypeError, ValueError) as err:
        raise BadType(f"input_schema of {name} is not JSON: {err}") from None
    except RecursionError:
        raise BadValue(f"input_schema of {name} is nested too deeply to be JSON") from None
    if declared.get("type") != "object":
        raise BadValue(f'input_schema of {name} must have "type": "object" (tool arguments are named)')
    properties = declared.get("properties", {})
    required = declared.get("required", [])
    if not isinstance(properties, dict) or not isinstance(required, list):
        raise BadValue(f'input_schema of {name}: "properties" must be an object and "required" a list')
    parameters = {
        p.name: p
        for p in inspect.signature(fn, eval_str=True).parameters.values()
        if p.annotation is p.empty or not _injected(p.annotation)
    }
    unknown = sorted(set(properties) - set(parameters))
    if unknown:
        raise BadValue(f"input_schema of {name} declares {', '.join(unknown)}, which {name} has no parameter for")
    unlisted = sorted(n for n, p in parameters.items() if p.default is p.empty and n not in required)
    if unlisted:
        raise BadValue(f"parameter {', '.join(unlisted)} of {name} has no default, so input_schema must list it in required")
    return declared


def _require_def(fn: Any) -> None:
    if inspect.isclass(fn):
        raise BadType(f"expected a function (def or async def), got a class: {fn.__name__}")
    if getattr(fn, "__name__", None) == "<lambda>":
        raise BadType("a lambda cannot be registered; give the function a name with `def`")
    # A decorator that keeps the signature (functools.wraps, lru_cache) leads back to a def;
    # a partial, a callable object or a builtin does not, and the SDK would misread it (a
    # partial's description is functools' own docstring; an async __call__ is never awaited).
    target = fn.__func__ if inspect.ismethod(fn) else fn
    if not callable(fn) or not inspect.isfunction(inspect.unwrap(target)):
        raise BadType(f"expected a function (def or async def), got {_object_text(fn)}: wrap it in a def")


def _check_parameter(parameter: inspect.Parameter, name: str) -> None:
    label = parameter.name
    if parameter.kind is parameter.VAR_POSITIONAL or parameter.kind is parameter.VAR_KEYWORD:
        stars = "*" if parameter.kind is parameter.VAR_POSITIONAL else "**"
        raise BadType(f"parameter {stars}{label} of {name}: MCP arguments are named, so declare each one as its own parameter")
    if parameter.kind is parameter.POSITIONAL_ONLY:
        raise BadType(f"parameter {label!r} of {name} is positional-only (before /), but MCP passes every argument by name")
    if label.startswith("_"):
        raise BadType(f"parameter {label!r} of {name} starts with '_', which the SDK does not accept: rename it")


def _schemas_build(annotations: list[Any], kind: str) -> bool:
    # The SDK validates a tool's arguments with a model that allows any class (checked by
    # isinstance), and a prompt's or a resource's with validate_call, which allows none.
    base = _Arguments if kind == "tool" else pydantic.BaseModel
    fields: dict[str, Any] = {f"p{i}": (annotation, ...) for i, annotation in enumerate(annotations)}
    try:
        pydantic.create_model("Arguments", __base__=base, **fields).model_json_schema()
    except Exception:
        return False
    return True


def _check_type(label: str, annotation: Any, name: str, kind: str) -> None:
    try:
        pydantic.create_model("Arguments", __base__=_Arguments, value=(annotation, ...)).model_json_schema()
    except PydanticInvalidForJsonSchema:
        raise BadType(
            f"parameter {label!r} of {name}: type {_annotation_text(annotation)} cannot be described in JSON Schema; {JSON_TYPES_HINT}"
        ) from None
    except Exception as err:  # pydantic's other refusals carry their own advice
        raise BadType(
            f"parameter {label!r} of {name}: type {_annotation_text(annotation)} cannot be described in JSON Schema: {first_line(err)}"
        ) from None
    if kind != "tool":
        try:
            pydantic.TypeAdapter(annotation)
        except Exception:
            raise BadType(
                f"parameter {label!r} of {name}: type {_annotation_text(annotation)} cannot be validated by pydantic; {JSON_TYPES_HINT}"
            ) from None


def _injected(annotation: Any) -> bool:
    """A parameter the SDK fills itself (the request Context, a `Resolve(...)`), never from arguments."""
    if inspect.isclass(annotation) and issubclass(annotation, Context):
        return True
    origin = typing.get_origin(annotation)
    if origin is None:
        return False
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return any(isinstance(extra, Resolve) for extra in args[1:]) or _injected(args[0])
    return any(inspect.isclass(arg) and issubclass(arg, Context) for arg in args)


@contextmanager
def sdk_refusals(fn: Any, kind: str) -> Iterator[None]:
    """What the SDK still refuses while building the handler, as one-line TypeErrors."""
    try:
        yield
    except (InvalidSignature, PydanticUserError) as err:
        raise BadType(f"{getattr(fn, '__name__', fn)} cannot be a {kind}: {first_line(err)}") from err


def _annotation_text(annotation: Any) -> str:
    """A type as the user wrote it: `list[Plain]`, not `list[tests.module.<locals>.Plain]`."""
    origin = typing.get_origin(annotation)
    if origin is None:
        if annotation is type(None):
            return "None"
        if isinstance(annotation, list):  # Callable's parameter list
            return "[" + ", ".join(map(_annotation_text, annotation)) + "]"
        return getattr(annotation, "__name__", None) or repr(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _annotation_text(args[0])
    if origin is typing.Union or origin is types.UnionType:
        return " | ".join(map(_annotation_text, args))
    if origin is typing.Literal:
        return f"Literal[{', '.join(map(repr, args))}]"
    head = "Callable" if origin is collections.abc.Callable else getattr(origin, "__name__", repr(origin))
    return f"{head}[{', '.join(map(_annotation_text, args))}]" if args else head


def _object_text(value: Any) -> str:
    """What a non-function is, for the message: `functools.partial`, `an Adder object`, `str`."""
    cls = type(value)
    module = cls.__module__.partition(".")[0]
    if module == "builtins":
        return cls.__name__
    if module in sys.stdlib_module_names:
        return f"{module}.{cls.__name__}"
    return f"an {cls.__name__} object" if cls.__name__[:1].lower() in "aeiou" else f"a {cls.__name__} object"
