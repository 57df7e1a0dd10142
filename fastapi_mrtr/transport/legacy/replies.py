"""The JSON-RPC messages and the refusals of the 2025-era endpoint, in one place.

A refusal is raised, never sent here: each function below builds the
:class:`~fastapi_mrtr.wire.errors.RequestRejectedError` for one kind of refusal, and the endpoint
answers every refusal in one place (``RpcEndpoint.__call__``). Each names what went wrong and what
to do, with the status and code the 2025 era uses (docs/eras.md): 400 for a malformed request,
404 for a session that ended or never existed, 429 when one caller holds its share of streams,
503 when the server or its relay cannot serve now (with ``Retry-After``).
"""

from __future__ import annotations

import logging
from typing import Any, TypeGuard

from fastapi_mrtr.transport.legacy.sessions import LiveSessions
from fastapi_mrtr.wire.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    McpError,
    RequestRejectedError,
    RetryLaterError,
)
from fastapi_mrtr.wire.protocol import JSONObject, RequestId

logger = logging.getLogger("fastapi_mrtr")


def rpc_message(request_id: RequestId | None, *, result: Any = None, error: JSONObject | None = None) -> JSONObject:
    if error is not None:
        return {"jsonrpc": "2.0", "id": request_id, "error": error}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def valid_id(value: Any) -> TypeGuard[RequestId]:
    """A JSON-RPC id this server takes: a string or an integer (not a boolean)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def invalid_request(
    message: str, request_id: RequestId | None = None, *, http_status: int | None = None
) -> RequestRejectedError:
    """-32600: a request this endpoint cannot take as sent (400, or the transport status given:
    406 for a GET that takes no stream, 409 for a second GET stream, 421 for another replica's)."""
    return RequestRejectedError(INVALID_REQUEST, message, request_id=request_id, http_status=http_status)


def invalid_params(message: str, request_id: RequestId) -> RequestRejectedError:
    """-32602 before dispatch (``initialize``'s own params)."""
    return RequestRejectedError(INVALID_PARAMS, f"Invalid params: {message}", request_id=request_id)


def streams_full(live: LiveSessions, caller: str, request_id: RequestId | None = None) -> RetryLaterError:
    if live.streams_full(caller) == "caller":
        text = (
            f"Too many requests: this caller holds {live.max_streams_per_caller} open streams and calls "
            "waiting for an answer (legacy_max_streams_per_caller)"
        )
        return RetryLaterError(429, text, 5, request_id)
    text = "Server busy: too many open MCP streams and waiting calls (legacy_max_streams); try again later"
    return RetryLaterError(503, text, 5, request_id)


def relay_down(exc: Exception, request_id: RequestId | None = None) -> RetryLaterError:
    logger.warning("the legacy session relay (Redis) failed: %s", exc)
    return RetryLaterError(503, "Server unavailable: the session relay is unreachable; try again", 1, request_id)


def asker_lost(answer_id: str) -> RetryLaterError:
    """An answer for a replica that stopped: no ``Retry-After``, as sending this answer again cannot help."""
    return RetryLaterError(
        503,
        f"Server unavailable: the replica that sent request {answer_id!r} stopped; its call is lost, "
        "call the tool again",
        None,
    )


def replica_lost(call_id: Any) -> JSONObject:
    """The last event of a call whose replica stopped: its error, in the call's stream."""
    error = McpError(
        INTERNAL_ERROR, "Server unavailable: the server replica running this call stopped; call the tool again"
    )
    return rpc_message(call_id, error=error.to_error())
