"""Who may touch a task: only the caller that created it, only with the extension declared, and
only through the three methods the extension keeps."""

from __future__ import annotations

import httpx
import pytest

from tests.tasks.conftest import Served
from tests.tasks.peer import TASKS, TaskPeer

pytestmark = pytest.mark.anyio


async def test_another_callers_task_is_answered_like_an_unknown_one(served: Served) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        alice = TaskPeer(http, served.url, token="alice-token")
        mallory = TaskPeer(http, served.url, token="mallory-token")
        anonymous = TaskPeer(http, served.url)
        created = (await alice.call("slow", {"seconds": 1}))["result"]
        task_id = created["taskId"]
        unknown = await mallory.get("A" * len(task_id))
        for intruder in (mallory, anonymous):
            for message in (
                await intruder.get(task_id),
                await intruder.update(task_id, {"x": {}}),
                await intruder.cancel(task_id),
            ):
                assert message["status"] == 400
                assert message["error"] == unknown["error"]
        assert unknown["error"]["code"] == -32602
        done = await alice.wait_for(task_id, "completed")  # the intruders' cancel did nothing
        assert done["result"]["content"][0]["text"] == "slept 1 s"


async def test_unknown_and_malformed_ids(peer: TaskPeer) -> None:
    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        for task_id in ("no-such-task", "A" * 32):
            message = await peer.rpc(method, {"taskId": task_id, "inputResponses": {}}, name=task_id)
            assert message["status"] == 400 and message["error"]["code"] == -32602
        for bad in (None, 7, ["x"], {}):
            message = await peer.rpc(method, {"taskId": bad, "inputResponses": {}})
            assert message["status"] == 400 and message["error"]["code"] == -32602


async def test_tasks_methods_need_the_extension(peer: TaskPeer) -> None:
    created = (await peer.call("slow", {"seconds": 0.5}))["result"]
    peer.tasks = False
    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        message = await peer.rpc(method, {"taskId": created["taskId"], "inputResponses": {}}, name=created["taskId"])
        assert message["status"] == 400
        assert message["error"]["code"] == -32021
        assert message["error"]["data"] == {"requiredCapabilities": {"extensions": {TASKS: {}}}}


async def test_removed_methods_are_not_found(peer: TaskPeer) -> None:
    for method in ("tasks/result", "tasks/list"):
        message = await peer.rpc(method, {"taskId": "x"})
        assert message["status"] == 404 and message["error"]["code"] == -32601


async def test_mcp_name_must_be_the_task_id(peer: TaskPeer) -> None:
    created = (await peer.call("slow", {"seconds": 0.5}))["result"]
    message = await peer.rpc("tasks/get", {"taskId": created["taskId"]}, name="another-id")
    assert message["status"] == 400 and message["error"]["code"] == -32020
    response = await peer.send("tasks/get", {"taskId": created["taskId"]})  # no Mcp-Name at all
    assert response.status_code == 400


async def test_task_ids_are_unguessable(peer: TaskPeer) -> None:
    ids = [(await peer.call("must", {"seconds": 0.2}))["result"]["taskId"] for _ in range(5)]
    assert len(set(ids)) == 5
    assert all(len(task_id) >= 32 for task_id in ids)  # 192 random bits, base64url
