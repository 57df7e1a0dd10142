"""Client identity at an authorization server (MCP authorization, client registration section).

In order: the pre-registered client you configured (when it is for this issuer), a client the
store kept from an earlier registration with this issuer, a client ID metadata document URL when
the server supports them, dynamic client registration (RFC 7591) when it offers an endpoint.
Credentials are bound to the issuer that issued them: another issuer never sees them.
"""

from __future__ import annotations

import json

import httpx
from pydantic import ValidationError

from fastapi_mrtr.client.auth._client_auth import NONE, registration_auth_method
from fastapi_mrtr.client.auth._discovery import Discovery
from fastapi_mrtr.client.auth._errors import OAuthRegistrationError
from fastapi_mrtr.client.auth._http import NO_AUTH
from fastapi_mrtr.client.auth._models import ClientMetadata, OAuthClientInfo
from fastapi_mrtr.client.auth._storage import TokenStore


def cimd_client(url: str, issuer: str) -> OAuthClientInfo:
    """The client whose ``client_id`` is the URL of its metadata document: public, no secret."""
    return OAuthClientInfo(client_id=url, token_endpoint_auth_method=NONE, issuer=issuer)


async def register(http: httpx.AsyncClient, discovery: Discovery, metadata: ClientMetadata) -> OAuthClientInfo:
    """Dynamic client registration at the issuer's ``registration_endpoint``."""
    endpoint = discovery.metadata.registration_endpoint
    if not endpoint:
        raise OAuthRegistrationError(f"authorization server {discovery.issuer} offers no dynamic registration")
    body = metadata.registration_body()
    if "token_endpoint_auth_method" not in body:
        method = registration_auth_method(discovery.metadata.token_endpoint_auth_methods_supported)
        if method is not None:
            body["token_endpoint_auth_method"] = method
    response = await http.post(endpoint, json=body, headers={"Accept": "application/json"}, auth=NO_AUTH)
    if not response.is_success:
        raise OAuthRegistrationError(
            f"dynamic client registration at {endpoint} failed: HTTP {response.status_code} {response.text[:200]}"
        )
    try:
        data = json.loads(response.content)
        client = OAuthClientInfo.model_validate(data)
    except (ValueError, ValidationError) as exc:
        raise OAuthRegistrationError(f"dynamic client registration at {endpoint} answered no client_id") from exc
    return client.model_copy(update={"issuer": discovery.issuer})


async def client_for(
    http: httpx.AsyncClient,
    discovery: Discovery,
    store: TokenStore,
    *,
    preregistered: OAuthClientInfo | None,
    client_metadata: ClientMetadata,
    client_metadata_url: str | None,
) -> OAuthClientInfo:
    """The client identity to use with ``discovery.issuer`` (registering one if need be)."""
    issuer = discovery.issuer
    if preregistered is not None and preregistered.issuer in (None, issuer):
        return preregistered
    stored = await store.get_client_info(issuer)
    if stored is not None and stored.issuer == issuer and not stored.secret_expired():
        return stored
    if client_metadata_url and discovery.metadata.client_id_metadata_document_supported:
        return cimd_client(client_metadata_url, issuer)
    if discovery.metadata.registration_endpoint:
        client = await register(http, discovery, client_metadata)
        await store.set_client_info(issuer, client)
        return client
    raise OAuthRegistrationError(
        f"no client identity for {issuer}: configure a pre-registered client"
        + ("" if client_metadata_url else " or a client metadata document URL")
        + " (the server offers no dynamic registration)"
    )
