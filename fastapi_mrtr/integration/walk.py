"""The walk: a tool call's request through the app's own stack, as a REST request would go.

It meets the app's middleware, routing, dependencies (``yield`` ones included), validation and
exception handlers. Where the app's router chooses a route, :class:`ToolRouteGuard` stands in
for the router's routing: a tool call's request (it carries a ``ToolRouteTicket``) runs the tool's
route if that route fully matches it, and is refused otherwise, so neither a pasted path value
nor a middleware rewriting the request can make it run another route.
"""

from __future__ import annotations

from starlette.responses import JSONResponse
from starlette.routing import Router
from starlette.types import ASGIApp, Receive, Scope, Send

from fastapi_mrtr.engine.call import SCOPE_KEY
from fastapi_mrtr.integration import fastapi_compat as compat
from fastapi_mrtr.integration.route_request import CapturedResponse
from fastapi_mrtr.integration.tool_call import TICKET_KEY, ToolCall, ToolRouteRefusedError, ToolRouteTicket


async def walk(call: ToolCall, entry: ASGIApp | None) -> CapturedResponse:
    """Send ``call``'s request through the app from ``entry`` (a layer of its stack; None: its top)."""
    return await call.send_through(entry if entry is not None else call.app)


class ToolRouteGuard:
    """The app router's routing, seen by in-process tool calls: it runs the tool's route or refuses.

    It takes the place of the router's own routing, below any middleware of the router itself,
    so it sees the request exactly as the router would. Any other request (REST, lifespan) is
    routed as before. A tool call's request runs the route of its ticket when that route fully
    matches it, as the router would run it (form limits, the router and route in the scope),
    and never another route, even one the router would have chosen first; if the route does not
    match, the request is answered 404 and the ticket says why, so the call is refused.
    """

    def __init__(self, router: Router, routing: ASGIApp) -> None:
        self.router = router
        self.routing = routing  # the router's own routing (``Router.app``)

    @classmethod
    def install(cls, router: Router) -> bool:
        """Guard ``router``'s routing (once); False when its middleware hides where routing starts."""
        return compat.guard_routing(router, cls)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        ticket = scope.get(TICKET_KEY)
        if ticket is None and SCOPE_KEY not in scope:
            await self.routing(scope, receive, send)
            return
        if not isinstance(ticket, ToolRouteTicket):  # a tool call whose ticket was lost on the way
            raise ToolRouteRefusedError(
                "its request lost the plugin's record of the tool's route on its way to the router"
            )
        if scope["type"] != "http" or not compat.match_route(ticket.route, scope, self.router):
            ticket.refuse(scope, " after the app's middleware (which may have rewritten it)")
            await JSONResponse({"detail": "Not Found"}, status_code=404)(scope, receive, send)
            return
        compat.apply_form_limits(self.router, scope)  # as FastAPI's router does before choosing a route
        await ticket.route.app(scope, receive, send)
