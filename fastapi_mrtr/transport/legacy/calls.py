"""The calls of 2025-era sessions that may ask the client: ``tools/call``, ``prompts/get``, ``resources/read``.

:class:`SessionCalls` starts each as a task of its session's
:class:`~fastapi_mrtr.transport.legacy.sessions.LiveSession`, within the stream bounds. A
:class:`RunningCall` is one of them: the shim runs the handler round after round, asking through
the call's :class:`~fastapi_mrtr.transport.legacy.shim.CallChannel`; everything the call sends
goes to its event log, which the POST's answer
(:class:`~fastapi_mrtr.transport.legacy.streams.CallAnswer`) and any resumer follow. A log that
nobody received to its end is kept for a while (``event_ttl``), for a client that resumes it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from starlette.types import Receive, Scope, Send

from fastapi_mrtr.engine.options import ServerOptions
from fastapi_mrtr.transport.legacy.cluster import SessionCluster
from fastapi_mrtr.transport.legacy.events import EventLog
from fastapi_mrtr.transport.legacy.replies import invalid_request, streams_full, valid_id
from fastapi_mrtr.transport.legacy.session_id import SessionInfo
from fastapi_mrtr.transport.legacy.sessions import LiveSession, LiveSessions
from fastapi_mrtr.transport.legacy.shapes import Handler, answer_rpc, session_request
from fastapi_mrtr.transport.legacy.shim import CallChannel, LegacyShim
from fastapi_mrtr.transport.legacy.streams import CallAnswer
from fastapi_mrtr.transport.request import RpcRequest
from fastapi_mrtr.wire.protocol import JSONObject, RequestId

CALL_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})  # may ask the client


@dataclass(frozen=True)
class SessionView:
    """One request's view of its session: what the id says, the level it set, who is asking."""

    info: SessionInfo
    log_level: str | None
    caller: str


class SessionCalls:
    """Starts, answers and cancels the calls of this process's sessions."""

    def __init__(self, options: ServerOptions, live: LiveSessions, cluster: SessionCluster) -> None:
        self.options = options
        self.live = live
        self.cluster = cluster

    async def run(
        self,
        session: SessionView,
        handler: Handler,
        request: tuple[RequestId, str, JSONObject],
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: dict[str, str],
    ) -> None:
        """Run one call and answer its POST (JSON, or the SSE stream of its log); refused when it
        reuses the id of a call in flight or the caller holds its share of streams."""
        request_id, method, params = request
        live = self.live.attach(session.info)
        if request_id in live.calls:
            raise invalid_request(f"Invalid request: request id {request_id!r} is already in flight", request_id)
        if not self.live.open_stream(session.caller):
            self.live.release(live)
            raise streams_full(self.live, session.caller, request_id)
        can_stream = "text/event-stream" in headers.get("accept", "")
        log = EventLog(self.live.new_id())
        config = self.options.input_required_config
        channel = CallChannel(self.live, self.cluster, config.round_timeout, live, log, can_stream)
        rpc = session_request(
            session.info, session.log_level, request_id, method, params, scope, headers, receive, channel.notify
        )
        call = RunningCall(self, live, log, channel, rpc)
        shim = LegacyShim(config.round_timeout, config.max_rounds, session.info.protocol_version)
        task = call.start(shim, handler)
        # The slot is the call's, not the response's: a call whose stream was closed for the
        # client to resume (legacy_sse_close_after) still waits, and still counts.
        task.add_done_callback(lambda _: self.live.close_stream(session.caller))
        answer = CallAnswer(
            log,
            task,
            primes=session.info.primes_streams,
            close_after=self.options.legacy_sse_close_after if session.info.primes_streams else 0.0,
            on_stream=lambda: self.cluster.mirror(session.info.key, log, request_id),
        )
        await call.respond(answer, receive, send, can_stream)

    def cancel(self, session_key: str, call_id: Any) -> bool:
        """``notifications/cancelled`` (or a cancel relayed from another replica): whether a call here ended."""
        live = self.live.get(session_key)
        task = live.calls.get(call_id) if live is not None and valid_id(call_id) else None
        if task is None:
            return False
        task.cancel()
        return True

    def after_stream(self, live: LiveSession, log: EventLog) -> None:
        """Forget a finished stream nobody can still need, then the session if nothing else runs."""
        if log.finished and log.stream_id in live.streams and not log.expiring:
            # Undelivered: a client whose stream broke may resume it for a while; then it goes.
            log.expiring = True
            asyncio.get_running_loop().call_later(self.cluster.event_ttl, self._drop_stream, live, log)
        self.live.release(live)

    def _drop_stream(self, live: LiveSession, log: EventLog) -> None:
        live.streams.pop(log.stream_id, None)
        self.live.release(live)


class RunningCall:
    """One call in flight: its work (a task of the session) and the POST that answers it.

    Both ends can finish first. ``responding`` is True while the POST's response is being written:
    until then that response may still deliver the whole log, so only the later of the two
    decides whether the log must be kept for a resumer (:meth:`SessionCalls.after_stream`).
    """

    def __init__(
        self, calls: SessionCalls, live: LiveSession, log: EventLog, channel: CallChannel, rpc: RpcRequest
    ) -> None:
        self.calls = calls
        self.live = live
        self.log = log
        self.channel = channel
        self.rpc = rpc
        self.responding = False

    def start(self, shim: LegacyShim, handler: Handler) -> asyncio.Task[None]:
        """Start the work as a task of the session, its log open for the POST's answer and resumers."""
        self.live.writers += 1
        self.responding = True
        self.live.streams[self.log.stream_id] = self.log
        task = asyncio.ensure_future(self._work(shim, handler))
        self.live.calls[self.rpc.id] = task
        return task

    async def _work(self, shim: LegacyShim, handler: Handler) -> None:
        rpc = self.rpc
        try:
            message = await answer_rpc(
                lambda r: shim.run(handler, r, self.channel), rpc, tool_errors=rpc.method == "tools/call"
            )
            self.log.end(message)
        finally:
            self.live.calls.pop(rpc.id, None)
            self.channel.close()
            self.log.finish()  # a cancelled call's stream ends without a response
            if not self.responding:  # the response ended before the call: a resumer may still want it
                self.calls.after_stream(self.live, self.log)

    async def respond(self, answer: CallAnswer, receive: Receive, send: Send, can_stream: bool) -> None:
        try:
            if await answer.send(receive, send, can_stream):
                self.live.streams.pop(self.log.stream_id, None)  # delivered to its end: no resumer needs it
        finally:
            self.responding = False
            self.live.writers -= 1
            self.calls.after_stream(self.live, self.log)
