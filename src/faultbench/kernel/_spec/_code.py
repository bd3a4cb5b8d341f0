"""Tools defined in code: Python functions that become operations of a world.

A world file's custom operation names its handler (`handler: shop_rules.create_return`); a
tool defined in code is a function handed over directly (`faultbench.testing.mock_tool`,
`MockToolRegistry`). `add_tools(spec, {"lookup": lookup})` returns a new `WorldSpec` with one
`custom` operation per function: typed from its annotations, described by its docstring,
validated, faulted, logged and traced like any other. `empty_spec()` is the world without a
file to add them to.

A function is either a handler (`def op(world, clock, city: str)`) or a plain function
(`def lookup(city: str) -> dict`), which is wrapped into one. Its operation has no
`handler:` string (nothing to import): that is how a code-defined tool is told apart.

The log records the code-defined tools a world ran with (`WorldCreated.tools`: name ->
fingerprint of the operation, its parameters and description), because a replay needs the
same tools to rebuild the spec: replay folds events and calls no handler, but the world it
returns answers calls with them. `replay` compares the two and refuses a different set.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import typing
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import msgspec

from .._text import did_you_mean
from ._handlers import HandlerProblem, handler_description, handler_params
from ._types import DEFAULT_CLOCK_START, OperationSpec, ServiceSpec, WorldSpec

__all__ = ["add_tools", "code_tools", "empty_spec", "tool_fingerprints"]

_NAME_HELP = "a tool name is letters, digits and underscores, starting with a letter"
_encoder = msgspec.json.Encoder(order="deterministic", enc_hook=repr)


def empty_spec(
    name: str = "simulation", *, seed: int = 0, clock_start: datetime | None = None
) -> WorldSpec:
    """A world without records or tools: the base for tools defined in code."""
    start = DEFAULT_CLOCK_START if clock_start is None else clock_start
    return WorldSpec(
        name=name,
        path=None,
        seed=int(seed),
        clock_start=start,
        services=(),
        records={},
        operations={},
        faults={},
    )


def add_tools(
    spec: WorldSpec,
    tools: Mapping[str, Callable[..., Any]],
    *,
    service: str = "tools",
    descriptions: Mapping[str, str] | None = None,
) -> WorldSpec:
    """`spec` plus one custom operation per function in `tools` (tool name -> function), in
    the service `service` (fault rules address them as `service.name`, or `service.*`).

    Raises ValueError for a name that is taken or malformed, TypeError for a function whose
    signature cannot be a tool's (see `handler_params`)."""
    if not tools:
        return spec
    if not service.isidentifier():
        raise ValueError(f"Expected a service name ({_NAME_HELP}). Instead, received: {service!r}")
    descriptions = descriptions or {}
    operations = dict(spec.operations)
    handlers = dict(spec.handlers)
    added: list[str] = []
    for name, func in tools.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"Expected a tool name ({_NAME_HELP}). Instead, received: {name!r}")
        if name in operations:
            raise ValueError(
                f"The world {spec.name!r} already has a tool named {name!r} "
                f"({operations[name].qualname}). Expected a new name for the tool defined in code."
            )
        if not callable(func):
            raise TypeError(
                f"Expected a function for the tool {name!r}. Instead, received: {func!r}"
            )
        handler = as_handler(func)
        try:
            params = handler_params(handler)
        except HandlerProblem as exc:
            raise TypeError(f"the function of the tool {name!r} cannot be a tool: {exc}") from None
        operations[name] = OperationSpec(
            name=name,
            service=service,
            kind="custom",
            description=descriptions.get(name) or handler_description(handler),
            params=params,
        )
        handlers[name] = handler
        added.append(name)
    services = list(spec.services)
    for i, s in enumerate(services):
        if s.name == service:
            services[i] = msgspec.structs.replace(s, operations=(*s.operations, *added))
            break
    else:
        services.append(ServiceSpec(name=service, records=(), operations=tuple(added)))
    return msgspec.structs.replace(
        spec, services=tuple(services), operations=operations, handlers=handlers
    )


def as_handler(func: Callable[..., Any]) -> Callable[..., Any]:
    """`func` as a handler `(world, clock, **args)`: itself if it already takes world and
    clock first, else a wrapper with the same arguments, annotations and docstring."""
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"cannot read the signature of {func!r}: {exc}") from None
    params = list(sig.parameters.values())
    if [p.name.lstrip("_") for p in params[:2]] == ["world", "clock"]:
        return func
    try:
        hints = typing.get_type_hints(func)
    except Exception:  # annotations that do not resolve: read as written, as handlers are
        hints = dict(getattr(func, "__annotations__", {}))

    @functools.wraps(func)
    def handler(world: Any, clock: Any, /, **args: Any) -> Any:
        return func(**args)

    lead = [
        inspect.Parameter("world", inspect.Parameter.POSITIONAL_ONLY),
        inspect.Parameter("clock", inspect.Parameter.POSITIONAL_ONLY),
    ]
    handler.__signature__ = sig.replace(parameters=[*lead, *params])  # type: ignore[attr-defined]  # read by inspect.signature
    handler.__annotations__ = {k: v for k, v in hints.items() if k != "return"}
    return handler


def code_tools(spec: WorldSpec) -> list[str]:
    """The names of `spec`'s tools defined in code (custom operations without `handler:`)."""
    return [
        name for name, op in spec.operations.items() if op.kind == "custom" and op.handler is None
    ]


def tool_fingerprints(spec: WorldSpec) -> dict[str, str]:
    """Tool name -> a fingerprint of its operation (service, parameters, description), for
    the tools of `spec` defined in code: what `WorldCreated.tools` records."""
    out = {}
    for name in code_tools(spec):
        op = msgspec.structs.replace(spec.operations[name], loc=None)
        out[name] = hashlib.blake2b(_encoder.encode(op), digest_size=8).hexdigest()
    return out


def tools_problem(recorded: Mapping[str, str], spec: WorldSpec) -> str | None:
    """Why a log that recorded the tools `recorded` cannot replay against `spec`, or None."""
    now = tool_fingerprints(spec)
    if dict(recorded) == now:
        return None
    missing = [n for n in recorded if n not in now]
    extra = [n for n in now if n not in recorded]
    changed = [n for n in recorded if n in now and recorded[n] != now[n]]
    parts = []
    if missing:
        hint = "".join(did_you_mean(n, list(now)) for n in missing[:1])
        parts.append(f"missing {', '.join(missing)}{hint}")
    if extra:
        parts.append(f"not in the log: {', '.join(extra)}")
    if changed:
        parts.append(f"changed (arguments or description): {', '.join(changed)}")
    return "; ".join(parts)
