"""Enter a tool's route directly, doing to the scope what the layers in between would have done.

Below the plugin's middleware a FastAPI app is, when nothing of the user's sits there, a fixed
stack: Starlette's exception middleware (it puts the exception handlers in the scope), FastAPI's
exit-stack middleware (it puts an ``AsyncExitStack`` for uploaded files there) and the router
(it matches the path, sets the path parameters and hands over to the route). For an in-process
tool call the route is already known, so walking that stack is pure overhead: about a third of
the cost of the inner call.

A route's own ASGI app is what does the REST work: FastAPI's ``request_response`` wraps the path
function's handler with the app's exception handlers (read from the scope), the exit stacks of
``yield`` dependencies, body reading, dependency solving, validation, serialisation and the
response class. :class:`RouteEntry` prepares the scope as the skipped layers would have and calls
that app, so a tool call still meets every one of those. It is only built when the stack below
the plugin's middleware is exactly the stack described above; anything else (a router with its
own middleware or form limits, a different FastAPI layout) keeps the full walk.

Either way a tool call runs only its own route. :class:`RouteEntry` never hands a request its
route does not match to the router, and the full walk meets :class:`ToolRouteGuard` where the
app's router would choose a route: a tool call's request (it carries a :class:`ToolRouteTicket`)
runs the tool's route if that route matches it, and is refused otherwise, so neither a pasted
path value nor a middleware rewriting the request can make it run another route.
"""

from __future__ import annotations

from typing import Any

from starlette.routing import Router
from starlette.types import ASGIApp, Receive, Scope, Send

from fastapi_mrtr.integration import fastapi_compat as compat
from fastapi_mrtr.integration.route_request import CapturedResponse
from fastapi_mrtr.integration.tool_call import ToolCall, ToolRouteRefusedError, ToolRouteTicket
from fastapi_mrtr.integration.walk import ToolRouteGuard


class RouteEntry:
    """Calls a route's ASGI app with the scope the exception middleware and router would build."""

    def __init__(self, exception_handlers: tuple[Any, Any], router: Router) -> None:
        self._exception_handlers = exception_handlers
        self._router = router

    @classmethod
    def below(cls, layer: ASGIApp) -> RouteEntry | None:
        """The entry for the app stack starting at ``layer`` (Starlette's exception middleware,
        as ``CallRunner.attach`` checked), if the stack below it has the known shape."""
        router = compat.router_below_exceptions(layer)
        if router is None or compat.has_form_limits(router) or compat.router_has_middleware(router, ToolRouteGuard):
            return None
        handlers = compat.exception_handlers_of(layer)
        return cls(handlers, router) if handlers is not None else None

    @property
    def exception_handlers(self) -> tuple[Any, Any]:
        """The app's exception handlers: (by exception class, by HTTP status)."""
        return self._exception_handlers

    def prepare(self, route: Any, scope: Scope) -> bool:
        """Set in ``scope`` what the skipped layers would have; False if ``route`` does not match it."""
        if not compat.match_route(route, scope, self._router):
            return False
        compat.put_exception_handlers(scope, self._exception_handlers)
        return True

    async def call(self, route: Any, scope: Scope, receive: Receive, send: Send) -> None:
        """Run ``route`` (an ``APIRoute``, or newer FastAPI's view of an included one) for ``scope``.

        A scope the route does not match is refused, never handed to the router: there it could
        match another route. The plugin only builds requests of the tool's route (see
        ``route_request.path_errors``), so this is a last line of defence.
        """
        if not self.prepare(route, scope):
            raise ToolRouteRefusedError(ToolRouteTicket(route).refuse(scope))
        async with compat.file_stack(scope):
            await route.app(scope, receive, send)

    async def run(self, call: ToolCall) -> CapturedResponse:
        """The route way of a tool call: its request straight into its route's ASGI app."""
        route = call.route

        async def entry(scope: Scope, receive: Receive, send: Send) -> None:
            await self.call(route, scope, receive, send)

        return await call.send_through(entry)
