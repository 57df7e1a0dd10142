"""One blocking reader per replica for every Redis stream it follows (the relay's resumed streams).

A stream resumed on a replica that does not run its call waits for the call's next events. One
``XREAD BLOCK`` per stream would hold one Redis connection per waiting client, taken from the
pool that short request-path commands need too: a few hundred resumed streams (one anonymous
client can open them) would starve every other request. Instead, :class:`MultiplexedStreamReader`
holds ONE connection of its own and waits on every followed stream with one ``XREAD``, then hands
each waiter the events after its own position. A new waiter joins at the next round (a round
blocks at most ``block`` seconds). A Redis error is retried a few times with a short back-off;
when Redis stays away, every waiter gets the error (its client may resume the stream later).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger("fastapi_mrtr")

Event = tuple[int, dict[str, str]]
RETRIES = 3  # failed rounds in a row before the waiters hear of the error
RETRY_PAUSE = 0.2  # seconds, doubled after each failed round
BATCH = 100  # events per stream per round


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def decode_entries(entries: Any) -> list[Event]:
    """``(seq, fields)`` from the entries of one stream of an ``XREAD`` (ids ``0-<seq+1>``)."""
    events: list[Event] = []
    for entry_id, fields in entries or []:
        seq = int(_text(entry_id).rpartition("-")[2]) - 1
        events.append((seq, {_text(k): _text(v) for k, v in fields.items()}))
    return events


@dataclass(eq=False)
class _Wait:
    after: int
    future: asyncio.Future[list[Event]] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class MultiplexedStreamReader:
    """Waits for new events on many Redis streams with one connection (``client`` owns it alone)."""

    def __init__(self, client: Any, *, block: float = 0.25) -> None:
        self._client = client
        self._block_ms = max(1, math.ceil(block * 1000))
        self._waits: dict[str, list[_Wait]] = {}
        self._task: asyncio.Task[None] | None = None

    @property
    def waiting(self) -> int:
        """How many reads wait now (all of them share one connection)."""
        return sum(len(waits) for waits in self._waits.values())

    async def read(self, key: str, after: int, timeout: float) -> list[Event]:
        """The events of ``key`` after ``after``, waiting up to ``timeout`` seconds for one ([]: none)."""
        wait = _Wait(after)
        self._waits.setdefault(key, []).append(wait)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())
        try:
            return await asyncio.wait_for(asyncio.shield(wait.future), timeout)
        except asyncio.TimeoutError:
            return []
        finally:
            self._drop(key, wait)

    def _drop(self, key: str, wait: _Wait) -> None:
        waits = self._waits.get(key)
        if waits is not None and wait in waits:
            waits.remove(wait)
            if not waits:
                del self._waits[key]
        if not wait.future.done():
            wait.future.cancel()

    async def _run(self) -> None:
        failures = 0
        while True:
            streams = {key: f"0-{min(w.after for w in waits) + 1}" for key, waits in self._waits.items() if waits}
            if not streams:
                return
            try:
                found = await self._client.xread(streams, block=self._block_ms, count=BATCH)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                failures += 1
                if failures >= RETRIES:
                    logger.warning("relay stream reader failed %d times: %s", failures, exc)
                    self._fail_all(exc)
                    failures = 0
                await asyncio.sleep(RETRY_PAUSE * 2 ** min(failures, 4))
                continue
            failures = 0
            for name, entries in found or []:
                self._hand_out(_text(name), decode_entries(entries))

    def _hand_out(self, key: str, events: list[Event]) -> None:
        for wait in list(self._waits.get(key, ())):
            mine = [event for event in events if event[0] > wait.after]
            if mine and not wait.future.done():
                wait.future.set_result(mine)
                self._drop(key, wait)

    def _fail_all(self, exc: Exception) -> None:
        for key, waits in list(self._waits.items()):
            for wait in list(waits):
                if not wait.future.done():
                    wait.future.set_exception(exc)
                self._drop(key, wait)

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        self._fail_all(ConnectionError("the relay is closing"))
