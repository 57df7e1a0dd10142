"""The JSON-RPC messages and HTTP refusals of the 2025-era endpoint, in one place.

Every refusal names what went wrong and what to do, with the status and code the 2025 era uses
(docs/eras.md): 400 for a malformed request, 404 for a session that ended or never existed,
429 when one caller holds its share of streams, 503 when the server or its relay cannot serve
now (with ``Retry-After``).
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.types import Send

from fastapi_mrtr.transport.http import send_json
from fastapi_mrtr.transport.legacy.sessions import LiveSessions
from fastapi_mrtr.transport.legacy.shapes import bad_request
from fastapi_mrtr.wire.errors import INTERNAL_ERROR, INVALID_PARAMS, LEGACY_SESSION_NOT_FOUND
from fastapi_mrtr.wire.json_codec import encode
from fastapi_mrtr.wire.protocol import JSONObject, RequestId

logger = logging.getLogger("fastapi_mrtr")


def rpc_message(request_id: RequestId | None, *, result: Any = None, error: JSONObject | None = None) -> JSONObject:
    if error is not None:
        return {"jsonrpc": "2.0", "id": request_id, "error": error}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def invalid_params(message: str) -> JSONObject:
    return {"code": INVALID_PARAMS, "message": f"Invalid params: {message}"}


async def refuse(send: Send, status: int, request_id: RequestId | None, message: str) -> None:
    await send_json(send, status, encode(rpc_message(request_id, error=bad_request(message))))


async def refuse_params(send: Send, request_id: RequestId, message: str) -> None:
    await send_json(send, 400, encode(rpc_message(request_id, error=invalid_params(message))))


async def session_not_found(send: Send, request_id: RequestId | None) -> None:
    error = {
        "code": LEGACY_SESSION_NOT_FOUND,
        "message": "Session not found: it ended, expired or never existed; send initialize to open a new one",
    }
    await send_json(send, 404, encode(rpc_message(request_id, error=error)))


async def streams_full(send: Send, request_id: RequestId | None, live: LiveSessions, caller: str) -> None:
    which = live.streams_full(caller) or "total"
    if which == "caller":
        text = (
            f"Too many requests: this caller holds {live.max_streams_per_caller} open streams and calls "
            "waiting for an answer (legacy_max_streams_per_caller)"
        )
        status = 429
    else:
        text = "Server busy: too many open MCP streams and waiting calls (legacy_max_streams); try again later"
        status = 503
    error = {"code": INTERNAL_ERROR, "message": text}
    await send_json(send, status, encode(rpc_message(request_id, error=error)), [(b"retry-after", b"5")])


async def relay_down(send: Send, request_id: RequestId | None, exc: Exception) -> None:
    logger.warning("the legacy session relay (Redis) failed: %s", exc)
    error = {"code": INTERNAL_ERROR, "message": "Server unavailable: the session relay is unreachable; try again"}
    await send_json(send, 503, encode(rpc_message(request_id, error=error)), [(b"retry-after", b"1")])


def replica_lost(call_id: Any) -> JSONObject:
    error = {
        "code": INTERNAL_ERROR,
        "message": "Server unavailable: the server replica running this call stopped; call the tool again",
    }
    return rpc_message(call_id, error=error)
