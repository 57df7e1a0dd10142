"""The POSTs of a 2025-era session: ``initialize``, then requests, notifications and answers.

:class:`SessionRequests` checks the JSON-RPC envelope (refusing what is malformed, raised as a
:class:`~fastapi_mrtr.wire.errors.RequestRejectedError`) and sends each message where it goes: an
answer to one of the server's requests to :mod:`~fastapi_mrtr.transport.legacy.answers`, a
session's own method to :mod:`~fastapi_mrtr.transport.legacy.builtins`, a call that may ask the
client to :mod:`~fastapi_mrtr.transport.legacy.calls`, any other method straight to its handler,
with a ``_meta`` built from the session (:func:`session_request`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping

from starlette.types import Receive, Scope, Send

from fastapi_mrtr.engine.options import ServerOptions
from fastapi_mrtr.telemetry.propagation import carried
from fastapi_mrtr.transport.callers import caller_key
from fastapi_mrtr.transport.http import send_empty, send_json
from fastapi_mrtr.transport.legacy.answers import ClientAnswers
from fastapi_mrtr.transport.legacy.builtins import SessionBuiltins
from fastapi_mrtr.transport.legacy.calls import CALL_METHODS, SessionCalls
from fastapi_mrtr.transport.legacy.cluster import SessionCluster
from fastapi_mrtr.transport.legacy.replies import invalid_params, invalid_request, relay_down, rpc_message, valid_id
from fastapi_mrtr.transport.legacy.session_id import SessionInfo, SessionSealer
from fastapi_mrtr.transport.legacy.sessions import LiveSessions
from fastapi_mrtr.transport.legacy.shapes import Handler, answer_rpc, legacy_error, operation
from fastapi_mrtr.transport.request import RpcRequest
from fastapi_mrtr.transport.tracing import itself, notified, traced
from fastapi_mrtr.wire.errors import METHOD_NOT_FOUND, McpError
from fastapi_mrtr.wire.json_codec import encode
from fastapi_mrtr.wire.protocol import (
    LEGACY_PROTOCOL_VERSIONS,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    PROTOCOL_VERSION,
    JSONObject,
    RequestId,
)

MODERN_ONLY_METHODS = frozenset({"server/discover", "subscriptions/listen"})


class SessionRequests:
    """What a POST to a 2025-era endpoint asks, checked and sent to what answers it."""

    def __init__(
        self,
        options: ServerOptions,
        ids: SessionSealer,
        methods: Callable[[], Mapping[str, Handler]],
        capabilities: Callable[[], JSONObject],
        server_info: JSONObject,
        live: LiveSessions,
        cluster: SessionCluster,
    ) -> None:
        self.options = options
        self._ids = ids
        self._methods = methods
        self._capabilities = capabilities
        self._server_info = server_info
        self.live = live
        self.cluster = cluster
        self.answers = ClientAnswers(live, cluster)
        self.calls = SessionCalls(options, live, cluster)
        self._builtins = SessionBuiltins(options, methods, cluster).methods

    async def initialize(self, message: JSONObject, headers: dict[str, str], send: Send) -> None:
        """Open a session: its id seals what it is (:mod:`~fastapi_mrtr.transport.legacy.session_id`)."""
        request_id = message.get("id")
        params = message.get("params")
        if not valid_id(request_id):
            raise invalid_request("Invalid request: initialize needs an id")
        if not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), str):
            raise invalid_params("initialize needs params.protocolVersion", request_id)
        capabilities = params.get("capabilities")
        client_info = params.get("clientInfo")
        if not isinstance(capabilities, dict) or (client_info is not None and not isinstance(client_info, dict)):
            raise invalid_params("initialize needs params.capabilities (an object) and params.clientInfo", request_id)
        requested = params["protocolVersion"]
        version = requested if requested in LEGACY_PROTOCOL_VERSIONS else LEGACY_PROTOCOL_VERSIONS[0]
        try:
            session_id, _ = self._ids.mint(
                version, capabilities, client_info or {}, self.options.principal_resolver(headers)
            )
        except ValueError as exc:
            raise invalid_params(str(exc), request_id) from None
        result: JSONObject = {
            "protocolVersion": version,
            "capabilities": self.server_capabilities(),
            "serverInfo": self._server_info,
        }
        if self.options.instructions:
            result["instructions"] = self.options.instructions
        body = encode(rpc_message(request_id, result=result))
        await send_json(send, 200, body, [(b"mcp-session-id", session_id.encode())])

    def server_capabilities(self) -> JSONObject:
        capabilities = {name: dict(value) for name, value in self._capabilities().items()}
        capabilities["logging"] = {}
        # Extensions of the 2026-07-28 wire (tasks) are not defined on a 2025-era session.
        capabilities.pop("extensions", None)
        return capabilities

    async def handle(
        self,
        info: SessionInfo,
        log_level: str | None,
        message: JSONObject,
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: dict[str, str],
    ) -> None:
        """One message POSTed to the open session ``info`` (which set ``log_level``)."""
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
            await notified(
                self.options.telemetry, method, params, scope, lambda: self._notification(info, method, params),
                protocol_version=info.protocol_version, session_id=info.key,
            )  # fmt: skip
            await send_empty(send, 202)
            return
        if request_id is None:
            raise invalid_request("Invalid request: id must be a string or an integer")
        rpc = session_request(info, log_level, request_id, method, params, scope, headers, receive)
        await self._request(info, rpc, send)

    async def _notification(self, info: SessionInfo, method: str, params: JSONObject) -> None:
        if method == "notifications/cancelled":
            call_id = params.get("requestId")
            if not self.live.cancel(info.key, call_id) and self.cluster.relay is not None and valid_id(call_id):
                with contextlib.suppress(Exception):  # best effort, as cancellation is in the spec
                    await self.cluster.relay.broadcast({"t": "cancel", "s": info.key, "id": call_id})
        # notifications/initialized, roots/list_changed, the client's own progress: nothing to do.

    async def _request(self, info: SessionInfo, rpc: RpcRequest, send: Send) -> None:
        method = rpc.method
        if method == "initialize":  # before the handlers, which have none: it is no unknown method here
            raise invalid_request("Invalid request: this session is already initialized", rpc.id)
        builtin = self._builtins.get(method)
        handler = None if method in MODERN_ONLY_METHODS else self._methods().get(method)
        if builtin is None and handler is not None and method in CALL_METHODS:
            await self.calls.run(info, caller_key(rpc.scope), handler, rpc, send)
            return
        message = await traced(
            self.options.telemetry, method, rpc.id, rpc.params, rpc.scope, lambda: self._answer(info, rpc, handler),
            itself, protocol_version=info.protocol_version, session_id=info.key,
        )  # fmt: skip
        await send_json(send, 200, encode(message))

    async def _answer(self, info: SessionInfo, rpc: RpcRequest, handler: Handler | None) -> JSONObject:
        """The response to a request that is no call: a session's own method, or a handler's."""
        builtin = self._builtins.get(rpc.method)
        if builtin is not None:
            try:
                return rpc_message(rpc.id, result=await builtin(info, rpc.params))
            except McpError as exc:
                return rpc_message(rpc.id, error=legacy_error(exc, operation(rpc.method, rpc.params)))
            except Exception as exc:  # Redis
                raise relay_down(exc, rpc.id) from exc
        if handler is None:
            # An answer, not a refusal: the 2025 era sends a method's errors in a 200 response.
            return rpc_message(
                rpc.id, error=legacy_error(McpError(METHOD_NOT_FOUND, f"Method not found: {rpc.method}"))
            )
        return await answer_rpc(handler, rpc)


def session_request(
    info: SessionInfo,
    log_level: str | None,
    request_id: RequestId,
    method: str,
    params: JSONObject,
    scope: Scope,
    headers: dict[str, str],
    receive: Receive,
) -> RpcRequest:
    """The request as the method handlers see it: a ``_meta`` built from the session."""
    legacy_meta = params.get("_meta")
    meta: JSONObject = {
        META_PROTOCOL_VERSION: PROTOCOL_VERSION,
        META_CLIENT_CAPABILITIES: info.client_capabilities,
        META_CLIENT_INFO: info.client_info,
        # The 2025 era sends log messages unless the client raised the level (logging/setLevel).
        META_LOG_LEVEL: log_level or "debug",
    }
    if isinstance(legacy_meta, dict):
        if "progressToken" in legacy_meta:
            meta["progressToken"] = legacy_meta["progressToken"]
        if "traceparent" in legacy_meta:  # SEP-414's keys pass on, for the server span's parent
            meta.update(carried(legacy_meta))
    return RpcRequest(request_id, method, {**params, "_meta": meta}, meta, scope, headers, receive, legacy=True)
