"""``tools/list`` and ``tools/call``: the registry of tools resolved from the app's routes."""

from __future__ import annotations

import logging
from collections.abc import Callable

from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.types import Scope

from fastapi_mrtr.engine.call import CallRecord, find_exception
from fastapi_mrtr.engine.context import ReplayDivergedError
from fastapi_mrtr.engine.flow import StateGuard
from fastapi_mrtr.engine.options import ServerOptions
from fastapi_mrtr.engine.rounds import run_round
from fastapi_mrtr.integration import fastapi_compat as compat
from fastapi_mrtr.integration.call_runner import CallRunner
from fastapi_mrtr.integration.pagination import listing
from fastapi_mrtr.integration.param_headers import check_param_headers
from fastapi_mrtr.integration.results import error_result, tool_result
from fastapi_mrtr.integration.tool_call import ToolRouteRefusedError
from fastapi_mrtr.integration.tools import ToolDefinition, ToolSpec, build_tool
from fastapi_mrtr.transport.request import RpcRequest
from fastapi_mrtr.wire.errors import INVALID_PARAMS, JsonRpcError, ServerError
from fastapi_mrtr.wire.protocol import JSONObject

logger = logging.getLogger("fastapi_mrtr")


class ToolRegistry:
    """Tool specs from ``@mcp.tool()``, resolved lazily against the app's routes.

    Resolution happens when a spec's route exists (at decoration time when the decorator sits
    above ``@app.get``) or on the first request that needs it, and again whenever routes were
    added, so routes registered after ``MCP(app)`` (``include_router`` included) are seen.
    """

    def __init__(self, app: FastAPI) -> None:
        self._app = app
        self._specs: list[ToolSpec] = []
        self._tools: dict[str, ToolDefinition] = {}
        self._routes_seen = -1
        self._dirty = True

    def add(self, spec: ToolSpec) -> None:
        if any(s.name == spec.name for s in self._specs):
            raise ValueError(f"an MCP tool named {spec.name!r} is already registered")
        self._specs.append(spec)
        self._dirty = True
        route = self._route_of(spec.endpoint)
        if route is not None:  # build now, so schema problems surface at registration
            self._tools[spec.name] = build_tool(spec, route)

    def resolved(self) -> dict[str, ToolDefinition]:
        if self._dirty or self._routes_seen != len(self._app.router.routes):
            self._resolve()
        return self._tools

    def _resolve(self) -> None:
        tools: dict[str, ToolDefinition] = {}
        for spec in self._specs:
            known = self._tools.get(spec.name)
            route = self._route_of(spec.endpoint)
            if route is None:  # one misconfigured tool must not take the others down
                logger.error(
                    "@mcp.tool() %r: %s is not a route of this app, so it is not served; decorate a "
                    "FastAPI path function (put @mcp.tool() above @app.get(...)) and include its router",
                    spec.name,
                    spec.endpoint.__qualname__,
                )
                continue
            tools[spec.name] = known if known is not None and known.route is route else build_tool(spec, route)
        self._tools = tools
        self._routes_seen = len(self._app.router.routes)
        self._dirty = False

    def _route_of(self, endpoint: Callable[..., object]) -> APIRoute | None:
        for route in compat.api_routes(self._app):
            if route.endpoint is endpoint:
                return route
        return None


class ToolMethods:
    def __init__(
        self, registry: ToolRegistry, state_guard: StateGuard, options: ServerOptions, runner: CallRunner
    ) -> None:
        self._registry = registry
        self._state_guard = state_guard
        self._options = options
        self._runner = runner  # how each call runs its tool's route

    @property
    def state_guard(self) -> StateGuard:
        return self._state_guard

    @property
    def registry(self) -> ToolRegistry:
        return self._registry

    async def list_tools(self, rpc: RpcRequest) -> JSONObject:
        tools = [tool.wire for tool in self._registry.resolved().values()]
        return listing("tools", tools, rpc.params.get("cursor"), self._options)

    async def call_tool(self, rpc: RpcRequest) -> JSONObject:
        tool, arguments = self.tool_call_of(rpc)

        async def run(record: CallRecord) -> JSONObject:
            return await self.run_tool(tool, rpc.scope, arguments, record)

        return await run_round(self._state_guard, rpc, "tools/call", tool.name, arguments, run)

    def tool_call_of(self, rpc: RpcRequest) -> tuple[ToolDefinition, JSONObject]:
        """The tool a ``tools/call`` names and its arguments, checked; raises ``ServerError``."""
        name = rpc.params.get("name")
        if not isinstance(name, str):
            raise ServerError(INVALID_PARAMS, "Invalid params: tools/call needs a tool name")
        tool = self._registry.resolved().get(name)
        if tool is None:
            raise ServerError(INVALID_PARAMS, f"Unknown tool: {name}")
        arguments = rpc.params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise ServerError(INVALID_PARAMS, "Invalid params: arguments must be an object")
        if tool.param_headers and not rpc.legacy:  # a 2025-era client sends no Mcp-Param headers
            check_param_headers(tool.param_headers, arguments, rpc.headers)
        return tool, arguments

    async def run_tool(
        self, tool: ToolDefinition, scope: Scope, arguments: JSONObject, record: CallRecord
    ) -> JSONObject:
        """One run of the tool's route: its result ({} when it stopped to ask or lacks a capability).

        A :class:`JsonRpcError` the handler raised propagates: the call answers that error.
        """
        try:
            response = await self._runner.run(tool, scope, arguments, record)
        except Exception as exc:
            record.abandon_input()  # the handler failed: its error wins over any pending ask
            protocol_error = find_exception(exc, JsonRpcError)
            if protocol_error is not None:
                raise protocol_error from None
            return _unexpected(tool, exc)
        if record.wants_input or record.missing_capability is not None:
            return {}
        return tool_result(tool, response)


def _unexpected(tool: ToolDefinition, exc: Exception) -> JSONObject:
    refused = find_exception(exc, ToolRouteRefusedError)
    if refused is not None:
        logger.warning("tool %r was not run: %s", tool.name, refused)
        return error_result(f"Tool {tool.name!r} was not run: {refused}.")
    diverged = find_exception(exc, ReplayDivergedError)
    if diverged is not None:
        logger.warning("tool %r: %s", tool.name, diverged)
        return error_result(str(diverged))
    logger.error("tool %r raised an unexpected exception", tool.name, exc_info=exc)
    return error_result(f"Tool {tool.name!r} failed with an internal error; the details were logged on the server.")
