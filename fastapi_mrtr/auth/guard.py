"""The check in front of the MCP endpoint: a valid token with the operation's scopes, or a challenge.

It runs before the endpoint reads anything, so a refused request never reaches a route and no
SSE byte is sent before the 401 or 403: the challenge is the whole answer. Both eras pass through
here (a 2025-era session's POSTs, GETs and DELETEs are requests to the same endpoint).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from starlette.types import ASGIApp, Receive, Scope, Send

from fastapi_mrtr.auth.bearer import bearer_token, token_in_query
from fastapi_mrtr.auth.buffered import BufferedBody
from fastapi_mrtr.auth.challenges import (
    INSUFFICIENT_SCOPE,
    INVALID_REQUEST_ERROR,
    INVALID_TOKEN,
    bearer_challenge,
    send_challenge,
)
from fastapi_mrtr.auth.operations import Operation, operations_of
from fastapi_mrtr.auth.principal import PRINCIPAL_HEADER, principal_of
from fastapi_mrtr.auth.scopes import ScopeHierarchy
from fastapi_mrtr.auth.tokens import AccessToken, InvalidTokenError, TokenVerifier

if TYPE_CHECKING:
    from fastapi_mrtr.auth.operation_scopes import OperationScopes

logger = logging.getLogger("fastapi_mrtr")

# Where the verified token is left for what runs below (scope["state"], as Starlette's request.state).
# A tool call's request to its route copies the state, so ``auth.require`` finds it there.
ACCESS_TOKEN_STATE = "fastapi_mrtr.access_token"


@dataclass(frozen=True)
class VerifiedBearer:
    """The bearer string the guard verified, what it verified it as, and with which verifier.

    ``auth.require`` uses ``access`` only for the same bearer string and the same verifier: a
    route reached some other way (a REST call, another resource server's guard) verifies again.
    """

    token: str
    access: AccessToken
    verifier: TokenVerifier


class ProtectedResource(Protocol):
    """What the guard needs of the resource server's configuration (``OAuthResourceServer``)."""

    metadata_url: str
    allow_anonymous: bool
    verifier: TokenVerifier
    hierarchy: ScopeHierarchy

    def scopes_supported(self) -> frozenset[str]: ...


class ResourceGuard:
    """Checks the bearer token of each request to the endpoint against what its operation needs."""

    def __init__(self, server: ProtectedResource, scopes: OperationScopes, max_body_bytes: int) -> None:
        self._server = server
        self._scopes = scopes
        self._max_body = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send, endpoint: ASGIApp) -> None:
        if scope["type"] != "http" or scope["method"] == "OPTIONS":  # a CORS preflight carries no token
            await endpoint(scope, receive, send)
            return
        server = self._server
        if token_in_query(scope.get("query_string", b"")):
            challenge = bearer_challenge(
                server.metadata_url, (), INVALID_REQUEST_ERROR, "send the access token in the Authorization header only"
            )
            await send_challenge(send, 401, challenge, "Unauthorized: access tokens in the query string are refused")
            return
        # The verified principal is ours to set: a copy sent by the client is dropped first.
        scope["headers"] = [(k, v) for k, v in scope["headers"] if k.lower() != PRINCIPAL_HEADER.encode()]
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        body = BufferedBody(receive)
        operations: list[Operation] = []
        if scope["method"] == "POST":
            raw = await body.read(self._max_body)
            operations = operations_of(raw) if body.complete else []
        request_id = operations[0].request_id if len(operations) == 1 else None
        needed = frozenset().union(*(self._scopes.needed(op) for op in operations))
        token = bearer_token(headers)
        if token is None:
            if needed or not server.allow_anonymous:
                challenge = bearer_challenge(server.metadata_url, needed or server.scopes_supported())
                await send_challenge(
                    send, 401, challenge, "Unauthorized: this endpoint needs an access token", request_id
                )
                return
            await endpoint(scope, body.replay, send)
            return
        try:
            access = await server.verifier.verify(token)
        except InvalidTokenError as refused:
            challenge = bearer_challenge(server.metadata_url, needed, INVALID_TOKEN, refused.description)
            await send_challenge(send, 401, challenge, f"Unauthorized: {refused.description}", request_id)
            return
        except Exception:  # a verifier's own failure is the token's refusal, never a 500
            logger.exception("the token verifier failed")
            challenge = bearer_challenge(server.metadata_url, needed, INVALID_TOKEN, "the token could not be verified")
            await send_challenge(send, 401, challenge, "Unauthorized: the token could not be verified", request_id)
            return
        if server.hierarchy.missing(access.scopes, needed):
            await self._insufficient(send, needed, access, request_id)
            return
        scope.setdefault("state", {})[ACCESS_TOKEN_STATE] = VerifiedBearer(token, access, server.verifier)
        scope["headers"].append((PRINCIPAL_HEADER.encode(), principal_of(access).encode()))
        await endpoint(scope, body.replay, send)

    async def _insufficient(self, send: Send, needed: frozenset[str], access: AccessToken, request_id: object) -> None:
        # The complete set the operation needs, in one challenge (SEP-2350), not only what is missing.
        missing = sorted(self._server.hierarchy.missing(access.scopes, needed))
        challenge = bearer_challenge(
            self._server.metadata_url,
            needed,
            INSUFFICIENT_SCOPE,
            f"this operation needs scope {' '.join(sorted(needed))}",
        )
        data = {"requiredScopes": sorted(needed), "missingScopes": missing}
        await send_challenge(send, 403, challenge, "Forbidden: insufficient scope", request_id, data)
