"""Call a plain path function as its FastAPI route would, without building an HTTP request for it.

Most tools are plain path functions: query, path and JSON body parameters, perhaps ``ctx``, no
other dependencies. For those, most of what the route's ASGI app does on an in-process tool call
is undoing the request the plugin has just built: reading the body back, parsing it and the query
string, solving a dependency tree that holds only ``ctx``. :class:`DirectCall` skips that work and
keeps the part that matters, with FastAPI's own functions:

- the arguments are validated by ``request_params_to_args`` and ``request_body_to_args``, given
  exactly what the route would have parsed (query and path values as the strings of the URL, the
  body as its decoded JSON), so a value that passes here is the value the route would pass;
- the return value goes through ``serialize_response`` with the route's response field and
  options, and a returned ``Response`` is sent as it is (its background tasks run);
- an exception meets the app's exception handlers (``HTTPException`` by status first, then by
  class), and a suspension signal travels as it does through the route.

Whatever it cannot reproduce exactly takes the route, so behaviour never depends on which path
ran: a route of any other shape (decided once, in :meth:`DirectCall.for_route`); arguments that do
not validate (the route then answers its own 422, byte for byte, and nothing has run yet); and,
checked on every call, dependency overrides or FastAPI telemetry being active.
"""

from __future__ import annotations

import enum
import inspect
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args, get_origin

from fastapi import params
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Message, Scope

from fastapi_mrtr.engine.call import catch_suspension
from fastapi_mrtr.engine.context import ToolContext
from fastapi_mrtr.integration import fastapi_compat as compat
from fastapi_mrtr.integration.call_plan import CallPlan
from fastapi_mrtr.integration.dependency import get_context
from fastapi_mrtr.integration.route_entry import RouteEntry
from fastapi_mrtr.integration.route_request import (
    CapturedResponse,
    argument_errors,
    body_value,
    path_errors,
    query_pairs,
    query_text,
)
from fastapi_mrtr.integration.tool_call import ToolCall

ExceptionHandlers = tuple[Mapping[Any, Any], Mapping[Any, Any]]  # (by class, by HTTP status)

_REQUEST_NAMES = (
    "request_param_name",
    "websocket_param_name",
    "http_connection_param_name",
    "response_param_name",
    "background_tasks_param_name",
    "security_scopes_param_name",
)


