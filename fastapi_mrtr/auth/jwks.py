"""The issuer's signing keys, fetched once and kept, fetched again when a token names a new one.

Rotation: a token signed with a key id not in the cache makes the set be fetched again, at most
once per ``refetch_interval`` seconds, so a stream of tokens with invented key ids cannot turn
this server into a load on the issuer.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import httpx

from fastapi_mrtr.auth.tokens import InvalidTokenError

JsonWebKey = Mapping[str, Any]


class JwksCache:
    """Public keys by key id, from a JWKS URI found on demand (the discovery runs on first use)."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        jwks_uri: Callable[[], Awaitable[str]],
        *,
        refetch_interval: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self._jwks_uri = jwks_uri
        self._refetch_interval = refetch_interval
        self._clock = clock
        self._keys: dict[str, JsonWebKey] = {}
        self._fetched_at: float | None = None
        self._lock = asyncio.Lock()
        self.fetches = 0  # how often the set was fetched (tests and metrics)

    async def key(self, kid: str) -> JsonWebKey:
        """The key with this id; unknown after a (rate-limited) refetch → :class:`InvalidTokenError`."""
        found = self._keys.get(kid)
        if found is not None:
            return found
        async with self._lock:  # one fetch for many waiting requests
            found = self._keys.get(kid)
            if found is None and self._may_fetch():
                await self._fetch()
                found = self._keys.get(kid)
        if found is None:
            raise InvalidTokenError("the token is signed with an unknown key")
        return found

    def _may_fetch(self) -> bool:
        return self._fetched_at is None or self._clock() - self._fetched_at >= self._refetch_interval

    async def _fetch(self) -> None:
        self._fetched_at = self._clock()  # a failed fetch counts too: no retry storm against a down issuer
        self.fetches += 1
        try:
            uri = await self._jwks_uri()
            response = await self._client.get(uri, headers={"accept": "application/json"})
            response.raise_for_status()
            document = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise InvalidTokenError("the issuer's signing keys could not be fetched") from exc
        keys = document.get("keys") if isinstance(document, dict) else None
        if not isinstance(keys, list):
            raise InvalidTokenError("the issuer's key set is malformed")
        self._keys = {
            key["kid"]: key
            for key in keys
            if isinstance(key, dict) and isinstance(key.get("kid"), str) and key.get("use", "sig") == "sig"
        }
