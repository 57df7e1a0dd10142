"""A raw 2026-07-28 client of the tasks extension: every request it sends is written here, so the
tests can also send what a conforming client would not (no extension, another caller, a wrong key)."""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.support import rpc_headers

TASKS = "io.modelcontextprotocol/tasks"
ISO_8601 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
TASK_FIELDS = {"taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs"}
OPTIONAL_TASK_FIELDS = {"statusMessage", "pollIntervalMs"}
DETAIL_BY_STATUS = {"working": set(), "input_required": {"inputRequests"}, "completed": {"result"}}
DETAIL_BY_STATUS |= {"failed": {"error"}, "cancelled": set()}


def check_task_shape(body: dict[str, Any], result_type: str) -> None:
    """A ``CreateTaskResult`` (``result_type="task"``) or a ``tasks/get`` result, field by field."""
    assert body["resultType"] == result_type
    status = body["status"]
    assert status in DETAIL_BY_STATUS
    extra = DETAIL_BY_STATUS[status] if result_type == "complete" else set()
    keys = set(body) - {"resultType", "_meta"}  # _meta: any result's (serverInfo)
    assert keys >= TASK_FIELDS, body
    assert keys <= TASK_FIELDS | OPTIONAL_TASK_FIELDS | extra, body
    assert extra <= keys, body
    assert isinstance(body["taskId"], str) and len(body["taskId"]) >= 22  # >= 128 random bits
    assert ISO_8601.match(body["createdAt"]) and ISO_8601.match(body["lastUpdatedAt"])
    assert body["ttlMs"] is None or (isinstance(body["ttlMs"], int) and body["ttlMs"] > 0)
    if "pollIntervalMs" in body:
        assert isinstance(body["pollIntervalMs"], int) and body["pollIntervalMs"] > 0
    if "statusMessage" in body:
        assert isinstance(body["statusMessage"], str)
    if status == "failed":
        assert isinstance(body["error"]["code"], int) and isinstance(body["error"]["message"], str)
    if status == "input_required":
        assert body["inputRequests"] and all("method" in r for r in body["inputRequests"].values())


@dataclass
class TaskPeer:
    http: httpx.AsyncClient
    url: str
    tasks: bool = True  # declare the extension on each request
    capabilities: dict[str, Any] = field(default_factory=lambda: {"elicitation": {}})
    token: str | None = None
    next_id: int = 0

    def meta(self) -> dict[str, Any]:
        caps = dict(self.capabilities)
        if self.tasks:
            caps["extensions"] = {TASKS: {}}
        return {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": caps,
        }

    async def send(self, method: str, params: dict[str, Any], *, name: str | None = None) -> httpx.Response:
        self.next_id += 1
        headers = rpc_headers(method, name)
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": {**params, "_meta": self.meta()}}
        return await self.http.post(self.url, json=body, headers=headers)

    async def rpc(self, method: str, params: dict[str, Any], *, name: str | None = None) -> dict[str, Any]:
        """The whole JSON-RPC response (``result`` or ``error``)."""
        response = await self.send(method, params, name=name)
        message: dict[str, Any] = response.json()
        message["status"] = response.status_code
        result = message.get("result")
        if isinstance(result, dict) and "_meta" in result:  # every result names the server; no more
            assert set(result.pop("_meta")) == {"io.modelcontextprotocol/serverInfo"}
        return message

    async def call(self, tool: str, arguments: dict[str, Any] | None = None, **params: Any) -> dict[str, Any]:
        return await self.rpc("tools/call", {"name": tool, "arguments": arguments or {}, **params}, name=tool)

    async def get(self, task_id: str) -> dict[str, Any]:
        return await self.rpc("tasks/get", {"taskId": task_id}, name=task_id)

    async def update(self, task_id: str, responses: Any) -> dict[str, Any]:
        return await self.rpc("tasks/update", {"taskId": task_id, "inputResponses": responses}, name=task_id)

    async def cancel(self, task_id: str) -> dict[str, Any]:
        return await self.rpc("tasks/cancel", {"taskId": task_id}, name=task_id)

    async def wait_for(self, task_id: str, *statuses: str, timeout: float = 10) -> dict[str, Any]:
        """Poll ``tasks/get`` until the task is in one of ``statuses``; returns that result."""
        deadline = time.monotonic() + timeout
        while True:
            message = await self.get(task_id)
            result: dict[str, Any] = message["result"]
            if result["status"] in statuses:
                return result
            assert time.monotonic() < deadline, f"task stayed {result['status']}: {result}"
            await asyncio.sleep(0.05)


def accept(content: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": content}
