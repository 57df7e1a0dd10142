"""The MCP endpoint as an OAuth 2.1 resource server (docs/oauth.md).

Tokens are checked by a :class:`TokenVerifier` (:class:`JwtVerifier` for JWTs from an issuer's
published keys, :class:`IntrospectionVerifier` for opaque ones); the scopes an operation needs come from its route's own
``Security(..., scopes=[...])``.
"""

from fastapi_mrtr.auth.introspection import IntrospectionVerifier
from fastapi_mrtr.auth.jwt_verifier import ASYMMETRIC_ALGORITHMS, JwtVerifier
from fastapi_mrtr.auth.resource_server import OAuthResourceServer
from fastapi_mrtr.auth.tokens import AccessToken, InvalidTokenError, TokenVerifier

__all__ = [
    "ASYMMETRIC_ALGORITHMS",
    "AccessToken",
    "IntrospectionVerifier",
    "InvalidTokenError",
    "JwtVerifier",
    "OAuthResourceServer",
    "TokenVerifier",
]
