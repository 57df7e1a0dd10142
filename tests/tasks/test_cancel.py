"""tasks/cancel: the running handler is cancelled, the task ends cancelled, and a second cancel
(or one of a task that already ended) gets the same empty acknowledgement."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.tasks.conftest import Served
from tests.tasks.peer import TaskPeer, check_task_shape

pytestmark = pytest.mark.anyio

ACK = {"resultType": "complete"}


async def test_cancel_stops_the_running_handler(peer: TaskPeer, served: Served) -> None:
    created = (await peer.call("slow", {"seconds": 60}))["result"]
    await asyncio.sleep(0.3)
    started = time.monotonic()
    assert (await peer.cancel(created["taskId"]))["result"] == ACK
    cancelled = await peer.wait_for(created["taskId"], "cancelled", timeout=2)
    assert time.monotonic() - started < 2
    check_task_shape(cancelled, "complete")
    assert served.journal.cancelled == ["slow"]  # the handler saw CancelledError
    assert not served.mcp._task_legs.is_running(created["taskId"])  # type: ignore[union-attr]
    assert (await peer.cancel(created["taskId"]))["result"] == ACK  # idempotent


async def test_cancel_of_a_parked_task_ends_it_at_once(peer: TaskPeer) -> None:
    created = (await peer.call("interview"))["result"]
    await peer.wait_for(created["taskId"], "input_required")
    assert (await peer.cancel(created["taskId"]))["result"] == ACK
    assert (await peer.get(created["taskId"]))["result"]["status"] == "cancelled"
    ack = await peer.update(created["taskId"], {"name": {"action": "accept", "content": {"name": "late"}}})
    assert ack["result"] == ACK
    assert (await peer.get(created["taskId"]))["result"]["status"] == "cancelled"


async def test_cancel_of_a_completed_task_keeps_its_result(peer: TaskPeer) -> None:
    created = (await peer.call("must", {"seconds": 0.2}))["result"]
    done = await peer.wait_for(created["taskId"], "completed")
    assert (await peer.cancel(created["taskId"]))["result"] == ACK
    assert (await peer.get(created["taskId"]))["result"] == done


async def test_terminal_tasks_are_kept(peer: TaskPeer) -> None:
    created = (await peer.call("must", {"seconds": 0.1}))["result"]
    await peer.wait_for(created["taskId"], "completed")
    await asyncio.sleep(0.6)
    assert (await peer.get(created["taskId"]))["result"]["status"] == "completed"


async def test_a_shutdown_gives_the_lease_back_instead_of_cancelling(peer: TaskPeer, served: Served) -> None:
    """With a shared store another replica may take the task over: it stays working, lease free."""
    created = (await peer.call("slow", {"seconds": 60}))["result"]
    task_id = created["taskId"]
    stored = await served.mcp.task_store.get(task_id)
    assert stored is not None and stored.lease_owner is not None and stored.lease_expires_at is not None
    legs = served.mcp._task_legs
    assert legs is not None
    future = asyncio.run_coroutine_threadsafe(legs.aclose(), served.mcp._loop)  # type: ignore[arg-type]
    await asyncio.wrap_future(future)
    released = (await peer.get(task_id))["result"]
    assert released["status"] == "working"
    stored = await served.mcp.task_store.get(task_id)
    assert stored is not None and stored.lease_owner is None
