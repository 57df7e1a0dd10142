"""Every private FastAPI and Starlette API the plugin relies on, behind small named functions.

Supported range: FastAPI 0.117.1 up to 0.165, Starlette 0.46.2 and later (pyproject.toml bounds
both; CI runs the suite at each end: ``scripts/test.sh`` on the newest, ``scripts/test-lowest.sh``
on the floors). Nothing here is public API of FastAPI or Starlette, so a new FastAPI may move any
of it: this module is the one place to look, and each function names the versions each of its
branches serves. Read in place elsewhere, because every supported version has them alike and
they carry no underscore: a route's ``Dependant`` fields but its scopes (its parameters,
``call``, ``dependencies``: only ``integration/`` reads them), FastAPI's ``ModelField``
(``field_info``, ``alias``), and Starlette's ``Route``/``Router`` attributes.

What it stands for, and why the plugin needs it:

- **Validation as the route validates** (``fastapi.dependencies.utils``, ``fastapi._compat``):
  a direct call (``direct_call``) and the tool's schemas (``tools``) validate with FastAPI's own
  field wrappers and functions, so a value passes exactly when the route would pass it. The same
  in every supported version.
- **Serialisation as the route serialises** (``fastapi.routing.serialize_response``): newer
  versions dump a response model straight to JSON bytes (``dump_json``: 0.130 has it, 0.125
  not) and take where the path function is (``endpoint_ctx``: 0.125 has it, 0.120 not) for
  their validation error; older versions take neither, and get neither.
- **The app's stack below the plugin** (``starlette.middleware.exceptions`` private
  attributes, the scope keys Starlette and FastAPI read back): ``route_entry`` skips the layers
  between the plugin and a route when they are FastAPI's own, and sets in the scope what they
  would have set. FastAPI 0.118 and later put an exit-stack middleware between Starlette's
  exception middleware and the router; 0.117 (and the unsupported 0.115 and 0.116) has the
  router right there (the route opens its own stack for uploaded files).
- **Included routers** (``fastapi.routing.iter_route_contexts``: 0.140 has it, 0.130 not):
  newer FastAPI serves an included router's routes through per-include contexts; older FastAPI copied
  them into ``app.router.routes``.
- **Where a tool call enters the app** (``starlette.routing``'s matching, its router's
  ``middleware_stack``, the ``Mount`` scope, Starlette's exception-handler lookup): the route entry
  sets in the scope what the router would, the guard takes the place of the router's routing,
  and a direct call finds an exception's handler as Starlette's exception middleware does.
- **The scopes a route declares** (a ``Dependant``'s scope fields, renamed between versions): the
  OAuth resource server (``auth.scopes``) asks a token for them before a call runs.
- **Route features a direct call cannot reproduce**, newer FastAPI only (streamed responses,
  body-size limits, router form limits) and **telemetry** (``fastapi.telemetry``: 0.150 has it,
  0.140 not): their presence makes the plugin take the route itself.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi import routing as fastapi_routing
from fastapi._compat import ModelField, field_annotation_is_sequence
from fastapi.datastructures import DefaultPlaceholder
from fastapi.dependencies.utils import request_body_to_args, request_params_to_args
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute, serialize_response
from fastapi.utils import is_body_allowed_for_status_code
from pydantic.fields import FieldInfo
from starlette._exception_handler import _lookup_exception_handler
from starlette._utils import is_async_callable
from starlette.convertors import StringConvertor
from starlette.exceptions import HTTPException
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.routing import Match, Router
from starlette.types import ASGIApp, Scope

try:  # FastAPI 0.118 and later: the exit stack for uploaded files is a middleware of its own
    from fastapi.middleware.asyncexitstack import AsyncExitStackMiddleware as _FileStackMiddleware
except ImportError:  # FastAPI 0.117 and older: the route opens it itself
    _FileStackMiddleware = None  # type: ignore[assignment,misc]

# The scope keys the skipped layers set, as Starlette and FastAPI read them back.
_EXCEPTION_HANDLERS_KEY = "starlette.exception_handlers"  # Starlette's exception middleware
_FILE_STACK_KEY = "fastapi_middleware_astack"  # FastAPI's exit-stack middleware (0.118 and later)

_SERIALIZE_OPTIONS = inspect.signature(serialize_response).parameters


# --- fields and validation (every supported version) -------------------------------------------


def model_field(info: FieldInfo, name: str) -> Any:
    """FastAPI's own wrapper of a pydantic field, which validates as a route's parameter does."""
    return ModelField(field_info=info, name=name)


def is_sequence_annotation(annotation: Any) -> bool:
    """Whether FastAPI reads all the values of a query or form field of this type (``getlist``)."""
    return bool(field_annotation_is_sequence(annotation))


def validate_field(field: Any, value: Any, values: dict[str, Any], loc: tuple[str, ...]) -> tuple[Any, Any]:
    """``(value, errors)`` of one of FastAPI's fields: errors is empty or None when it is valid."""
    return field.validate(value, values, loc=loc)  # type: ignore[no-any-return]


