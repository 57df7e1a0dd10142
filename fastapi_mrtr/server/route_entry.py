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
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

from fastapi.middleware.asyncexitstack import AsyncExitStackMiddleware
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.routing import Match, Router
from starlette.types import ASGIApp, Receive, Scope, Send

# The scope keys the skipped layers set, as Starlette and FastAPI read them back.
_EXCEPTION_HANDLERS = "starlette.exception_handlers"
_FILE_STACK = "fastapi_middleware_astack"


class RouteEntry:
    """Calls a route's ASGI app with the scope the exception middleware and router would build."""

    def __init__(self, exception_handlers: tuple[Any, Any], router: Router, fallback: ASGIApp) -> None:
        self._exception_handlers = exception_handlers
        self._router = router
        self._fallback = fallback  # the exception middleware: the full walk, for anything unusual

    @classmethod
    def below(cls, layer: ASGIApp) -> RouteEntry | None:
        """The entry for the app stack starting at ``layer``, if it has the known shape."""
        if type(layer) is not ExceptionMiddleware:
            return None
        file_stack = layer.app
        if type(file_stack) is not AsyncExitStackMiddleware or file_stack.context_name != _FILE_STACK:
            return None
        router = file_stack.app
        if not isinstance(router, Router) or getattr(router, "form_limits", None):
            return None
        if getattr(router, "middleware_stack", router.app) != router.app:  # the router has middleware
            return None
        handlers = getattr(layer, "_exception_handlers", None), getattr(layer, "_status_handlers", None)
        if not isinstance(handlers[0], dict) or not isinstance(handlers[1], dict):
            return None
        return cls((handlers[0], handlers[1]), router, layer)

    @property
    def exception_handlers(self) -> tuple[Any, Any]:
        """The app's exception handlers: (by exception class, by HTTP status)."""
        return self._exception_handlers

    def prepare(self, route: Any, scope: Scope) -> bool:
        """Set in ``scope`` what the skipped layers would have; False if ``route`` does not match it."""
        match, child_scope = route.matches(scope)
        if match is not Match.FULL:
            return False
        scope.update(child_scope)
        scope["route"] = getattr(route, "original_route", route)
        scope["router"] = self._router
        scope[_EXCEPTION_HANDLERS] = self._exception_handlers
        return True

    async def call(self, route: Any, scope: Scope, receive: Receive, send: Send) -> None:
        """Run ``route`` (an ``APIRoute``, or newer FastAPI's view of an included one) for ``scope``."""
        if not self.prepare(route, scope):  # e.g. a path parameter its convertor refuses: the router's 404
            await self._fallback(scope, receive, send)
            return
        async with AsyncExitStack() as file_stack:
            scope[_FILE_STACK] = file_stack
            await route.app(scope, receive, send)
