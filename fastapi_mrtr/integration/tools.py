"""From a FastAPI route to an MCP tool: its name, description, annotations and ``tools/list`` entry.

Everything is computed once per tool, when the route is first resolved, so that a ``tools/call``
only fills in a precomputed plan. The parts have a module each: how arguments become the route's
request (:mod:`~fastapi_mrtr.integration.call_plan`), the ``inputSchema``
(:mod:`~fastapi_mrtr.integration.input_schema`) and the ``outputSchema`` with the shape a result
takes to conform to it (:mod:`~fastapi_mrtr.integration.output_schema`).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fastapi.routing import APIRoute

from fastapi_mrtr.engine.task_config import TaskConfig
from fastapi_mrtr.integration.call_plan import CallPlan, build_call_plan
from fastapi_mrtr.integration.dependency import get_context
from fastapi_mrtr.integration.input_schema import build_input_schema, checked_input_schema
from fastapi_mrtr.integration.output_schema import OutputShape, build_output_schema, returns_call_tool_result
from fastapi_mrtr.integration.param_headers import ParamHeader, param_headers
from fastapi_mrtr.integration.rest import document_rest_answers
from fastapi_mrtr.wire.protocol import JSONObject, ToolAnnotations, dump

TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


@dataclass(frozen=True)
class ToolSpec:
    """What ``@mcp.tool(...)`` was told; resolved against the app's routes later."""

    endpoint: Callable[..., Any]
    name: str
    title: str | None = None
    description: str | None = None
    annotations: ToolAnnotations | None = None
    input_schema: JSONObject | None = None  # advertised instead of the generated schema
    task: TaskConfig | None = None  # may run as a task (SEP-2663, docs/tasks.md)


@dataclass(frozen=True)
class ToolDefinition:
    spec: ToolSpec
    route: APIRoute
    plan: CallPlan
    wire: JSONObject  # the tools/list entry, ready to send
    output: OutputShape  # how a 2xx response becomes structuredContent
    raw_result: bool  # the route returns a CallToolResult: its JSON is the tool result
    arguments: frozenset[str] = field(default_factory=frozenset)
    param_headers: tuple[ParamHeader, ...] = ()  # x-mcp-header bindings (SEP-2243)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def has_output_schema(self) -> bool:
        return self.output != "free"


def validate_tool_name(name: str) -> str:
    if not TOOL_NAME.match(name):
        raise ValueError(
            f"invalid MCP tool name {name!r}: use 1 to 64 characters of letters, digits, '_', '-' or '.'"
            " (pass name=... to @mcp.tool())"
        )
    return name


def default_annotations(method: str) -> ToolAnnotations:
    """Hints from the HTTP method's semantics (RFC 9110): GET is safe, PUT and GET idempotent."""
    return ToolAnnotations(
        read_only_hint=True if method == "GET" else None,
        destructive_hint=True if method == "DELETE" else None,
        idempotent_hint=True if method in ("GET", "PUT") else None,
    )


def build_tool(spec: ToolSpec, route: APIRoute) -> ToolDefinition:
    method = _route_method(route)
    plan, arguments = build_call_plan(spec.name, route, method)
    if spec.input_schema is not None:
        input_schema = checked_input_schema(spec.name, spec.input_schema)
    else:
        input_schema = build_input_schema(spec.name, route, plan)
    raw_result = returns_call_tool_result(route)
    output_schema, output = (None, "free") if raw_result else build_output_schema(route)
    annotations = default_annotations(method).model_copy(
        update=spec.annotations.model_dump(exclude_none=True) if spec.annotations else {}
    )
    description = spec.description or inspect.getdoc(spec.endpoint) or route.description or route.summary
    wire: JSONObject = {"name": spec.name, "inputSchema": input_schema}
    title = spec.title or (spec.annotations.title if spec.annotations else None)
    if title:
        wire["title"] = title
    if description:
        wire["description"] = description
    if output_schema is not None:
        wire["outputSchema"] = output_schema
    hints = dump(annotations)
    if hints:
        wire["annotations"] = hints
    if _takes_context(route):  # a REST call of it may be answered 428: /docs says how to go on
        document_rest_answers(route)
    return ToolDefinition(
        spec=spec,
        route=route,
        plan=plan,
        wire=wire,
        output=output,
        raw_result=raw_result,
        arguments=frozenset(arguments),
        param_headers=param_headers(spec.name, input_schema),
    )


def _route_method(route: APIRoute) -> str:
    declared = route.methods or {"GET"}
    methods = sorted(declared - {"HEAD", "OPTIONS"}) or sorted(declared)
    # A route for several methods is exposed with the most conservative one, GET first.
    return "GET" if "GET" in methods else methods[0]


def _takes_context(route: APIRoute) -> bool:
    """Whether ``ctx: Context`` is among the route's dependencies, at any depth."""
    stack = [route.dependant]
    while stack:
        dependant = stack.pop()
        if dependant.call is get_context:
            return True
        stack.extend(dependant.dependencies)
    return False
