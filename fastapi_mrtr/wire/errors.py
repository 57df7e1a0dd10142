"""The JSON-RPC error codes and the exceptions of fastapi-mrtr, server and client, as one tree.

Every exception of the package is below (``tests/wire/test_error_tree.py`` checks it). Those marked
``(here)`` are defined in this module; the others name the module that defines them. A JSON-RPC
error (code, message, data) is always an :class:`McpError`, whichever side raises it, and the HTTP
status it travels with follows from its code (:func:`http_status_of`)::

    BaseException                               signals that suspend a handler; never errors
    ├── SuspendSignal (engine.call)            an ask has no answer yet: the round ends here
    └── MissingCapabilitySignal (engine.call)  the client did not declare what the ask needs
    Exception
    ├── McpError (here)                        a JSON-RPC error: code, message, data
    │   ├── ServerError (here)                 the server's refusal: adds the HTTP status it
    │   │   │                                   travels with, and whether the client may correct
    │   │   │                                   its request and resend the same requestState
    │   │   └── RequestRejectedError (here)    refused by the endpoint before dispatch (wrong
    │   │       │                               Host, media type, envelope, headers, session);
    │   │       │                               adds the request id once it has been read and
    │   │       │                               the HTTP headers the refusal needs
    │   │       ├── MethodNotAllowedError (here)   405, with the Allow header
    │   │       ├── SessionNotFoundError (here)    a 2025-era session id that ended, expired or
    │   │       │                                   never existed: 404 / -32001
    │   │       └── RetryLaterError (here)         the server cannot serve now (streams full,
    │   │                                           relay down): 429 or 503, with Retry-After
    │   ├── JsonRpcError (here)                raised by a tool: the call answers this JSON-RPC
    │   │                                       error, not a result (a task ends ``failed``)
    │   ├── ResourceNotFoundError              raised by a resource function: -32602 + data.uri
    │   │   (features.resources)
    │   ├── ShimStoppedError                   the legacy shim ended a call (no answer in time,
    │   │   (transport.legacy.shim)             a refused question, out of rounds)
    │   └── McpServerError (client._errors)    the client received a JSON-RPC error; adds the
    │       │                                   http_status and request_id it came with
    │       └── TaskFailedError                 a task ended failed with this error
    ├── InvalidRequestStateError (state.sealing)    a requestState token that cannot be trusted
    ├── RequestStateTooLargeError (state.sealing, ValueError)
    ├── ReplayDivergedError (engine.context)   with strict_replay: a question changed on replay
    ├── ToolRouteRefusedError (integration.tool_call)
    ├── ClientAnswerError (transport.legacy.shim)   a 2025-era client answered a server request
    │                                               with an error
    ├── InvalidAnswerError (client._forms, ValueError)  the terminal form's typed text does not fit
    ├── SessionGoneError (client._legacy)      a 2025-era server forgot our session (404); the
    │                                           client opens a new one, never raised out of it
    ├── InvalidTokenError (auth.tokens)       an access token the resource server refuses: the
    │                                           endpoint answers 401 with a Bearer challenge
    ├── BodyTooLargeError (here)               the request body outgrew max_body_bytes
    ├── ClientDisconnectedError (here)         the client left before its body was complete
    └── MrtrClientError (client._errors)       a client-side failure that is not a JSON-RPC
        ├── MaxRoundsExceededError              error; the client's own tree is drawn in
        ├── InputRequiredTimeoutError           fastapi_mrtr/client/_errors.py
        │   ├── RoundTimeoutError
        │   └── FlowTimeoutError
        ├── InvalidServerResponseError
        │   └── InvalidStructuredContentError
        ├── TaskCancelledError
        ├── TaskInputRequiredError
        ├── TaskTimeoutError (TimeoutError)
        ├── StatusCodeError
        ├── StreamClosedError
        ├── StdioServerError
        ├── InvalidToolHeadersError (ValueError)
        └── OAuthError (client.auth._errors)
            ├── OAuthDiscoveryError
            ├── OAuthRegistrationError
            ├── OAuthAuthorizationError
            └── OAuthTokenError

``BodyTooLargeError`` and ``ClientDisconnectedError`` never leave the endpoint: reading the body
turns them into refusals (413 and 400). Every refusal of either era is raised and answered in one
place (``transport.endpoint.RpcEndpoint.__call__``, with ``transport.http.send_refusal``).

Network failures on the client are httpx's own exceptions, unwrapped. No name here is one
letter-case away from an httpx name, so ``except`` clauses cannot mix them up.

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

# The HTTP status a JSON-RPC error travels with, by its code: the one table for both eras. The
# spec fixes 404 for -32601 and 400 for the request-shape codes (-32602, -32020, -32021,
# -32022); an internal error is the server's fault, so 500; the 2025 era answers an unknown
# session 404 (-32001 travels in a 200 response only as a method's answer, when a request timed
# out). Anything else is the client's: 400. A transport status that no code says (403, 405, 406,
# 413, 415, 421, 429, 503) is passed to the exception.
_HTTP_STATUS_OF_CODE = {METHOD_NOT_FOUND: 404, INTERNAL_ERROR: 500, LEGACY_SESSION_NOT_FOUND: 404}


def http_status_of(code: int) -> int:
    """The HTTP status for a JSON-RPC error ``code`` (see the table above)."""
    return _HTTP_STATUS_OF_CODE.get(code, 400)


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

    The status follows from the code (:func:`http_status_of`); pass ``http_status`` only for a
    status the code does not say (503 for a store that is down, 413, 429).

    ``correctable``: the client can fix its request and send the same ``requestState`` again
    (a single-use state is then released, not used up).
    """

    def __init__(
        self, code: int, message: str, data: Any = None, *, http_status: int | None = None, correctable: bool = False
    ) -> None:
        super().__init__(code, message, data)
        self.http_status = http_status_of(code) if http_status is None else http_status
        self.correctable = correctable


