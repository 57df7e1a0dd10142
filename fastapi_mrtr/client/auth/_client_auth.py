"""How the client authenticates to the token endpoint (RFC 6749 section 2.3, RFC 7523).

``client_secret_basic`` (the RFC 8414 default), ``client_secret_post``, ``private_key_jwt`` and
``none`` (a public client: ``client_id`` in the body).
"""

from __future__ import annotations

import base64
from collections.abc import MutableMapping, Sequence
from urllib.parse import quote_plus

from fastapi_mrtr.client.auth._errors import OAuthRegistrationError
from fastapi_mrtr.client.auth._jwt import client_assertion
from fastapi_mrtr.client.auth._models import OAuthClientInfo

SECRET_BASIC = "client_secret_basic"
SECRET_POST = "client_secret_post"
PRIVATE_KEY_JWT = "private_key_jwt"
NONE = "none"
JWT_BEARER_ASSERTION = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
# RFC 8414: absent token_endpoint_auth_methods_supported means client_secret_basic.
_DEFAULT_SUPPORTED = (SECRET_BASIC,)


def registration_auth_method(supported: Sequence[str] | None) -> str | None:
    """What to ask for in dynamic client registration: public if allowed, else a secret."""
    if supported is None:
        return None  # let the server decide (RFC 7591 defaults to client_secret_basic)
    for method in (NONE, SECRET_BASIC, SECRET_POST):
        if method in supported:
            return method
    return None


def token_auth_method(client: OAuthClientInfo, supported: Sequence[str] | None) -> str:
    """The method for this client: the one it registered with, else the best the server supports."""
    if client.token_endpoint_auth_method:
        return client.token_endpoint_auth_method
    if client.private_key_pem:
        return PRIVATE_KEY_JWT
    if not client.client_secret:
        return NONE
    offered = supported if supported is not None else _DEFAULT_SUPPORTED
    for method in (SECRET_BASIC, SECRET_POST):
        if method in offered:
            return method
    return NONE if NONE in offered else SECRET_BASIC


def apply_client_auth(
    form: MutableMapping[str, str],
    headers: MutableMapping[str, str],
    client: OAuthClientInfo,
    method: str,
    audience: str,
) -> None:
    """Authenticate a token request's ``form`` and ``headers`` as ``client`` with ``method``."""
    if method == SECRET_BASIC:
        if client.client_secret is None:
            raise OAuthRegistrationError(f"client {client.client_id!r} has no secret for {SECRET_BASIC}")
        # RFC 6749 section 2.3.1: both parts form-urlencoded before base64.
        pair = f"{quote_plus(client.client_id)}:{quote_plus(client.client_secret)}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
    elif method == SECRET_POST:
        if client.client_secret is None:
            raise OAuthRegistrationError(f"client {client.client_id!r} has no secret for {SECRET_POST}")
        form["client_id"] = client.client_id
        form["client_secret"] = client.client_secret
    elif method == PRIVATE_KEY_JWT:
        if client.private_key_pem is None:
            raise OAuthRegistrationError(f"client {client.client_id!r} has no private key for {PRIVATE_KEY_JWT}")
        form["client_id"] = client.client_id
        form["client_assertion_type"] = JWT_BEARER_ASSERTION
        form["client_assertion"] = client_assertion(
            client.client_id, audience, client.private_key_pem, client.signing_alg
        )
    elif method == NONE:
        form["client_id"] = client.client_id
    else:
        raise OAuthRegistrationError(f"unsupported token endpoint auth method {method!r}")
