"""The OAuth documents the flow reads and the records it keeps.

Metadata models keep unknown fields (``extra="allow"``): servers add their own, and a stored
record round-trips through ``model_dump_json`` / ``model_validate_json`` for persistent stores.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Document(BaseModel):
    model_config = ConfigDict(extra="allow")


class ProtectedResourceMetadata(_Document):
    """RFC 9728 protected resource metadata: which authorization servers guard ``resource``."""

    resource: str
    authorization_servers: list[str] = Field(default_factory=list)
    scopes_supported: list[str] | None = None
    bearer_methods_supported: list[str] | None = None


class AuthorizationServerMetadata(_Document):
    """RFC 8414 authorization server metadata (or its OpenID Connect discovery equivalent)."""

    issuer: str
    authorization_endpoint: str | None = None
    token_endpoint: str | None = None
    registration_endpoint: str | None = None
    scopes_supported: list[str] | None = None
    response_types_supported: list[str] | None = None
    grant_types_supported: list[str] | None = None
    token_endpoint_auth_methods_supported: list[str] | None = None
    code_challenge_methods_supported: list[str] | None = None
    # RFC 9207: the server puts ``iss`` in every authorization response.
    authorization_response_iss_parameter_supported: bool | None = None
    # draft-ietf-oauth-client-id-metadata-document: an HTTPS URL may serve as client_id.
    client_id_metadata_document_supported: bool | None = None


class ClientMetadata(_Document):
    """RFC 7591 client metadata: what the client registers (DCR) or publishes (CIMD).

    ``redirect_uris[0]`` is the redirect URI of every authorization request. A ``None``
    ``token_endpoint_auth_method`` lets the flow pick one the authorization server supports.
    """

    redirect_uris: list[str] = Field(default_factory=lambda: ["http://127.0.0.1/callback"])
    client_name: str | None = "fastapi-mrtr-client"
    grant_types: list[str] = Field(default_factory=lambda: ["authorization_code", "refresh_token"])
    response_types: list[str] = Field(default_factory=lambda: ["code"])
    token_endpoint_auth_method: str | None = None
    application_type: str | None = "native"
    scope: str | None = None
    client_uri: str | None = None
    logo_uri: str | None = None
    software_id: str | None = None
    software_version: str | None = None

    @property
    def redirect_uri(self) -> str:
        if not self.redirect_uris:
            raise ValueError("client metadata has no redirect_uris")
        return self.redirect_uris[0]

    def registration_body(self) -> dict[str, Any]:
        """The JSON body of a dynamic client registration request."""
        return self.model_dump(mode="json", exclude_none=True)

    def as_document(self, client_id: str) -> dict[str, Any]:
        """The client ID metadata document to serve at the HTTPS URL ``client_id``."""
        return {"client_id": client_id, **self.registration_body()}


class OAuthClientInfo(_Document):
    """A client identity at one authorization server: pre-registered, from DCR, or a CIMD URL.

    ``issuer`` binds it to one authorization server (``None``: any). For ``private_key_jwt``
    give ``private_key_pem`` (EC P-256/384/521 or RSA) and optionally ``signing_alg``.
    """

    client_id: str
    client_secret: str | None = Field(default=None, repr=False)
    token_endpoint_auth_method: str | None = None
    client_secret_expires_at: int | None = None
    issuer: str | None = None
    private_key_pem: str | None = Field(default=None, repr=False)
    signing_alg: str | None = None

    def secret_expired(self, now: float | None = None) -> bool:
        """RFC 7591: ``client_secret_expires_at`` 0 or absent means it never expires."""
        expires = self.client_secret_expires_at
        if not expires:
            return False
        return expires <= (time.time() if now is None else now)


class OAuthToken(_Document):
    """An access token as the flow keeps it, with what it was issued by and for."""

    access_token: str = Field(repr=False)
    token_type: str = "Bearer"
    expires_at: float | None = None
    refresh_token: str | None = Field(default=None, repr=False)
    scope: str | None = None
    issuer: str | None = None
    resource: str | None = None

    @property
    def scopes(self) -> list[str]:
        return self.scope.split() if self.scope else []

    def expired(self, skew: float = 0.0, now: float | None = None) -> bool:
        if self.expires_at is None:
            return False
        return self.expires_at <= (time.time() if now is None else now) + skew