def validate_params(fields: Sequence[Any], received: Mapping[str, Any]) -> tuple[dict[str, Any], list[Any]]:
    """Path or query values as the route validates them: ``(values, errors)``."""
    return request_params_to_args(fields, received)


async def validate_body(fields: Sequence[Any], body: Any, embed: bool) -> tuple[dict[str, Any], list[Any]]:
    """A decoded JSON body as the route validates it: ``(values, errors)``."""
    return await request_body_to_args(list(fields), body, embed)


def embeds_body_fields(route: Any) -> bool | None:
    """Whether the route reads its body fields under their names (None: this route cannot say)."""
    embed = getattr(route, "_embed_body_fields", None)
    return embed if isinstance(embed, bool) else None


# --- responses ---------------------------------------------------------------------------------


def response_class_of(route: APIRoute) -> Any:
    """The response class the route answers with, declared or FastAPI's default."""
    declared = route.response_class
    return declared.value if isinstance(declared, DefaultPlaceholder) else declared


def is_default_response_class(route: Any, default: type) -> bool:
    """Whether the route answers with FastAPI's default response class, and that is ``default``."""
    declared = route.response_class
    return isinstance(declared, DefaultPlaceholder) and declared.value is default


def serialize_options(route: Any, call: Callable[..., Any], where: str) -> dict[str, Any]:
    """What this FastAPI's ``serialize_response`` takes beyond the response field and model options.

    ``dump_json`` (0.130 has it, 0.125 not) serialises a declared response model straight to JSON bytes;
    ``endpoint_ctx`` (0.125 has it, 0.120 not) says where the path function is, for a response validation
    error. Older versions take neither.
    """
    options: dict[str, Any] = {}
    if "dump_json" in _SERIALIZE_OPTIONS and route.response_field is not None:
        options["dump_json"] = True
    if "endpoint_ctx" in _SERIALIZE_OPTIONS:
        extract = getattr(fastapi_routing, "_extract_endpoint_context", None)
        context: dict[str, Any] = dict(extract(call)) if extract is not None else {}
        context["path"] = where
        options["endpoint_ctx"] = context
    return options


async def serialize_returned(route: Any, returned: Any, options: Mapping[str, Any]) -> Any:
    """What the route makes of its path function's return value: JSON-able data, or JSON bytes."""
    return await serialize_response(
        field=route.response_field,
        response_content=returned,
        include=route.response_model_include,
        exclude=route.response_model_exclude,
        by_alias=route.response_model_by_alias,
        exclude_unset=route.response_model_exclude_unset,
        exclude_defaults=route.response_model_exclude_defaults,
        exclude_none=route.response_model_exclude_none,
        **options,
    )


async def json_answer(route: Any, returned: Any, options: Mapping[str, Any]) -> tuple[int, bytes]:
    """(status, body) the route's default ``JSONResponse`` answers for its path function's return value."""
    content = await serialize_returned(route, returned, options)
    if options.get("dump_json"):  # JSON bytes already: what Response(...) would hold
        status, body = route.status_code or 200, content
    else:
        response = JSONResponse(content, **({"status_code": route.status_code} if route.status_code else {}))
        status, body = response.status_code, bytes(response.body)
    return status, (body if body_allowed(status) else b"")


def body_allowed(status: int) -> bool:
    """Whether a response of this status carries a body (not 1xx, 204, 304)."""
    return bool(is_body_allowed_for_status_code(status))


def is_async_handler(handler: Any) -> bool:
    """Whether Starlette awaits ``handler`` (else it runs it in a worker thread)."""
    return bool(is_async_callable(handler))


