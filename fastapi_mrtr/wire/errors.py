"""The JSON-RPC error codes and the exceptions of fastapi-mrtr, server and client, as one tree.

Every exception of the package is below. Those marked ``(here)`` are defined in this module; the
others name the module that defines them. A JSON-RPC error (code, message, data) is always an
:class:`McpError`, whichever side raises it::

    Exception
    ├── McpError (here)                        a JSON-RPC error: code, message, data
    │   ├── ServerError (here)                 the server's refusal: adds the HTTP status it
    │   │   │                                   travels with, and whether the client may correct
    │   │   │                                   its request and resend the same requestState
    │   │   └── RequestRejectedError (here)    refused by the endpoint before dispatch (wrong
    │   │                                       Host, media type, envelope, headers); adds the
    │   │                                       request id once it has been read
    │   ├── ResourceNotFoundError              raised by a resource function: -32602 + data.uri
    │   │   (features.resources)
    │   └── McpServerError (client._errors)    the client received a JSON-RPC error; adds the
    │                                           http_status and request_id it came with
    ├── InvalidRequestStateError (state.sealing)    a requestState token that cannot be trusted
    ├── RequestStateTooLargeError (state.sealing, ValueError)
    ├── ReplayDivergedError (engine.context)   with strict_replay: a question changed on replay
    ├── ToolRouteRefusedError (integration.route_entry)
    ├── BodyTooLargeError (here)               the request body outgrew max_body_bytes
    ├── ClientDisconnectedError (here)         the client left before its body was complete
    └── MrtrClientError (client._errors)       a client-side failure that is not a JSON-RPC
        ├── MaxRoundsExceededError              error; the client's own tree is drawn in
        ├── InputRequiredTimeoutError           fastapi_mrtr/client/_errors.py
        │   ├── RoundTimeoutError
        │   └── FlowTimeoutError
        ├── InvalidServerResponseError
        │   └── InvalidStructuredContentError
        ├── StatusCodeError
        ├── StreamClosedError
        ├── InvalidToolHeadersError (ValueError)
        └── OAuthError (client.auth._errors) and its four kinds

``BodyTooLargeError`` and ``ClientDisconnectedError`` never leave the endpoint: it answers 413
and 400 for them. Network failures on the client are httpx's own exceptions, unwrapped. No name
here is one letter-case away from an httpx name, so ``except`` clauses cannot mix them up.

This module imports nothing of the package: every layer, and the client, may use it.
"""

from __future__ import annotations

from typing import Any

# JSON-RPC 2.0 and MCP error codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
HEADER_MISMATCH = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022
# Codes of the 2025 (handshake) era, used only on legacy MCP sessions.
LEGACY_SESSION_NOT_FOUND = -32001  # also a timed-out request, as the 2025-era SDKs use it
LEGACY_RESOURCE_NOT_FOUND = -32002
LEGACY_URL_ELICITATION_REQUIRED = -32042


class McpError(Exception):
    """A JSON-RPC request failed: carries the error object's code, message and data."""

    legacy_code: int | None = None
    """The code this error travels with on a 2025-era session, when that era had another one."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_error(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` member for this failure."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code}, message={self.message!r}, data={self.data!r})"


class ServerError(McpError):
    """A JSON-RPC error the server answers, with the HTTP status it should travel with.

    ``correctable``: the client can fix its request and send the same ``requestState`` again
    (a single-use state is then released, not used up).
    """

    def __init__(
        self, code: int, message: str, data: Any = None, *, http_status: int = 400, correctable: bool = False
    ) -> None:
        super().__init__(code, message, data)
        self.http_status = http_status
        self.correctable = correctable


class RequestRejectedError(ServerError):
    """A request the endpoint refused before any method ran.

    ``request_id`` is the JSON-RPC id when the refusal came after it was read, else ``None``
    (the error response then carries ``"id": null``, as JSON-RPC asks).
    """

    def __init__(
        self, http_status: int, code: int, message: str, data: Any = None, *, request_id: str | int | None = None
    ) -> None:
        super().__init__(code, message, data, http_status=http_status)
        self.request_id = request_id


class BodyTooLargeError(Exception):
    """The request body is larger than the endpoint accepts (declared or as read)."""


class ClientDisconnectedError(Exception):
    """The client disconnected before the request body was complete."""