class RequestRejectedError(ServerError):
    """A request the endpoint refused before any method ran, in either era.

    The HTTP status follows from the code (:func:`http_status_of`); ``http_status`` is given only
    for a transport status no code says (403, 406, 409, 413, 415, 421, 503). ``request_id`` is the
    JSON-RPC id when the refusal came after it was read, else ``None`` (the error response then
    carries ``"id": null``, as JSON-RPC asks). ``headers`` are the HTTP headers the refusal
    travels with (lower-case names), beside its JSON-RPC error body. The endpoint answers every
    one in one place (``transport.endpoint.RpcEndpoint.__call__``).
    """

    def __init__(
        self,
        code: int,
        message: str,
        data: Any = None,
        *,
        request_id: str | int | None = None,
        http_status: int | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(code, message, data, http_status=http_status)
        self.request_id = request_id
        self.headers = dict(headers or {})


class MethodNotAllowedError(RequestRejectedError):
    """An HTTP method the endpoint does not serve: 405, naming the ones it does (``Allow``)."""

    def __init__(self, allow: str, message: str) -> None:
        super().__init__(INVALID_REQUEST, message, http_status=405, headers={"allow": allow})


class SessionNotFoundError(RequestRejectedError):
    """A 2025-era request names a session that ended, expired or never existed (or another caller's)."""

    def __init__(self, request_id: str | int | None = None) -> None:
        super().__init__(
            LEGACY_SESSION_NOT_FOUND,
            "Session not found: it ended, expired or never existed; send initialize to open a new one",
            request_id=request_id,
        )


class RetryLaterError(RequestRejectedError):
    """The server cannot take the request now: 429 (this caller holds its share) or 503, with the
    seconds to wait in ``Retry-After`` (none when waiting cannot help)."""

    def __init__(
        self, http_status: int, message: str, retry_after: int | None, request_id: str | int | None = None
    ) -> None:
        headers = {} if retry_after is None else {"retry-after": str(retry_after)}
        super().__init__(INTERNAL_ERROR, message, request_id=request_id, http_status=http_status, headers=headers)


class JsonRpcError(McpError):
    """Raise from a tool to answer a JSON-RPC error (code, message, data) instead of a tool result.

    Any other exception a tool raises becomes a result with ``isError: true``: the tool ran and
    failed. This one says the request itself failed: a plain call answers the error, and a task
    ends ``failed`` with it in ``error`` (docs/tasks.md). The code defaults to -32603 (internal
    error); the HTTP status follows from the code.
    """

    def __init__(self, message: str, *, code: int = INTERNAL_ERROR, data: Any = None) -> None:
        super().__init__(code, message, data)


class BodyTooLargeError(Exception):
    """The request body is larger than the endpoint accepts (declared or as read)."""


class ClientDisconnectedError(Exception):
    """The client disconnected before the request body was complete."""
