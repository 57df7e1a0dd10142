"""``OAuthResourceServer``: the one object an app configures to protect its MCP endpoint.

    auth = OAuthResourceServer(resource="https://api.example.com/mcp",
                               authorization_servers=["https://login.example.com"])
    mcp = MCP(app, auth=auth)

    @mcp.tool()
    @app.get("/orders")
    async def my_orders(token: AccessToken = Security(auth.require, scopes=["orders:read"])): ...

``MCP`` then serves the RFC 9728 metadata, and its endpoint answers 401/403 challenges before
anything runs (:mod:`~fastapi_mrtr.auth.guard`). The route's own ``Security`` scopes are the
ones the endpoint asks for; ``auth.require`` checks the same token on REST calls of the route.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from fastapi import FastAPI, HTTPException, Request
from fastapi.security import SecurityScopes
from starlette.responses import JSONResponse

from fastapi_mrtr.auth.bearer import bearer_token
from fastapi_mrtr.auth.challenges import INSUFFICIENT_SCOPE, INVALID_TOKEN, bearer_challenge
from fastapi_mrtr.auth.guard import ACCESS_TOKEN_STATE, ResourceGuard, VerifiedBearer
from fastapi_mrtr.auth.metadata import (
    WELL_KNOWN,
    canonical_resource,
    metadata_document,
    metadata_path,
    metadata_url,
)
from fastapi_mrtr.auth.operation_scopes import OperationScopes, mark_scopes
from fastapi_mrtr.auth.scopes import ScopeHierarchy
from fastapi_mrtr.auth.tokens import AccessToken, InvalidTokenError, TokenVerifier

if TYPE_CHECKING:
    from fastapi_mrtr.features.prompts import PromptRegistry
    from fastapi_mrtr.features.resources import ResourceRegistry
    from fastapi_mrtr.integration.tool_methods import ToolRegistry

F = TypeVar("F", bound=Callable[..., Any])

logger = logging.getLogger("fastapi_mrtr")


class OAuthResourceServer:
    """The MCP endpoint as an OAuth 2.1 resource server (docs/oauth.md).

    ``resource`` is the canonical URI clients use for the endpoint (its public URL, e.g.
    ``https://api.example.com/mcp``): tokens must name it as their audience. ``verifier``
    defaults to a :class:`~fastapi_mrtr.auth.jwt_verifier.JwtVerifier` for the first
    authorization server. ``allow_anonymous`` lets requests without a token through to operations
    that declare no scopes (a token that is sent must still be valid). ``scope_hierarchy`` maps a
    scope to the scopes it implies. ``playground_client_id``: a public client registered at the
    authorization server for the playground page (redirect URI ``{resource}/playground``), as
    FastAPI's ``swagger_ui_init_oauth`` client id; without it the page registers itself.
    """

    def __init__(
        self,
        *,
        resource: str,
        authorization_servers: Sequence[str],
        verifier: TokenVerifier | None = None,
        scopes_supported: Sequence[str] | None = None,
        scope_hierarchy: Mapping[str, Iterable[str]] | None = None,
        allow_anonymous: bool = False,
        resource_name: str | None = None,
        serve_root_metadata: bool = True,
        playground_client_id: str | None = None,
    ) -> None:
        if not authorization_servers:
            raise ValueError("OAuthResourceServer needs at least one authorization server (its issuer URL)")
        self.resource = canonical_resource(resource)
        self.authorization_servers = list(authorization_servers)
        if verifier is None:
            from fastapi_mrtr.auth.jwt_verifier import JwtVerifier

            verifier = JwtVerifier(issuer=self.authorization_servers[0], audience=self.resource)
        self.verifier = verifier
        self.hierarchy = ScopeHierarchy(scope_hierarchy)
        self.allow_anonymous = allow_anonymous
        self.resource_name = resource_name
        self.playground_client_id = playground_client_id
        self.metadata_url = metadata_url(self.resource)
        self._declared_scopes = list(scopes_supported) if scopes_supported is not None else None
        self._serve_root = serve_root_metadata
        self._operations: OperationScopes | None = None

    # --- wiring (MCP calls this) -------------------------------------------------------------

    def attach(
        self,
        app: FastAPI,
        tools: ToolRegistry,
        prompts: PromptRegistry,
        resources: ResourceRegistry,
        max_body_bytes: int,
    ) -> ResourceGuard:
        """Serve the metadata on ``app`` and return the guard for the endpoint."""
        self._operations = OperationScopes(tools, prompts, resources)
        own = metadata_path(self.resource)
        taken = {getattr(route, "path", None) for route in app.router.routes}
        paths = [own]
        if self._serve_root and own != WELL_KNOWN and WELL_KNOWN not in taken:
            paths.append(WELL_KNOWN)  # clients that try the root first find it too, where it is free
        for path in paths:
            app.router.add_route(path, self._metadata, methods=["GET"], include_in_schema=False)
        return ResourceGuard(self, self._operations, max_body_bytes)

    async def _metadata(self, request: Request) -> JSONResponse:
        document = metadata_document(
            self.resource, self.authorization_servers, sorted(self.scopes_supported()), self.resource_name
        )
        # Public by design: a browser-based client reads it from another origin.
        return JSONResponse(document, headers={"access-control-allow-origin": "*", "cache-control": "max-age=300"})

    # --- scopes ------------------------------------------------------------------------------

    def scopes(self, *scopes: str) -> Callable[[F], F]:
        """Mark a prompt or resource function with the scopes it needs (tools use their route's Security).

        @auth.scopes("docs:read")
        @mcp.resource("docs://{name}")
        def doc(name: str) -> str: ...
        """
        if not scopes or not all(isinstance(scope, str) and scope for scope in scopes):
            raise ValueError("auth.scopes(...) takes one or more scope names")

        def mark(fn: F) -> F:
            return mark_scopes(fn, scopes)

        return mark

    def scopes_supported(self) -> frozenset[str]:
        """The scopes given, else every scope an operation declares."""
        if self._declared_scopes is not None:
            return frozenset(self._declared_scopes)
        return self._operations.all_declared() if self._operations is not None else frozenset()

    async def aclose(self) -> None:
        """Close the verifier's HTTP client, if it has one (``MCP.aclose`` calls this at shutdown)."""
        close = getattr(self.verifier, "aclose", None)
        if close is not None:
            await close()

    # --- the dependency routes use -----------------------------------------------------------

    async def require(self, security_scopes: SecurityScopes, request: Request) -> AccessToken:
        """A FastAPI dependency: the verified token, with the scopes of ``Security(..., scopes=[...])``.

        On a REST call it answers the same challenges as the MCP endpoint (as ``HTTPException``).
        On a tool call the endpoint's guard has verified this very token already: its result is
        reused (one verification per request, one introspection call for an opaque token).
        """
        needed = frozenset(security_scopes.scopes)
        token = bearer_token({k.lower(): v for k, v in request.headers.items()})
        if token is None:
            challenge = bearer_challenge(self.metadata_url, needed)
            raise HTTPException(401, "Not authenticated", headers={"WWW-Authenticate": challenge})
        access = self._verified_by_guard(request, token) or await self._verify(token, needed)
        if self.hierarchy.missing(access.scopes, needed):
            challenge = bearer_challenge(self.metadata_url, needed, INSUFFICIENT_SCOPE)
            raise HTTPException(403, "Insufficient scope", headers={"WWW-Authenticate": challenge})
        return access

    def _verified_by_guard(self, request: Request, token: str) -> AccessToken | None:
        state = request.scope.get("state") or {}
        verified = state.get(ACCESS_TOKEN_STATE)
        if not isinstance(verified, VerifiedBearer) or verified.verifier is not self.verifier:
            return None
        return verified.access if hmac.compare_digest(verified.token.encode(), token.encode()) else None

    async def _verify(self, token: str, needed: frozenset[str]) -> AccessToken:
        try:
            return await self.verifier.verify(token)
        except InvalidTokenError as refused:
            challenge = bearer_challenge(self.metadata_url, needed, INVALID_TOKEN, refused.description)
            raise HTTPException(401, refused.description, headers={"WWW-Authenticate": challenge}) from None
        except Exception:  # the verifier's own failure refuses the token, never a 500
            logger.exception("the token verifier failed")
            challenge = bearer_challenge(self.metadata_url, needed, INVALID_TOKEN, "the token could not be verified")
            raise HTTPException(
                401, "the token could not be verified", headers={"WWW-Authenticate": challenge}
            ) from None
