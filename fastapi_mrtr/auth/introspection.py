"""Opaque access tokens, checked by asking the authorization server (RFC 7662 token introspection).

The resource server authenticates to the introspection endpoint as a client of its own
(``client_id``/``client_secret``, HTTP Basic). A token passes when the answer says ``active``,
names the configured issuer (when it names one), has not expired, and names this resource in
``aud`` (RFC 8707; on by default, as for JWTs: an authorization server that leaves ``aud`` out
of its answers needs ``require_audience=False``). Accepted answers are kept for ``cache_ttl``
seconds (30; 0: none), at most ``cache_size`` of them (:mod:`~fastapi_mrtr.auth.introspection_cache`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx

from fastapi_mrtr.auth.discovery import find_endpoint
from fastapi_mrtr.auth.introspection_cache import IntrospectionCache
from fastapi_mrtr.auth.tokens import AccessToken, InvalidTokenError, scopes_of


class IntrospectionVerifier:
    """A :class:`~fastapi_mrtr.auth.tokens.TokenVerifier` that asks the issuer about each token."""

    def __init__(
        self,
        *,
        issuer: str,
        audience: str | Sequence[str],
        client_id: str,
        client_secret: str,
        introspection_endpoint: str | None = None,
        require_audience: bool = True,
        http: httpx.AsyncClient | None = None,
        cache_ttl: float = 30.0,
        cache_size: int = 1024,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.issuer = issuer
        self.audience = [audience] if isinstance(audience, str) else list(audience)
        if require_audience and not self.audience:
            raise ValueError("IntrospectionVerifier needs the audience: the canonical URI of this resource")
        self._require_audience = require_audience
        self._credentials = (client_id, client_secret)
        self._endpoint = introspection_endpoint
        self._http = http or httpx.AsyncClient(timeout=10.0, follow_redirects=False)
        self._clock = clock
        self.cache = IntrospectionCache(cache_ttl, cache_size, clock)

    async def _find_endpoint(self) -> str:
        if self._endpoint is None:
            missing = "the issuer's introspection endpoint could not be found"
            self._endpoint = await find_endpoint(self._http, self.issuer, "introspection_endpoint", missing)
        return self._endpoint

    async def verify(self, token: str) -> AccessToken:
        cached = self.cache.get(token)
        if cached is not None:
            return cached
        access = await self._introspect(token)
        self.cache.put(token, access)
        return access

    async def _introspect(self, token: str) -> AccessToken:
        endpoint = await self._find_endpoint()
        try:
            response = await self._http.post(
                endpoint,
                data={"token": token, "token_type_hint": "access_token"},
                auth=self._credentials,
                headers={"accept": "application/json"},
            )
        except httpx.HTTPError as exc:
            raise InvalidTokenError("the token could not be introspected") from exc
        if response.status_code != 200:
            raise InvalidTokenError(f"the token could not be introspected (HTTP {response.status_code})")
        try:
            answer = response.json()
        except ValueError as exc:
            raise InvalidTokenError("the introspection answer is not JSON") from exc
        if not isinstance(answer, dict) or answer.get("active") is not True:
            raise InvalidTokenError("the token is not active")
        return self._accepted(answer)

    def _accepted(self, answer: dict[str, Any]) -> AccessToken:
        issuer = answer.get("iss")
        if issuer is not None and issuer != self.issuer:
            raise InvalidTokenError("the token was issued by another issuer")
        expires = answer.get("exp")
        if isinstance(expires, (int, float)) and expires <= self._clock():
            raise InvalidTokenError("the token has expired")
        audience = answer.get("aud")
        named = [audience] if isinstance(audience, str) else audience if isinstance(audience, list) else []
        if self._require_audience and not any(item in self.audience for item in named):
            raise InvalidTokenError("the token was not issued for this resource (audience)")
        subject, client_id = answer.get("sub"), answer.get("client_id")
        return AccessToken(
            subject=subject if isinstance(subject, str) else None,
            scopes=scopes_of(answer),
            client_id=client_id if isinstance(client_id, str) else None,
            expires_at=int(expires) if isinstance(expires, (int, float)) else None,
            claims=answer,
        )

    async def aclose(self) -> None:
        await self._http.aclose()
