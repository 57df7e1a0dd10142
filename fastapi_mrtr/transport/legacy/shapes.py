"""Modern results and errors in the shapes the 2025 era expects.

:func:`answer_rpc` runs a method handler for a 2025-era session and shapes what it returns or
raises as that era's JSON-RPC response. The method handlers answer in 2026-07-28 shapes. A
2025-era client gets the same result without what that era did not have: no ``resultType``, no
caching hints (``ttlMs``, ``cacheScope``), no ``serverInfo`` in ``_meta`` (it came in the
``initialize`` result). Errors keep their code unless the 2025 era had another one (resource not
found: -32002); the modern-only codes become the plain JSON-RPC code that era had for them, with
a message that still names what is missing.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi_mrtr.transport.legacy.replies import rpc_message
from fastapi_mrtr.transport.legacy.shim import ShimStoppedError
from fastapi_mrtr.transport.request import RpcRequest
from fastapi_mrtr.wire.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    McpError,
)
from fastapi_mrtr.wire.protocol import META_SERVER_INFO, JSONObject

logger = logging.getLogger("fastapi_mrtr")

Handler = Callable[[RpcRequest], Awaitable[JSONObject]]

MODERN_ONLY_RESULT_FIELDS = ("resultType", "ttlMs", "cacheScope")


def legacy_result(result: JSONObject) -> JSONObject:
    """``result`` without the fields the 2025 era did not have."""
    shaped = {key: value for key, value in result.items() if key not in MODERN_ONLY_RESULT_FIELDS}
    meta = shaped.get("_meta")
    if isinstance(meta, dict) and META_SERVER_INFO in meta:
        rest = {key: value for key, value in meta.items() if key != META_SERVER_INFO}
        if rest:
            shaped["_meta"] = rest
        else:
            del shaped["_meta"]
    return shaped


def legacy_error(exc: McpError, operation: str | None = None) -> JSONObject:
    """The JSON-RPC ``error`` member a 2025-era session gets for ``exc`` (``operation``: see :func:`operation`)."""
    if exc.code == MISSING_REQUIRED_CLIENT_CAPABILITY:
        return missing_capability_error(exc.data, operation)
    error = exc.to_error()
    if exc.legacy_code is not None:
        error["code"] = exc.legacy_code
    return error


def operation(method: str, params: Any) -> str:
    """What a request asks, for messages: ``tools/call of tool 'book'``, ``prompts/get of prompt 'x'``."""
    params = params if isinstance(params, dict) else {}
    if method == "tools/call" and isinstance(params.get("name"), str):
        return f"{method} of tool {params['name']!r}"
    if method == "prompts/get" and isinstance(params.get("name"), str):
        return f"{method} of prompt {params['name']!r}"
    if method == "resources/read" and isinstance(params.get("uri"), str):
        return f"{method} of resource {params['uri']!r}"
    return method


def missing_capability_error(data: Any, operation: str | None = None) -> JSONObject:
    """The 2025 era had no -32021: say which capability ``initialize`` should have declared, and for what."""
    required = data.get("requiredCapabilities") if isinstance(data, dict) else None
    names = ", ".join(sorted(required)) if isinstance(required, dict) and required else "a capability"
    if isinstance(required, dict) and isinstance(required.get("elicitation"), dict) and required["elicitation"]:
        modes = ", ".join(f"elicitation.{mode}" for mode in sorted(required["elicitation"]))
        names = names.replace("elicitation", modes)
    message = (
        f"Missing required client capability: {names}. {operation or 'This request'} needs it; declare it "
        "in the capabilities of initialize."
    )
    return McpError(INVALID_PARAMS, message, data).to_error()


async def answer_rpc(handler: Handler, rpc: RpcRequest, *, tool_errors: bool = False) -> JSONObject:
    """The JSON-RPC response to ``rpc`` in 2025 shapes; never raises but for cancellation.

    Errors here are answers, not refusals: the 2025 era sends a method's errors in its response."""
    try:
        result = await handler(rpc)
    except ShimStoppedError as exc:
        if tool_errors:  # a tool call the shim had to end is the tool's failure, told to the model
            return rpc_message(rpc.id, result={"content": [{"type": "text", "text": exc.message}], "isError": True})
        return rpc_message(rpc.id, error=legacy_error(exc, operation(rpc.method, rpc.params)))
    except McpError as exc:
        return rpc_message(rpc.id, error=legacy_error(exc, operation(rpc.method, rpc.params)))
    except Exception:
        logger.exception("unexpected error while handling %s", rpc.method)
        return rpc_message(rpc.id, error=McpError(INTERNAL_ERROR, "Internal error").to_error())
    return rpc_message(rpc.id, result=legacy_result(result))
