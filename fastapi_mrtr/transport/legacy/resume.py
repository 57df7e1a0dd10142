"""GET on a 2025-era session: its stream of notifications, or the rest of a call's stream.

A client that lost a call's stream (or whose stream the server closed, SEP-1699 polling) resumes
it with ``Last-Event-ID``. The replica running the call serves the rest from its event log; any
other replica serves it from the relay's copy (:func:`~fastapi_mrtr.transport.legacy.streams.follow_relayed`),
and without a relay it says 421 (route sessions to one replica). Every stream counts against its
caller's bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from starlette.types import Receive, Send

from fastapi_mrtr.transport.http import SSE_HEADERS, wait_disconnect
from fastapi_mrtr.transport.legacy.cluster import SessionCluster, relayed_stream
from fastapi_mrtr.transport.legacy.events import EventLog, parse_event_id
from fastapi_mrtr.transport.legacy.replies import invalid_request, relay_down, replica_lost, streams_full
from fastapi_mrtr.transport.legacy.session_id import SessionInfo
from fastapi_mrtr.transport.legacy.sessions import NOTIFICATION_STREAM, LiveSession, LiveSessions
from fastapi_mrtr.transport.legacy.streams import follow, follow_relayed
from fastapi_mrtr.wire.protocol import JSONObject

logger = logging.getLogger("fastapi_mrtr")
RESOURCE_UPDATED = "notifications/resources/updated"


class SessionStreams:
    """Serves the GET streams of sessions: notifications, and resumed call streams."""

    def __init__(self, live: LiveSessions, cluster: SessionCluster, keepalive: float) -> None:
        self.live = live
        self.cluster = cluster
        self._keepalive = keepalive

    async def serve(
        self, info: SessionInfo, caller: str, headers: dict[str, str], receive: Receive, send: Send
    ) -> None:
        """The session's notifications, or the stream ``Last-Event-ID`` names from that event on."""
        last_event_id = headers.get("last-event-id")
        parsed = parse_event_id(last_event_id) if last_event_id is not None else None
        if last_event_id is not None and parsed is None:
            raise invalid_request(f"Bad request: Last-Event-ID {last_event_id!r} is not one of ours")
        live = self.live.attach(info)
        if parsed is not None and parsed[0] != NOTIFICATION_STREAM:
            log = live.stream(parsed[0])
            owner = LiveSessions.replica_of(parsed[0])
            if log is None and (owner is None or owner == self.live.replica_id or self.cluster.relay is None):
                self.live.release(live)
                why = (
                    "names no stream of this session"
                    if owner in (None, self.live.replica_id)
                    else (
                        "names a stream of another server replica; route each session to one replica "
                        "(by Mcp-Session-Id) or give the replicas a relay (MRTR_REDIS_URL)"
                    )
                )
                status = 421 if owner not in (None, self.live.replica_id) else 400
                raise invalid_request(f"Bad request: Last-Event-ID {last_event_id!r} {why}", http_status=status)
        elif live.notification_reader:
            raise invalid_request("Conflict: this session's GET stream is already open", http_status=409)
        if not self.live.open_stream(caller):
            self.live.release(live)
            raise streams_full(self.live, caller)
        live.writers += 1
        try:
            if parsed is None or parsed[0] == NOTIFICATION_STREAM:
                after = live.notifications.last_seq if parsed is None else min(parsed[1], live.notifications.last_seq)
                await self._follow(live, live.notifications, after, receive, send)
            elif log is not None:
                await self._follow(live, log, parsed[1], receive, send)
            else:
                await self._follow_relayed(info, parsed[0], str(owner), parsed[1], receive, send)
        finally:
            live.writers -= 1
            self.live.close_stream(caller)
            self.live.release(live)

    async def _follow(self, live: LiveSession, log: EventLog, after: int, receive: Receive, send: Send) -> None:
        notifications = log.stream_id == NOTIFICATION_STREAM
        live.notification_reader |= notifications
        disconnect = asyncio.ensure_future(wait_disconnect(receive))
        try:
            await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
            if live.info.primes_streams:
                await send({"type": "http.response.body", "body": log.priming_frame(after), "more_body": True})
            keepalive = self._keepalive
            if await follow(log, after, send, disconnect, keepalive=keepalive) and not notifications:
                live.streams.pop(log.stream_id, None)  # a resumed call's stream, delivered to its end
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            disconnect.cancel()
            if notifications:
                live.notification_reader = False

    async def _follow_relayed(
        self, info: SessionInfo, stream_id: str, owner: str, after: int, receive: Receive, send: Send
    ) -> None:
        """Resume another replica's call stream from the relay's copy of its events."""
        relay = self.cluster.relay
        assert relay is not None
        name = relayed_stream(info.key, stream_id)
        try:
            known = await relay.exists(name)
        except Exception as exc:
            raise relay_down(exc) from exc
        if not known:
            raise invalid_request(f"Bad request: Last-Event-ID names no stream of this session ({stream_id})")
        disconnect = asyncio.ensure_future(wait_disconnect(receive))
        try:
            await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
            if info.primes_streams:
                frame = EventLog(stream_id).priming_frame(after)
                await send({"type": "http.response.body", "body": frame, "more_body": True})
            with contextlib.suppress(Exception):  # Redis went away mid-stream: the client may resume again
                await follow_relayed(relay, name, stream_id, owner, after, send, disconnect, replica_lost)
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            disconnect.cancel()

    async def deliver(self, notification: JSONObject) -> None:
        """Append a server notification to the GET stream of every session here that wants it."""
        readers = [live for live in self.live if live.notification_reader]
        if notification["method"] == RESOURCE_UPDATED:
            uri = str(notification["params"].get("uri"))
            try:
                wanted = await self.cluster.subscribed([live.key for live in readers], uri)
            except Exception:
                logger.warning("could not read resource subscriptions from the relay", exc_info=True)
                return
            readers = [live for live, yes in zip(readers, wanted, strict=True) if yes]
        for live in readers:
            live.notifications.append(notification)
