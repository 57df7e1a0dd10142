"""The client drives tasks (SEP-2663) against the conformance fixture's task tools on real uvicorn.

A call the server turns into a task must end the way a plain call would: the result (a tool error
included), the JSON-RPC error of a failed task, a clear error for a cancelled one; its questions
are answered by the same handlers as MRTR rounds, each key once; and it polls at the pace the task
asks for, with ``Mcp-Name: <taskId>`` on every ``tasks/*`` request.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest

from fastapi_mrtr.client import (
    ClientOptions,
    ElicitRequestParams,
    McpServerError,
    MrtrClient,
    TaskCancelledError,
    TaskFailedError,
    TaskInfo,
    TaskOptions,
    ToolTask,
)
from fastapi_mrtr.wire.tasks import TASKS_EXTENSION
from tests.client.client_helpers import Wire
from tests.support import running_server

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def fixture_url() -> Iterator[str]:
    from tests.conformance.everything_server import create_app

    with running_server(create_app()) as base:
        yield f"{base}/mcp"


class Person:
    """An elicitation handler answering every form by field name, and remembering what it saw."""

    def __init__(self, *, confirm: bool = True, name: str = "Alice") -> None:
        self.confirm = confirm
        self.name = name
        self.asked: list[str] = []

    def __call__(self, params: ElicitRequestParams) -> dict[str, Any]:
        self.asked.append(params.message)
        fields = set((params.requested_schema or {}).get("properties", {}))
        content: dict[str, Any] = {}
        if "confirm" in fields:
            content["confirm"] = self.confirm
        if "name" in fields:
            content["name"] = self.name
        return {"action": "accept", "content": content}


@asynccontextmanager
async def client_on(url: str, wire: Wire, **options: Any) -> AsyncIterator[MrtrClient]:
    async with (
        httpx.AsyncClient(event_hooks=wire.hooks(), timeout=30) as http,
        MrtrClient(url, http_client=http, options=ClientOptions(**options)) as client,
    ):
        yield client


def text(result: Any) -> str:
    return str(result.content[0].text)


def declared_tasks(exchange: Any) -> bool:
    caps = exchange.params.get("_meta", {}).get("io.modelcontextprotocol/clientCapabilities", {})
    return TASKS_EXTENSION in (caps.get("extensions") or {})


async def test_slow_compute_completes_by_polling_at_the_tasks_pace(fixture_url: str, wire: Wire) -> None:
    seen: list[TaskInfo] = []
    async with client_on(fixture_url, wire, mode="2026-07-28") as client:
        result = await client.call_tool(
            "slow_compute", {"seconds": 1.2, "label": "sum"}, task_status_callback=seen.append
        )
    assert text(result) == "sum computed in 1.2 s"
    assert not result.is_error
    assert seen[0].status == "working" and seen[-1].status == "completed"
    assert any(info.status_message and info.status_message.startswith("sum: ") for info in seen), seen
    call = wire.calls("tools/call")[0]
    assert declared_tasks(call) and call.reply["result"]["resultType"] == "task"
    task_id = call.reply["result"]["taskId"]
    gets = wire.calls("tasks/get")
    assert 3 <= len(gets) <= 9, len(gets)  # pollIntervalMs is 200: about six polls, never a tight loop
    for get in gets:
        assert get.headers["mcp-method"] == "tasks/get"
        assert get.headers["mcp-name"] == task_id
        assert get.params["taskId"] == task_id
        assert declared_tasks(get)


async def test_the_poll_interval_is_bounded_below_whatever_the_server_asks() -> None:
    options = TaskOptions(min_poll_interval=0.25, max_poll_interval=5, default_poll_interval=1)
    assert options.poll_delay(1) == 0.25
    assert options.poll_delay(200_000) == 5
    assert options.poll_delay(None) == 1
    assert options.poll_delay(400) == 0.4
    with pytest.raises(ValueError, match="min_poll_interval"):
        TaskOptions(min_poll_interval=0)
    with pytest.raises(ValueError, match="finite"):
        TaskOptions(max_wait=float("inf"))


@pytest.mark.parametrize(("confirm", "outcome"), [(True, "Deleted a.txt."), (False, "Kept a.txt.")])
async def test_confirm_delete_is_answered_by_the_elicitation_handler(
    fixture_url: str, wire: Wire, confirm: bool, outcome: str
) -> None:
    person = Person(confirm=confirm)
    statuses: list[str] = []
    async with client_on(fixture_url, wire) as client:
        client.set_elicitation_handler(person)
        result = await client.call_tool(
            "confirm_delete", {"filename": "a.txt"}, task_status_callback=lambda info: statuses.append(info.status)
        )
    assert text(result) == outcome
    assert person.asked == ["Delete a.txt?"]  # asked once, though later polls may still list it
    assert "input_required" in statuses and statuses[-1] == "completed"
    updates = wire.calls("tasks/update")
    assert len(updates) == 1
    task_id = wire.calls("tools/call")[0].reply["result"]["taskId"]
    assert updates[0].headers["mcp-name"] == task_id
    assert list(updates[0].params["inputResponses"].values()) == [{"action": "accept", "content": {"confirm": confirm}}]


async def test_multi_input_answers_each_key_once_whether_they_come_together_or_apart(
    fixture_url: str, wire: Wire
) -> None:
    person = Person(name="Mia")
    async with client_on(fixture_url, wire) as client:
        client.set_elicitation_handler(person)
        result = await client.call_tool("multi_input")
    assert text(result) == "Mia confirmed."
    assert sorted(person.asked) == ["Confirm to go on?", "What is your name?"]
    answered = [key for update in wire.calls("tasks/update") for key in update.params["inputResponses"]]
    assert len(answered) == 2 and len(set(answered)) == 2, answered


async def test_a_tool_error_in_a_task_is_an_is_error_result(fixture_url: str, wire: Wire) -> None:
    async with client_on(fixture_url, wire) as client:
        result = await client.call_tool("failing_job")
    assert result.is_error
    assert "The job failed" in text(result)
    assert wire.calls("tools/call")[0].reply["result"]["resultType"] == "task"


async def test_a_failed_task_raises_its_json_rpc_error(fixture_url: str, wire: Wire) -> None:
    async with client_on(fixture_url, wire) as client:
        with pytest.raises(TaskFailedError) as caught:
            await client.call_tool("protocol_error_job")
    assert isinstance(caught.value, McpServerError)  # what a plain call answering the error raises
    assert caught.value.code == -32603
    assert caught.value.message == "The job hit an internal protocol error"
    assert caught.value.task_id == wire.calls("tools/call")[0].reply["result"]["taskId"]
    assert not wire.calls("tasks/cancel")  # it ended by itself: nothing to cancel


async def test_cancelling_the_awaiting_call_cancels_the_task_on_the_server(fixture_url: str, wire: Wire) -> None:
    seen: list[TaskInfo] = []
    async with client_on(fixture_url, wire) as client:
        with anyio.move_on_after(0.8):
            await client.call_tool("slow_compute", {"seconds": 60}, task_status_callback=seen.append)
        cancels = wire.calls("tasks/cancel")
        assert len(cancels) == 1
        task_id = seen[0].task_id
        assert cancels[0].params["taskId"] == task_id and cancels[0].headers["mcp-name"] == task_id
        ack = cancels[0].reply["result"]
        assert ack["resultType"] == "complete" and not {"taskId", "status", "result", "error"} & set(ack)
        handle = await client.task(task_id)
        started = time.monotonic()
        with pytest.raises(TaskCancelledError) as caught:
            await handle.wait()
    assert caught.value.task_id == task_id
    assert time.monotonic() - started < 5  # cancelled long before its 60 seconds
    assert handle.status == "cancelled"


async def test_the_task_handle_starts_shows_and_cancels_without_blocking(fixture_url: str, wire: Wire) -> None:
    async with client_on(fixture_url, wire) as client:
        handle = await client.start_tool_call("slow_compute", {"seconds": 60})
        assert isinstance(handle, ToolTask)
        assert handle.status == "working"
        info = await handle.get()
        assert info.task_id == handle.task_id and info.status == "working"
        assert info.ttl_ms == 600_000 and info.poll_interval_ms == 200
        await handle.cancel()
        with pytest.raises(TaskCancelledError, match=handle.task_id):
            await handle.wait()
        # A quick call still answers at once: no task is made.
        quick = await client.start_tool_call("slow_compute", {"seconds": 0})
    assert not isinstance(quick, ToolTask)
    assert text(quick) == "job computed in 0 s"


async def test_a_second_client_can_follow_a_task_by_its_id(fixture_url: str, wire: Wire) -> None:
    async with client_on(fixture_url, wire) as first:
        first.set_elicitation_handler(Person())  # declares elicitation: the task may ask
        handle = await first.start_tool_call("confirm_delete", {"filename": "b.txt"})
        assert isinstance(handle, ToolTask)
    async with client_on(fixture_url, Wire()) as second:
        second.set_elicitation_handler(Person())
        followed = await second.task(handle.task_id, "confirm_delete")
        result = await followed.wait()
    assert text(result) == "Deleted b.txt."


async def test_mrtr_rounds_before_the_task_then_the_task(fixture_url: str, wire: Wire) -> None:
    person = Person(name="Alice")
    async with client_on(fixture_url, wire) as client:
        client.set_elicitation_handler(person)
        result = await client.call_tool("test_tool_with_task")
    assert text(result) == "Hello, Alice! Your task is done."
    first, second = wire.calls("tools/call")
    assert first.reply["result"]["resultType"] == "input_required"
    assert second.params["inputResponses"] == {"user_name": {"action": "accept", "content": {"name": "Alice"}}}
    assert second.reply["result"]["resultType"] == "task"
    assert wire.calls("tasks/get")


async def test_a_handler_that_fails_inside_a_task_cancels_it(fixture_url: str, wire: Wire) -> None:
    def broken(params: ElicitRequestParams) -> dict[str, Any]:
        raise RuntimeError("the form could not be shown")

    async with client_on(fixture_url, wire) as client:
        client.set_elicitation_handler(broken)
        with pytest.raises(RuntimeError, match="could not be shown"):
            await client.call_tool("confirm_delete", {"filename": "c.txt"})
    assert len(wire.calls("tasks/cancel")) == 1


async def test_max_wait_cancels_the_task_and_says_so(fixture_url: str, wire: Wire) -> None:
    async with client_on(fixture_url, wire, tasks=TaskOptions(max_wait=0.6)) as client:
        with pytest.raises(TimeoutError, match=r"max_wait=0\.6"):
            await client.call_tool("slow_compute", {"seconds": 60})
    assert len(wire.calls("tasks/cancel")) == 1


async def test_without_auto_fulfill_a_task_hands_its_questions_to_the_caller(fixture_url: str, wire: Wire) -> None:
    from fastapi_mrtr.client import InputRequiredConfig, TaskInputRequiredError

    person = Person()
    async with client_on(fixture_url, wire, input_required_config=InputRequiredConfig(auto_fulfill=False)) as client:
        client.set_elicitation_handler(person)  # declares elicitation; with auto_fulfill off it is not run
        with pytest.raises(TaskInputRequiredError) as caught:
            await client.call_tool("confirm_delete", {"filename": "d.txt"})
        handle = caught.value.task
        (key,) = caught.value.input_requests
        assert not wire.calls("tasks/cancel")  # waiting for us is no reason to cancel
        await handle.update({key: {"action": "accept", "content": {"confirm": True}}})
        result = await handle.wait()
    assert text(result) == "Deleted d.txt."
    assert person.asked == []


async def test_tasks_turned_off_are_never_declared(fixture_url: str, wire: Wire) -> None:
    async with client_on(fixture_url, wire, tasks=TaskOptions(enabled=False)) as client:
        result = await client.call_tool("slow_compute", {"seconds": 0.5})
        with pytest.raises(McpServerError) as caught:
            await client.call_tool("failing_job")  # it needs a task
    assert text(result) == "job computed in 0.5 s"
    assert caught.value.code == -32021
    assert not any(declared_tasks(call) for call in wire.calls("tools/call"))
    assert not wire.calls("tasks/get")


async def test_a_2025_era_session_never_declares_tasks(fixture_url: str) -> None:
    bodies: list[str] = []

    async def record(request: httpx.Request) -> None:
        bodies.append(request.content.decode())  # the session's GET stream records an empty body

    async with (
        httpx.AsyncClient(event_hooks={"request": [record]}, timeout=30) as http,
        MrtrClient(fixture_url, http_client=http, options=ClientOptions(mode="legacy")) as client,
    ):
        result = await client.call_tool("slow_compute", {"seconds": 0.5})
        with pytest.raises(ValueError, match="2026-07-28"):
            await client.task("anything")
    assert text(result) == "job computed in 0.5 s"
    assert any('"tools/call"' in body for body in bodies)
    assert not any(TASKS_EXTENSION in body or "tasks/" in body for body in bodies)
