"""Modern results and errors in the shapes the 2025 era expects.

The method handlers answer in 2026-07-28 shapes. A 2025-era client gets the same result without
what that era did not have: no ``resultType``, no caching hints (``ttlMs``, ``cacheScope``), no
``serverInfo`` in ``_meta`` (it came in the ``initialize`` result). Errors keep their code unless
the 2025 era had another one (resource not found: -32002); the modern-only codes become the
plain JSON-RPC code that era had for them, with a message that still names what is missing.
"""

from __future__ import annotations

from typing import Any

from fastapi_mrtr.wire.errors import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    McpError,
)
from fastapi_mrtr.wire.protocol import META_SERVER_INFO, JSONObject

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


def legacy_error(exc: McpError) -> JSONObject:
    """The JSON-RPC ``error`` member a 2025-era session gets for ``exc``."""
    if exc.code == MISSING_REQUIRED_CLIENT_CAPABILITY:
        return missing_capability_error(exc.data)
    error = exc.to_error()
    if exc.legacy_code is not None:
        error["code"] = exc.legacy_code
    return error


def missing_capability_error(data: Any) -> JSONObject:
    """The 2025 era had no -32021: say which capability ``initialize`` should have declared."""
    required = data.get("requiredCapabilities") if isinstance(data, dict) else None
    names = ", ".join(sorted(required)) if isinstance(required, dict) and required else "a capability"
    if isinstance(required, dict) and isinstance(required.get("elicitation"), dict) and required["elicitation"]:
        modes = ", ".join(f"elicitation.{mode}" for mode in sorted(required["elicitation"]))
        names = names.replace("elicitation", modes)
    message = (
        f"Missing required client capability: {names}. This tool needs it; declare it in the "
        "capabilities of initialize."
    )
    return {"code": INVALID_PARAMS, "message": message, "data": data}


def bad_request(message: str, data: Any = None) -> JSONObject:
    error: JSONObject = {"code": INVALID_REQUEST, "message": message}
    if data is not None:
        error["data"] = data
    return error
