"""Tasks across three uvicorn replicas behind nginx round robin (no stickiness), sharing one Redis.

Phase one: 200 tasks, each created through nginx (so on whichever replica got the ``tools/call``),
parked in ``input_required``, answered (``tasks/update``) and polled through nginx, so through the
others too: a fifth are cancelled while they wait, a fifth are cancelled while their next leg runs
(on whichever replica took the answer: the cancel reaches it through the relay), the rest complete
with their own answer. Callers are seven tokens; another caller's task id is unknown to everyone.

Phase two: 30 tasks created directly on the third replica, which is SIGKILLed while it runs them.
Its leases lapse; the next poll through nginx, on a live replica, takes each task over: the 20
resumable ones are replayed there and complete (their payment, keyed by ``ctx.idempotency_key``,
is asked twice and applied once), the 10 declared ``resumable=False`` end ``failed`` with a clear
error. None is lost; no payment is applied twice (counted in Redis by ``tasks_app``).
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from redis import Redis

from tests.scaleout.conftest import StartNginx, StartReplicas, new_key
from tests.scaleout.services import RedisServer
from tests.support import rpc_headers

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

TASKS = 200
CONCURRENCY = 50
KILLED_RESUMABLE, KILLED_FRAGILE = 20, 10
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
TERMINAL = {"completed", "failed", "cancelled"}
ATTEMPTS, APPLIED = "effects:attempts", "effects:applied"  # tasks_app's hashes (it needs Redis to import)
UNKNOWN_TASK = "Failed to retrieve task: Task not found"


@dataclass
class Peer:
    """A raw 2026-07-28 client that declares the tasks extension and notes who answered."""

    http: httpx.AsyncClient
    served_by: list[str] = field(default_factory=list)

    async def rpc(self, url: str, method: str, params: dict[str, Any], token: str) -> dict[str, Any]:
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}},
        }
        name = params.get("taskId") or params.get("name")
        headers = {**rpc_headers(method, name), "Authorization": f"Bearer {token}"}
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
        for attempt in range(20):  # a killed upstream: nginx may answer 502 until it notices
            try:
                response = await self.http.post(url, json=body, headers=headers)
            except httpx.TransportError:
                response = None
            if response is not None and response.status_code not in (502, 503, 504):
                self.served_by.append(response.headers.get("x-replica", "?"))
                message: dict[str, Any] = response.json()
                return message
            await asyncio.sleep(0.1 * (attempt + 1))
        raise AssertionError(f"{method}: no replica answered")

    async def poll(self, url: str, task_id: str, token: str, until: set[str], timeout: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            message = await self.rpc(url, "tasks/get", {"taskId": task_id}, token)
            assert "result" in message, message
            result: dict[str, Any] = message["result"]
            if result["status"] in until:
                return result
            assert result["status"] not in TERMINAL, f"{task_id[:8]} ended {result}, wanted {until}"
            assert time.monotonic() < deadline, f"{task_id[:8]} stayed {result['status']}"
            await asyncio.sleep(0.1)


def answer(name: str) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": name}}


@dataclass
class Outcome:
    job: int
    kind: str  # "cancel-parked", "cancel-running", "complete"
    status: str = ""
    text: str = ""
    created_on: str = ""
    served_by: set[str] = field(default_factory=set)
    foreign_error: dict[str, Any] | None = None


async def one_task(http: httpx.AsyncClient, url: str, job: int) -> Outcome:
    """Create, answer (or not), cancel (or not) and poll one task, all through nginx."""
    peer, token = Peer(http), f"user-{job % 7}"
    kind = ("cancel-parked", "cancel-running", "complete", "complete", "complete")[job % 5]
    outcome = Outcome(job, kind)
    work = 30.0 if kind == "cancel-running" else 0.2  # only a cancel that reaches the leg ends it in time
    created = await peer.rpc(url, "tools/call", {"name": "interview", "arguments": {"job": job, "work": work}}, token)
    assert created["result"]["resultType"] == "task", created
    outcome.created_on = peer.served_by[-1]
    task_id = created["result"]["taskId"]
    parked = await peer.poll(url, task_id, token, {"input_required"})
    if job % 10 == 0:  # another caller holding this id learns nothing: the same error as an unknown id
        foreign = await peer.rpc(url, "tasks/get", {"taskId": task_id}, "mallory")
        outcome.foreign_error = foreign.get("error")
    if kind == "cancel-parked":
        await peer.rpc(url, "tasks/cancel", {"taskId": task_id}, token)
    else:
        (key,) = parked["inputRequests"]
        await peer.rpc(url, "tasks/update", {"taskId": task_id, "inputResponses": {key: answer(f"name-{job}")}}, token)
        if kind == "cancel-running":  # the ack came once its leg runs, on the replica that took the answer
            await asyncio.sleep(0.3)
            await peer.rpc(url, "tasks/cancel", {"taskId": task_id}, token)
    final = await peer.poll(url, task_id, token, TERMINAL)
    outcome.status = final["status"]
    outcome.text = final.get("result", {}).get("content", [{}])[0].get("text", "")
    outcome.served_by = set(peer.served_by)
    return outcome


async def phase_one(url: str) -> list[Outcome]:
    limit = asyncio.Semaphore(CONCURRENCY)
    async with httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_connections=CONCURRENCY)) as http:

        async def bounded(job: int) -> Outcome:
            async with limit:
                return await one_task(http, url, job)

        return list(await asyncio.gather(*(bounded(job) for job in range(TASKS))))


async def create_on(http: httpx.AsyncClient, replica_url: str, tool: str, job: int) -> str:
    created = await Peer(http).rpc(
        replica_url, "tools/call", {"name": tool, "arguments": {"job": job, "work": 3.0}}, "k"
    )
    assert created["result"]["resultType"] == "task", created
    task_id: str = created["result"]["taskId"]
    return task_id


async def phase_two_create(replica_url: str) -> dict[int, str]:
    async with httpx.AsyncClient(timeout=30) as http:
        jobs = [(1000 + k, "long_job") for k in range(KILLED_RESUMABLE)]
        jobs += [(2000 + k, "fragile_job") for k in range(KILLED_FRAGILE)]
        ids = await asyncio.gather(*(create_on(http, replica_url, tool, job) for job, tool in jobs))
        return {job: task_id for (job, _), task_id in zip(jobs, ids, strict=True)}


async def phase_two_finish(url: str, tasks: dict[int, str]) -> dict[int, dict[str, Any]]:
    async with httpx.AsyncClient(timeout=30) as http:
        results = await asyncio.gather(*(Peer(http).poll(url, tid, "k", TERMINAL) for tid in tasks.values()))
        return dict(zip(tasks, results, strict=True))


def applied_jobs(redis: Redis) -> Counter[int]:
    """How many payments were applied per job (each applied key names its job)."""
    values = redis.hgetall(APPLIED).values()
    return Counter(int(value.decode().split("@")[0]) for value in values)


def test_200_tasks_across_three_replicas_and_a_replica_killed_mid_task(
    start_replicas: StartReplicas, start_nginx: StartNginx, redis_server: RedisServer
) -> None:
    env = {"MRTR_STATE_KEY": new_key(), "MRTR_REDIS_URL": redis_server.url, "TASK_LEASE_SECONDS": "2"}
    replicas = start_replicas(3, env=env, app="tests.scaleout.tasks_app:app")
    nginx = start_nginx(replicas.ports)
    url = nginx.url + "/mcp"
    redis = Redis.from_url(redis_server.url)

    began = time.monotonic()
    outcomes = asyncio.run(phase_one(url))
    took = time.monotonic() - began
    statuses = Counter((o.kind, o.status) for o in outcomes)
    crossed = sum(1 for o in outcomes if len(o.served_by) > 1)
    print(f"\nphase one: {TASKS} tasks in {took:.1f} s; {dict(statuses)}; {crossed} served by several replicas")

    assert statuses == {
        ("cancel-parked", "cancelled"): 40,
        ("cancel-running", "cancelled"): 40,
        ("complete", "completed"): 120,
    }
    for o in outcomes:
        if o.kind == "complete":
            assert o.text.startswith(f"job {o.job} for name-{o.job} (receipt-"), (o.job, o.text)
    assert {o.created_on for o in outcomes} == set(replicas.names)
    assert crossed >= TASKS * 3 // 4, crossed
    foreign = [o.foreign_error for o in outcomes if o.job % 10 == 0]
    assert len(foreign) == 20 and all(e == {"code": -32602, "message": UNKNOWN_TASK} for e in foreign), foreign
    paid = applied_jobs(redis)
    assert all(count == 1 for count in paid.values())
    assert {o.job for o in outcomes if o.kind == "complete"} <= set(paid)
    assert not {o.job for o in outcomes if o.kind == "cancel-parked"} & set(paid)
    assert all(int(n) == 1 for n in redis.hgetall(ATTEMPTS).values())  # no replica died: no replay

    # Phase two: the third replica runs 30 tasks and is killed.
    victim = replicas[2]
    tasks = asyncio.run(phase_two_create(victim.url + "/mcp"))
    deadline = time.monotonic() + 10
    while len(set(applied_jobs(redis)) & set(range(1000, 1000 + KILLED_RESUMABLE))) < KILLED_RESUMABLE:
        assert time.monotonic() < deadline, "the victim never started its long jobs"
        time.sleep(0.05)
    victim.stop(signal.SIGKILL)
    killed_at = time.monotonic()
    finished = asyncio.run(phase_two_finish(url, tasks))
    print(f"phase two: 30 tasks settled {time.monotonic() - killed_at:.1f} s after the SIGKILL")

    paid = applied_jobs(redis)
    attempts = Counter(int(n) for n in redis.hgetall(ATTEMPTS).values())
    for job, result in finished.items():
        if job < 2000:
            assert result["status"] == "completed", (job, result)
            text = result["result"]["content"][0]["text"]
            assert text.startswith(f"long job {job} done (receipt-"), text
            assert paid[job] == 1, (job, paid[job])  # replayed under the same idempotency key
        else:
            assert result["status"] == "failed", (job, result)
            assert result["error"]["code"] == -32603 and "resumable=False" in result["error"]["message"]
            assert result["error"]["data"] == {"reason": "task_interrupted"}
    # Each long job asked for its payment twice (on the victim, then on its new runner).
    assert attempts[2] == KILLED_RESUMABLE, attempts
    assert victim.returncode == -signal.SIGKILL
    assert time.monotonic() - began < 120
