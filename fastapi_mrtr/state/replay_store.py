"""Single-use ``requestState`` (opt-in): remember each used token id until it expires.

A sealed state is valid until its expiry; MRTR by itself lets a client replay it. With a
``ServerOptions(replay_store=...)`` a round **claims** its state's id atomically before the
handler runs, and every other round carrying that state is refused before its handler runs.
The claim is the mark of use: it stays, so the state is used, unless the round is refused for a
reason the client can correct (answers too large to seal, a client capability it did not
declare). Then the round **releases** its claim and the client can send the same state again,
corrected. A crash between the two leaves the claim in place: the state counts as used.

One process: :class:`InMemoryReplayStore`. Several workers or replicas need one shared store
(``fastapi_mrtr.state.redis_store.RedisReplayStore``).
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import secrets
import time
from typing import Protocol

logger = logging.getLogger("fastapi_mrtr")


class ReplayStore(Protocol):
    """What a single-use store implements. Both methods raise on a storage failure."""

    async def claim(self, token_id: str, expires_at: int | None) -> str | None:
        """Mark ``token_id`` used, atomically: of all calls for one id, exactly one gets a receipt.

        The receipt is a non-empty string naming this claim; every other call gets None, until
        the claim is released or the token expires (``expires_at``, unix seconds; None: never).
        On a storage failure the server refuses the round with a 503 (fail closed).
        """
        ...

    async def release(self, token_id: str, receipt: str) -> None:
        """Unmark ``token_id`` if it is still marked by the claim ``receipt``; else do nothing.

        Called at most once per claim, by the round that made it, when that round was refused
        for a reason the client can correct. A failure leaves the state used (fail safe).
        """
        ...


class StateHold:
    """A round's claim on its incoming state: kept when the round proceeds, released when it is refused."""

    def __init__(self, store: ReplayStore | None = None, token_id: str = "", receipt: str | None = None) -> None:
        self._store = store
        self._token_id = token_id
        self._receipt = receipt

    async def release(self) -> None:
        """Give the state back (once); a storage failure is logged and the state stays used."""
        store, receipt = self._store, self._receipt
        self._receipt = None
        if store is None or receipt is None:
            return
        try:
            await store.release(self._token_id, receipt)
        except Exception:
            logger.exception("replay store could not release requestState %s; it stays used", self._token_id)
            return
        logger.info("requestState %s released: the client can correct its refused round", self._token_id)


NO_HOLD = StateHold()
"""The hold of a round that claimed nothing (no incoming state, or no replay store)."""


async def hold_state(store: ReplayStore, token_id: str, expires_at: int | None) -> StateHold | None:
    """Claim ``token_id`` in ``store``: its hold, or None when the state was used already.

    A store written for the first protocol (``consume() -> bool``, no ``claim``) still works; its
    claims are never released, so a refused round leaves that state used.
    """
    claim = getattr(store, "claim", None)
    if claim is None:
        first_use: bool = await store.consume(token_id, expires_at)  # type: ignore[attr-defined]
        return StateHold() if first_use else None
    receipt = await claim(token_id, expires_at)
    return StateHold(store, token_id, receipt) if receipt is not None else None


def new_receipt() -> str:
    """A random receipt for one claim: claims of one id by different rounds never share one."""
    return secrets.token_hex(8)


class InMemoryReplayStore:
    """Claimed token ids of this process, forgotten once their token has expired.

    Tokens that never expire (``round_timeout=0`` and no flow timeout) are kept for
    ``max_age_without_expiry`` seconds, so memory stays bounded.
    """

    def __init__(self, *, max_age_without_expiry: float = 3600.0) -> None:
        self._claims: dict[str, tuple[float, str]] = {}  # token id -> (forget at, receipt)
        self._expiries: list[tuple[float, str]] = []
        self._lock = asyncio.Lock()
        self._default_age = max_age_without_expiry

    def __len__(self) -> int:
        return len(self._claims)

    async def claim(self, token_id: str, expires_at: int | None) -> str | None:
        now = time.time()
        async with self._lock:
            self._evict(now)
            if token_id in self._claims:
                return None
            until = float(expires_at) if expires_at is not None else now + self._default_age
            receipt = new_receipt()
            self._claims[token_id] = (until, receipt)
            heapq.heappush(self._expiries, (until, token_id))
            return receipt

    async def release(self, token_id: str, receipt: str) -> None:
        async with self._lock:
            held = self._claims.get(token_id)
            if held is not None and held[1] == receipt:
                del self._claims[token_id]  # its heap entry stays; _evict skips it

    async def consume(self, token_id: str, expires_at: int | None) -> bool:
        """Claim for good: True on the id's first use (the first protocol's single method)."""
        return await self.claim(token_id, expires_at) is not None

    def _evict(self, now: float) -> None:
        while self._expiries and self._expiries[0][0] <= now:
            until, token_id = heapq.heappop(self._expiries)
            held = self._claims.get(token_id)
            if held is not None and held[0] == until:  # not a later claim of a released id
                del self._claims[token_id]