def exception_handler_for(handlers: tuple[Mapping[Any, Any], Mapping[Any, Any]], exc: Exception) -> Any:
    """The app's handler of ``exc`` as Starlette's exception middleware finds it, or None.

    An ``HTTPException`` by its status first, then by the exception's class along its MRO.
    """
    by_class, by_status = handlers
    handler = by_status.get(exc.status_code) if isinstance(exc, HTTPException) else None
    return handler if handler is not None else _lookup_exception_handler(dict(by_class), exc)


def plain_path_convertors(route: Any) -> bool:
    """Whether every path parameter of ``route`` is a plain ``{name}`` (one string segment)."""
    return all(type(c) is StringConvertor for c in route.param_convertors.values())


# --- routes ------------------------------------------------------------------------------------


def api_routes(app: FastAPI) -> Iterator[APIRoute]:
    """The app's API routes, those of included routers too, as the app serves them.

    Newer FastAPI (0.140 has it, 0.130 not) keeps an included router as one lazy entry of
    ``app.router.routes`` and serves its routes through per-include contexts (prefix, dependencies), which
    ``iter_route_contexts`` flattens; an included route is yielded as its context, which answers
    like an ``APIRoute``. Older FastAPI copied included routes into ``app.router.routes``.
    """
    iter_route_contexts = getattr(fastapi_routing, "iter_route_contexts", None)
    if iter_route_contexts is None:
        yield from (route for route in app.router.routes if isinstance(route, APIRoute))
        return
    own = {id(route) for route in app.router.routes}
    for context in iter_route_contexts(app.router.routes):
        if not isinstance(context.original_route, APIRoute):
            continue
        if id(context.original_route) in own:  # a route of the app itself
            yield context.original_route
        else:  # an included route, with the include's prefix and dependencies applied
            yield context


def declared_route(route: Any) -> Any:
    """The route as it was declared: an included route's own ``APIRoute`` (newer FastAPI)."""
    return getattr(route, "original_route", route)


def documented_routes(route: Any) -> list[Any]:
    """Where ``/docs`` reads a route's ``responses`` and ``openapi_extra``: the declared route, and
    for an included route of newer FastAPI also the copy made at include time (which it reads)."""
    declared = declared_route(route)
    copy = getattr(route, "_effective_route", route)
    return list({id(r): r for r in (declared, copy)}.values())


def declared_scopes(route: Any) -> frozenset[str]:
    """Every OAuth scope a ``Security(..., scopes=[...])`` declares anywhere in the route's
    dependency tree (what the route's ``SecurityScopes`` can ask for).

    The ``Dependant`` field holding them moved: newer FastAPI (0.165 has it) keeps a dependency's
    own scopes in ``own_oauth_scopes`` (and its parents' in ``parent_oauth_scopes``); older
    FastAPI (0.117 has it) keeps the accumulated ones, its own and its parents', in
    ``security_scopes``. The union over the tree is the same either way.
    """
    found: set[str] = set()
    stack = [route.dependant]
    while stack:
        dependant = stack.pop()
        for field in ("own_oauth_scopes", "security_scopes"):
            declared = getattr(dependant, field, None)
            if declared:
                found.update(str(scope) for scope in declared)
        stack.extend(dependant.dependencies)
    return frozenset(found)


def needs_its_own_request(route: Any) -> bool:
    """Whether the route does request work beyond parameters, body and JSON (newer FastAPI only).

    Streamed responses (server-sent events, JSON lines, their item field) and a body-size limit
    are route features of recent FastAPI; older routes have none of them.
    """
    return bool(
        getattr(route, "is_sse_stream", False)
        or getattr(route, "is_json_stream", False)
        or getattr(route, "max_body_size", None) is not None
        or getattr(route, "stream_item_field", None) is not None
    )


def has_form_limits(router: Any) -> bool:
    """Whether the router limits the forms its routes read (newer FastAPI only)."""
    return bool(getattr(router, "form_limits", None))


def apply_form_limits(router: Any, scope: Scope) -> None:
    """Put the router's form limits in ``scope``, as FastAPI's router does before choosing a route."""
    limits = getattr(router, "form_limits", None)
    apply = getattr(fastapi_routing, "_apply_router_form_limits", None)
    if limits and apply is not None:
        apply(scope, limits)


