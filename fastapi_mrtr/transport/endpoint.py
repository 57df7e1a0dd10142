"""The MCP endpoint as a pure ASGI app: one JSON-RPC request per POST, validated, then dispatched.

Validation order follows the conformance reference (spec-notes §3.4): version header vs ``_meta``,
required ``_meta`` fields, header mismatch, unsupported version, then ``Mcp-Method``/``Mcp-Name``
and dispatch. Every error has a JSON-RPC body echoing the request id and the right HTTP status.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from starlette.types import Receive, Scope, Send

from fastapi_mrtr.engine.call import Notify
from fastapi_mrtr.engine.options import ServerOptions
from fastapi_mrtr.transport.http import (
    SSE_HEADERS,
    header_map,
    host_allowed,
    in_process_test_client,
    origin_allowed,
    read_body,
    send_empty,
    send_json,
    sse_event,
    wait_disconnect,
)
from fastapi_mrtr.transport.missing_pieces import missing_message, missing_pieces, refusal_code, what_to_send
from fastapi_mrtr.wire.errors import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    BodyTooLargeError,
    ClientDisconnectedError,
    McpError,
    RequestRejectedError,
    ServerError,
)
from fastapi_mrtr.wire.headers import decode_header_value
from fastapi_mrtr.wire.json_codec import decode, encode
from fastapi_mrtr.wire.protocol import (
    LOG_LEVELS,
    META_CLIENT_CAPABILITIES,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    NAMED_METHODS,
    SUPPORTED_PROTOCOL_VERSIONS,
    JSONObject,
    RequestId,
)

logger = logging.getLogger("fastapi_mrtr")

STATUS_OF_CODE = {METHOD_NOT_FOUND: 404, INTERNAL_ERROR: 500}


@dataclass
class RpcRequest:
    """One validated JSON-RPC request, as the method handlers see it."""

    id: RequestId
    method: str
    params: JSONObject
    meta: JSONObject
    scope: Scope
    headers: dict[str, str]
    receive: Receive
    notify: Notify | None = None

    @property
    def client_capabilities(self) -> JSONObject:
        caps = self.meta.get(META_CLIENT_CAPABILITIES)
        return caps if isinstance(caps, dict) else {}

    @property
    def progress_token(self) -> str | int | None:
        token = self.meta.get("progressToken")
        return token if isinstance(token, (str, int)) and not isinstance(token, bool) else None

    @property
    def log_level(self) -> str | None:
        level = self.meta.get(META_LOG_LEVEL)
        return level if level in LOG_LEVELS else None


Handler = Callable[[RpcRequest], Awaitable[JSONObject]]
StreamHandler = Callable[[RpcRequest, Send], Awaitable[None]]


def _unsupported_version(version: str, request_id: RequestId | None = None) -> RequestRejectedError:
    """The -32022 refusal of a protocol version this server does not speak."""
    return RequestRejectedError(
        400,
        UNSUPPORTED_PROTOCOL_VERSION,
        "Unsupported protocol version",
        {"supported": list(SUPPORTED_PROTOCOL_VERSIONS), "requested": version},
        request_id=request_id,
    )


def error_body(request_id: Any, code: int, message: str, data: Any = None) -> bytes:
    error: JSONObject = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return encode({"jsonrpc": "2.0", "id": request_id, "error": error})


class RpcEndpoint:
    """Validates the HTTP request and the JSON-RPC envelope, then calls the method's handler."""

    def __init__(
        self,
        options: ServerOptions,
        methods: Callable[[], Mapping[str, Handler]],
        streams: Callable[[], Mapping[str, StreamHandler]],
    ) -> None:
        self.options = options
        self._methods = methods
        self._streams = streams
        self.server_info: JSONObject = {"name": options.name, "version": options.version}
        if options.title:
            self.server_info["title"] = options.title

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
            rpc = await self._accept(scope, receive, headers)
        except RequestRejectedError as reject:
            body = error_body(reject.request_id, reject.code, reject.message, reject.data)
            extra = [(b"allow", b"POST")] if reject.http_status == 405 else None
            await send_json(send, reject.http_status, body, extra)
            return
        except ClientDisconnectedError:
            await _answer_departed_client(send)
            return
        if rpc is None:  # a notification
            await send_empty(send, 202)
            return
        stream = self._streams().get(rpc.method)
        if stream is not None:
            await stream(rpc, send)
        elif self._wants_stream(rpc, headers):
            await self._answer_streaming(rpc, send)
        else:
            status, body = await self._answer(rpc)
            await send_json(send, status, body)

    # --- validation -------------------------------------------------------------------------------

    async def _accept(self, scope: Scope, receive: Receive, headers: dict[str, str]) -> RpcRequest | None:
        options = self.options
        if not origin_allowed(headers.get("origin"), options.allowed_origins):
            raise RequestRejectedError(403, INVALID_REQUEST, "Forbidden: Origin not allowed")
        host = headers.get("host")
        if not host_allowed(host, options.allowed_hosts) and not in_process_test_client(scope, host):
            raise RequestRejectedError(
                421, INVALID_REQUEST, "Misdirected request: Host not allowed (see allowed_hosts)"
            )
        if scope["method"] != "POST":
            raise RequestRejectedError(405, INVALID_REQUEST, "Method not allowed: this MCP endpoint accepts POST only")
        content_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if content_type != "application/json":
            raise RequestRejectedError(415, INVALID_REQUEST, "Unsupported media type: send application/json")
        if not _accepts_json(headers.get("accept")):
            raise RequestRejectedError(
                406, INVALID_REQUEST, "Not acceptable: accept application/json or text/event-stream"
            )
        try:
            raw = await read_body(receive, options.max_body_bytes, headers.get("content-length"))
        except BodyTooLargeError:
            raise RequestRejectedError(
                413, INVALID_REQUEST, f"Request body too large (limit {options.max_body_bytes} bytes)"
            ) from None
        try:
            message = decode(raw)
        except (ValueError, UnicodeDecodeError):
            raise RequestRejectedError(400, PARSE_ERROR, "Parse error: the body is not valid JSON") from None
        return self._envelope(message, scope, receive, headers)

    def _envelope(self, message: Any, scope: Scope, receive: Receive, headers: dict[str, str]) -> RpcRequest | None:
        if isinstance(message, list):
            raise RequestRejectedError(400, INVALID_REQUEST, "Invalid request: batches are not supported")
        if not isinstance(message, dict):
            raise RequestRejectedError(400, INVALID_REQUEST, "Invalid request: expected a JSON-RPC object")
        raw_id = message.get("id")
        request_id = raw_id if _valid_id(raw_id) else None
        method = message.get("method")
        if message.get("jsonrpc") != "2.0" or not isinstance(method, str) or not method:
            raise RequestRejectedError(
                400, INVALID_REQUEST, 'Invalid request: needs jsonrpc "2.0" and a method', request_id=request_id
            )
        params = message.get("params", {})
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise RequestRejectedError(
                400, INVALID_REQUEST, "Invalid request: params must be an object", request_id=request_id
            )
        if "id" not in message:
            # Notifications need no answer and change nothing on a stateless server, but the
            # transport's headers are required on every POST, so a bad one is still refused.
            self._check_notification_headers(method, headers)
            return None
        if request_id is None:
            raise RequestRejectedError(400, INVALID_REQUEST, "Invalid request: id must be a string or an integer")
        meta = self._check_meta(params, method, headers, request_id)
        return RpcRequest(request_id, method, params, meta, scope, headers, receive)

    def _check_notification_headers(self, method: str, headers: dict[str, str]) -> None:
        """Refuse (id-less) a notification whose MCP-Protocol-Version is missing or unsupported,
        or whose Mcp-Method, when sent, names another method."""
        version = headers.get("mcp-protocol-version")
        if version is None:
            raise RequestRejectedError(400, HEADER_MISMATCH, "Header mismatch: MCP-Protocol-Version header is required")
        if version.strip() not in SUPPORTED_PROTOCOL_VERSIONS:
            raise _unsupported_version(version)
        header_method = headers.get("mcp-method")
        if header_method is not None and header_method.strip() != method:
            raise RequestRejectedError(
                400,
                HEADER_MISMATCH,
                "Header mismatch: Mcp-Method must equal the notification's method",
                {"header": header_method, "method": method},
            )

    def _check_meta(
        self, params: JSONObject, method: str, headers: dict[str, str], request_id: RequestId
    ) -> JSONObject:
        missing = missing_pieces(params, method, headers)
        if len(missing) > 1:
            data = {"missing": missing, "send": what_to_send(params, method)}
            raise RequestRejectedError(
                400, refusal_code(missing), missing_message(missing), data, request_id=request_id
            )
        header_version = headers.get("mcp-protocol-version")
        meta = params.get("_meta")
        if meta is not None and header_version is None:
            raise RequestRejectedError(
                400, HEADER_MISMATCH, "Header mismatch: MCP-Protocol-Version header is required", request_id=request_id
            )
        if not isinstance(meta, dict):
            raise RequestRejectedError(400, INVALID_PARAMS, "Invalid params: _meta is required", request_id=request_id)
        version = meta.get(META_PROTOCOL_VERSION)
        if not isinstance(version, str):
            raise RequestRejectedError(
                400,
                INVALID_PARAMS,
                f"Invalid params: _meta[{META_PROTOCOL_VERSION!r}] is required",
                request_id=request_id,
            )
        if not isinstance(meta.get(META_CLIENT_CAPABILITIES), dict):
            raise RequestRejectedError(
                400,
                INVALID_PARAMS,
                f"Invalid params: _meta[{META_CLIENT_CAPABILITIES!r}] must be an object",
                request_id=request_id,
            )
        if header_version != version:
            raise RequestRejectedError(
                400,
                HEADER_MISMATCH,
                "Header mismatch: MCP-Protocol-Version differs from _meta",
                {"header": header_version, "meta": version},
                request_id=request_id,
            )
        if version not in SUPPORTED_PROTOCOL_VERSIONS:
            raise _unsupported_version(version, request_id)
        self._check_named_headers(params, method, headers, request_id)
        return meta

    def _check_named_headers(
        self, params: JSONObject, method: str, headers: dict[str, str], request_id: RequestId
    ) -> None:
        header_method = headers.get("mcp-method")
        if header_method is None or header_method.strip() != method:
            raise RequestRejectedError(
                400,
                HEADER_MISMATCH,
                "Header mismatch: Mcp-Method must equal the request's method",
                {"header": header_method, "method": method},
                request_id=request_id,
            )
        field = NAMED_METHODS.get(method)
        if field is None:
            return
        expected = params.get(field)
        if not isinstance(expected, str):
            return  # the method handler reports the missing name or uri as invalid params
        header_name = headers.get("mcp-name")
        if header_name is None or decode_header_value(header_name) != expected:
            raise RequestRejectedError(
                400, HEADER_MISMATCH, f"Header mismatch: Mcp-Name must equal params.{field}", request_id=request_id
            )

    def _wants_stream(self, rpc: RpcRequest, headers: dict[str, str]) -> bool:
        # SSE only when the request can receive notifications and the client takes a stream.
        if rpc.progress_token is None and rpc.log_level is None:
            return False
        return "text/event-stream" in headers.get("accept", "")

    # --- answering --------------------------------------------------------------------------------

    async def _result_or_error(self, rpc: RpcRequest) -> tuple[int, JSONObject]:
        handler = self._methods().get(rpc.method)
        if handler is None:
            error = McpError(METHOD_NOT_FOUND, f"Method not found: {rpc.method}")
            return 404, {"jsonrpc": "2.0", "id": rpc.id, "error": error.to_error()}
        try:
            result = await handler(rpc)
        except McpError as exc:
            # A ServerError says its status; a bare McpError (e.g. a resource's) gets its code's.
            status = exc.http_status if isinstance(exc, ServerError) else STATUS_OF_CODE.get(exc.code, 400)
            return status, {"jsonrpc": "2.0", "id": rpc.id, "error": exc.to_error()}
        except Exception:
            logger.exception("unexpected error while handling %s", rpc.method)
            error = ServerError(INTERNAL_ERROR, "Internal error", http_status=500)
            return 500, {"jsonrpc": "2.0", "id": rpc.id, "error": error.to_error()}
        meta = {**(result.get("_meta") or {}), META_SERVER_INFO: self.server_info}
        return 200, {"jsonrpc": "2.0", "id": rpc.id, "result": {**result, "_meta": meta}}

    async def _answer(self, rpc: RpcRequest) -> tuple[int, bytes]:
        status, message = await self._result_or_error(rpc)
        return status, encode(message)

    async def _answer_streaming(self, rpc: RpcRequest, send: Send) -> None:
        started = False

        async def start() -> None:
            nonlocal started
            if not started:
                started = True
                await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})

        async def notify(method: str, params: JSONObject) -> None:
            await start()
            event = sse_event({"jsonrpc": "2.0", "method": method, "params": params})
            await send({"type": "http.response.body", "body": event, "more_body": True})

        rpc.notify = notify
        work = asyncio.ensure_future(self._result_or_error(rpc))
        watcher = asyncio.ensure_future(wait_disconnect(rpc.receive))
        done, _ = await asyncio.wait({work, watcher}, return_when=asyncio.FIRST_COMPLETED)
        if work not in done:  # the client closed the stream: that cancels the request
            work.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await work
            # No message follows a cancel; the empty end only completes the response (see
            # _answer_departed_client for why one must be completed).
            await start()
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        watcher.cancel()
        status, message = work.result()
        if not started and "error" in message:
            await send_json(send, status, encode(message))
            return
        await start()
        await send({"type": "http.response.body", "body": sse_event(message), "more_body": False})


@functools.lru_cache(maxsize=256)  # clients send a handful of Accept values; the answer is pure
def _accepts_json(accept: str | None) -> bool:
    if accept is None:
        return True
    accept = accept.lower()
    return any(kind in accept for kind in ("application/json", "text/event-stream", "*/*", "application/*"))


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


async def _answer_departed_client(send: Send) -> None:
    """Answer a request whose client left before its body was complete: nothing was dispatched.

    The server drops the answer (the socket is closed), but one must be sent: Starlette's
    ``BaseHTTPMiddleware`` (every ``@app.middleware("http")``) raises "No response returned."
    when the app below it returns without one, and the server logs that as a traceback. A 400,
    as FastAPI answers a plain route whose body was cut short.
    """
    body = error_body(None, INVALID_REQUEST, "Invalid request: the client disconnected before the body was complete")
    await send_json(send, 400, body)


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