@dataclass(frozen=True)
class DirectCall:
    """How to run one plain route's path function for a tool call (see the module docstring)."""

    route: Any  # an APIRoute, or newer FastAPI's RouteContext for an included one
    plan: CallPlan
    context_params: tuple[str, ...]  # the parameters that receive ``ctx``
    embed_body_fields: bool
    serialize_options: dict[str, Any]  # what this FastAPI's serialize_response takes beyond the basics
    # The path and query fields, when each is a plain scalar read from one value (else empty),
    # each with the error location FastAPI gives it, made once per route.
    scalar_path: tuple[tuple[Any, tuple[str, str]], ...] = ()
    scalar_query: tuple[tuple[Any, tuple[str, str]], ...] = ()

    @classmethod
    def for_route(cls, route: Any, plan: CallPlan) -> DirectCall | None:
        """The direct call for ``route``, or None when only the route itself can run it faithfully."""
        original = compat.declared_route(route)
        if type(original) is not APIRoute:  # a custom route class may change how requests are handled
            return None
        dependant = route.dependant
        embed = compat.embeds_body_fields(route)
        plain = (
            dependant is not None
            and embed is not None
            and not (dependant.header_params or dependant.cookie_params)
            and all(getattr(dependant, name, None) is None for name in _REQUEST_NAMES)
            and inspect.iscoroutinefunction(dependant.call)  # sync ones run in a worker thread
            and not compat.needs_its_own_request(route)
            and compat.is_default_response_class(route, JSONResponse)
            and compat.plain_path_convertors(route)
            and not any(_is_model(f) for f in dependant.query_params)
            and not any(isinstance(f.field_info, params.Form) for f in dependant.body_params)
        )
        if not plain:
            return None
        contexts: list[str] = []
        for sub in dependant.dependencies:  # ``ctx`` is the only dependency taken here
            if sub.call is not get_context or sub.name is None:
                return None
            contexts.append(sub.name)
        options = compat.serialize_options(route, dependant.call, f"{plan.method} {dependant.path}")
        scalar_path = _with_locations(dependant.path_params) if all(map(_is_scalar, dependant.path_params)) else ()
        scalar_query = _with_locations(dependant.query_params) if all(map(_is_scalar, dependant.query_params)) else ()
        return cls(route, plan, tuple(contexts), bool(embed), options, scalar_path, scalar_query)

    async def call(self, tool_call: ToolCall, entry: RouteEntry) -> CapturedResponse | None:
        """What the route would have answered, or None when the route itself must run the call.

        The request the route would have seen is only built when something needs it:
        ``ctx.request``, an exception handler, a ``Response``; ``entry`` sets in its scope what
        the layers above the route would have (and holds the app's exception handlers).
        """
        if self._overridden() or compat.request_telemetry_active():
            return None
        values = await self._validated(tool_call.arguments)
        if values is None:
            return None

        def scope_for() -> tuple[Scope, bytes]:  # the request the route would have seen
            scope, body = tool_call.request()
            if not entry.prepare(tool_call.route, scope):  # its arguments were checked: not expected
                raise tool_call.refused(scope)
            return scope, body

        handlers = entry.exception_handlers
        request = _LazyRequest(scope_for)
        context = ToolContext(tool_call.record, request.get)
        for name in self.context_params:
            values[name] = context
        try:
            with catch_suspension:
                returned = await self.route.dependant.call(**values)
                return await self._respond(returned, request)
        except Exception as exc:
            return await _handled(exc, handlers, request)
        return CapturedResponse()  # suspended: the record says so; nothing is answered

    def _overridden(self) -> bool:
        provider = self.route.dependency_overrides_provider
        return bool(getattr(provider, "dependency_overrides", None))

    async def _validated(self, arguments: Mapping[str, Any]) -> dict[str, Any] | None:
        """The route's path, query and body values, or ``None`` when any is invalid: then the
        route itself answers FastAPI's 422 (the direct path never writes a refusal of its own)."""
        dependant = self.route.dependant
        values: dict[str, Any] = {}
        parts = (
            (dependant.path_params, self._path_values),
            (dependant.query_params, self._query_values),
            (dependant.body_params, self._body_values),
        )
        for declared, read in parts:
            if not declared:
                continue
            found = await read(arguments)
            if found is None:
                return None
            values.update(found)
        return values

    async def _path_values(self, arguments: Mapping[str, Any]) -> dict[str, Any] | None:
        path: dict[str, str] = {}
        for name in self.plan.path_params:
            value = arguments.get(name)
            if value is None or isinstance(value, (list, dict)):
                return None  # a missing or unsendable argument
            path[name] = str(value)
        if path_errors(self.route, self.plan, arguments):
            return None  # not one segment of this route: refused with the 422, as on every path
        found: dict[str, Any] | None = _scalar_values(self.scalar_path, path, str) if self.scalar_path else None
        if found is None:
            found, errors = compat.validate_params(self.route.dependant.path_params, path)
            return None if errors else found
        return found

    async def _query_values(self, arguments: Mapping[str, Any]) -> dict[str, Any] | None:
        found: dict[str, Any] | None = (
            _scalar_values(self.scalar_query, arguments, query_text) if self.scalar_query else None
        )
        if found is None:
            if argument_errors(self.plan, arguments):
                return None  # a value no query string carries
            query = QueryParams(query_pairs(self.plan, arguments))
            found, errors = compat.validate_params(self.route.dependant.query_params, query)
            return None if errors else found
        return found

    async def _body_values(self, arguments: Mapping[str, Any]) -> dict[str, Any] | None:
        body = _detached(body_value(self.plan, arguments))
        found, errors = await compat.validate_body(self.route.dependant.body_params, body, self.embed_body_fields)
        return None if errors else found

    async def _respond(self, returned: Any, request: _LazyRequest) -> CapturedResponse:
        route = self.route
        if isinstance(returned, Response):
            return await _sent(returned, request)
        status, body = await compat.json_answer(route, returned, self.serialize_options)
        return CapturedResponse(status, [(b"content-type", b"application/json")], bytearray(body))


