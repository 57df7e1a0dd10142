"""The server's requests in a 2025-era session, answered by the client's handlers.

A tool that needs the user sends ``elicitation/create``, ``sampling/createMessage``,
``roots/list`` or ``ping`` as a request on a stream; each is answered with a POSTed JSON-RPC
response by the same :class:`InputHandlers` the MRTR loop uses, so a handler never knows which
era asked. Interactive handlers take their turn on arrival, so they answer in stream order.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
from typing import Any, Protocol

import anyio
import httpx

from fastapi_mrtr.client._errors import InvalidServerResponseError, RoundTimeoutError, StatusCodeError
from fastapi_mrtr.client._handlers import InputHandlers
from fastapi_mrtr.client._legacy.http import SessionGoneError
from fastapi_mrtr.client.options import ClientOptions
from fastapi_mrtr.wire.errors import McpError
from fastapi_mrtr.wire.mrtr import InputRequest
from fastapi_mrtr.wire.protocol import JSONObject, RequestId

logger = logging.getLogger("fastapi_mrtr.client")

# Server requests of one stream being answered at once. A person answers one at a time; a
# server that sends thousands would otherwise cost the client a task (and memory) each.
MAX_OPEN_SERVER_REQUESTS = 64


class OpenRequests:
    """How many requests of one stream are being answered, bounded by ``MAX_OPEN_SERVER_REQUESTS``."""

    def __init__(self, stream: RequestId) -> None:
        self.stream = stream
        self.count = 0

    def admit(self) -> None:
        """Count one more, or raise :class:`InvalidServerResponseError` when the stream has too many open."""
        if self.count >= MAX_OPEN_SERVER_REQUESTS:
            raise InvalidServerResponseError(
                f"the server sent more than {MAX_OPEN_SERVER_REQUESTS} requests at once on the stream of "
                f"request {self.stream!r}; the client stopped reading it"
            )
        self.count += 1

    def finish(self) -> None:
        self.count -= 1


class ReplyChannel(Protocol):
    """Where answers to the server go: the session's POSTs, or a stdio server's stdin."""

    async def post_message(self, message: JSONObject) -> None: ...


class ServerRequests:
    """Answers one session's server-to-client requests."""

    def __init__(self, handlers: InputHandlers, options: ClientOptions, http: ReplyChannel) -> None:
        self._handlers = handlers
        self._options = options
        self._http = http
        self._asked = itertools.count(1)

    def take_turn(self, message: JSONObject) -> int | None:
        """The request's turn among the interactive handlers, taken when it arrives."""
        method = message.get("method")
        return self._handlers.take_turn(method) if isinstance(method, str) else None

    def release(self, ticket: int) -> None:
        """Give up a turn whose request never got to run."""
        self._handlers.turns.release(ticket)

    async def answer(self, message: JSONObject, ticket: int | None = None) -> None:
        """Answer one request with a POSTed JSON-RPC response; ``ticket`` (its turn) is released
        here in any case."""
        try:
            await self._answer_in_turn(message, ticket)
        finally:
            if ticket is not None:
                self._handlers.turns.release(ticket)

    async def answer_in_background(self, message: JSONObject, ticket: int | None) -> None:
        """A request from the GET stream belongs to no call of ours: a handler that fails is
        reported to the server and logged, instead of failing a call."""
        try:
            await self.answer(message, ticket)
        except Exception as exc:
            logger.warning("answering the server's %r from the GET stream failed: %s", message.get("method"), exc)
            error: JSONObject = {"code": -32603, "message": f"the client could not answer: {type(exc).__name__}"}
            with contextlib.suppress(httpx.HTTPError, StatusCodeError, SessionGoneError):
                await self._http.post_message({"jsonrpc": "2.0", "id": message["id"], "error": error})

    async def _answer_in_turn(self, message: JSONObject, ticket: int | None) -> None:
        request_id = message["id"]
        method = message.get("method")
        reply: JSONObject = {"jsonrpc": "2.0", "id": request_id}
        if method == "ping":
            reply["result"] = {}
        else:
            try:
                reply["result"] = await self._run_handler(request_id, method, message.get("params"), ticket)
            except McpError as exc:
                # No handler for the method (-32601) or params that do not parse (-32602): the
                # same rule as an MRTR round, except that here the server is waiting, so it is told.
                reply["error"] = {"code": exc.code, "message": exc.message}
        try:
            await self._http.post_message(reply)
        except SessionGoneError:
            # Not a reason to re-initialise and resend: the call itself has started and may have
            # done its work. It ends here, with the status the server gave.
            raise StatusCodeError(
                404, "the server ended the MCP session while the call waited for our answer"
            ) from None

    async def _run_handler(self, request_id: RequestId, method: Any, params: Any, ticket: int | None) -> JSONObject:
        if not isinstance(method, str) or not (params is None or isinstance(params, dict)):
            raise McpError(-32600, "invalid server request")
        request = InputRequest(method=method, params=params)
        limit = self._options.input_required_config.round_timeout
        with anyio.move_on_after(limit if limit > 0 else math.inf) as scope:
            answers = await self._handlers.answer_all(
                {str(request_id): request}, round_number=next(self._asked), tickets={str(request_id): ticket}
            )
            return answers[str(request_id)]
        assert scope.cancelled_caught
        raise RoundTimeoutError(f"input handler exceeded round_timeout={limit}s", limit)
