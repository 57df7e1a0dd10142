"""One POST within an open 2025-era session: checked, then sent where it belongs.

A message is one of three things. A response to one of the server's requests goes to
:class:`~fastapi_mrtr.transport.legacy.answers.ClientAnswers`; a notification is taken (a cancel
ends its call) with 202; a request is answered by the session's own methods
(:mod:`~fastapi_mrtr.transport.legacy.builtins`), by a call that may ask the client
(:mod:`~fastapi_mrtr.transport.legacy.calls`), or by the modern method handler, its result in
2025 shapes. Anything malformed is refused: the refusal is raised, and the endpoint answers it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping

from starlette.types import Receive, Scope, Send

from fastapi_mrtr.transport.http import send_empty, send_json
from fastapi_mrtr.transport.legacy.answers import ClientAnswers
from fastapi_mrtr.transport.legacy.builtins import Builtin
from fastapi_mrtr.transport.legacy.calls import CALL_METHODS, SessionCalls, SessionView
from fastapi_mrtr.transport.legacy.cluster import SessionCluster
from fastapi_mrtr.transport.legacy.replies import invalid_request, relay_down, rpc_message, valid_id
from fastapi_mrtr.transport.legacy.shapes import Handler, answer_rpc, legacy_error, operation, session_request
from fastapi_mrtr.wire.errors import METHOD_NOT_FOUND, McpError
from fastapi_mrtr.wire.json_codec import encode
from fastapi_mrtr.wire.protocol import JSONObject, RequestId

MODERN_ONLY_METHODS = frozenset({"server/discover", "subscriptions/listen"})


class SessionRequests:
    """Serves the POSTs of open sessions."""

    def __init__(
        self,
        methods: Callable[[], Mapping[str, Handler]],
        builtins: Mapping[str, Builtin],
        calls: SessionCalls,
        answers: ClientAnswers,
        cluster: SessionCluster,
    ) -> None:
        self._methods = methods
        self._builtins = builtins
        self.calls = calls
        self.answers = answers
        self.cluster = cluster

    async def post(
        self,
        session: SessionView,
        message: JSONObject,
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: dict[str, str],
    ) -> None:
        """A message of ``session``: an answer to the server, a notification or a request."""
        info = session.info
        request_id = message.get("id") if valid_id(message.get("id")) else None
        version = headers.get("mcp-protocol-version")
        if version is not None and version.strip() != info.protocol_version:
            raise invalid_request(
                f"Bad request: MCP-Protocol-Version {version.strip()!r} is not this session's "
                f"({info.protocol_version})",
                request_id,
            )
        if message.get("jsonrpc") != "2.0":
            raise invalid_request('Invalid request: needs jsonrpc "2.0"', request_id)
        method = message.get("method")
        if method is None and "id" in message:
            await self.answers.receive(info, message, send)
            return
        if not isinstance(method, str) or not method:
            raise invalid_request("Invalid request: needs a method", request_id)
        params = message.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise invalid_request("Invalid request: params must be an object", request_id)
        if "id" not in message:
            await self._notification(session, method, params)
            await send_empty(send, 202)
            return
        if request_id is None:
            raise invalid_request("Invalid request: id must be a string or an integer")
        await self._request(session, (request_id, method, params), scope, receive, send, headers)

    async def _notification(self, session: SessionView, method: str, params: JSONObject) -> None:
        if method == "notifications/cancelled":
            call_id = params.get("requestId")
            key = session.info.key
            if not self.calls.cancel(key, call_id) and self.cluster.relay is not None and valid_id(call_id):
                with contextlib.suppress(Exception):  # best effort, as cancellation is in the spec
                    await self.cluster.relay.broadcast({"t": "cancel", "s": key, "id": call_id})
        # notifications/initialized, roots/list_changed, the client's own progress: nothing to do.

    async def _request(
        self,
        session: SessionView,
        request: tuple[RequestId, str, JSONObject],
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: dict[str, str],
    ) -> None:
        request_id, method, params = request
        if method == "initialize":
            raise invalid_request("Invalid request: this session is already initialized", request_id)
        builtin = self._builtins.get(method)
        if builtin is not None:
            await send_json(send, 200, encode(await self._builtin(builtin, session, request)))
            return
        handler = None if method in MODERN_ONLY_METHODS else self._methods().get(method)
        if handler is None:
            # An answer, not a refusal: the 2025 era sends a method's errors in a 200 response.
            error = legacy_error(McpError(METHOD_NOT_FOUND, f"Method not found: {method}"))
            await send_json(send, 200, encode(rpc_message(request_id, error=error)))
            return
        if method in CALL_METHODS:
            await self.calls.run(session, handler, request, scope, receive, send, headers)
            return
        rpc = session_request(session.info, session.log_level, request_id, method, params, scope, headers, receive)
        await send_json(send, 200, encode(await answer_rpc(handler, rpc)))

    async def _builtin(
        self, builtin: Builtin, session: SessionView, request: tuple[RequestId, str, JSONObject]
    ) -> JSONObject:
        request_id, method, params = request
        try:
            return rpc_message(request_id, result=await builtin(session.info, params))
        except McpError as exc:
            return rpc_message(request_id, error=legacy_error(exc, operation(method, params)))
        except Exception as exc:  # Redis
            raise relay_down(exc, request_id) from exc
