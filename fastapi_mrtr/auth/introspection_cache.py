"""Introspection answers kept for a short while, so a busy client does not cost one call per request.

Only accepted tokens are kept, by a hash of the token (never the token itself), for ``ttl``
seconds at most and never past the token's own expiry; at most ``max_entries`` of them, the least
recently used going first. The price: a token revoked at the authorization server still passes
here until its entry ages out, so keep ``ttl`` short (``ttl=0`` turns the cache off).
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable

from fastapi_mrtr.auth.tokens import AccessToken


class IntrospectionCache:
    def __init__(self, ttl: float, max_entries: int, clock: Callable[[], float] = time.time) -> None:
        if ttl < 0 or max_entries < 1:
            raise ValueError("the introspection cache needs ttl >= 0 seconds and max_entries >= 1")
        self.ttl = ttl
        self.max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[bytes, tuple[AccessToken, float]] = OrderedDict()

    @staticmethod
    def _key(token: str) -> bytes:
        return hashlib.sha256(token.encode()).digest()

    def get(self, token: str) -> AccessToken | None:
        if self.ttl == 0:
            return None
        key = self._key(token)
        found = self._entries.get(key)
        if found is None:
            return None
        access, until = found
        if self._clock() >= until:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return access

    def put(self, token: str, access: AccessToken) -> None:
        if self.ttl == 0:
            return
        now = self._clock()
        until = now + self.ttl
        if access.expires_at is not None:
            until = min(until, float(access.expires_at))
        if until <= now:
            return
        key = self._key(token)
        self._entries[key] = (access, until)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