def request_telemetry_active() -> bool:
    """Whether FastAPI records the current request for a tracer (0.150 has telemetry, 0.140 not)."""
    return _request_telemetry() is not None


def _no_telemetry() -> object | None:
    return None


def _telemetry_reader() -> Callable[[], object | None]:
    try:
        from fastapi.telemetry._api import _get_request_telemetry
    except ImportError:  # an older FastAPI: no telemetry
        return _no_telemetry
    return _get_request_telemetry


_request_telemetry = _telemetry_reader()


# --- the app's stack below the plugin ----------------------------------------------------------


def is_exception_layer(layer: object) -> bool:
    """Whether ``layer`` is Starlette's own exception middleware: FastAPI's stack starts there.

    The one check of where a FastAPI app's own layers begin below the user middleware (exactly
    that class: a subclass may do anything).
    """
    return type(layer) is ExceptionMiddleware


def exception_handlers_of(layer: ASGIApp) -> tuple[dict[Any, Any], dict[Any, Any]] | None:
    """The exception handlers Starlette's exception middleware holds: (by class, by HTTP status)."""
    by_class = getattr(layer, "_exception_handlers", None)
    by_status = getattr(layer, "_status_handlers", None)
    if not isinstance(by_class, dict) or not isinstance(by_status, dict):
        return None
    return by_class, by_status


def router_below_exceptions(layer: ASGIApp) -> Router | None:
    """The router FastAPI puts below Starlette's exception middleware ``layer``, past its file stack.

    FastAPI 0.118 and later: its exit-stack middleware, then the router. FastAPI 0.117 and older:
    the router itself. None when something else sits there.
    """
    below = getattr(layer, "app", None)
    if _FileStackMiddleware is not None:
        if type(below) is not _FileStackMiddleware or below.context_name != _FILE_STACK_KEY:
            return None
        below = below.app
    return below if isinstance(below, Router) else None


def router_has_middleware(router: Router, guard: type[Any]) -> bool:
    """Whether ``router`` wraps its routing in middleware of its own (a ``guard`` around it is not)."""
    stack: Any = getattr(router, "middleware_stack", router.app)
    if isinstance(stack, guard):
        stack = stack.routing
    return bool(stack != router.app)


def guard_routing(router: Router, guard: type[Any], max_layers: int = 64) -> bool:
    """Put ``guard(router, routing)`` in place of ``router``'s own routing, below its middleware.

    Rewrites the router's ``middleware_stack`` (or the innermost ``app`` of its own middleware)
    in place, once: a second call finds the guard there. False when the router's middleware hides
    where routing starts (a layer without ``app``, or deeper than ``max_layers``).
    """
    routing = router.app
    stack: Any = router.middleware_stack
    if isinstance(stack, guard):
        return True
    if stack == routing:
        router.middleware_stack = guard(router, routing)
        return True
    layer: Any = stack
    for _ in range(max_layers):  # the router's own middleware: each layer's ``app`` is the next
        inner = getattr(layer, "app", None)
        if inner is None:
            return False
        if isinstance(inner, guard):
            return True
        if inner == routing:
            layer.app = guard(router, routing)
            return True
        layer = inner
    return False


def match_route(route: Any, scope: Scope, router: Router) -> bool:
    """Set in ``scope`` what ``router`` sets when it chooses ``route``; False unless it fully matches."""
    match, child_scope = route.matches(scope)
    if match is not Match.FULL:
        return False
    scope.update(child_scope)
    scope["route"] = declared_route(route)
    scope.setdefault("router", router)
    return True


def mounted_scope(scope: Scope, mount: str) -> Scope:
    """The scope Starlette's ``Mount`` at ``mount`` hands its app (the root path extended by it)."""
    root_path = scope.get("root_path", "")
    return {**scope, "app_root_path": scope.get("app_root_path", root_path), "root_path": root_path + mount}


def put_exception_handlers(scope: Scope, handlers: tuple[Any, Any]) -> None:
    """Set in ``scope`` the handlers Starlette's exception middleware would have put there."""
    scope[_EXCEPTION_HANDLERS_KEY] = handlers


@asynccontextmanager
async def file_stack(scope: Scope) -> AsyncIterator[None]:
    """Do what FastAPI's exit-stack middleware does around a request (a no-op key before 0.118)."""
    async with AsyncExitStack() as stack:
        scope[_FILE_STACK_KEY] = stack
        yield
