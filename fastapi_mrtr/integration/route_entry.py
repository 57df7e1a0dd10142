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

from dataclasses import dataclass
from typing import Any

from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.responses import JSONResponse
from starlette.routing import Match, Router
from starlette.types import ASGIApp, Receive, Scope, Send

from fastapi_mrtr.engine.call import SCOPE_KEY
from fastapi_mrtr.integration import fastapi_compat as compat

TICKET_KEY = "fastapi_mrtr.tool_route"  # the ToolRouteTicket of an in-process tool call
_MAX_LAYERS = 64  # how deep the router's own middleware is searched for its routing


class ToolRouteRefusedError(Exception):
    """A tool call's request no longer matched the tool's route where a route is chosen: nothing ran."""


@dataclass
class ToolRouteTicket:
    """The route an in-process tool call may run, and why it was refused when it could not.

    It travels in the scope; a middleware copying the scope copies the reference, so the refusal
    written by the guard is seen by the caller whatever the layers in between did.
    """

    route: Any
    refusal: str | None = None

    def refuse(self, scope: Scope, where: str = "") -> str:
        """Record (and return) why the request in ``scope`` may not run: it is not of the tool's route."""
        self.refusal = (
            f"its request ({scope.get('method')} {scope.get('path')!r}) does not match the tool's route "
            f"{self.route.path}{where}, and a tool call runs only its own route"
        )
        return self.refusal


def _matched(route: Any, scope: Scope, router: Router) -> bool:
    """Set in ``scope`` what the router sets for ``route``; False if ``route`` does not fully match it."""
    match, child_scope = route.matches(scope)
    if match is not Match.FULL:
        return False
    scope.update(child_scope)
    scope["route"] = compat.declared_route(route)
    scope.setdefault("router", router)
    return True


class RouteEntry:
    """Calls a route's ASGI app with the scope the exception middleware and router would build."""

    def __init__(self, exception_handlers: tuple[Any, Any], router: Router) -> None:
        self._exception_handlers = exception_handlers
        self._router = router

    @classmethod
    def below(cls, layer: ASGIApp) -> RouteEntry | None:
        """The entry for the app stack starting at ``layer``, if it has the known shape."""
        if type(layer) is not ExceptionMiddleware:
            return None
        router = compat.router_below_exceptions(layer)
        if not isinstance(router, Router) or compat.has_form_limits(router):
            return None
        stack = getattr(router, "middleware_stack", router.app)
        if isinstance(stack, ToolRouteGuard):
            stack = stack.routing
        if stack != router.app:  # the router has middleware
            return None
        handlers = compat.exception_handlers_of(layer)
        return cls(handlers, router) if handlers is not None else None

    @property
    def exception_handlers(self) -> tuple[Any, Any]:
        """The app's exception handlers: (by exception class, by HTTP status)."""
        return self._exception_handlers

    def prepare(self, route: Any, scope: Scope) -> bool:
        """Set in ``scope`` what the skipped layers would have; False if ``route`` does not match it."""
        if not _matched(route, scope, self._router):
            return False
        compat.put_exception_handlers(scope, self._exception_handlers)
        return True

    async def call(self, route: Any, scope: Scope, receive: Receive, send: Send) -> None:
        """Run ``route`` (an ``APIRoute``, or newer FastAPI's view of an included one) for ``scope``.

        A scope the route does not match is refused, never handed to the router: there it could
        match another route. The plugin only builds requests of the tool's route (see
        ``invoke.path_errors``), so this is a last line of defence.
        """
        if not self.prepare(route, scope):
            raise ToolRouteRefusedError(ToolRouteTicket(route).refuse(scope))
        async with compat.file_stack(scope):
            await route.app(scope, receive, send)


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
        routing = router.app
        stack = router.middleware_stack
        if isinstance(stack, cls) or stack == routing:
            if not isinstance(stack, cls):
                router.middleware_stack = cls(router, routing)
            return True
        layer: Any = stack
        for _ in range(_MAX_LAYERS):  # the router's own middleware: each layer's ``app`` is the next
            inner = getattr(layer, "app", None)
            if inner is None:
                return False
            if isinstance(inner, cls):
                return True
            if inner == routing:
                layer.app = cls(router, routing)
                return True
            layer = inner
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        ticket = scope.get(TICKET_KEY)
        if ticket is None and SCOPE_KEY not in scope:
            await self.routing(scope, receive, send)
            return
        if not isinstance(ticket, ToolRouteTicket):  # a tool call whose ticket was lost on the way
            raise ToolRouteRefusedError(
                "its request lost the plugin's record of the tool's route on its way to the router"
            )
        if scope["type"] != "http" or not _matched(ticket.route, scope, self.router):
            ticket.refuse(scope, " after the app's middleware (which may have rewritten it)")
            await JSONResponse({"detail": "Not Found"}, status_code=404)(scope, receive, send)
            return
        compat.apply_form_limits(self.router, scope)  # as FastAPI's router does before choosing a route
        await ticket.route.app(scope, receive, send)
