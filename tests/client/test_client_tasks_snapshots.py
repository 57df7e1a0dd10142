"""What the spec lets a task server do that this project's own server never does, on real uvicorn.

``tasks/update`` is eventually consistent: a poll right after it may still list the keys just
answered (each poll's ``inputRequests`` is a snapshot of everything outstanding), and questions may
come one by one. The client must answer each key once. A scripted server shows exactly that, and
a few replies that break the rules, which the client refuses rather than guesses at.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from fastapi_mrtr.client import (
    ClientOptions,
    ElicitRequestParams,
    InvalidServerResponseError,
    MrtrClient,
    TaskOptions,
)
from tests.support import running_server

pytestmark = pytest.mark.anyio


def form(field: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {field: {"type": "string"}}, "required": [field]}
    return {"method": "elicitation/create", "params": {"mode": "form", "message": field, "requestedSchema": schema}}


def task(status: str, **extra: Any) -> dict[str, Any]:
    stamp = "2026-12-05T19:30:00.000Z"
    return {"taskId": "t-1", "status": status, "createdAt": stamp, "lastUpdatedAt": stamp, "ttlMs": None, **extra}


class LaggingTaskServer:
    """One task asking ``first``, then ``second``; every poll right after an update is stale."""

    def __init__(self) -> None:
        self.answers: dict[str, Any] = {}
        self.stale = False
        self.updates: list[list[str]] = []
        self.scenario = "lagging"

    def poll(self) -> dict[str, Any]:
        if self.scenario == "bad-status":
            return task("sleeping")
        if self.stale:  # the snapshot from before the last update
            self.stale = False
            asked = {k: form(k) for k in ("first", "second") if k not in self.answers or k == self.updates[-1][0]}
            return task("input_required", inputRequests=asked)
        if "first" not in self.answers:
            return task("input_required", inputRequests={"first": form("first")})
        if "second" not in self.answers:
            return task("input_required", inputRequests={"second": form("second")})
        text = f"{self.answers['first']['content']['first']} {self.answers['second']['content']['second']}"
        return task("completed", result={"content": [{"type": "text", "text": text}], "isError": False})

    async def handle(self, request: Request) -> JSONResponse:
        message = await request.json()
        method, params = message["method"], message.get("params", {})
        if method == "tools/call":
            result: dict[str, Any] = {"resultType": "task", **task("working", pollIntervalMs=20)}
        elif method == "tasks/get":
            result = {"resultType": "complete", **self.poll()}
        elif method == "tasks/update":
            self.updates.append(sorted(params["inputResponses"]))
            self.answers.update(params["inputResponses"])
            self.stale = True
            result = {"resultType": "complete"}
        elif method == "tasks/cancel":
            result = {"resultType": "complete"}
        else:
            return JSONResponse({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": method}})
        return JSONResponse({"jsonrpc": "2.0", "id": message["id"], "result": result})


@pytest.fixture
def lagging() -> Iterator[tuple[str, LaggingTaskServer]]:
    server = LaggingTaskServer()
    with running_server(Starlette(routes=[Route("/mcp", server.handle, methods=["POST"])])) as base:
        yield f"{base}/mcp", server


async def test_each_key_is_answered_once_though_snapshots_lag(lagging: tuple[str, LaggingTaskServer]) -> None:
    url, server = lagging
    asked: list[str] = []

    def answer(params: ElicitRequestParams) -> dict[str, Any]:
        asked.append(params.message)
        return {"action": "accept", "content": {params.message: params.message.upper()}}

    # max_wait: a client that answered keys again would loop on this server; fail fast instead.
    async with MrtrClient(url, options=ClientOptions(mode="2026-07-28", tasks=TaskOptions(max_wait=10))) as client:
        client.set_elicitation_handler(answer)
        result = await client.call_tool("anything")
    assert result.content[0].text == "FIRST SECOND"  # type: ignore[union-attr]
    assert asked == ["first", "second"]
    assert server.updates == [["first"], ["second"]]


async def test_a_task_status_outside_the_spec_is_refused(lagging: tuple[str, LaggingTaskServer]) -> None:
    url, server = lagging
    server.scenario = "bad-status"
    async with MrtrClient(url, options=ClientOptions(mode="2026-07-28")) as client:
        with pytest.raises(InvalidServerResponseError, match="sleeping"):
            await client.call_tool("anything")


async def test_a_task_nobody_asked_for_is_refused(lagging: tuple[str, LaggingTaskServer]) -> None:
    url, _ = lagging
    options = ClientOptions(mode="2026-07-28", tasks=TaskOptions(enabled=False))
    async with MrtrClient(url, options=options) as client:
        with pytest.raises(InvalidServerResponseError, match="did not declare tasks"):
            await client.call_tool("anything")
