"""Questions asked inside a task: parking in input_required, partial answers, the replay rules,
and the spec's ignore rules for answers to keys that are not outstanding."""

from __future__ import annotations

import asyncio

import pytest

from tests.tasks.conftest import Served
from tests.tasks.peer import TaskPeer, accept, check_task_shape

pytestmark = pytest.mark.anyio


async def start_interview(peer: TaskPeer) -> str:
    created = (await peer.call("interview"))["result"]
    check_task_shape(created, "task")
    task_id: str = created["taskId"]
    return task_id


async def test_an_unanswered_ask_parks_the_task_and_holds_no_worker(peer: TaskPeer, served: Served) -> None:
    task_id = await start_interview(peer)
    parked = await peer.wait_for(task_id, "input_required")
    check_task_shape(parked, "complete")
    assert list(parked["inputRequests"]) == ["name"]
    assert parked["inputRequests"]["name"]["method"] == "elicitation/create"
    assert not served.mcp._task_legs.is_running(task_id)  # type: ignore[union-attr]  # nothing waits
    assert (await peer.get(task_id))["result"]["inputRequests"] == parked["inputRequests"]  # a snapshot


async def test_partial_answers_then_the_rest_and_replay_rules(peer: TaskPeer, served: Served) -> None:
    task_id = await start_interview(peer)
    await peer.wait_for(task_id, "input_required")
    ack = (await peer.update(task_id, {"name": accept({"name": "Ada"})}))["result"]
    assert ack == {"resultType": "complete"}
    both = await peer.wait_for(task_id, "input_required")
    while set(both["inputRequests"]) == {"name"}:  # the update is eventually consistent
        both = await peer.wait_for(task_id, "input_required")
    assert set(both["inputRequests"]) == {"color", "size"}  # "name" was not asked again
    assert (await peer.update(task_id, {"color": accept({"color": "teal"})}))["result"] == {"resultType": "complete"}
    left = (await peer.get(task_id))["result"]
    assert left["status"] == "input_required" and set(left["inputRequests"]) == {"size"}
    await peer.update(task_id, {"size": accept({"size": 41})})
    done = await peer.wait_for(task_id, "completed")
    text = done["result"]["content"][0]["text"]
    assert text.startswith("Ada teal 41 receipt-")
    journal = served.journal
    assert journal.runs["interview"] == 3  # one leg, then one replay per completed set of answers
    assert journal.once_calls == 1  # ctx.once ran on the first leg only
    assert list(journal.charges.values()) == [1]  # one charge, under one idempotency key


async def test_answers_to_keys_not_outstanding_are_ignored(peer: TaskPeer) -> None:
    task_id = await start_interview(peer)
    await peer.wait_for(task_id, "input_required")
    for junk in ({"never-asked": {"ignored": True}}, {"never-asked": 12345}, {"size": accept({"size": 1})}, {}):
        assert (await peer.update(task_id, junk))["result"] == {"resultType": "complete"}
    still = (await peer.get(task_id))["result"]
    assert still["status"] == "input_required" and list(still["inputRequests"]) == ["name"]
    await peer.update(task_id, {"name": accept({"name": "Ada"})})
    await asyncio.sleep(0.3)
    again = await peer.update(task_id, {"name": accept({"name": "Eve"})})  # already answered: ignored
    assert again["result"] == {"resultType": "complete"}
    await peer.update(task_id, {"color": accept({"color": "red"}), "size": accept({"size": 40})})
    done = await peer.wait_for(task_id, "completed")
    assert done["result"]["content"][0]["text"].startswith("Ada red 40")


async def test_a_refused_answer_is_asked_again_under_a_new_key(peer: TaskPeer) -> None:
    task_id = await start_interview(peer)
    await peer.wait_for(task_id, "input_required")
    await peer.update(task_id, {"name": accept({"nom": "no such field"})})  # does not fit the form
    again = await peer.wait_for(task_id, "input_required")
    while "name" in again["inputRequests"]:
        again = await peer.wait_for(task_id, "input_required")
    assert list(again["inputRequests"]) == ["name~2"]  # keys are unique over the task's life
    await peer.update(task_id, {"name~2": accept({"name": "Ada"})})
    both = await peer.wait_for(task_id, "input_required")
    while "name~2" in both["inputRequests"]:
        both = await peer.wait_for(task_id, "input_required")
    assert set(both["inputRequests"]) == {"color", "size"}


async def test_updates_after_the_end_are_acknowledged_and_change_nothing(peer: TaskPeer) -> None:
    created = (await peer.call("must", {"seconds": 0.2}))["result"]
    done = await peer.wait_for(created["taskId"], "completed")
    ack = await peer.update(created["taskId"], {"anything": accept({"x": 1})})
    assert ack["result"] == {"resultType": "complete"}
    assert (await peer.get(created["taskId"]))["result"] == done


async def test_malformed_updates_are_refused(peer: TaskPeer) -> None:
    task_id = await start_interview(peer)
    for bad in (None, [], "name"):
        message = await peer.update(task_id, bad)
        assert message["status"] == 400 and message["error"]["code"] == -32602


async def test_a_huge_answer_meets_the_body_limit(peer: TaskPeer, served: Served) -> None:
    task_id = await start_interview(peer)
    await peer.wait_for(task_id, "input_required")
    huge = "x" * (served.mcp.options.max_body_bytes + 1)
    response = await peer.send("tasks/update", {"taskId": task_id, "inputResponses": {"name": huge}}, name=task_id)
    assert response.status_code == 413
    assert (await peer.get(task_id))["result"]["status"] == "input_required"


async def test_an_ask_the_client_cannot_answer_fails_the_task(peer: TaskPeer) -> None:
    peer.capabilities = {}  # no elicitation: the handler's first ask needs it
    created = (await peer.call("interview"))["result"]
    failed = await peer.wait_for(created["taskId"], "failed")
    check_task_shape(failed, "complete")
    assert failed["error"]["code"] == -32021


async def test_a_json_rpc_error_ends_the_task_failed(peer: TaskPeer) -> None:
    created = (await peer.call("broken"))["result"]
    failed = await peer.wait_for(created["taskId"], "failed")
    check_task_shape(failed, "complete")
    assert failed["error"] == {"code": -32000, "message": "the upstream refused", "data": {"upstream": "billing"}}
    assert "result" not in failed
