"""How one ``tools/call`` runs its route: the one place that chooses the way and takes it.

A tool call is the REST call of its route, made in-process, and answers as that REST call would.
There are three ways to make it, fastest first; :class:`CallRunner` takes the first that applies:

1. :attr:`CallPath.DIRECT`: the path function is called straight away, with FastAPI's own
   validation and serialisation and no HTTP request built (:class:`DirectCall`). Only for a plain
   ``async def`` route, and only where the route entry below applies too; a call it cannot
   reproduce exactly (arguments that fail validation, dependency overrides, telemetry) hands
   over to the route entry before anything has run (``direct_call``).
2. :attr:`CallPath.ROUTE`: the route's own ASGI app runs the request, with the scope set as the
   skipped layers (exception middleware, exit-stack middleware, router) would set it
   (:class:`RouteEntry`, in ``route_entry``). Only when the app's stack holds nothing of the user's: the plugin's is
   the only user middleware, no 500 handler, and FastAPI's own layers below it.
3. :attr:`CallPath.WALK`: the request walks the app's stack, as a REST request would. It enters
   just below the plugin's middleware when that is the only user middleware and no 500 handler
   is registered (the MCP request itself has just passed the layers above it), and at the top
   of the app otherwise, so it meets every middleware of the user's, above or below the
   plugin's. Where the app's router chooses a route, :class:`ToolRouteGuard` lets it run only
   the tool's route (``walk``).

Each way takes the same :class:`ToolCall` (``tool_call``): the one object for the call.

The app's stack is built by Starlette on its first request; the plugin's middleware then calls
:meth:`CallRunner.attach`, which finds where calls may enter. Until then every call walks.

:attr:`CallRunner.fastest` is the one switch over this choice: set it to ``CallPath.ROUTE`` or
``CallPath.WALK`` to force a slower way (tests compare the ways so; nothing else needs it).
"""

from __future__ import annotations

import enum
import logging
from typing import Any

from fastapi import FastAPI
from starlette.types import ASGIApp, Scope

from fastapi_mrtr.engine.call import CallRecord
from fastapi_mrtr.integration import fastapi_compat as compat
from fastapi_mrtr.integration.direct_call import DirectCall
from fastapi_mrtr.integration.route_entry import RouteEntry
from fastapi_mrtr.integration.route_request import CapturedResponse
from fastapi_mrtr.integration.tool_call import ToolCall, ToolRouteRefusedError
from fastapi_mrtr.integration.tools import ToolDefinition
from fastapi_mrtr.integration.walk import ToolRouteGuard, walk
from fastapi_mrtr.wire.protocol import JSONObject

logger = logging.getLogger("fastapi_mrtr")


class CallPath(enum.IntEnum):
    """The ways a tool call can run, fastest first (see the module docstring)."""

    DIRECT = 0
    ROUTE = 1
    WALK = 2


class CallRunner:
    """Chooses how each tool call runs (direct call, route entry, full walk) and runs it."""

    def __init__(self, app: FastAPI, forward_headers: tuple[str, ...], *, fastest: CallPath = CallPath.DIRECT) -> None:
        self.fastest = fastest  # the fastest way allowed: the switch that forces a slower one
        self._app = app
        self._forward_headers = forward_headers
        # Where calls may enter the app, found by attach() once its stack is built:
        self.tool_entry: ASGIApp | None = None  # a layer just below the plugin's middleware (None: the top)
        self.route_entry: RouteEntry | None = None  # straight into the tool's route, when the stack allows
        self._direct_calls: dict[str, tuple[ToolDefinition, DirectCall | None]] = {}
        # Where the app's router chooses a route, a tool call may only run its own (see walk).
        self._guarded = ToolRouteGuard.install(app.router)
        if not self._guarded:
            logger.error(
                "fastapi-mrtr: the app router's own middleware hides where it chooses a route, so the "
                "plugin cannot check that a tool call runs only its tool's route; tool calls that walk "
                "the app (your middleware sits below the plugin's) are refused"
            )

    def attach(self, below_plugin: ASGIApp, plugin_middleware: type[Any]) -> bool:
        """Find where calls may enter, given the layer just below the plugin's middleware.

        Returns whether that layer is FastAPI's own stack (Starlette's exception middleware): then
        no user middleware sits between the plugin's and the routes, and the plugin's middleware
        may hand a request for the endpoint straight to it.

        Above the user middleware FastAPI has only its own layers: the server-error middleware
        (which runs a 500/``Exception`` handler), telemetry and the body-size limit, all of which
        the MCP request itself has just passed. When the plugin's is the only user middleware and
        no 500 handler is registered, a call entering just below it meets exactly the user code a
        REST call meets (exception handlers, routing, dependencies, validation) without paying
        those layers a second time; FastAPI's telemetry then counts the MCP request once.
        """
        host = self._app
        fixed_stack = compat.is_exception_layer(below_plugin)
        classes: list[object] = [m.cls for m in host.user_middleware]
        only_ours = classes == [plugin_middleware]
        handles_500 = 500 in host.exception_handlers or Exception in host.exception_handlers
        self.tool_entry = below_plugin if fixed_stack and only_ours and not handles_500 else None
        self.route_entry = RouteEntry.below(self.tool_entry) if self.tool_entry is not None else None
        return fixed_stack

    def walks(self) -> bool:
        """Whether every call walks the app (the stack allows no entry below, or the walk is forced)."""
        return self._route_entry_in_use() is None

    async def run(
        self, tool: ToolDefinition, outer_scope: Scope, arguments: JSONObject, record: CallRecord
    ) -> CapturedResponse:
        """Run ``tool``'s route for one call; returns what it answered (a suspended run answers nothing).

        Raises :class:`ToolRouteRefusedError` when the request could not run only the tool's route.
        """
        call = ToolCall(self._app, tool, outer_scope, arguments, record, self._forward_headers)
        route_entry = self._route_entry_in_use()
        if route_entry is not None:
            direct = self._direct_call(tool) if self.fastest is CallPath.DIRECT else None
            if direct is not None:
                response = await direct.call(call, route_entry)
                if response is not None:
                    return response
            return await route_entry.run(call)  # what a direct call cannot do, too
        if not self._guarded:
            raise ToolRouteRefusedError("the app's router cannot be checked to run only the tool's route (see the log)")
        return await walk(call, self.tool_entry)

    def _route_entry_in_use(self) -> RouteEntry | None:
        return None if self.fastest is CallPath.WALK else self.route_entry

    def _direct_call(self, tool: ToolDefinition) -> DirectCall | None:
        known = self._direct_calls.get(tool.name)
        if known is None or known[0] is not tool:  # first call, or the tool was rebuilt
            known = (tool, DirectCall.for_route(tool.route, tool.plan))
            self._direct_calls[tool.name] = known
        return known[1]
