"""The Redis client a store was given, or one it opens from a URL (and must then close itself)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from redis.asyncio import Redis


def redis_client(client: Redis | str, *, connect_timeout: float, timeout: float) -> tuple[Any, bool]:
    """``(client, owned)``: a URL opens a client with these socket timeouts (``owned``: close it
    on ``aclose``); a client passed in is used as it is and left to its owner."""
    if isinstance(client, str):
        from redis.asyncio import Redis  # redis is an optional extra: imported only when used

        return Redis.from_url(client, socket_connect_timeout=connect_timeout, socket_timeout=timeout), True
    return client, False
