"""The facts about legacy sessions that outlive one request, shared by replicas or kept in process.

With a relay (:class:`~fastapi_mrtr.state.redis_relay.RedisRelay`), every replica sees them: a
session ended by DELETE, its log level, its resource subscriptions, who waits for the answer to
each question, and the events of call streams (so a stream resumes on any replica). Without
one, this process keeps them, bounded (the oldest go first), and only it honours them; the docs
say so (docs/deployment.md).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from fastapi_mrtr.transport.legacy.events import EventLog
from fastapi_mrtr.transport.legacy.session_id import SessionInfo

if TYPE_CHECKING:
    from fastapi_mrtr.state.redis_relay import RedisRelay

logger = logging.getLogger("fastapi_mrtr")
K = TypeVar("K")
V = TypeVar("V")
LOCAL_FACTS = 100_000  # sessions whose facts this process remembers without a relay
NO_EXPIRY_SECONDS = 86_400.0


class _Bounded(Generic[K, V]):
    """A dict that forgets its oldest entries beyond ``limit``."""

    def __init__(self, limit: int) -> None:
        self._items: OrderedDict[K, V] = OrderedDict()
        self._limit = limit

    def get(self, key: K) -> V | None:
        return self._items.get(key)

    def put(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self._limit:
            self._items.popitem(last=False)

    def pop(self, key: K) -> None:
        self._items.pop(key, None)


class SessionCluster:
    """Session facts and hand-overs, through ``relay`` when there is one."""

    def __init__(self, relay: RedisRelay | None, event_ttl: float) -> None:
        self.relay = relay
        self.event_ttl = event_ttl
        self._ended: _Bounded[str, bool] = _Bounded(LOCAL_FACTS)
        self._levels: _Bounded[str, str] = _Bounded(LOCAL_FACTS)
        self._subscriptions: _Bounded[str, set[str]] = _Bounded(LOCAL_FACTS)
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        """Run ``work`` in the background, keeping a reference until it ends (asyncio keeps none)."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain(self, timeout: float = 2.0) -> None:
        """Wait (a bounded time) for the background work still running, before the relay closes."""
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=timeout)

    @property
    def shared(self) -> bool:
        return self.relay is not None

    # --- facts -------------------------------------------------------------------------------------

    async def facts(self, info: SessionInfo) -> tuple[bool, str | None]:
        """Whether the session was ended, and the log level it set (None: the one it started with)."""
        if self.relay is None:
            return bool(self._ended.get(info.key)), self._levels.get(info.key)
        ended, level = await self.relay.facts([f"ended:{info.key}", f"level:{info.key}"])
        return ended is not None, level

    async def end(self, info: SessionInfo) -> None:
        self._ended.put(info.key, True)
        if self.relay is not None:
            await self.relay.set_fact(f"ended:{info.key}", "1", _lifetime(info))
            await self.relay.broadcast({"t": "end", "s": info.key})

    async def set_level(self, info: SessionInfo, level: str) -> None:
        if self.relay is None:
            self._levels.put(info.key, level)
        else:
            await self.relay.set_fact(f"level:{info.key}", level, _lifetime(info))

    async def subscribe(self, info: SessionInfo, uri: str) -> None:
        if self.relay is None:
            uris = self._subscriptions.get(info.key) or set()
            uris.add(uri)
            self._subscriptions.put(info.key, uris)
        else:
            await self.relay.add_member(f"subs:{info.key}", uri, _lifetime(info))

    async def unsubscribe(self, info: SessionInfo, uri: str) -> None:
        if self.relay is None:
            (self._subscriptions.get(info.key) or set()).discard(uri)
        else:
            await self.relay.remove_member(f"subs:{info.key}", uri)

    async def subscribed(self, keys: list[str], uri: str) -> list[bool]:
        """For each session key, whether that session subscribed to ``uri``."""
        if self.relay is None:
            return [uri in (self._subscriptions.get(key) or ()) for key in keys]
        return await self.relay.members([f"subs:{key}" for key in keys], uri)

    # --- questions and their answers ------------------------------------------------------------------

    async def expect(self, session_key: str, request_id: str, stream_id: str, ttl: float) -> None:
        """Note that this replica waits for the answer to ``request_id`` (only with a relay)."""
        if self.relay is not None:
            await self.relay.ready()
            owner = json.dumps({"r": self.relay.replica_id, "s": stream_id})
            await self.relay.expect(f"wait:{session_key}:{request_id}", owner, ttl or NO_EXPIRY_SECONDS)

    async def claim(self, session_key: str, request_id: str) -> dict[str, Any] | None:
        """Who waits for the answer to ``request_id``; from now on nobody else finds it."""
        assert self.relay is not None
        owner = await self.relay.claim(f"wait:{session_key}:{request_id}")
        return json.loads(owner) if owner is not None else None

    async def forget(self, session_key: str, request_id: str) -> None:
        if self.relay is not None:
            await self.relay.forget(f"wait:{session_key}:{request_id}")

    # --- call streams ------------------------------------------------------------------------------------

    def mirror(self, session_key: str, log: EventLog, call_id: Any) -> None:
        """Copy ``log``'s events to the relay as they come, so another replica can resume it."""
        if self.relay is not None:
            self.spawn(self._mirror(self.relay, relayed_stream(session_key, log.stream_id), log, call_id))

    async def _mirror(self, relay: RedisRelay, name: str, log: EventLog, call_id: Any) -> None:
        # Event 0 exists from the start (a resumer knows the stream at once) and names the call.
        position, events = 0, [(0, {"start": "1", "c": json.dumps(call_id)})]
        while True:
            for seq, frame in log.since(position):
                events.append((seq, {"f": frame.decode()}))
                position = seq
            if log.finished:
                events.append((position + 1, {"end": "1"}))
            if events:
                try:
                    await relay.append(name, events, self.event_ttl)
                except Exception as exc:
                    logger.warning("could not copy stream %s to the relay: %s", log.stream_id, exc)
                    return  # Redis is down: this stream resumes only here
            if log.finished:
                return
            events = []
            await log.wait_beyond(position)


def relayed_stream(session_key: str, stream_id: str) -> str:
    """The relay's name for a call stream: only its own session can name it."""
    return f"{session_key}:{stream_id}"


def _lifetime(info: SessionInfo) -> float:
    """How long a fact about the session matters: until its id expires."""
    if info.expires_at is None:
        return NO_EXPIRY_SECONDS
    return max(info.expires_at - time.time(), 1.0) + 60.0
