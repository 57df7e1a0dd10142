"""Plain Python functions as MCP handlers: prompts, resources and completions.

A handler's parameters are its MCP arguments, validated by Pydantic from the type hints; one
parameter annotated ``ToolContext`` (or ``Context``) receives the call's context instead, with the
same replay API as a tool (``ctx.elicit``, ``ctx.sample``, ``ctx.list_roots``, ``ctx.once``...).
Sync functions run in the thread pool, async ones on the event loop.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic.fields import FieldInfo
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from fastapi_mrtr.engine.call import CallRecord, catch_suspension, find_exception
from fastapi_mrtr.engine.context import ReplayDivergedError, ToolContext
from fastapi_mrtr.transport.request import RpcRequest
from fastapi_mrtr.wire.errors import INTERNAL_ERROR, INVALID_PARAMS, ServerError
from fastapi_mrtr.wire.protocol import JSONObject


class Suspended:
    """Returned by :func:`call_function` when the run stopped to ask for input."""


SUSPENDED = Suspended()


@dataclass(frozen=True)
class FunctionSignature:
    """What a handler function takes: its arguments (a Pydantic model) and its context parameter."""

    fn: Callable[..., Any]
    arguments: type[BaseModel]
    context_param: str | None
    is_async: bool

    @property
    def fields(self) -> Mapping[str, FieldInfo]:
        return self.arguments.model_fields

    def describe_arguments(self) -> list[JSONObject]:
        """``[{name, title?, description?, required}]`` in declaration order."""
        described: list[JSONObject] = []
        for name, info in self.fields.items():
            entry: JSONObject = {"name": info.alias or name}
            if info.title:
                entry["title"] = info.title
            if info.description:
                entry["description"] = info.description
            entry["required"] = info.is_required()
            described.append(entry)
        return described


def _is_context(hint: Any) -> bool:
    if hint is ToolContext:
        return True
    if get_origin(hint) is Annotated:
        return get_args(hint)[0] is ToolContext
    return False


def inspect_function(fn: Callable[..., Any], kind: str) -> FunctionSignature:
    """Read ``fn``'s parameters. ``kind`` ("prompt", "resource"...) only words the errors."""
    if not callable(fn):
        raise TypeError(f"@mcp.{kind}() decorates a function, got {fn!r}")
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:  # an unresolvable forward reference
        where = getattr(fn, "__qualname__", repr(fn))
        raise TypeError(f"@mcp.{kind}() {where}: cannot read the type hints: {exc}") from exc
    context_param: str | None = None
    fields: dict[str, Any] = {}
    for name, param in inspect.signature(fn).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"@mcp.{kind}() {fn.__qualname__}: *args and **kwargs are not supported")
        if param.kind is param.POSITIONAL_ONLY:
            raise TypeError(f"@mcp.{kind}() {fn.__qualname__}: positional-only parameters are not supported")
        hint = hints.get(name, Any)
        if _is_context(hint):
            if context_param is not None:
                raise TypeError(f"@mcp.{kind}() {fn.__qualname__}: only one ToolContext parameter is allowed")
            context_param = name
            continue
        default = param.default
        if isinstance(default, FieldInfo):
            fields[name] = (hint, default)
        else:
            fields[name] = (hint, ... if default is inspect.Parameter.empty else default)
    model: type[BaseModel] = create_model(
        f"{fn.__name__}_arguments",
        __config__=ConfigDict(extra="ignore", arbitrary_types_allowed=True),
        **fields,
    )
    return FunctionSignature(
        fn=fn,
        arguments=model,
        context_param=context_param,
        is_async=inspect.iscoroutinefunction(fn),
    )


def validate_arguments(signature: FunctionSignature, arguments: Mapping[str, Any], what: str) -> dict[str, Any]:
    """The keyword arguments for the call, or -32602 listing what is wrong."""
    try:
        parsed = signature.arguments.model_validate(dict(arguments))
    except ValidationError as exc:
        errors = [
            {"field": ".".join(str(part) for part in error["loc"]), "message": error["msg"]}
            for error in exc.errors(include_url=False)
        ]
        raise ServerError(INVALID_PARAMS, f"Invalid arguments for {what}", {"errors": errors}) from None
    return {name: getattr(parsed, name) for name in signature.fields}


async def call_function(
    signature: FunctionSignature, kwargs: dict[str, Any], rpc: RpcRequest, record: CallRecord, what: str
) -> Any:
    """Run the handler once for this round; :data:`SUSPENDED` when it stopped to ask for input."""
    call_kwargs = dict(kwargs)
    if signature.context_param is not None:
        call_kwargs[signature.context_param] = ToolContext(record, Request(rpc.scope))
    value: Any = SUSPENDED
    with catch_suspension:
        try:
            if signature.is_async:
                value = await signature.fn(**call_kwargs)
            else:
                value = await run_in_threadpool(signature.fn, **call_kwargs)
                if inspect.isawaitable(value):
                    value = await value
        except Exception as exc:
            diverged = find_exception(exc, ReplayDivergedError)
            if diverged is not None:
                raise ServerError(INTERNAL_ERROR, f"{what}: {diverged}") from None
            raise
    if record.wants_input or record.missing_capability is not None:
        return SUSPENDED
    return value
