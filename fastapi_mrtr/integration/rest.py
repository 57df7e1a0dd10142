"""Plain REST calls of an endpoint that asks for input.

A REST caller gets ``428 Precondition Required`` with the same body an MCP client would get
(``resultType: "input_required"``, ``inputRequests``, ``requestState``). It answers by repeating
the same request with two headers: ``MRTR-Request-State`` (the state, verbatim) and
``MRTR-Input-Responses`` (a JSON object of key -> bare result). The state is bound to the HTTP
method, the path, the query and a digest of the body, and to the caller's Authorization.
``document_rest_answers`` says all of this in the OpenAPI of each tool route that takes ``ctx``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from fastapi import HTTPException, Request
from fastapi.routing import APIRoute
from starlette.types import Scope

from fastapi_mrtr.engine.call import CallRecord
from fastapi_mrtr.engine.flow import StateGuard
from fastapi_mrtr.engine.rounds import Round, input_requests_of
from fastapi_mrtr.integration import fastapi_compat as compat
from fastapi_mrtr.wire.errors import ServerError
from fastapi_mrtr.wire.json_codec import decode
from fastapi_mrtr.wire.protocol import JSONObject

REST_KEY = "fastapi_mrtr.rest"  # the RestCall of a plain HTTP request, set by the plugin's middleware
STATE_HEADER = "mrtr-request-state"
RESPONSES_HEADER = "mrtr-input-responses"
# A REST caller is a program that can show anything to its user.
REST_CAPABILITIES: JSONObject = {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}


@dataclass
class RestCall:
    """A plain HTTP request to an app the plugin serves, and its round once ``ctx`` opened one."""

    guard: StateGuard
    round: Round | None = None

    def stopped_to_ask(self) -> bool:
        """Whether the route's handler stopped for input (or for a capability): a 428 or 400 is due."""
        record = self.round.record if self.round is not None else None
        return record is not None and (record.suspended or record.missing_capability is not None)


async def rest_record(request: Request) -> CallRecord:
    """Open the round of a REST call that asks for ``ctx`` (its ``MRTR-*`` headers are its retry)."""
    rest: RestCall | None = request.scope.get(REST_KEY)
    if rest is None:
        raise RuntimeError("ctx is only available in apps that created MCP(app)")
    headers = {k.lower(): v for k, v in request.headers.items()}
    params: JSONObject = {"inputResponses": _responses(headers.get(RESPONSES_HEADER))}
    if headers.get(STATE_HEADER):
        params["requestState"] = headers[STATE_HEADER]
    body = await request.body()
    try:
        round_ = await Round.open(
            rest.guard,
            method="rest",
            target=f"{request.method} {request.url.path}",
            arguments={"query": str(request.query_params), "body": hashlib.sha256(body).hexdigest()},
            params=params,
            headers=headers,
            client_capabilities=REST_CAPABILITIES,
        )
    except ServerError as exc:
        raise HTTPException(exc.http_status, detail=exc.to_error()) from None
    round_.record.seal_now = round_.seal  # ``ctx.input_required`` answers 428 from the handler itself
    rest.round = round_
    return round_.record


async def before_reply(scope: Scope, status: int) -> None:
    """Just before a REST answer starts: release the single-use state of a correctable refusal.

    Released before the caller hears of it, so its corrected retry finds the state free. A route
    that answered otherwise (it ignored a refused ``ctx.input_required``) keeps the state used.
    """
    rest: RestCall | None = scope.get(REST_KEY)
    if rest is not None and rest.round is not None and rest.round.correctable_status == status:
        await rest.round.release()


def _responses(raw: str | None) -> JSONObject:
    if not raw:
        return {}
    try:
        value: Any = decode(raw)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise HTTPException(400, detail=f"{RESPONSES_HEADER} must be a JSON object of key -> result")
    return value


def input_required_body(round_: Round) -> tuple[int, JSONObject]:
    """(status, body) of the answer to a REST round that stopped to ask: 428, or a refusal."""
    record = round_.record
    if record.missing_capability is not None:
        round_.correctable_status = 400
        return 400, {"detail": "missing client capability", "requiredCapabilities": record.missing_capability}
    try:
        token = round_.seal()
    except ServerError as exc:
        return exc.http_status, {"detail": exc.to_error()}
    return 428, {"resultType": "input_required", "inputRequests": input_requests_of(record), "requestState": token}


# --- what /docs shows a REST caller -------------------------------------------------------------

_INPUT_REQUEST: JSONObject = {
    "type": "object",
    "required": ["method", "params"],
    "properties": {
        "method": {"type": "string", "enum": ["elicitation/create", "sampling/createMessage", "roots/list"]},
        "params": {"type": "object", "description": "As in the MCP request of that method."},
    },
}
INPUT_REQUIRED_SCHEMA: JSONObject = {
    "title": "InputRequired",
    "type": "object",
    "required": ["resultType", "inputRequests", "requestState"],
    "properties": {
        "resultType": {"type": "string", "const": "input_required"},
        "inputRequests": {
            "type": "object",
            "description": "The questions, by key: answer each in MRTR-Input-Responses under its key.",
            "additionalProperties": _INPUT_REQUEST,
        },
        "requestState": {"type": "string", "description": "Send it back verbatim in MRTR-Request-State."},
    },
}
REST_HEADERS: list[JSONObject] = [
    {
        "name": "MRTR-Request-State",
        "in": "header",
        "required": False,
        "description": "On a retry after a 428: its requestState, verbatim. Bound to this method, path, "
        "query, body and Authorization; a bad or expired one gets 400.",
        "schema": {"type": "string"},
    },
    {
        "name": "MRTR-Input-Responses",
        "in": "header",
        "required": False,
        "description": 'On a retry after a 428: a JSON object of key -> result, e.g. {"confirm": {"action": '
        '"accept", "content": {"value": true}}}. Not JSON or not an object gets 400.',
        "schema": {"type": "string"},
    },
]
_428: dict[str, Any] = {
    "description": "Precondition Required: the route asks for input. Repeat the same request (same method, "
    "path, query, body and Authorization) with the MRTR-Request-State and MRTR-Input-Responses headers.",
    "content": {"application/json": {"schema": INPUT_REQUIRED_SCHEMA}},
}


def document_rest_answers(route: APIRoute) -> None:
    """Add the 428 answer and the two ``MRTR-*`` request headers to ``route``'s OpenAPI operation.

    Documentation only: FastAPI reads ``responses`` and ``openapi_extra`` when it builds the
    schema and for nothing else. Idempotent, so a route built again is not documented twice.
    An included route of newer FastAPI is a view of a copy FastAPI made of the declared route when
    the router was included, and ``/docs`` reads the copy: both are documented.
    """
    for target in compat.documented_routes(route):
        target.responses.setdefault(428, _428)
        extra = target.openapi_extra
        if extra is None:
            extra = {}
            object.__setattr__(target, "openapi_extra", extra)  # the copy may be a frozen dataclass
        parameters: list[Any] = extra.setdefault("parameters", [])
        named = {str(p.get("name", "")).lower() for p in parameters if isinstance(p, dict)}
        parameters.extend(dict(h) for h in REST_HEADERS if str(h["name"]).lower() not in named)
