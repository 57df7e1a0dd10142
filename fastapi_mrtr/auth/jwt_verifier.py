"""JWT access tokens (RFC 9068) checked against the issuer's published keys, with PyJWT.

What a token must be to pass: signed with an asymmetric algorithm from a fixed list (never
``none``, never an HMAC: a public key must not double as a shared secret), by a key the issuer
publishes (:mod:`~fastapi_mrtr.auth.jwks`), issued by exactly the configured issuer, for this
resource (``aud`` holds the canonical resource URI: RFC 8707, the MCP spec's MUST), and not
expired. The optional extra ``fastapi-mrtr[oauth]`` installs PyJWT.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import httpx

from fastapi_mrtr.auth.discovery import find_jwks_uri
from fastapi_mrtr.auth.jwks import JwksCache
from fastapi_mrtr.auth.tokens import AccessToken, InvalidTokenError, scopes_of

try:
    import jwt
except ImportError:  # pragma: no cover - the message below is the point
    jwt = None  # type: ignore[assignment]

# Asymmetric only. HS* would let anyone holding the published key sign tokens.
ASYMMETRIC_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")


class JwtVerifier:
    """A :class:`~fastapi_mrtr.auth.tokens.TokenVerifier` for JWT access tokens from one issuer."""

    def __init__(
        self,
        *,
        issuer: str,
        audience: str | Sequence[str],
        algorithms: Iterable[str] = ASYMMETRIC_ALGORITHMS,
        jwks_uri: str | None = None,
        leeway_seconds: float = 30.0,
        refetch_interval: float = 30.0,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        if jwt is None:
            raise ImportError("JwtVerifier needs PyJWT: pip install 'fastapi-mrtr[oauth]'")
        self.issuer = issuer
        self.audience = [audience] if isinstance(audience, str) else list(audience)
        if not self.audience:
            raise ValueError("JwtVerifier needs the audience: the canonical URI of this resource")
        self.algorithms = tuple(algorithms)
        refused = [alg for alg in self.algorithms if alg not in ASYMMETRIC_ALGORITHMS]
        if refused or not self.algorithms:
            raise ValueError(f"JwtVerifier takes asymmetric algorithms only ({', '.join(ASYMMETRIC_ALGORITHMS)})")
        self._leeway = leeway_seconds
        # Keys are fetched rarely: no connection is kept open between fetches (nor leaked at exit).
        self._http = http or httpx.AsyncClient(
            timeout=10.0, follow_redirects=False, limits=httpx.Limits(max_keepalive_connections=0)
        )
        self._jwks_uri = jwks_uri
        self.keys = JwksCache(self._http, self._find_jwks_uri, refetch_interval=refetch_interval)

    async def _find_jwks_uri(self) -> str:
        if self._jwks_uri is None:
            self._jwks_uri = await find_jwks_uri(self._http, self.issuer)
        return self._jwks_uri

    async def verify(self, token: str) -> AccessToken:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise InvalidTokenError("the token is not a well-formed JWT") from exc
        alg, kid = header.get("alg"), header.get("kid")
        if alg not in self.algorithms:  # before any key is looked at: none and HS* end here
            raise InvalidTokenError(f"the token's algorithm {alg!r} is not accepted")
        if not isinstance(kid, str):
            raise InvalidTokenError("the token names no key id (kid)")
        jwk = await self.keys.key(kid)
        if jwk.get("alg") not in (None, alg):
            raise InvalidTokenError("the token's algorithm does not match its key")
        try:
            key = jwt.PyJWK(dict(jwk), algorithm=alg).key
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[alg],
                audience=self.audience,
                issuer=self.issuer,
                leeway=self._leeway,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.ExpiredSignatureError as exc:
            raise InvalidTokenError("the token has expired") from exc
        except jwt.InvalidAudienceError as exc:
            raise InvalidTokenError("the token was not issued for this resource (audience)") from exc
        except jwt.InvalidIssuerError as exc:
            raise InvalidTokenError("the token was issued by another issuer") from exc
        except jwt.MissingRequiredClaimError as exc:
            raise InvalidTokenError(f"the token lacks the {exc.claim!r} claim") from exc
        except jwt.PyJWTError as exc:
            raise InvalidTokenError(f"the token is invalid ({type(exc).__name__})") from exc
        client_id = claims.get("client_id", claims.get("azp"))
        expires = claims.get("exp")
        return AccessToken(
            subject=claims.get("sub") if isinstance(claims.get("sub"), str) else None,
            scopes=scopes_of(claims),
            client_id=client_id if isinstance(client_id, str) else None,
            expires_at=int(expires) if isinstance(expires, (int, float)) else None,
            claims=claims,
        )

    async def aclose(self) -> None:
        await self._http.aclose()
