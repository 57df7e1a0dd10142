"""Which answer an ``initialize`` gets by what it carries: the code does what era.py's docstring says.

With modern ``_meta`` (and a 2026 header) it names a removed method: 404 / -32601. With a 2026
header but no ``_meta`` it is a modern request missing its ``_meta``: 400 / -32602, as the modern
validation order (``_meta`` before dispatch, spec-notes 3.4) asks. With a 2025 header or none it
opens a session.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.legacy.conftest import App

pytestmark = pytest.mark.slow
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
LEGACY_PARAMS = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


def _initialize(served: App, params: dict[str, Any], version: str | None) -> httpx.Response:
    headers = {"accept": "application/json, text/event-stream", "mcp-method": "initialize"}
    if version is not None:
        headers["mcp-protocol-version"] = version
    body = {"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": params}
    return httpx.post(served.url, json=body, headers=headers, timeout=10)


def test_with_modern_meta_initialize_is_a_removed_method(served: App) -> None:
    response = _initialize(served, {"_meta": META}, "2026-07-28")
    assert response.status_code == 404 and response.json()["error"]["code"] == -32601
    assert "mcp-session-id" not in response.headers


def test_with_a_2026_header_but_no_meta_initialize_is_missing_its_meta(served: App) -> None:
    response = _initialize(served, LEGACY_PARAMS, "2026-07-28")
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == -32602 and "_meta" in error["message"]
    assert "mcp-session-id" not in response.headers


@pytest.mark.parametrize("version", [None, "2025-11-25", "2025-06-18"])
def test_with_a_2025_header_or_none_initialize_opens_a_session(served: App, version: str | None) -> None:
    response = _initialize(served, LEGACY_PARAMS, version)
    assert response.status_code == 200, response.text
    assert "mcp-session-id" in response.headers
