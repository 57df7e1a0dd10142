"""Writing a legacy session's event logs to HTTP responses.

A call's answer starts as nothing at all: when the call ends before it has sent anything else,
the client gets one JSON body (the cheapest answer, and the usual one). As soon as the call has
something to send first (progress, a log message, a request to the client), or the server decides
to close a long call's stream (``legacy_sse_close_after``, SEP-1699 polling), the answer becomes an
SSE stream that starts with a priming event (an id to resume from, and ``retry``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from starlette.types import Receive, Send

from fastapi_mrtr.transport.http import SSE_HEADERS, send_json, wait_disconnect
from fastapi_mrtr.transport.legacy.events import EventLog
from fastapi_mrtr.wire.json_codec import encode
from fastapi_mrtr.wire.protocol import JSONObject

if TYPE_CHECKING:
    from fastapi_mrtr.state.redis_relay import RedisRelay

KEEPALIVE = b": keepalive\n\n"


class CallAnswer:
    """The HTTP answer to one POSTed call whose work writes to ``log`` (``cancel`` stops the work)."""

    def __init__(
        self,
        log: EventLog,
        cancel: Callable[[], object],
        *,
        primes: bool,
        close_after: float,
        on_stream: Callable[[], object] | None = None,
    ) -> None:
        self.log = log
        self.cancel = cancel
        self.primes = primes
        self.close_after = close_after  # 0: keep the stream open until the call ends
        self.on_stream = on_stream  # called once the answer becomes a stream (one may resume it)
        self.result_message: Any = None  # set by the work when its only event is the response

    async def send(self, receive: Receive, send: Send, can_stream: bool) -> bool:
        """Answer the POST; True when every event was delivered on it (the log may be dropped)."""
        # Most calls end at their first turn of the loop (nothing to wait for): let the work run
        # once, and answer one that ended with its JSON body, before any waiter is set up.
        await asyncio.sleep(0)
        if self._only_the_result():
            await send_json(send, 200, encode(self.result_message))
            return True
        disconnect = asyncio.ensure_future(wait_disconnect(receive))
        timer = asyncio.ensure_future(asyncio.sleep(self.close_after)) if can_stream and self.close_after > 0 else None
        try:
            first = asyncio.ensure_future(self.log.wait_beyond(0))
            await _first_of(disconnect, first, timer)
            first.cancel()
            if disconnect.done():
                await self._client_left(send)
                return True
            if self._only_the_result():
                await send_json(send, 200, encode(self.result_message))
                return True
            if not can_stream:  # nothing can be streamed: the work ends the call without events
                await _first_of(disconnect, asyncio.ensure_future(self._wait_finished()))
                if disconnect.done():
                    await self._client_left(send)
                    return True
                await send_json(send, 200, encode(self.result_message))
                return True
            if self.on_stream is not None:
                self.on_stream()
            await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
            if self.primes:
                await _body(send, self.log.priming_frame(0))
            delivered = await follow(self.log, 0, send, disconnect, timer)
            if disconnect.done() and not self.log.finished:
                self.cancel()  # the client closed the stream: that cancels the call
            await _end(send)
            return delivered
        finally:
            disconnect.cancel()
            if timer is not None:
                timer.cancel()

    def _only_the_result(self) -> bool:
        """The call ended with nothing sent before its response: one JSON body answers it."""
        return self.log.finished and self.log.last_seq == 1 and self.result_message is not None

    async def _wait_finished(self) -> None:
        while not self.log.finished:
            await self.log.wait_beyond(self.log.last_seq)

    async def _client_left(self, send: Send) -> None:
        self.cancel()
        # The socket is gone; the answer only completes the ASGI response (see the modern endpoint).
        await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
        await _end(send)


async def follow(
    log: EventLog,
    after: int,
    send: Send,
    disconnect: asyncio.Future[Any],
    stop: asyncio.Future[Any] | None = None,
    keepalive: float = 0,
) -> bool:
    """Send ``log``'s frames after ``after`` until it finishes (True), the client leaves or ``stop`` fires."""
    position = after
    while True:
        # Read "finished" before taking the frames: sending one may yield to the loop (a slow
        # socket, or a send that passes through a middleware's task), and the call may append
        # its response and finish meanwhile. Checked after the sends, that would end the stream
        # one event short, the response lost and the log dropped as delivered.
        finished = log.finished
        for seq, frame in log.since(position):
            await _body(send, frame)
            position = seq
        if finished:
            return True
        changed = asyncio.ensure_future(log.wait_beyond(position))
        waits: list[Awaitable[Any]] = [disconnect, changed]
        if stop is not None:
            waits.append(stop)
        tick = asyncio.ensure_future(asyncio.sleep(keepalive)) if keepalive > 0 else None
        try:
            await _first_of(*waits, tick)
        finally:
            changed.cancel()
            if tick is not None:
                tick.cancel()
        if disconnect.done() or (stop is not None and stop.done()):
            return False
        if tick is not None and tick.done() and not changed.done():
            await _body(send, KEEPALIVE)


async def follow_relayed(
    relay: RedisRelay,
    name: str,
    stream_id: str,
    owner: str,
    after: int,
    send: Send,
    disconnect: asyncio.Future[Any],
    call_error: Callable[[Any], JSONObject],
) -> None:
    """Send the events of another replica's call stream after ``after``, from the relay (where it
    is called ``name``), to its end.

    When the replica running the call is gone (it no longer listens on the relay), the call can
    never end: the client gets a JSON-RPC error for it instead of waiting forever. Waiting for new
    events holds no connection of the request path: the relay's one reader waits for every stream."""
    first = await relay.read_now(name, -1)
    call_id = json.loads(first[0][1]["c"]) if first and "c" in first[0][1] else None
    position = max(after, 0)
    events = [event for event in first if event[0] > position]
    while not disconnect.done():
        for seq, fields in events:
            if fields.get("end"):
                return
            await _body(send, fields["f"].encode())
            position = seq
        reading = asyncio.ensure_future(relay.read(name, position, block=1.0))
        await _first_of(disconnect, reading)
        if not reading.done():
            reading.cancel()
            return
        events = reading.result()
        if not events and not await relay.alive(owner):
            seq = position + 1
            frame = b"id: " + f"{stream_id}-{seq}".encode() + b"\nevent: message\ndata: " + encode(call_error(call_id))
            frame += b"\n\n"
            with contextlib.suppress(Exception):  # another resumer may have written it first
                await relay.append(name, [(seq, {"f": frame.decode()}), (seq + 1, {"end": "1"})], 60.0)
            await _body(send, frame)
            return


async def _first_of(*waits: Awaitable[Any] | None) -> None:
    futures = [asyncio.ensure_future(w) for w in waits if w is not None]
    await asyncio.wait(futures, return_when=asyncio.FIRST_COMPLETED)


async def _body(send: Send, frame: bytes) -> None:
    await send({"type": "http.response.body", "body": frame, "more_body": True})


async def _end(send: Send) -> None:
    with contextlib.suppress(Exception):
        await send({"type": "http.response.body", "body": b"", "more_body": False})
