"""The facts about legacy sessions that outlive one request, shared by replicas or kept in process.

With a relay (:class:`~fastapi_mrtr.state.redis_relay.RedisRelay`), every replica sees them: a
session ended by DELETE (kept as long as its id could be valid), its log level, its resource
subscriptions (bounded per session, dropped when it ends), who waits for the answer to each
question, and the events of call streams (so a stream resumes on any replica). Without one, this
process keeps them and only it honours them; ended sessions stay ended until their ids expire,
within a bound past which the oldest sessions end early (:class:`EndedSessions`; the docs say
so, docs/deployment.md).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from fastapi_mrtr.transport.legacy.ended import EndedSessions
from fastapi_mrtr.transport.legacy.events import EventLog
from fastapi_mrtr.transport.legacy.session_id import SessionInfo

if TYPE_CHECKING:
    from fastapi_mrtr.state.redis_relay import RedisRelay

logger = logging.getLogger("fastapi_mrtr")
K = TypeVar("K")
V = TypeVar("V")
LOCAL_FACTS = 100_000  # sessions whose facts this process remembers without a relay
LOCAL_SUBSCRIPTION_BYTES = 32 * 1024 * 1024  # the URIs all sessions here subscribed to, without a relay
NO_EXPIRY_SECONDS = 86_400.0
MIRROR_PAUSE = 0.2  # seconds before a failed copy of a stream to the relay is tried again (doubling)


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

    def __init__(
        self, relay: RedisRelay | None, event_ttl: float, max_subscriptions: int = 32, max_ended: int | None = None
    ) -> None:
        self.relay = relay
        self.event_ttl = event_ttl
        self.max_subscriptions = max_subscriptions
        self._ended = EndedSessions(LOCAL_FACTS if max_ended is None else max_ended)
        self._levels: _Bounded[str, str] = _Bounded(LOCAL_FACTS)
        self._subscriptions = _LocalSubscriptions(LOCAL_SUBSCRIPTION_BYTES)
        self._expected: dict[tuple[str, str], tuple[str, float]] = {}  # waits this replica noted
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

    # --- facts -------------------------------------------------------------------------------------

    async def facts(self, info: SessionInfo) -> tuple[bool, str | None]:
        """Whether the session was ended, and the log level it set (None: the one it started with)."""
        if self._ended.ended(info):
            return True, None
        if self.relay is None:
            return False, self._levels.get(info.key)
        ended, level = await self.relay.facts([f"ended:{info.key}", f"level:{info.key}"])
        return ended is not None, level

    async def end(self, info: SessionInfo) -> None:
        """The session ended (DELETE): it stays ended while its id could be valid; what it set goes."""
        self._ended.add(info)
        self._levels.pop(info.key)
        self._subscriptions.drop(info.key)
        if self.relay is not None:
            await self.relay.set_fact(f"ended:{info.key}", "1", _lifetime(info))
            await self.relay.delete([f"subs:{info.key}", f"level:{info.key}"])
            await self.relay.broadcast({"t": "end", "s": info.key})

    async def set_level(self, info: SessionInfo, level: str) -> None:
        if self.relay is None:
            self._levels.put(info.key, level)
        else:
            await self.relay.set_fact(f"level:{info.key}", level, _lifetime(info))

    async def subscribe(self, info: SessionInfo, uri: str) -> bool:
        """Subscribe the session to ``uri``; False when it holds ``max_subscriptions`` others."""
        if self.relay is None:
            return self._subscriptions.add(info, uri, self.max_subscriptions)
        return await self.relay.add_member(f"subs:{info.key}", uri, _lifetime(info), self.max_subscriptions)

    async def unsubscribe(self, info: SessionInfo, uri: str) -> None:
        if self.relay is None:
            self._subscriptions.remove(info.key, uri)
        else:
            await self.relay.remove_member(f"subs:{info.key}", uri)

    async def subscribed(self, keys: list[str], uri: str) -> list[bool]:
        """For each session key, whether that session subscribed to ``uri``."""
        if self.relay is None:
            return [self._subscriptions.has(key, uri) for key in keys]
        return await self.relay.members([f"subs:{key}" for key in keys], uri)

    # --- questions and their answers ------------------------------------------------------------------

    async def expect(self, session_key: str, request_id: str, stream_id: str, ttl: float) -> None:
        """Note that this replica waits for the answer to ``request_id`` (only with a relay)."""
        if self.relay is not None:
            await self.relay.ready()
            owner = json.dumps({"r": self.relay.replica_id, "s": stream_id})
            lifetime = ttl or NO_EXPIRY_SECONDS
            self._expected[(session_key, request_id)] = (owner, time.monotonic() + lifetime)
            await self.relay.expect(f"wait:{session_key}:{request_id}", owner, lifetime)

    async def claim(self, session_key: str, request_id: str) -> dict[str, Any] | None:
        """Who waits for the answer to ``request_id``; from now on nobody else finds it."""
        assert self.relay is not None
        owner = await self.relay.claim(f"wait:{session_key}:{request_id}")
        return json.loads(owner) if owner is not None else None

    async def forget(self, session_key: str, request_id: str) -> None:
        self._expected.pop((session_key, request_id), None)
        if self.relay is not None:
            await self.relay.forget(f"wait:{session_key}:{request_id}")

    def answered(self, session_key: str, request_id: str) -> None:
        """The wait for ``request_id`` ended here: nothing to write back after a Redis restart."""
        self._expected.pop((session_key, request_id), None)

    async def reassert(self) -> None:
        """Write back the waits of this replica (a restarted Redis forgot them): answers posted to
        other replicas reach their calls again."""
        relay, now = self.relay, time.monotonic()
        if relay is None:
            return
        for (session_key, request_id), (owner, deadline) in list(self._expected.items()):
            if deadline <= now:
                self._expected.pop((session_key, request_id), None)
                continue
            try:
                await relay.expect(f"wait:{session_key}:{request_id}", owner, deadline - now)
            except Exception as exc:
                logger.warning("could not write back the relay's waits: %s", exc)
                return

    # --- call streams ------------------------------------------------------------------------------------

    def mirror(self, session_key: str, log: EventLog, call_id: Any) -> None:
        """Copy ``log``'s events to the relay as they come, so another replica can resume it."""
        if self.relay is not None:
            self.spawn(self._mirror(self.relay, relayed_stream(session_key, log.stream_id), log, call_id))

    async def _mirror(self, relay: RedisRelay, name: str, log: EventLog, call_id: Any) -> None:
        # Event 0 exists from the start (a resumer knows the stream at once) and names the call.
        start = (0, {"start": "1", "c": json.dumps(call_id)})
        position, events = 0, [start]
        pause, gave_up_at = MIRROR_PAUSE, time.monotonic() + self.event_ttl
        while True:
            # As in ``streams.follow``: what finished means is read with the frames, never after
            # the append below, which yields (the call may add its response and finish meanwhile).
            finished = log.finished
            for seq, frame in log.since(position):
                events.append((seq, {"f": frame.decode()}))
                position = seq
            if finished:
                events.append((position + 1, {"end": "1"}))
            if events:
                try:
                    await relay.append(name, events, self.event_ttl)
                except Exception as exc:
                    if time.monotonic() > gave_up_at:
                        logger.warning("gave up copying stream %s to the relay: %s", log.stream_id, exc)
                        return
                    logger.warning("could not copy stream %s to the relay (%s); trying again", log.stream_id, exc)
                    await asyncio.sleep(pause)
                    pause = min(pause * 2, 5.0)
                    # Redis may have restarted empty: copy the whole stream again (the relay skips
                    # the events it holds already).
                    position, events = 0, [start]
                    continue
                pause = MIRROR_PAUSE
            if finished:
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


