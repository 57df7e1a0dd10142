"""When a call becomes a task: by its deadline, only for a client that declared the extension on
that request, never on a 2025-era session; and the shapes of what it answers."""

from __future__ import annotations

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import TextContent

from tests.tasks.conftest import Served
from tests.tasks.peer import TASKS, TaskPeer, accept, check_task_shape

pytestmark = pytest.mark.anyio


async def test_a_call_within_its_deadline_is_a_plain_result(peer: TaskPeer, served: Served) -> None:
    message = await peer.call("quick")
    result = message["result"]
    assert result["resultType"] == "complete" and "taskId" not in result
    assert result["content"] == [{"type": "text", "text": "quick done"}]


async def test_a_call_past_its_deadline_becomes_a_task_and_completes(peer: TaskPeer, served: Served) -> None:
    created = (await peer.call("slow", {"seconds": 1}))["result"]
    check_task_shape(created, "task")
    assert created["status"] == "working"
    assert created["ttlMs"] == 60_000 and created["pollIntervalMs"] == 50
    assert not {"result", "error", "inputRequests", "requestState"} & set(created)
    working = (await peer.get(created["taskId"]))["result"]  # durable: resolves at once
    check_task_shape(working, "complete")
    assert working["taskId"] == created["taskId"]
    progressed = await peer.wait_for(created["taskId"], "working", "completed")
    done = await peer.wait_for(created["taskId"], "completed")
    check_task_shape(done, "complete")
    assert done["result"]["content"] == [{"type": "text", "text": "slept 1 s"}]
    assert done["result"]["isError"] is False
    assert progressed["status"] in ("working", "completed")
    assert served.journal.runs["slow"] == 1  # promotion did not run the handler again


async def test_progress_shows_in_the_status_message(peer: TaskPeer) -> None:
    created = (await peer.call("slow", {"seconds": 1.5}))["result"]
    seen: set[str] = set()
    while True:
        task = (await peer.get(created["taskId"]))["result"]
        if task["status"] == "completed":
            break
        seen.add(task.get("statusMessage", ""))
    assert any(message.startswith("step ") for message in seen), seen


async def test_without_the_extension_an_optional_tool_runs_plain(peer: TaskPeer) -> None:
    peer.tasks = False
    result = (await peer.call("slow", {"seconds": 0.4}))["result"]
    assert result["resultType"] == "complete" and "taskId" not in result
    assert result["content"][0]["text"] == "slept 0.4 s"


async def test_without_the_extension_a_required_tool_is_refused(peer: TaskPeer, served: Served) -> None:
    peer.tasks = False
    message = await peer.call("must")
    assert message["status"] == 400
    assert message["error"]["code"] == -32021
    assert message["error"]["data"] == {"requiredCapabilities": {"extensions": {TASKS: {}}}}
    assert served.journal.runs["must"] == 0  # refused before it ran


async def test_the_extension_is_declared_per_request(peer: TaskPeer) -> None:
    created = (await peer.call("must"))["result"]
    assert created["resultType"] == "task"
    peer.tasks = False  # the same client, not declaring it this time
    assert (await peer.get(created["taskId"]))["error"]["code"] == -32021


async def test_the_legacy_task_param_is_ignored(peer: TaskPeer) -> None:
    peer.tasks = False
    result = (await peer.call("slow", {"seconds": 0.3}, task={"ttl": 1000, "pollInterval": 100}))["result"]
    assert result["resultType"] == "complete" and "taskId" not in result


async def test_mrtr_before_the_task_then_the_task(peer: TaskPeer) -> None:
    first = (await peer.call("ask_first"))["result"]
    assert first["resultType"] == "input_required" and "taskId" not in first
    assert list(first["inputRequests"]) == ["name"]
    created = (
        await peer.call(
            "ask_first", inputResponses={"name": accept({"name": "Ada"})}, requestState=first["requestState"]
        )
    )["result"]
    check_task_shape(created, "task")
    done = await peer.wait_for(created["taskId"], "completed")
    assert "requestState" not in done
    assert done["result"]["content"][0]["text"] == "Hello, Ada"


async def test_discover_advertises_the_extension(peer: TaskPeer) -> None:
    result = (await peer.rpc("server/discover", {}))["result"]
    assert result["capabilities"]["extensions"] == {TASKS: {}}
    assert "tasks" not in result["capabilities"]


async def test_a_2025_era_session_never_gets_a_task(served: Served) -> None:
    """The official client in 2025-11-25 mode: a task-required tool past its deadline runs plain."""
    async with (
        httpx2.AsyncClient() as http,
        Client(streamable_http_client(served.url, http_client=http), mode="legacy") as client,
    ):
        assert client.protocol_version == "2025-11-25"
        assert TASKS not in (client.server_capabilities.model_dump().get("extensions") or {})
        result = await client.call_tool("must", {"seconds": 0.4})
        assert not result.is_error
        assert [block.text for block in result.content if isinstance(block, TextContent)] == ["must done"]
        slow = await client.call_tool("slow", {"seconds": 0.3})
        assert [block.text for block in slow.content if isinstance(block, TextContent)] == ["slept 0.3 s"]


async def test_a_2025_era_session_has_no_tasks_methods(served: Served) -> None:
    from tests.legacy.peer import LegacyPeer

    async with httpx.AsyncClient(timeout=10) as http:
        legacy = LegacyPeer(http, served.url)
        await legacy.initialize()
        response = await legacy.request("tasks/get", {"taskId": "x" * 32})
        assert response.json()["error"]["code"] == -32601


async def test_a_json_rpc_error_raised_by_a_plain_tool_is_the_answer(peer: TaskPeer) -> None:
    message = await peer.call("broken_plain")
    assert message["error"] == {"code": -32000, "message": "the upstream refused"}
    assert message["status"] == 400
