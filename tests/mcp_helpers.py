"""Wire helpers for the in-process protocol tests: build MCP 2026-07-28 requests, read answers."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpx
from fastapi import FastAPI

from fastapi_mrtr import MCP, ServerOptions

PROTOCOL = "2026-07-28"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPS_KEY = "io.modelcontextprotocol/clientCapabilities"
ACCEPT_BOTH = "application/json, text/event-stream"
STATE_KEY = "k" * 32
NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}

JSON = dict[str, Any]


def make_meta(capabilities: JSON | None = None, **extra: Any) -> JSON:
    """A valid per-request ``_meta``."""
    meta: JSON = {VERSION_KEY: PROTOCOL, CAPS_KEY: capabilities if capabilities is not None else {}}
    meta.update(extra)
    return meta


def make_headers(method: str, name: str | None = None, *, accept: str = ACCEPT_BOTH) -> dict[str, str]:
    """The headers a conforming client sends with ``method``."""
    headers = {
        "content-type": "application/json",
        "accept": accept,
        "mcp-protocol-version": PROTOCOL,
        "mcp-method": method,
    }
    if name is not None:
        headers["mcp-name"] = name
    return headers


def make_server(app: FastAPI | None = None, **options: Any) -> tuple[FastAPI, MCP]:
    """A fresh app with an ``MCP`` endpoint mounted at ``/mcp``."""
    app = app if app is not None else FastAPI()
    settings: JSON = {"name": "test-server", "version": "1.2.3", "request_state_key": STATE_KEY}
    settings.update(options)
    mcp = MCP(app, options=ServerOptions(**settings))
    app.mount("/mcp", mcp)
    return app, mcp


class McpClient:
    """A thin MCP client over an ``httpx.AsyncClient`` bound to one in-process app."""

    def __init__(self, http: httpx.AsyncClient, path: str = "/mcp") -> None:
        self.http = http
        self.path = path
        self._next_id = 0

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    async def post(
        self,
        method: str,
        params: JSON | None = None,
        *,
        request_id: Any = None,
        meta: JSON | None = None,
        headers: Mapping[str, str] | None = None,
        name: str | None = None,
    ) -> httpx.Response:
        """POST one request with correct ``_meta`` and headers unless overridden."""
        body_params: JSON = dict(params or {})
        body_params.setdefault("_meta", meta if meta is not None else make_meta())
        if name is None and method in NAMED and isinstance(body_params.get(NAMED[method]), str):
            name = body_params[NAMED[method]]
        all_headers = httpx.Headers(make_headers(method, name))
        all_headers.update(headers or {})
        message = {
            "jsonrpc": "2.0",
            "id": request_id if request_id is not None else self.new_id(),
            "method": method,
            "params": body_params,
        }
        return await self.http.post(self.path, content=json.dumps(message), headers=all_headers)

    async def post_raw(self, body: bytes | str, headers: Mapping[str, str] | None = None) -> httpx.Response:
        all_headers = httpx.Headers({"content-type": "application/json", "accept": ACCEPT_BOTH})
        all_headers.update(headers or {})
        return await self.http.post(self.path, content=body, headers=all_headers)

    async def result(self, method: str, params: JSON | None = None, **kwargs: Any) -> JSON:
        response = await self.post(method, params, **kwargs)
        assert response.status_code == 200, response.text
        message = response.json()
        assert "result" in message, message
        result: JSON = message["result"]
        return result

    async def call(self, tool: str, arguments: JSON | None = None, **kwargs: Any) -> JSON:
        params: JSON = {"name": tool}
        if arguments is not None:
            params["arguments"] = arguments
        return await self.result("tools/call", params, **kwargs)

    async def list_tools(self) -> list[JSON]:
        tools: list[JSON] = []
        cursor: str | None = None
        while True:
            result = await self.result("tools/list", {"cursor": cursor} if cursor else {})
            tools.extend(result["tools"])
            cursor = result.get("nextCursor")
            if cursor is None:
                return tools

    async def tool(self, name: str) -> JSON:
        for tool in await self.list_tools():
            if tool["name"] == name:
                return tool
        raise AssertionError(f"no tool {name!r}")


@asynccontextmanager
async def connect(app: FastAPI, path: str = "/mcp") -> AsyncIterator[McpClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
        yield McpClient(http, path)


def rpc_error(response: httpx.Response, status: int, code: int, request_id: Any) -> JSON:
    """Assert ``response`` is a JSON-RPC error with this HTTP status, code and echoed id."""
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/json")
    message = response.json()
    assert message["jsonrpc"] == "2.0"
    assert message["id"] == request_id, message
    assert "result" not in message
    error: JSON = message["error"]
    assert error["code"] == code, error
    assert isinstance(error["message"], str) and error["message"]
    return error


def sse_messages(text: str) -> list[JSON]:
    """The JSON messages of an SSE body (``data:`` lines of each event)."""
    messages: list[JSON] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        data = [line[5:].lstrip() for line in block.split("\n") if line.startswith("data:")]
        if data:
            messages.append(json.loads("\n".join(data)))
    return messages
