"""Reading the SSE stream of one call in a 2025-era session, to the call's response.

The server's requests that arrive on it are answered as tasks beside the reader, so a slow
handler never stops the stream (the server may ask several questions of one round before it
waits). A server may close a long call's stream after an event with an id (SEP-1699 polling):
the reader then waits the ``retry`` the server asked for and resumes with a GET carrying
``Last-Event-ID``.
"""

from __future__ import annotations

import anyio
import anyio.abc
import httpx

from fastapi_mrtr.client._errors import InvalidServerResponseError, StreamClosedError
from fastapi_mrtr.client._legacy.http import SessionHttp
from fastapi_mrtr.client._legacy.server_requests import OpenRequests, ServerRequests
from fastapi_mrtr.client._transport import (
    NotificationSink,
    decode_sse_message,
    interpret_reply,
    iter_sse_events,
    stream_lines,
)
from fastapi_mrtr.wire.protocol import JSONObject, RequestId

DEFAULT_RETRY_MS = 1000  # SEP-1699: wait this long before resuming when the server named no retry
MAX_RETRY_MS = 60_000  # a server's retry hint beyond this is capped, not obeyed
MAX_IDLE_RESUMES = 3  # resumptions in a row that bring no new event end the call


class CallStream:
    """One call's stream (``response``, which the caller closes) and the streams resumed after it.

    :meth:`read` returns the call's result. The first failure (a handler's exception, unchanged,
    or a broken stream) ends the call; questions still open are moot once the call answered.
    """

    def __init__(
        self,
        response: httpx.Response,
        request_id: RequestId,
        sink: NotificationSink | None,
        http: SessionHttp,
        server_requests: ServerRequests,
    ) -> None:
        self._response = response
        self._request_id = request_id
        self._sink = sink
        self._http = http
        self._server_requests = server_requests
        self._open = OpenRequests(request_id)
        self._tickets: list[int] = []  # turns taken for questions of this stream
        self._failure: BaseException | None = None
        self._result: JSONObject | None = None

    async def read(self) -> JSONObject:
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._read, group)
        finally:
            for ticket in self._tickets:  # turns whose question never got to run
                self._server_requests.release(ticket)
        if self._failure is not None:
            raise self._failure
        if self._result is None:  # pragma: no cover - the group ends only through _read or a failure
            raise StreamClosedError(f"SSE stream of request {self._request_id!r} ended without a response")
        return self._result

    def _fail(self, exc: BaseException, group: anyio.abc.TaskGroup) -> None:
        if self._failure is None:
            self._failure = exc
        group.cancel_scope.cancel()

    async def _read(self, group: anyio.abc.TaskGroup) -> None:
        try:
            self._result = await self._follow(group)
        except Exception as exc:  # surfaced after the group, unwrapped
            self._fail(exc, group)
        group.cancel_scope.cancel()

    def _on_request(self, message: JSONObject, group: anyio.abc.TaskGroup) -> None:
        try:
            # One task per question: a server that asks without end would grow us without end.
            self._open.admit()
        except InvalidServerResponseError as exc:
            self._fail(exc, group)
            return
        ticket = self._server_requests.take_turn(message)
        if ticket is not None:
            self._tickets.append(ticket)
        group.start_soon(self._answer, message, ticket, group)

    async def _answer(self, message: JSONObject, ticket: int | None, group: anyio.abc.TaskGroup) -> None:
        try:
            await self._server_requests.answer(message, ticket)
        except Exception as exc:  # surfaced after the group, unwrapped
            self._fail(exc, group)
        finally:
            self._open.finish()

    async def _follow(self, group: anyio.abc.TaskGroup) -> JSONObject:
        """The response from this stream and, if the server closes it early, from the streams
        resumed after it (GET with ``Last-Event-ID``)."""
        request_id = self._request_id
        last_event_id: str | None = None
        retry_ms = DEFAULT_RETRY_MS
        idle = 0
        current = self._response  # the caller closes the first stream; the resumed ones are ours
        while True:
            seen_before = last_event_id
            try:
                async for event in iter_sse_events(stream_lines(current, request_id)):
                    if event.event_id is not None:
                        last_event_id = event.event_id
                    if event.retry_ms is not None:
                        retry_ms = min(event.retry_ms, MAX_RETRY_MS)
                    if not event.data:
                        continue  # a priming event: only its id matters
                    decoded = decode_sse_message(event.data)
                    if "method" in decoded:
                        if "id" in decoded:
                            self._on_request(decoded, group)
                        elif self._sink is not None:
                            await self._sink(decoded)
                        continue
                    result = interpret_reply(decoded, request_id, current.status_code)
                    if result is not None:
                        return result
            finally:
                if current is not self._response:
                    await current.aclose()
            if last_event_id is None:
                raise StreamClosedError(f"SSE stream ended before the response to request {request_id!r}")
            idle = idle + 1 if last_event_id == seen_before else 0
            if idle >= MAX_IDLE_RESUMES:
                raise StreamClosedError(
                    f"SSE stream of request {request_id!r} resumed {idle} times without a new event"
                )
            await anyio.sleep(retry_ms / 1000)
            current = await self._resume(last_event_id)

    async def _resume(self, last_event_id: str) -> httpx.Response:
        try:
            return await self._http.open_stream({"Last-Event-ID": last_event_id})
        except StreamClosedError as exc:
            raise StreamClosedError(
                f"SSE stream of request {self._request_id!r} closed and could not be resumed: {exc}"
            ) from None
