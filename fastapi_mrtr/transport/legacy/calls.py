"""The calls of 2025-era sessions that may ask the client: ``tools/call``, ``prompts/get``, ``resources/read``.

A call runs as a task of its session's :class:`~fastapi_mrtr.transport.legacy.sessions.LiveSession`
(:class:`RunningCall`): the shim (:mod:`~fastapi_mrtr.transport.legacy.shim`) calls the handler
round after round and asks each question through the call's channel
(:mod:`~fastapi_mrtr.transport.legacy.shim_channel`), every event going to the call's
:class:`~fastapi_mrtr.transport.legacy.events.EventLog`. The POST that started the call answers
from that log (:class:`~fastapi_mrtr.transport.legacy.streams.CallAnswer`). A log nobody has read
to its end stays for a while after the call, for a client that resumes it (SEP-1699).
"""

from __future__ import annotations

import asyncio

from starlette.types import Send

from fastapi_mrtr.engine.options import ServerOptions
from fastapi_mrtr.transport.legacy.cluster import SessionCluster
from fastapi_mrtr.transport.legacy.events import EventLog
from fastapi_mrtr.transport.legacy.replies import invalid_request, streams_full
from fastapi_mrtr.transport.legacy.session_id import SessionInfo
from fastapi_mrtr.transport.legacy.sessions import LiveSession, LiveSessions
from fastapi_mrtr.transport.legacy.shapes import Handler, answer_rpc
from fastapi_mrtr.transport.legacy.shim import LegacyShim
from fastapi_mrtr.transport.legacy.shim_channel import CallChannel
from fastapi_mrtr.transport.legacy.streams import CallAnswer
from fastapi_mrtr.transport.request import RpcRequest
from fastapi_mrtr.transport.tracing import itself, traced

CALL_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})  # may ask the client


class SessionCalls:
    """Starts the calls of this process's sessions, bounded by the open-stream limits."""

    def __init__(self, options: ServerOptions, live: LiveSessions, cluster: SessionCluster) -> None:
        self.options = options
        self.live = live
        self.cluster = cluster

    async def run(self, info: SessionInfo, caller: str, handler: Handler, rpc: RpcRequest, send: Send) -> None:
        """Run the call ``rpc`` of session ``info`` and answer its POST (JSON, or a stream of events)."""
        live = self.live.attach(info)
        if rpc.id in live.calls:
            raise invalid_request(f"Invalid request: request id {rpc.id!r} is already in flight", rpc.id)
        if not self.live.open_stream(caller):
            self.live.release(live)
            raise streams_full(self.live, caller, rpc.id)
        call = RunningCall(self, live, rpc, caller)
        call.start(handler)
        await call.answer_post(send)

    def close_after(self, info: SessionInfo) -> float:
        # Only a client that knows SEP-1699 resumes a stream the server closed.
        return self.options.legacy_sse_close_after if info.primes_streams else 0.0

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
    """One call in this process: the task running it through the shim, the log it writes, and the
    POST answering it. Whichever of the two ends last lets the log and the session go."""

    def __init__(self, calls: SessionCalls, live: LiveSession, rpc: RpcRequest, caller: str) -> None:
        self.calls = calls
        self.live = live
        self.rpc = rpc
        self.caller = caller
        self.can_stream = "text/event-stream" in rpc.headers.get("accept", "")
        self.log = EventLog(calls.live.new_id())
        config = calls.options.input_required_config
        self.channel = CallChannel(calls.live, calls.cluster, config.round_timeout, live, self.log, self.can_stream)
        self.shim = LegacyShim(
            config.round_timeout, config.max_rounds, live.info.protocol_version, calls.options.telemetry
        )
        self.answer = CallAnswer(
            self.log,
            self.cancel,
            primes=live.info.primes_streams,
            close_after=calls.close_after(live.info),
            on_stream=self._mirror,
        )
        self.writing = True  # the POST's response is still being written (it may deliver the log)
        self.task: asyncio.Task[None] | None = None
        if self.can_stream:
            rpc.notify = self.channel.notify

    def start(self, handler: Handler) -> None:
        self.live.writers += 1
        self.live.streams[self.log.stream_id] = self.log
        self.task = asyncio.ensure_future(self._work(handler))
        self.live.calls[self.rpc.id] = self.task
        # The slot is the call's, not the response's: a call whose stream was closed for the
        # client to resume (legacy_sse_close_after) still waits, and still counts.
        self.task.add_done_callback(self._free_slot)

    def _free_slot(self, task: asyncio.Task[None]) -> None:
        self.calls.live.close_stream(self.caller)

    def cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()

    async def answer_post(self, send: Send) -> None:
        try:
            if await self.answer.send(self.rpc.receive, send, self.can_stream):
                self.live.streams.pop(self.log.stream_id, None)
        finally:
            self.writing = False
            self.live.writers -= 1
            self.calls.after_stream(self.live, self.log)

    async def _work(self, handler: Handler) -> None:
        rpc, info = self.rpc, self.live.info
        try:
            message = await traced(
                self.calls.options.telemetry, rpc.method, rpc.id, rpc.params, rpc.scope,
                lambda: answer_rpc(lambda rpc: self.shim.run(handler, rpc, self.channel), rpc,
                                   tool_errors=rpc.method == "tools/call"),
                itself, protocol_version=info.protocol_version, session_id=info.key,
            )  # fmt: skip
        except asyncio.CancelledError:
            self.log.finish()
            raise
        finally:
            self.live.calls.pop(self.rpc.id, None)
            self.channel.close()
            if not self.writing:
                self.calls.after_stream(self.live, self.log)
        self.answer.result_message = message
        self.log.append(message)
        self.log.finish()
        if not self.writing:  # the response ended before the call: a resumer may still want it
            self.calls.after_stream(self.live, self.log)

    def _mirror(self) -> None:
        """The answer became a stream: copy its events to the relay, for a resumer on another replica."""
        self.calls.cluster.mirror(self.live.key, self.log, self.rpc.id)
