"""Argument completion: ``@mcp.completion(prompt=..., argument=...)``, served as ``completion/complete``.

    @mcp.completion(prompt="travel", argument="city")
    def cities(value: str) -> list[str]:
        return [c for c in CITIES if c.startswith(value)]

    @mcp.completion(resource="users://{user_id}/profile", argument="user_id")
    async def user_ids(value: str, context: dict[str, str]) -> Completion: ...

A completer takes the partial value and, optionally, a second parameter named ``context`` with
the arguments the client has already filled in. It returns the suggestions (any iterable of
strings) or a :class:`Completion`; at most 100 values go on the wire (``hasMore`` says when more
were cut). A reference to a prompt or template that does not exist is -32602; an argument with no
completer gets an empty list.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import Field
from starlette.concurrency import run_in_threadpool

from fastapi_mrtr.features.prompts import PromptRegistry
from fastapi_mrtr.features.resources import ResourceRegistry
from fastapi_mrtr.transport.request import RpcRequest
from fastapi_mrtr.wire.errors import INVALID_PARAMS, ServerError
from fastapi_mrtr.wire.protocol import JSONObject, WireModel, dump

MAX_VALUES = 100

Completer = Callable[..., Any]


class Completion(WireModel):
    """Suggestions for one argument; ``total`` and ``has_more`` are optional hints."""

    values: list[str] = Field(default_factory=list)
    total: int | None = None
    has_more: bool | None = None


class CompletionRegistry:
    """Completers keyed by (``ref/prompt`` name or ``ref/resource`` template, argument name)."""

    def __init__(self, prompts: PromptRegistry, resources: ResourceRegistry) -> None:
        self._prompts = prompts
        self._resources = resources
        self._completers: dict[tuple[str, str, str], tuple[Completer, bool]] = {}

    def __bool__(self) -> bool:
        return bool(self._completers)

    def add(self, fn: Completer, *, prompt: str | None, resource: str | None, argument: str) -> None:
        if (prompt is None) == (resource is None):
            raise ValueError("@mcp.completion(): give exactly one of prompt= or resource=")
        if not isinstance(argument, str) or not argument:
            raise ValueError("@mcp.completion(): argument= must name the argument to complete")
        parameters = list(inspect.signature(fn).parameters.values())
        if not parameters or len(parameters) > 2 or (len(parameters) == 2 and parameters[1].name != "context"):
            raise TypeError(
                f"@mcp.completion() {fn.__qualname__}: take (value) or (value, context), "
                "where context is a dict of the arguments already given"
            )
        key = ("ref/prompt", prompt, argument) if prompt is not None else ("ref/resource", str(resource), argument)
        if key in self._completers:
            raise ValueError(f"a completer for {key[1]!r} argument {argument!r} is already registered")
        self._completers[key] = (fn, len(parameters) == 2)

    async def complete(self, rpc: RpcRequest) -> JSONObject:
        ref = rpc.params.get("ref")
        argument = rpc.params.get("argument")
        if not isinstance(ref, dict) or not isinstance(argument, dict):
            raise ServerError(INVALID_PARAMS, "Invalid params: completion/complete needs ref and argument")
        arg_name, value = argument.get("name"), argument.get("value")
        if not isinstance(arg_name, str) or not isinstance(value, str):
            raise ServerError(INVALID_PARAMS, "Invalid params: argument needs a string name and value")
        target = self._target(ref)
        context = _context_arguments(rpc.params.get("context"))
        entry = self._completers.get((ref["type"], target, arg_name))
        if entry is None:
            completion = Completion()
        else:
            fn, takes_context = entry
            args: tuple[Any, ...] = (value, context) if takes_context else (value,)
            outcome = await fn(*args) if inspect.iscoroutinefunction(fn) else await run_in_threadpool(fn, *args)
            completion = _completion(outcome)
        return {"resultType": "complete", "completion": dump(completion)}

    def _target(self, ref: JSONObject) -> str:
        kind = ref.get("type")
        if kind == "ref/prompt":
            name = ref.get("name")
            if not isinstance(name, str) or name not in self._prompts:
                raise ServerError(INVALID_PARAMS, f"Unknown prompt: {name}", {"name": name})
            return name
        if kind == "ref/resource":
            uri = ref.get("uri")
            if not isinstance(uri, str) or self._resources.template(uri) is None:
                raise ServerError(INVALID_PARAMS, f"Unknown resource template: {uri}", {"uri": uri})
            return uri
        raise ServerError(INVALID_PARAMS, "Invalid params: ref.type must be ref/prompt or ref/resource")


def _context_arguments(context: Any) -> dict[str, str]:
    if context is None:
        return {}
    arguments = context.get("arguments") if isinstance(context, dict) else None
    if arguments is None:
        return {}
    if not isinstance(arguments, dict) or not all(isinstance(v, str) for v in arguments.values()):
        raise ServerError(INVALID_PARAMS, "Invalid params: context.arguments must map names to strings")
    return dict(arguments)


def _completion(outcome: Any) -> Completion:
    if isinstance(outcome, Completion):
        completion = outcome.model_copy()
    elif isinstance(outcome, Iterable) and not isinstance(outcome, (str, bytes, dict)):
        completion = Completion(values=[str(value) for value in outcome])
    else:
        raise TypeError(f"a completer returns a Completion or an iterable of strings, not {type(outcome).__name__}")
    if len(completion.values) > MAX_VALUES:
        total = completion.total if completion.total is not None else len(completion.values)
        completion = Completion(values=completion.values[:MAX_VALUES], total=total, has_more=True)
    return completion
