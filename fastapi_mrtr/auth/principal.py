"""Who the caller is, once its token is verified: the issuer, subject and client of the token.

The default principal of a server (``principal_from_authorization``) is the raw
``Authorization`` header, which changes whenever the client gets a new token: a refreshed or
stepped-up token would then lose its ``requestState`` flows and its 2025-era session. With an
:class:`~fastapi_mrtr.auth.resource_server.OAuthResourceServer` the guard writes the verified
identity into an internal request header instead (after removing any copy the client sent), and
the server's principal is read from it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import replace

from fastapi_mrtr.auth.tokens import AccessToken
from fastapi_mrtr.engine.options import ServerOptions, principal_from_authorization

PRINCIPAL_HEADER = "x-fastapi-mrtr-verified-principal"


def principal_of(token: AccessToken) -> str:
    """A stable id of (issuer, subject, client): a hash, so any characters fit in a header."""
    identity = json.dumps([token.claims.get("iss"), token.subject, token.client_id], separators=(",", ":"))
    return "oauth:" + hashlib.sha256(identity.encode()).hexdigest()


def principal_from_verified_token(headers: Mapping[str, str]) -> str | None:
    """The principal the guard verified, or None for an anonymous request."""
    return headers.get(PRINCIPAL_HEADER) or None


def with_verified_principal(options: ServerOptions) -> ServerOptions:
    """The options with the verified principal, unless the app chose its own resolver."""
    if options.principal_resolver is not principal_from_authorization:
        return options
    return replace(options, principal_resolver=principal_from_verified_token)
