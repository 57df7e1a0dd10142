"""What a request lacks of the pieces every modern MCP request carries, named all at once.

The endpoint refuses the first problem it meets, which is right for one bad value but makes a
newcomer fix a bare ``curl`` one header per round trip. When several required pieces are absent,
the refusal names every one of them and what to send instead.
"""

from __future__ import annotations

from typing import Any

from fastapi_mrtr.wire.errors import HEADER_MISMATCH, INVALID_PARAMS
from fastapi_mrtr.wire.protocol import (
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    NAMED_METHODS,
    PROTOCOL_VERSION,
    JSONObject,
)


def missing_pieces(params: JSONObject, method: str, headers: dict[str, str]) -> list[str]:
    """The required headers and ``_meta`` fields that are absent, in the order to read them."""
    missing: list[str] = []
    if "mcp-protocol-version" not in headers:
        missing.append("MCP-Protocol-Version header")
    if "mcp-method" not in headers:
        missing.append("Mcp-Method header")
    field = NAMED_METHODS.get(method)
    if field is not None and isinstance(params.get(field), str) and "mcp-name" not in headers:
        missing.append("Mcp-Name header")
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        missing.append("params._meta")
    else:
        if not isinstance(meta.get(META_PROTOCOL_VERSION), str):
            missing.append(f"params._meta[{META_PROTOCOL_VERSION!r}]")
        if not isinstance(meta.get(META_CLIENT_CAPABILITIES), dict):
            missing.append(f"params._meta[{META_CLIENT_CAPABILITIES!r}]")
    return missing


def what_to_send(params: JSONObject, method: str) -> JSONObject:
    """The headers and ``_meta`` a request of this method needs, ready to copy."""
    headers = {"MCP-Protocol-Version": PROTOCOL_VERSION, "Mcp-Method": method}
    field = NAMED_METHODS.get(method)
    value: Any = params.get(field) if field else None
    if isinstance(value, str):
        headers["Mcp-Name"] = value
    meta = {META_PROTOCOL_VERSION: PROTOCOL_VERSION, META_CLIENT_CAPABILITIES: {}}
    return {"headers": headers, "_meta": meta}


def missing_message(missing: list[str]) -> str:
    return "Invalid request: missing " + ", ".join(missing) + " (data.send shows what to send; see docs/wire.md)"


def refusal_code(missing: list[str]) -> int:
    """The code the endpoint's first failing check gives, so that one missing piece and several
    are refused with the same code (spec-notes §3.4 order: the version header when ``_meta`` is
    sent, the ``_meta`` fields, then the named headers)."""
    if "params._meta" in missing:
        return INVALID_PARAMS
    if "MCP-Protocol-Version header" in missing:
        return HEADER_MISMATCH
    if any(piece.startswith("params._meta[") for piece in missing):
        return INVALID_PARAMS
    return HEADER_MISMATCH
