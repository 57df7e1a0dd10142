"""One JSON-RPC request over HTTP: checked as the transport requires, then an :class:`RpcRequest`.

:class:`RequestValidator` refuses what breaks the transport (Origin, Host, method, content type,
Accept, body size, JSON), the JSON-RPC envelope, or the per-request ``_meta`` and MCP headers,
each with a :class:`~fastapi_mrtr.wire.errors.RequestRejectedError` carrying its HTTP status.
The order of the ``_meta`` checks follows the conformance reference (spec-notes §3.4): version
header vs ``_meta``, required ``_meta`` fields, header mismatch, unsupported version, then
``Mcp-Method``/``Mcp-Name``. Several missing pieces are refused at once (``missing_pieces``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from starlette.types import Receive, Scope

from fastapi_mrtr.engine.call import Notify
from fastapi_mrtr.engine.options import ServerOptions
from fastapi_mrtr.transport.http import host_allowed, in_process_test_client, origin_allowed, read_body
from fastapi_mrtr.transport.missing_pieces import missing_message, missing_pieces, refusal_code, what_to_send
from fastapi_mrtr.wire.errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    BodyTooLargeError,
    ClientDisconnectedError,
    MethodNotAllowedError,
    RequestRejectedError,
)
from fastapi_mrtr.wire.headers import decode_header_value
from fastapi_mrtr.wire.json_codec import decode
from fastapi_mrtr.wire.protocol import (
    LOG_LEVELS,
    META_CLIENT_CAPABILITIES,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    NAMED_METHODS,
    SUPPORTED_PROTOCOL_VERSIONS,
    JSONObject,
    RequestId,
)


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
    legacy: bool = False  # from a 2025-era session: its _meta was built from the session

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


def _unsupported_version(version: str, request_id: RequestId | None = None) -> RequestRejectedError:
    """The -32022 refusal of a protocol version this server does not speak."""
    return RequestRejectedError(
        UNSUPPORTED_PROTOCOL_VERSION,
        "Unsupported protocol version",
        {"supported": list(SUPPORTED_PROTOCOL_VERSIONS), "requested": version},
        request_id=request_id,
    )


class RequestValidator:
    """Turns one POST into an :class:`RpcRequest` (None for a notification), or refuses it."""

    def __init__(self, options: ServerOptions) -> None:
        self.options = options

    def check_peer(self, scope: Scope, headers: dict[str, str]) -> None:
        """Refuse a request from a page on another origin, or sent to a Host this server is not."""
        options = self.options
        origin = headers.get("origin")
        if not origin_allowed(origin, options.allowed_origins):
            raise RequestRejectedError(
                INVALID_REQUEST,
                f"Forbidden: Origin {_shown(origin)} not allowed; to serve pages from it, add it to "
                "ServerOptions(allowed_origins=[...])",
                http_status=403,
            )
        host = headers.get("host")
        if not host_allowed(host, options.allowed_hosts) and not in_process_test_client(scope, host):
            raise RequestRejectedError(
                INVALID_REQUEST,
                f"Misdirected request: Host {_shown(host)} not allowed; if this server is reached by that name, "
                "add it to ServerOptions(allowed_hosts=[...])",
                http_status=421,
            )

    async def read_message(self, scope: Scope, receive: Receive, headers: dict[str, str]) -> Any:
        """The decoded JSON body of a POST that passes the HTTP checks (either era)."""
        options = self.options
        self.check_peer(scope, headers)
        if scope["method"] != "POST":
            raise MethodNotAllowedError("POST", "Method not allowed: this MCP endpoint accepts POST only")
        if not _is_json_body(headers.get("content-type")):
            raise RequestRejectedError(
                INVALID_REQUEST, "Unsupported media type: send application/json", http_status=415
            )
        if not _accepts_json(headers.get("accept")):
            raise RequestRejectedError(
                INVALID_REQUEST, "Not acceptable: accept application/json or text/event-stream", http_status=406
            )
        try:
            raw = await read_body(receive, options.max_body_bytes, headers.get("content-length"))
        except BodyTooLargeError:
            raise RequestRejectedError(
                INVALID_REQUEST, f"Request body too large (limit {options.max_body_bytes} bytes)", http_status=413
            ) from None
        except ClientDisconnectedError:
            # Nothing was dispatched and the socket is gone, so the answer is dropped; but one must
            # be sent: Starlette's BaseHTTPMiddleware (every @app.middleware("http")) raises "No
            # response returned." when the app below it returns without one, and the server logs
            # that as a traceback. A 400, as FastAPI answers a plain route whose body was cut short.
            raise RequestRejectedError(
                INVALID_REQUEST, "Invalid request: the client disconnected before the body was complete"
            ) from None
        try:
            return decode(raw)
        except (ValueError, UnicodeDecodeError):
            raise RequestRejectedError(PARSE_ERROR, "Parse error: the body is not valid JSON") from None

    def envelope(self, message: Any, scope: Scope, receive: Receive, headers: dict[str, str]) -> RpcRequest | None:
        """The modern (2026-07-28) request in ``message``, or None for a notification."""
        if isinstance(message, list):
            raise RequestRejectedError(INVALID_REQUEST, "Invalid request: batches are not supported")
        if not isinstance(message, dict):
            raise RequestRejectedError(INVALID_REQUEST, "Invalid request: expected a JSON-RPC object")
        raw_id = message.get("id")
        request_id = raw_id if _valid_id(raw_id) else None
        method = message.get("method")
        if message.get("jsonrpc") != "2.0" or not isinstance(method, str) or not method:
            raise RequestRejectedError(
                INVALID_REQUEST, 'Invalid request: needs jsonrpc "2.0" and a method', request_id=request_id
            )
        params = message.get("params", {})
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise RequestRejectedError(
                INVALID_REQUEST, "Invalid request: params must be an object", request_id=request_id
            )
        if "id" not in message:
            # Notifications need no answer and change nothing on a stateless server, but the
            # transport's headers are required on every POST, so a bad one is still refused.
            self._check_notification_headers(method, headers)
            return None
        if request_id is None:
            raise RequestRejectedError(INVALID_REQUEST, "Invalid request: id must be a string or an integer")
        meta = self._check_meta(params, method, headers, request_id)
        return RpcRequest(request_id, method, params, meta, scope, headers, receive)

    def _check_notification_headers(self, method: str, headers: dict[str, str]) -> None:
        """Refuse (id-less) a notification whose MCP-Protocol-Version is missing or unsupported,
        or whose Mcp-Method, when sent, names another method."""
        version = headers.get("mcp-protocol-version")
        if version is None:
            raise RequestRejectedError(HEADER_MISMATCH, "Header mismatch: MCP-Protocol-Version header is required")
        if version.strip() not in SUPPORTED_PROTOCOL_VERSIONS:
            raise _unsupported_version(version)
        header_method = headers.get("mcp-method")
        if header_method is not None and header_method.strip() != method:
            raise RequestRejectedError(
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
            raise RequestRejectedError(refusal_code(missing), missing_message(missing), data, request_id=request_id)
        header_version = headers.get("mcp-protocol-version")
        meta = params.get("_meta")
        if meta is not None and header_version is None:
            raise RequestRejectedError(
                HEADER_MISMATCH, "Header mismatch: MCP-Protocol-Version header is required", request_id=request_id
            )
        if not isinstance(meta, dict):
            raise RequestRejectedError(INVALID_PARAMS, "Invalid params: _meta is required", request_id=request_id)
        version = meta.get(META_PROTOCOL_VERSION)
        if not isinstance(version, str):
            raise RequestRejectedError(
                INVALID_PARAMS,
                f"Invalid params: _meta[{META_PROTOCOL_VERSION!r}] is required",
                request_id=request_id,
            )
        if not isinstance(meta.get(META_CLIENT_CAPABILITIES), dict):
            raise RequestRejectedError(
                INVALID_PARAMS,
                f"Invalid params: _meta[{META_CLIENT_CAPABILITIES!r}] must be an object",
                request_id=request_id,
            )
        if header_version != version:
            raise RequestRejectedError(
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
                HEADER_MISMATCH, f"Header mismatch: Mcp-Name must equal params.{field}", request_id=request_id
            )


@functools.lru_cache(maxsize=256)  # clients send a handful of Content-Type values; the answer is pure
def _is_json_body(content_type: str | None) -> bool:
    return content_type is not None and content_type.split(";", 1)[0].strip().lower() == "application/json"


@functools.lru_cache(maxsize=256)  # clients send a handful of Accept values; the answer is pure
def _accepts_json(accept: str | None) -> bool:
    if accept is None:
        return True
    accept = accept.lower()
    return any(kind in accept for kind in ("application/json", "text/event-stream", "*/*", "application/*"))


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _shown(value: str | None, limit: int = 100) -> str:
    """A header value as a message may quote it: repr (no control characters), cut to ``limit``."""
    if value is None:
        return "(none)"
    return repr(value if len(value) <= limit else value[:limit] + "...")
