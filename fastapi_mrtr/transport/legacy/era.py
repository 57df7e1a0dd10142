"""Which era a request belongs to: the stateless 2026-07-28 wire, or a 2025-era MCP session.

The spec lets one endpoint serve both (versioning, "dual-era servers"): a request carrying modern
per-request ``_meta`` is served statelessly, whatever else it carries (an ``Mcp-Session-Id`` on it
is ignored, as a modern server must). Otherwise a request that names an ``Mcp-Session-Id``
belongs to that session. An ``initialize`` opens a session unless it carries modern ``_meta`` or
a ``MCP-Protocol-Version`` header naming a version after 2025-11-25; either way it is modern
traffic, and the modern validation order decides (spec-notes 3.4, the conformance fixture's
order: ``_meta`` is checked before dispatch). With ``_meta`` it names a removed method: 404 /
-32601, as the conformance suite expects. With the header but no ``_meta`` it is a modern request
missing its ``_meta``: 400 / -32602 naming what to send. Everything else is modern too, so a
client that forgot its ``_meta`` gets the modern error naming what to send.
"""

from __future__ import annotations

from typing import Any

from fastapi_mrtr.wire.protocol import LEGACY_PROTOCOL_VERSIONS, META_PROTOCOL_VERSION

SESSION_HEADER = "mcp-session-id"


def is_legacy_post(headers: dict[str, str], message: Any) -> bool:
    """Whether the POSTed ``message`` belongs to a 2025-era session (or opens one)."""
    if _has_modern_meta(message):
        return False
    if SESSION_HEADER in headers:
        return True
    return opens_legacy_session(headers, message)


def opens_legacy_session(headers: dict[str, str], message: Any) -> bool:
    """Whether ``message`` is a 2025-era ``initialize``."""
    if not isinstance(message, dict) or message.get("method") != "initialize" or _has_modern_meta(message):
        return False
    version = headers.get("mcp-protocol-version")
    return version is None or version.strip() in LEGACY_PROTOCOL_VERSIONS


def names_session(headers: dict[str, str]) -> bool:
    return SESSION_HEADER in headers


def _has_modern_meta(message: Any) -> bool:
    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and META_PROTOCOL_VERSION in meta
