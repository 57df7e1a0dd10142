"""The MCP endpoint as a pure ASGI app: one JSON-RPC request per POST, validated, then dispatched.

:mod:`~fastapi_mrtr.transport.request` checks the request; this module answers it: the method's
handler, as one JSON body or as an SSE stream when the request asked for notifications. Every
error has a JSON-RPC body echoing the request id and the right HTTP status.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from starlette.types import Receive, Scope, Send

from fastapi_mrtr.engine.options import ServerOptions
from fastapi_mrtr.state.sealing import StateKeyRing
from fastapi_mrtr.transport.http import (
    SSE_HEADERS,
    header_map,
    send_empty,
    send_json,
    send_refusal,
    sse_event,
    wait_disconnect,
)
from fastapi_mrtr.transport.legacy.endpoint import LegacyEndpoint
from fastapi_mrtr.transport.legacy.era import is_legacy_post, names_session, opens_legacy_session
from fastapi_mrtr.transport.request import RequestValidator, RpcRequest
from fastapi_mrtr.transport.tracing import nothing, notified, response_of, traced
from fastapi_mrtr.wire.errors import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
    McpError,
    RequestRejectedError,
    ServerError,
    http_status_of,
)
from fastapi_mrtr.wire.json_codec import encode
from fastapi_mrtr.wire.protocol import (
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    SUPPORTED_PROTOCOL_VERSIONS,
    JSONObject,
)

logger = logging.getLogger("fastapi_mrtr")

Handler = Callable[[RpcRequest], Awaitable[JSONObject]]
StreamHandler = Callable[[RpcRequest, Send], Awaitable[None]]


def error_body(request_id: Any, code: int, message: str, data: Any = None) -> bytes:
    """A JSON-RPC error response, for the stream handlers that answer errors of their own."""
    return encode({"jsonrpc": "2.0", "id": request_id, "error": McpError(code, message, data).to_error()})


class RpcEndpoint:
    """Validates the HTTP request and the JSON-RPC envelope, then calls the method's handler."""

    def __init__(
        self,
        options: ServerOptions,
        methods: Callable[[], Mapping[str, Handler]],
        streams: Callable[[], Mapping[str, StreamHandler]],
        capabilities: Callable[[], JSONObject] = dict,
        keys: StateKeyRing | None = None,
    ) -> None:
        self.options = options
        self._validator = RequestValidator(options)
        self._methods = methods
        self._streams = streams
        self.server_info: JSONObject = {"name": options.name, "version": options.version}
        if options.title:
            self.server_info["title"] = options.title
        self.legacy: LegacyEndpoint | None = None
        if options.input_required_config.legacy_shim:
            # Session ids are sealed with the requestState keys (an ephemeral ring when none given).
            ring = keys if keys is not None else StateKeyRing.ephemeral()
            self.legacy = LegacyEndpoint(options, ring, methods, capabilities, self.server_info)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if _path_below_endpoint(scope) not in ("", "/"):
            # A mount hands over every path below it; only the endpoint's own path is MCP.
            await send_json(send, 404, b'{"detail":"Not Found"}')
            return
        headers = header_map(scope)
        try:
            if self.legacy is not None and scope["method"] in ("GET", "DELETE") and names_session(headers):
                self._validator.check_peer(scope, headers)
                await (self.legacy.get if scope["method"] == "GET" else self.legacy.delete)(
                    scope, receive, send, headers
                )
                return
            message = await self._validator.read_message(scope, receive, headers)
            if self.legacy is not None and is_legacy_post(headers, message):
                await self.legacy.post(message, scope, receive, send, headers)
                return
            if self.legacy is None and opens_legacy_session(headers, message):
                raise _modern_only(message)
            rpc = self._validator.envelope(message, scope, receive, headers)
        except RequestRejectedError as refusal:  # every refusal of either era, for every verb
            await send_refusal(send, refusal)
            return
        if rpc is None:  # a notification: nothing to do on a stateless server but trace it
            await notified(
                self.options.telemetry, message["method"], message.get("params") or {}, scope,
                protocol_version=headers["mcp-protocol-version"].strip(),
            )  # fmt: skip
            await send_empty(send, 202)
            return
        stream = self._streams().get(rpc.method)
        if stream is not None:
            await self._serve_stream(stream, rpc, send)
        elif self._wants_stream(rpc, headers):
            await self._answer_streaming(rpc, send)
        else:
            status, body = await self._answer(rpc)
            await send_json(send, status, body)

    def _serve_stream(self, stream: StreamHandler, rpc: RpcRequest, send: Send) -> Awaitable[None]:
        """A method that answers with its own stream (``subscriptions/listen``): one traced
        operation lasting the whole stream (the errors it sends itself are not seen)."""
        version = rpc.meta.get(META_PROTOCOL_VERSION)
        return traced(
            self.options.telemetry, rpc.method, rpc.id, rpc.params, rpc.scope, lambda: stream(rpc, send), nothing,
            meta=rpc.meta, protocol_version=version if isinstance(version, str) else None,
        )  # fmt: skip

    def _wants_stream(self, rpc: RpcRequest, headers: dict[str, str]) -> bool:
        # SSE only when the request can receive notifications and the client takes a stream.
        if rpc.progress_token is None and rpc.log_level is None:
            return False
        return "text/event-stream" in headers.get("accept", "")

    # --- answering --------------------------------------------------------------------------------

    async def _result_or_error(self, rpc: RpcRequest) -> tuple[int, JSONObject]:
        handler = self._methods().get(rpc.method)
        try:
            if handler is None:
                raise ServerError(METHOD_NOT_FOUND, f"Method not found: {rpc.method}")
            result = await handler(rpc)
        except McpError as exc:
            # A ServerError says its status; a bare McpError (e.g. a resource's) gets its code's.
            status = exc.http_status if isinstance(exc, ServerError) else http_status_of(exc.code)
            return status, {"jsonrpc": "2.0", "id": rpc.id, "error": exc.to_error()}
        except Exception:
            logger.exception("unexpected error while handling %s", rpc.method)
            error = ServerError(INTERNAL_ERROR, "Internal error")
            return error.http_status, {"jsonrpc": "2.0", "id": rpc.id, "error": error.to_error()}
        meta = {**(result.get("_meta") or {}), META_SERVER_INFO: self.server_info}
        return 200, {"jsonrpc": "2.0", "id": rpc.id, "result": {**result, "_meta": meta}}

    def _outcome(self, rpc: RpcRequest) -> Awaitable[tuple[int, JSONObject]]:
        """``_result_or_error``, as one traced MCP operation when an OpenTelemetry SDK is set up."""
        version = rpc.meta.get(META_PROTOCOL_VERSION)
        return traced(
            self.options.telemetry, rpc.method, rpc.id, rpc.params, rpc.scope, lambda: self._result_or_error(rpc),
            response_of, meta=rpc.meta, protocol_version=version if isinstance(version, str) else None,
        )  # fmt: skip

    async def _answer(self, rpc: RpcRequest) -> tuple[int, bytes]:
        status, message = await self._outcome(rpc)
        return status, encode(message)

    async def _answer_streaming(self, rpc: RpcRequest, send: Send) -> None:
        stream = _LazyStream(send)
        rpc.notify = stream.notify
        work = asyncio.ensure_future(self._outcome(rpc))
        watcher = asyncio.ensure_future(wait_disconnect(rpc.receive))
        done, _ = await asyncio.wait({work, watcher}, return_when=asyncio.FIRST_COMPLETED)
        if work not in done:  # the client closed the stream: that cancels the request
            work.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await work
            # No message follows a cancel; the empty end only completes the response (see
            # RequestValidator.read_message on a client that left, for why one must be completed).
            await stream.start()
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        watcher.cancel()
        status, message = work.result()
        if not stream.started and "error" in message:
            await send_json(send, status, encode(message))
            return
        await stream.start()
        await send({"type": "http.response.body", "body": sse_event(message), "more_body": False})