class _LocalSubscriptions:
    """Resource subscriptions of sessions, without a relay: until each session's id expires, at
    most ``max_bytes`` of URIs over all sessions (past that, the oldest sessions' go first)."""

    def __init__(self, max_bytes: int) -> None:
        self._by_session: OrderedDict[str, tuple[float, set[str]]] = OrderedDict()
        self._bytes = 0
        self._max_bytes = max_bytes

    def add(self, info: SessionInfo, uri: str, limit: int) -> bool:
        expires, uris = self._live(info.key) or (time.time() + _lifetime(info), set())
        if uri in uris:
            return True
        if len(uris) >= limit:
            return False
        uris.add(uri)
        self._bytes += len(uri)
        self._by_session[info.key] = (expires, uris)
        self._by_session.move_to_end(info.key)
        while self._bytes > self._max_bytes and self._by_session:
            self._bytes -= sum(map(len, self._by_session.popitem(last=False)[1][1]))
        return True

    def remove(self, key: str, uri: str) -> None:
        found = self._live(key)
        if found is not None and uri in found[1]:
            found[1].discard(uri)
            self._bytes -= len(uri)

    def has(self, key: str, uri: str) -> bool:
        found = self._live(key)
        return found is not None and uri in found[1]

    def drop(self, key: str) -> None:
        found = self._by_session.pop(key, None)
        if found is not None:
            self._bytes -= sum(map(len, found[1]))

    def _live(self, key: str) -> tuple[float, set[str]] | None:
        found = self._by_session.get(key)
        if found is not None and found[0] <= time.time():
            self.drop(key)  # the session's id expired: so did its subscriptions
            return None
        return found
