"""One ``tools/call`` of a tool's route: the noun every way of running it takes.

A tool call is the REST call of its route, made in-process. :class:`ToolCall` holds what each way
needs (the app, the tool, the MCP request's scope, the arguments, the round's record, the caller
headers passed on) and builds the REST request it stands for on demand. The ways themselves live
in their own modules (``direct_call``, ``route_entry``, ``walk``); ``call_runner`` chooses one.

The request carries a :class:`ToolRouteTicket` naming the route, so that wherever a route is
chosen only that one can run; a call whose request no longer matched it is refused with
:class:`ToolRouteRefusedError`, and nothing ran.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Message, Scope

from fastapi_mrtr.engine.call import SCOPE_KEY, CallRecord, catch_suspension
from fastapi_mrtr.integration.call_plan import CallPlan
from fastapi_mrtr.integration.route_request import (
    CapturedResponse,
    argument_errors,
    build_request,
    forwarded_headers,
    invalid_arguments,
    path_errors,
)
from fastapi_mrtr.integration.tools import ToolDefinition
from fastapi_mrtr.wire.protocol import JSONObject

TICKET_KEY = "fastapi_mrtr.tool_route"  # the ToolRouteTicket of an in-process tool call


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


@dataclass
class ToolCall:
    """One call of ``tool``'s route for one MCP request (see the module docstring)."""

    app: ASGIApp
    tool: ToolDefinition
    outer_scope: Scope  # the MCP request's: transport facts and ``state`` come from it
    arguments: JSONObject
    record: CallRecord
    forward_headers: tuple[str, ...]  # the names of the caller's headers passed on to the route

    # Built on first use, like the request itself: a direct call that never builds it pays for neither.
    @functools.cached_property
    def ticket(self) -> ToolRouteTicket:
        return ToolRouteTicket(self.tool.route)

    @property
    def route(self) -> Any:
        return self.tool.route

    @property
    def plan(self) -> CallPlan:
        return self.tool.plan

    def refused(self, scope: Scope) -> ToolRouteRefusedError:
        """The refusal of a request (``scope``) that is not of the tool's route."""
        return ToolRouteRefusedError(self.ticket.refuse(scope))

    def request(self) -> tuple[Scope, bytes]:
        """The HTTP scope and body of the REST request that this call stands for."""
        outer = self.outer_scope
        plan = self.plan
        path, raw_path, query, body = build_request(plan, self.arguments)
        content_type = b"application/x-www-form-urlencoded" if plan.form_body else b"application/json"
        forwarded = forwarded_headers(outer, self.forward_headers)
        headers = [*forwarded, (b"content-type", content_type), (b"content-length", str(len(body)).encode())]
        scope: Scope = {
            "type": "http",
            "asgi": outer.get("asgi", {"version": "3.0"}),
            "http_version": outer.get("http_version", "1.1"),
            "method": plan.method,
            "scheme": outer.get("scheme", "http"),
            "server": outer.get("server"),
            "client": outer.get("client"),
            "root_path": getattr(self.app, "root_path", ""),
            "app": self.app,
            "path": path,
            "raw_path": raw_path,
            "query_string": query,
            "headers": headers,
            "state": dict(outer.get("state") or {}),
            SCOPE_KEY: self.record,
            TICKET_KEY: self.ticket,
        }
        return scope, body

    async def send_through(self, entry: ASGIApp) -> CapturedResponse:
        """Send the call's request into ``entry`` (a layer of the app's stack, or the route's entry).

        Returns what it answered (a suspended run answers nothing; the record says so). Arguments
        no request of the route carries get FastAPI's 422 before anything runs. Raises
        :class:`ToolRouteRefusedError` when the request did not reach the route where a route is
        chosen: then no route ran.
        """
        errors = argument_errors(self.plan, self.arguments) + path_errors(self.route, self.plan, self.arguments)
        if errors:  # no request of the route carries these: answer as FastAPI does, not a 404
            return invalid_arguments(errors)
        scope, body = self.request()
        captured = CapturedResponse()
        sent_body = False

        async def receive() -> Message:
            nonlocal sent_body
            if not sent_body:
                sent_body = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.Event().wait()  # nothing more to read; the app is cancelled if it waits
            raise AssertionError("unreachable")  # pragma: no cover

        with catch_suspension:  # suspended or missing a capability: the record says which
            await entry(scope, receive, captured.send)
        if self.ticket.refusal is not None:
            raise ToolRouteRefusedError(self.ticket.refusal)
        return captured