class _LazyStream:
    """An SSE answer that starts with its first notification: an error before any is plain JSON."""

    def __init__(self, send: Send) -> None:
        self.send = send
        self.started = False

    async def start(self) -> None:
        if not self.started:
            self.started = True
            await self.send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})

    async def notify(self, method: str, params: JSONObject) -> None:
        await self.start()
        event = sse_event({"jsonrpc": "2.0", "method": method, "params": params})
        await self.send({"type": "http.response.body", "body": event, "more_body": True})


def _modern_only(message: JSONObject) -> RequestRejectedError:
    """``initialize`` on a server without the legacy shim: name the versions it speaks (the spec's SHOULD)."""
    params = message.get("params")
    requested = params.get("protocolVersion") if isinstance(params, dict) else None
    supported = list(SUPPORTED_PROTOCOL_VERSIONS)
    return RequestRejectedError(
        UNSUPPORTED_PROTOCOL_VERSION,
        f"Unsupported protocol version: this server speaks MCP {', '.join(supported)} only, which has no "
        "initialize; send each request with its _meta (protocolVersion, clientCapabilities)",
        {"supported": supported, "requested": requested},
        request_id=message.get("id") if isinstance(message.get("id"), (str, int)) else None,
    )


def _path_below_endpoint(scope: Scope) -> str:
    """The request path past the endpoint's own, as a mount leaves it ("" or "/" for the endpoint).

    Only a path that starts with the root path tells where the endpoint sits (Starlette routes
    the same way); in any other layout the endpoint cannot tell and serves the request.
    """
    path: str = scope["path"]
    root_path: str = scope.get("root_path", "")
    if root_path and path.startswith(root_path) and path[len(root_path) : len(root_path) + 1] in ("", "/"):
        return path[len(root_path) :]
    return ""


async def _lifespan(receive: Receive, send: Send) -> None:
    """Served on its own (not mounted), the endpoint needs no start-up work."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
