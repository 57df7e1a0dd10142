"""Token endpoint requests: authorization code, refresh and client credentials grants.

Every grant carries the RFC 8707 ``resource`` (the MCP server's identifier, exactly as its
metadata publishes it) so the token is audience-bound to that server.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from fastapi_mrtr.client.auth._client_auth import apply_client_auth, token_auth_method
from fastapi_mrtr.client.auth._discovery import Discovery
from fastapi_mrtr.client.auth._errors import OAuthDiscoveryError, OAuthTokenError
from fastapi_mrtr.client.auth._http import NO_AUTH
from fastapi_mrtr.client.auth._models import OAuthClientInfo, OAuthToken


def authorization_code_grant(code: str, redirect_uri: str, verifier: str, resource: str) -> dict[str, str]:
    return {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri,
        "code_verifier": verifier,
        "resource": resource,
    }


def refresh_grant(refresh_token: str, resource: str) -> dict[str, str]:
    return {"grant_type": "refresh_token", "refresh_token": refresh_token, "resource": resource}


def client_credentials_grant(scope: str | None, resource: str) -> dict[str, str]:
    form = {"grant_type": "client_credentials", "resource": resource}
    if scope:
        form["scope"] = scope
    return form


JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


def jwt_bearer_grant(assertion: str, scope: str | None, resource: str) -> dict[str, str]:
    """RFC 7523 section 2.1: a JWT (e.g. a workload identity token) as the authorization grant."""
    form = {"grant_type": JWT_BEARER, "assertion": assertion, "resource": resource}
    if scope:
        form["scope"] = scope
    return form


async def request_token(
    http: httpx.AsyncClient,
    discovery: Discovery,
    client: OAuthClientInfo | None,
    grant: dict[str, str],
    *,
    requested_scope: str | None,
    previous: OAuthToken | None = None,
) -> OAuthToken:
    """POST ``grant`` to the token endpoint as ``client`` (``None``: unauthenticated) and read the
    token it answers with."""
    endpoint = discovery.metadata.token_endpoint
    if not endpoint:
        raise OAuthDiscoveryError(f"authorization server {discovery.issuer} has no token_endpoint")
    form = dict(grant)
    headers = {"Accept": "application/json"}
    if client is not None:
        method = token_auth_method(client, discovery.metadata.token_endpoint_auth_methods_supported)
        apply_client_auth(form, headers, client, method, audience=discovery.issuer)
    response = await http.post(endpoint, data=form, headers=headers, auth=NO_AUTH)
    return parse_token_response(response, discovery, requested_scope=requested_scope, previous=previous)


def _error(response: httpx.Response, body: Any) -> OAuthTokenError:
    error = body.get("error") if isinstance(body, dict) else None
    description = body.get("error_description") if isinstance(body, dict) else None
    detail = f"{error}: {description}" if error and description else (error or f"HTTP {response.status_code}")
    return OAuthTokenError(
        f"token endpoint refused the grant ({detail})",
        error if isinstance(error, str) else None,
        description if isinstance(description, str) else None,
        response.status_code,
    )


def _expires_at(expires_in: Any) -> float | None:
    try:
        seconds = float(expires_in)
    except (TypeError, ValueError):
        return None
    return time.time() + seconds


def parse_token_response(
    response: httpx.Response,
    discovery: Discovery,
    *,
    requested_scope: str | None,
    previous: OAuthToken | None = None,
) -> OAuthToken:
    """RFC 6749 section 5.1. A missing ``scope`` means the requested one; a refresh response
    without ``refresh_token`` keeps the previous one."""
    try:
        body = json.loads(response.content) if response.content else None
    except ValueError:
        body = None
    if not response.is_success or not isinstance(body, dict) or "error" in body:
        raise _error(response, body)
    access_token = body.get("access_token")
    if not isinstance(access_token, str) or not access_token:
        raise OAuthTokenError("token response has no access_token", status_code=response.status_code)
    token_type = body.get("token_type", "Bearer")
    if not isinstance(token_type, str) or token_type.lower() != "bearer":
        raise OAuthTokenError(f"unsupported token_type {token_type!r} (only Bearer is supported)")
    expires_in = body.get("expires_in")
    refresh_token = body.get("refresh_token")
    kept_refresh = previous.refresh_token if previous is not None else None
    scope = body.get("scope")
    return OAuthToken(
        access_token=access_token,
        token_type="Bearer",
        expires_at=_expires_at(expires_in),
        refresh_token=refresh_token if isinstance(refresh_token, str) else kept_refresh,
        scope=scope if isinstance(scope, str) else requested_scope,
        issuer=discovery.issuer,
        resource=discovery.resource,
    )
