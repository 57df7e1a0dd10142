"""Prompts: ``@mcp.prompt()`` on a plain function, served as ``prompts/list`` and ``prompts/get``.

    @mcp.prompt()
    def code_review(code: str, language: str = "python") -> str:
        '''Review a piece of code.'''
        return f"Please review this {language} code:\\n{code}"

The function's parameters are the prompt's arguments (strings on the wire, validated and
converted by Pydantic from the type hints); a ``ToolContext`` parameter gets the call's context,
so a prompt can ``await ctx.elicit(...)`` like a tool (``prompts/get`` supports MRTR).

What the function may return: a string (one user message), a content block, a
:class:`~fastapi_mrtr.wire.protocol.PromptMessage`, a list of those, a
:class:`~fastapi_mrtr.wire.protocol.GetPromptResult` or its JSON form.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from fastapi_mrtr.engine.call import CallRecord
from fastapi_mrtr.engine.flow import StateGuard
from fastapi_mrtr.engine.options import ServerOptions
from fastapi_mrtr.engine.rounds import run_round
from fastapi_mrtr.integration.functions import (
    SUSPENDED,
    FunctionSignature,
    call_function,
    inspect_function,
    validate_arguments,
)
from fastapi_mrtr.integration.pagination import listing
from fastapi_mrtr.transport.request import RpcRequest
from fastapi_mrtr.wire.errors import INTERNAL_ERROR, INVALID_PARAMS, ServerError
from fastapi_mrtr.wire.protocol import (
    AudioContent,
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    JSONObject,
    PromptMessage,
    ResourceLink,
    TextContent,
    dump,
)

CONTENT_BLOCKS = (TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource)


@dataclass(frozen=True)
class PromptSpec:
    name: str
    title: str | None
    description: str | None
    signature: FunctionSignature

    @property
    def wire(self) -> JSONObject:
        entry: JSONObject = {"name": self.name}
        if self.title:
            entry["title"] = self.title
        if self.description:
            entry["description"] = self.description
        arguments = self.signature.describe_arguments()
        if arguments:
            entry["arguments"] = arguments
        return entry


class PromptRegistry:
    """The prompts of one ``MCP`` endpoint, in registration order."""

    def __init__(self) -> None:
        self._prompts: dict[str, PromptSpec] = {}

    def __bool__(self) -> bool:
        return bool(self._prompts)

    def __contains__(self, name: object) -> bool:
        return name in self._prompts

    def get(self, name: str) -> PromptSpec | None:
        return self._prompts.get(name)

    def all(self) -> list[PromptSpec]:
        return list(self._prompts.values())

    def add(self, fn: Callable[..., Any], name: str | None, title: str | None, description: str | None) -> PromptSpec:
        prompt_name = name or fn.__name__
        if not isinstance(prompt_name, str) or not prompt_name.strip():
            raise ValueError("a prompt needs a non-empty name")
        if prompt_name in self._prompts:
            raise ValueError(f"an MCP prompt named {prompt_name!r} is already registered")
        spec = PromptSpec(
            name=prompt_name,
            title=title,
            description=description or inspect.getdoc(fn),
            signature=inspect_function(fn, "prompt"),
        )
        self._prompts[prompt_name] = spec
        return spec


class PromptMethods:
    """``prompts/list`` and ``prompts/get`` over a :class:`PromptRegistry`."""

    def __init__(self, registry: PromptRegistry, state_guard: StateGuard, options: ServerOptions) -> None:
        self._registry = registry
        self._state_guard = state_guard
        self._options = options

    async def list_prompts(self, rpc: RpcRequest) -> JSONObject:
        prompts = [spec.wire for spec in self._registry.all()]
        return listing("prompts", prompts, rpc.params.get("cursor"), self._options)

    async def get_prompt(self, rpc: RpcRequest) -> JSONObject:
        name = rpc.params.get("name")
        if not isinstance(name, str):
            raise ServerError(INVALID_PARAMS, "Invalid params: prompts/get needs a prompt name")
        spec = self._registry.get(name)
        if spec is None:
            raise ServerError(INVALID_PARAMS, f"Unknown prompt: {name}", {"name": name})
        arguments = rpc.params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise ServerError(INVALID_PARAMS, "Invalid params: arguments must be an object of strings")
        kwargs = validate_arguments(spec.signature, arguments, f"prompt {name!r}")

        async def run(record: CallRecord) -> JSONObject:
            value = await call_function(spec.signature, kwargs, rpc, record, f"prompt {name!r}")
            if value is SUSPENDED:
                return {}
            return prompt_result(spec, value)

        return await run_round(self._state_guard, rpc, "prompts/get", name, arguments, run)


def prompt_result(spec: PromptSpec, value: Any) -> JSONObject:
    """What a prompt function returned, as a ``GetPromptResult`` (a dict ready to encode)."""
    try:
        if isinstance(value, GetPromptResult):
            result = dump(value)
        elif isinstance(value, dict) and "messages" in value:
            result = dump(GetPromptResult.model_validate(value))
        else:
            items = value if isinstance(value, (list, tuple)) else [value]
            result = {"messages": [dump(_message(item)) for item in items]}
    except (TypeError, ValidationError) as exc:
        raise ServerError(
            INTERNAL_ERROR, f"Prompt {spec.name!r} returned a value that is not a prompt: {exc}"
        ) from None
    result["resultType"] = "complete"
    result.pop("_meta", None)
    if spec.description and "description" not in result:
        result["description"] = spec.description
    return result


def _message(item: Any) -> PromptMessage:
    if isinstance(item, PromptMessage):
        return item
    if isinstance(item, str):
        return PromptMessage(role="user", content=TextContent(text=item))
    if isinstance(item, CONTENT_BLOCKS):
        return PromptMessage(role="user", content=item)
    if isinstance(item, dict):
        return PromptMessage.model_validate(item)
    if isinstance(item, BaseModel):
        raise TypeError(f"{type(item).__name__} is not a prompt message or content block")
    raise TypeError(f"cannot turn {type(item).__name__} into a prompt message")
