"""The authorization request and the checks on its response (authorization code + PKCE).

The request carries PKCE S256, a fresh ``state``, the RFC 8707 ``resource`` and the selected
scope. The response must carry our ``state``; an ``iss`` must equal the issuer of the metadata
we used, compared as plain strings (RFC 9207 section 2.4), and is required when the server
advertises ``authorization_response_iss_parameter_supported``. A failed check stops the flow
before the code ever reaches the token endpoint.
"""

from __future__ import annotations

import httpx

from fastapi_mrtr.client.auth._discovery import Discovery
from fastapi_mrtr.client.auth._errors import OAuthAuthorizationError, OAuthDiscoveryError
from fastapi_mrtr.client.auth._pkce import Pkce
from fastapi_mrtr.client.auth._redirect import AuthorizationResponse


def require_pkce(discovery: Discovery) -> None:
    """Refuse a server that does not advertise S256 (MCP authorization, PKCE section)."""
    methods = discovery.metadata.code_challenge_methods_supported
    if not methods or "S256" not in methods:
        raise OAuthDiscoveryError(
            f"authorization server {discovery.issuer} does not advertise PKCE S256 "
            f"(code_challenge_methods_supported: {methods!r})"
        )
    if not discovery.metadata.authorization_endpoint:
        raise OAuthDiscoveryError(f"authorization server {discovery.issuer} has no authorization_endpoint")


def authorization_url(
    discovery: Discovery, client_id: str, redirect_uri: str, pkce: Pkce, state: str, scope: str | None
) -> str:
    endpoint = discovery.metadata.authorization_endpoint
    assert endpoint is not None  # require_pkce checked it
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "code_challenge": pkce.challenge,
        "code_challenge_method": pkce.method,
        "state": state,
        "resource": discovery.resource,
    }
    if scope:
        params["scope"] = scope
    return str(httpx.URL(endpoint).copy_merge_params(params))


def check_response(response: AuthorizationResponse, discovery: Discovery, state: str) -> str:
    """The code of a valid authorization response; raises for anything else."""
    if response.redirected:
        if response.state != state:
            raise OAuthAuthorizationError("authorization response state does not match the request")
        if response.iss is not None:
            if response.iss != discovery.issuer:
                raise OAuthAuthorizationError(
                    f"authorization response iss {response.iss!r} is not the issuer {discovery.issuer!r}"
                )
        elif discovery.metadata.authorization_response_iss_parameter_supported:
            raise OAuthAuthorizationError(
                f"authorization response lacks the iss parameter that {discovery.issuer} advertises"
            )
    if response.error:
        detail = f": {response.error_description}" if response.error_description else ""
        raise OAuthAuthorizationError(
            f"authorization failed ({response.error}{detail})", response.error, response.error_description
        )
    if not response.code:
        raise OAuthAuthorizationError("authorization response carries no code")
    return response.code
