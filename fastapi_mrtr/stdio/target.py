"""Where the bridge sends its requests, and the headers it sends: as a conforming HTTP client would.

On stdio "there is no header layer" (the spec's stdio binding): everything travels in the message.
The endpoint behind the bridge is the app's Streamable HTTP endpoint, which requires its headers
on every request, so they are derived from the message exactly as a conforming HTTP client derives
them: ``MCP-Protocol-Version`` from ``_meta``, ``Mcp-Method``, ``Mcp-Name`` for the named methods,
``Mcp-Param-*`` for the tool arguments the tool's schema mirrors into headers (SEP-2243), the
``Accept`` and ``Content-Type`` of a JSON-RPC POST, and ``Host: 127.0.0.1``. A 2025-era session's
requests carry what a 2025 client sends instead: the session id and its protocol version.

Identity comes from the environment (the spec: a stdio server takes its credentials from there):
``identity()`` gives the headers that say who the process acts for, e.g. ``Authorization``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from starlette.routing import Mount

from fastapi_mrtr.app import MCP
from fastapi_mrtr.integration.param_headers import ParamHeader
from fastapi_mrtr.wire.headers import encode_header_value
from fastapi_mrtr.wire.protocol import META_PROTOCOL_VERSION, NAMED_METHODS, PROTOCOL_VERSION

AUTHORIZATION_ENV = "MRTR_STDIO_AUTHORIZATION"
Identity = Callable[[], Mapping[str, str]]
BASE_HEADERS = {
    "host": "127.0.0.1",
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
}


def identity_from_environment() -> Mapping[str, str]:
    """``Authorization: $MRTR_STDIO_AUTHORIZATION`` when that variable is set (e.g. ``Bearer <token>``)."""
    value = os.environ.get(AUTHORIZATION_ENV, "").strip()
    return {"authorization": value} if value else {}


@dataclass(frozen=True)
class Target:
    """The app, the path of its MCP endpoint, and the ``MCP`` serving it (for the tools' header bindings)."""

    app: FastAPI
    path: str
    mcp: MCP | None

    def modern_headers(self, message: Mapping[str, Any]) -> dict[str, str]:
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        meta = params.get("_meta")
        version = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
        # A message without a version still goes with one header: the endpoint then names only
        # what the message lacks (its _meta), not headers a stdio client never sends.
        headers = {**BASE_HEADERS, "mcp-protocol-version": _header_safe(version) or PROTOCOL_VERSION}
        method = message.get("method")
        if isinstance(method, str) and _header_safe(method):
            headers["mcp-method"] = method
        field = NAMED_METHODS.get(method) if isinstance(method, str) else None
        name = params.get(field) if field is not None else None
        if isinstance(name, str):
            headers["mcp-name"] = encode_header_value(name)
        if method == "tools/call" and isinstance(name, str):
            headers.update(self._param_headers(name, params.get("arguments")))
        return headers

    def _param_headers(self, tool: str, arguments: Any) -> dict[str, str]:
        headers: dict[str, str] = {}
        for binding in self._bindings(tool):
            value = _lookup(arguments, binding.path)
            if isinstance(value, bool):
                headers[binding.header] = "true" if value else "false"
            elif isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
                headers[binding.header] = str(int(value))
            elif isinstance(value, (str, float)):
                headers[binding.header] = encode_header_value(str(value))
        return headers

    def _bindings(self, tool: str) -> tuple[ParamHeader, ...]:
        if self.mcp is None:
            return ()
        definition = self.mcp.registry.resolved().get(tool)
        return definition.param_headers if definition is not None else ()


def legacy_headers(session_id: str | None, version: str | None) -> dict[str, str]:
    """A 2025-era client's headers: the session it opened and the version it agreed (none before)."""
    headers = dict(BASE_HEADERS)
    if session_id is not None:
        headers["mcp-session-id"] = session_id
    if version is not None:
        headers["mcp-protocol-version"] = version
    return headers


def find_target(app: FastAPI | MCP, path: str | None = None) -> Target:
    """The endpoint to bridge to: the ``MCP`` mounted in ``app`` (or ``app`` itself when it is the ``MCP``)."""
    host = app.app if isinstance(app, MCP) else app
    if not isinstance(host, FastAPI):
        raise TypeError(f"serve_stdio needs a FastAPI app with an MCP endpoint mounted in it, not {type(app).__name__}")
    mounted = [
        (route.path.rstrip("/") or "/", route.app)
        for route in host.router.routes
        if isinstance(route, Mount) and isinstance(route.app, MCP) and (not isinstance(app, MCP) or route.app is app)
    ]
    if path is not None:
        found = next((mcp for mounted_path, mcp in mounted if mounted_path == path.rstrip("/")), None)
        return Target(host, path.rstrip("/") or "/", found)
    if len(mounted) == 1:
        return Target(host, *mounted[0])
    if not mounted:
        raise LookupError(
            'no MCP endpoint is mounted in this app: add app.mount("/mcp", mcp), or name the path of the '
            "endpoint (serve_stdio(app, path=...), --path)"
        )
    paths = ", ".join(p for p, _ in mounted)
    raise LookupError(f"several MCP endpoints are mounted ({paths}): name one (serve_stdio(app, path=...), --path)")


def _lookup(arguments: Any, path: tuple[str, ...]) -> Any:
    node = arguments
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def _header_safe(value: Any) -> str | None:
    """``value`` when it can be a header value as it is (visible ASCII, no surrounding spaces)."""
    if isinstance(value, str) and value and all(" " <= ch <= "~" for ch in value) and value == value.strip():
        return value
    return None