class _LazyRequest:
    """The route's request, built on first use (most calls never need it)."""

    def __init__(self, scope_for: Callable[[], tuple[Scope, bytes]]) -> None:
        self._scope_for = scope_for
        self._request: Request | None = None

    def get(self) -> Request:
        if self._request is None:
            scope, body = self._scope_for()
            self._request = Request(scope, _receiver(body))
        return self._request


def _receiver(body: bytes) -> Callable[[], Any]:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


async def _handled(exc: Exception, handlers: ExceptionHandlers, request: _LazyRequest) -> CapturedResponse:
    """The app's answer to ``exc``, found as Starlette finds it; re-raised when none handles it."""
    handler = compat.exception_handler_for(handlers, exc)
    if handler is None:
        raise exc
    if compat.is_async_handler(handler):
        response = await handler(request.get(), exc)
    else:
        response = await run_in_threadpool(handler, request.get(), exc)
    return await _sent(response, request) if response is not None else CapturedResponse()


async def _sent(response: Response, request: _LazyRequest) -> CapturedResponse:
    """Send ``response`` as the route would (streaming bodies and background tasks included)."""
    captured = CapturedResponse()
    http = request.get()
    await response(http.scope, http.receive, captured.send)
    return captured


def _is_scalar(field: Any) -> bool:
    """A parameter FastAPI reads as one string and validates as such: no list, alias choices or JSON."""
    info = field.field_info
    if getattr(info, "validation_alias", None) is not None or getattr(field, "config", None):
        return False
    annotation = info.annotation
    if get_origin(annotation) in (Union, types.UnionType):
        choices = [choice for choice in get_args(annotation) if choice is not type(None)]
        if len(choices) != 1:
            return False
        annotation = choices[0]
    if annotation in (str, int, float, bool) or get_origin(annotation) is Literal:
        return True
    return isinstance(annotation, type) and issubclass(annotation, enum.Enum)


def _with_locations(fields: Any) -> tuple[tuple[Any, tuple[str, str]], ...]:
    """Each field with its error location, ``(where, alias)``, as FastAPI reports a parameter's."""
    return tuple((field, (field.field_info.in_.value, field.alias)) for field in fields)


def _scalar_values(
    fields: tuple[tuple[Any, tuple[str, str]], ...], arguments: Mapping[str, Any], as_text: Callable[[Any], str]
) -> Any:
    """The validated values of scalar ``fields`` when every one has a single argument, else None.

    Each value is validated by FastAPI's own field, from the text the route would have read. Any
    other case (an argument missing, a list, an invalid value) is left to FastAPI's function.
    """
    values: dict[str, Any] = {}
    for field, loc in fields:
        value = arguments.get(field.alias)
        if value is None or isinstance(value, (list, dict)):
            return None
        validated, errors = compat.validate_field(field, as_text(value), values, loc)
        if errors:
            return None
        values[field.name] = validated
    return values


def _is_model(field: Any) -> bool:
    annotation = field.field_info.annotation
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _detached(value: Any) -> Any:
    """A copy of the JSON containers in ``value``: the handler gets its own, as after a JSON round trip.

    The tool arguments are also what the request state is bound to, so a handler that changes a
    list it was given must not change them.
    """
    if isinstance(value, dict):
        return {key: _detached(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_detached(item) for item in value]
    return value
