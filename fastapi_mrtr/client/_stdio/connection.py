"""The JSON-RPC conversation with one stdio server: requests out, answers matched back by id.

One background task reads the server's stdout (it runs in the :class:`MrtrClient`'s task group,
so a stdio client is used as ``async with``). A response wakes the request that waits for it; a
notification goes to the request whose progress token it names, or else to the client's
``on_notification``, as on HTTP; a request from the server (a 2025-era session's
``elicitation/create``, ``sampling/createMessage``, ``roots/list``, ``ping``) is answered by the
client's handlers, as a legacy HTTP session's are. A server that exits, closes stdout, writes a
line that is no JSON-RPC message, or says nothing for longer than its timeout fails every
waiting request with a clear error, and every later one: nothing waits for ever.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio

from fastapi_mrtr.client._errors import InvalidServerResponseError, McpServerError, MrtrClientError, StdioServerError
from fastapi_mrtr.client._handlers import InputHandlers
from fastapi_mrtr.client._legacy.listener import Spawner
from fastapi_mrtr.client._legacy.server_requests import OpenRequests, ServerRequests
from fastapi_mrtr.client._stdio.messages import decode_line, reply_result, still_failed
from fastapi_mrtr.client._stdio.process import ServerProcess
from fastapi_mrtr.client._stdio.server import StdioServer
from fastapi_mrtr.client._transport import NotificationSink, encode_message
from fastapi_mrtr.client.options import ClientOptions
from fastapi_mrtr.telemetry.client import client_notification
from fastapi_mrtr.wire.protocol import JSONObject, RequestId

logger = logging.getLogger("fastapi_mrtr.client")

CANCEL_GRACE = 2.0  # seconds the best-effort notifications/cancelled may take


@dataclass(eq=False)
class _Waiter:
    """One request of ours waiting for its response."""

    sink: NotificationSink | None
    progress_token: Any
    sent_at: float
    done: anyio.Event = field(default_factory=anyio.Event)
    result: JSONObject | None = None
    error: Exception | None = None

    def finish(self, result: JSONObject | None = None, error: Exception | None = None) -> None:
        if not self.done.is_set():
            self.result, self.error = result, error
            self.done.set()


class StdioConnection:
    """Requests to one server process, launched on first use and stopped by :meth:`aclose`.

    Its :meth:`request` has the shape of :class:`~fastapi_mrtr.client._transport.HttpRpc`'s,
    so the modern era's transport sends through it unchanged (stdio has no headers: they are
    dropped).
    """

    def __init__(
        self,
        server: StdioServer,
        handlers: InputHandlers,
        options: ClientOptions,
        notifications: NotificationSink | None,
        spawn: Spawner,
    ) -> None:
        self.server = server
        self._process = ServerProcess(server)
        self._server_requests = ServerRequests(handlers, options, self)
        self._telemetry = options.telemetry
        self._open_server_requests = OpenRequests("stdio")
        self._notifications = notifications  # those no request of ours claims
        self._spawn = spawn
        self._pending: dict[RequestId, _Waiter] = {}
        self._start_lock = anyio.Lock()
        self._write_lock = anyio.Lock()
        self._launched = anyio.Event()
        self._started = False
        self._closed = False
        self._failure: MrtrClientError | None = None
        self._failure_told = False  # whether a request has raised it yet
        self._last_heard: float | None = None  # when the server last wrote a line

    # --- requests --------------------------------------------------------------------------

    async def request(
        self,
        message: JSONObject,
        headers: Mapping[str, str] | None = None,
        on_notification: NotificationSink | None = None,
    ) -> JSONObject:
        """Send ``message`` and return the ``result`` of its response (:class:`McpServerError` for an error)."""
        await self._start()
        request_id: RequestId = message["id"]
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        waiter = _Waiter(on_notification, token, anyio.current_time())
        self._pending[request_id] = waiter
        try:
            await self.post_message(message)
            await self._wait(waiter, request_id)
        except BaseException:
            if not waiter.done.is_set() and self._failure is None:
                await self._cancel(request_id)  # abandoned: the server may stop the work
            raise
        finally:
            self._pending.pop(request_id, None)
        if waiter.error is not None:
            raise waiter.error
        assert waiter.result is not None
        return waiter.result

    async def notify(self, message: JSONObject) -> None:
        await self._start()
        await self.post_message(message)

    async def post_message(self, message: JSONObject) -> None:
        """Write one message (also a response to the server's request) as one line."""
        self._check_alive()
        async with self._write_lock:
            await self._process.send_line(encode_message(message))

    async def _wait(self, waiter: _Waiter, request_id: RequestId) -> None:
        """Until the response comes, bounded by the server's silence (its timeouts)."""
        while True:
            heard = self._last_heard
            limit = self.server.startup_timeout if heard is None else self.server.read_timeout
            since = max(heard or 0.0, waiter.sent_at)
            with anyio.move_on_after(since + limit - anyio.current_time()):
                await waiter.done.wait()
                return
            if self._open_server_requests.count:  # the server waits for our answer (a person may be typing)
                self._last_heard = anyio.current_time()
                continue
            if self._last_heard == heard:  # nothing at all from the server all that time
                what = f"gave no answer in {limit:g} s" if heard is None else f"wrote nothing for {limit:g} s"
                # The server is stuck (or no MCP server): no later request would fare better.
                self._fail(
                    StdioServerError(
                        f"the stdio server `{self.server.shown}` {what} (request {request_id!r} waited); "
                        "is it an MCP server that speaks JSON-RPC on its stdout?"
                    )
                )
                return

    async def _cancel(self, request_id: RequestId) -> None:
        note: JSONObject = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": "the client gave up"},
        }
        with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_GRACE):
            try:  # the version is the message's own business on a pipe: the span goes without it
                await client_notification(self._telemetry, note, None, None, self.post_message)
            except MrtrClientError as exc:
                logger.info("could not cancel request %r on the stdio server: %s", request_id, exc)

    # --- the process -----------------------------------------------------------------------

    async def _start(self) -> None:
        self._check_alive()
        async with self._start_lock:
            if self._started:
                self._check_alive()
                return
            if not self._spawn(self._read):
                raise RuntimeError(
                    "a stdio MrtrClient runs the server as a subprocess and reads it in the background: "
                    "use it as `async with MrtrClient(stdio=...) as client:`"
                )
            self._started = True
            try:
                await self._process.launch()
            except StdioServerError as exc:
                self._failure, self._failure_told = exc, True
                raise
            finally:
                self._launched.set()
            self._spawn(self._process.pump_stderr)

    def _check_alive(self) -> None:
        if self._closed:
            raise RuntimeError("this MrtrClient has been closed; make a new one to talk to the server again")
        if self._failure is not None:
            if not self._failure_told:  # nobody has heard why yet: the first to ask gets it as it was
                self._failure_told = True
                raise self._failure
            raise still_failed(self._failure)

    async def aclose(self) -> None:
        """Stop the server (stdin closed, then SIGTERM, then SIGKILL); idempotent."""
        self._closed = True
        await self._process.stop()
        self._fail(StdioServerError("the client was closed"))

    def _fail(self, failure: MrtrClientError) -> None:
        if self._failure is None:
            self._failure = failure
            self._failure_told = bool(self._pending)
        for waiter in list(self._pending.values()):
            waiter.finish(error=failure)

    # --- reading ---------------------------------------------------------------------------

    async def _read(self) -> None:
        await self._launched.wait()
        if self._failure is not None:
            return
        try:
            while (line := await self._process.read_line()) is not None:
                self._last_heard = anyio.current_time()
                if line.strip():
                    await self._dispatch(decode_line(line))
            failure: MrtrClientError = await self._process.gone(
                f"the stdio server `{self.server.shown}` closed its stdout"
                + ("" if self._pending else " (no request was waiting)")
            )
        except MrtrClientError as exc:
            failure = exc
        if not self._closed:
            logger.info("stdio server: %s", failure)
        self._fail(failure)

    async def _dispatch(self, message: JSONObject) -> None:
        if "method" in message:
            if "id" in message:
                self._answer(message)
            else:
                await self._deliver(message)
            return
        request_id: Any = message.get("id")
        # Type-exact: JSON true is no id 1 (True == 1 in Python).
        waiter = self._pending.get(request_id) if type(request_id) in (int, str) else None
        if waiter is None:
            # A late answer to a request we gave up on, or an error about a line the server
            # could not read (id null): nobody waits for it.
            logger.warning("dropping a reply from the stdio server that no request waits for: %.200r", message)
            return
        try:
            waiter.finish(result=reply_result(message, request_id))
        except (McpServerError, InvalidServerResponseError) as exc:
            waiter.finish(error=exc)

    async def _deliver(self, message: JSONObject) -> None:
        params = message.get("params")
        token = params.get("progressToken") if isinstance(params, dict) else None
        owner = next((w for w in self._pending.values() if token is not None and w.progress_token == token), None)
        sink = owner.sink if owner is not None and owner.sink is not None else self._notifications
        if sink is None:
            return
        try:
            await sink(message)
        except Exception:  # a failing callback must not stop the reader (every request would fail)
            logger.exception("a notification callback failed")

    def _answer(self, message: JSONObject) -> None:
        try:
            self._open_server_requests.admit()
        except InvalidServerResponseError as exc:
            logger.warning("%s", exc)
            why = str(exc)
            self._spawn(lambda: self._refuse(message, why))
            return
        ticket = self._server_requests.take_turn(message)
        self._spawn(lambda: self._answer_in_background(message, ticket))

    async def _answer_in_background(self, message: JSONObject, ticket: int | None) -> None:
        try:
            await self._server_requests.answer_in_background(message, ticket)
        except Exception as exc:  # the server is gone: nothing to answer
            logger.info("could not answer the stdio server's %r: %s", message.get("method"), exc)
        finally:
            self._open_server_requests.finish()

    async def _refuse(self, message: JSONObject, why: str) -> None:
        with contextlib.suppress(MrtrClientError):
            await self.post_message({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32603, "message": why}})
