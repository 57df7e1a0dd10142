"""What a task costs: CPU per operation of a task-capable call against a plain one, in-process.

Three operations on one app (``bench.tasks_app``), each driven through the ASGI app like
``bench.inproc`` does (no socket, no uvicorn, the same for all three):

* ``plain``: ``tools/call`` of ``echo``, a tool without ``task=`` (the rig's echo call);
* ``optional``: ``tools/call`` of ``echo_optional`` (``task="optional"``) by a client that declares
  the tasks extension; it ends within its deadline, so the answer is a plain result: the price a
  quick call pays for being able to become a task;
* ``task``: ``echo_task`` (``promote_after=0``): the call answers ``CreateTaskResult``, the leg
  runs, then one ``tasks/get`` reads the completed result: a whole task, end to end.

    python -m bench.tasks --n 2000 --repeat 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.types import ASGIApp

from bench.inproc import META, lifespan, post
from bench.tasks_app import app

TASKS = "io.modelcontextprotocol/tasks"
TASK_META = {**META, "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "extensions": {TASKS: {}}}}


def body(method: str, params: dict[str, Any], meta: dict[str, Any]) -> str:
    return json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}, separators=(",", ":")
    )


PLAIN = body("tools/call", {"name": "echo", "arguments": {"text": "hello"}}, META)
OPTIONAL = body("tools/call", {"name": "echo_optional", "arguments": {"text": "hello"}}, TASK_META)
CREATE = body("tools/call", {"name": "echo_task", "arguments": {"text": "hello"}}, TASK_META)


def result_of(status: int, raw: bytes) -> dict[str, Any]:
    message = json.loads(raw)
    if status != 200 or "result" not in message:
        raise RuntimeError(f"failed: {status} {raw[:300]!r}")
    result: dict[str, Any] = message["result"]
    return result


async def plain(target: ASGIApp) -> None:
    result = result_of(*await post(target, "/mcp", "echo", PLAIN))
    assert result["resultType"] == "complete", result


async def optional(target: ASGIApp) -> None:
    result = result_of(*await post(target, "/mcp", "echo_optional", OPTIONAL))
    assert result["resultType"] == "complete" and "taskId" not in result, result


async def task(target: ASGIApp) -> None:
    created = result_of(*await post(target, "/mcp", "echo_task", CREATE))
    assert created["resultType"] == "task", created
    task_id = created["taskId"]
    get = body("tasks/get", {"taskId": task_id}, TASK_META)
    for _ in range(1000):
        await asyncio.sleep(0)  # let the leg run
        polled = result_of(*await post(target, "/mcp", task_id, get, method="tasks/get"))
        if polled["status"] == "completed":
            return
    raise RuntimeError(f"task {task_id} did not complete: {polled}")


OPERATIONS: dict[str, Callable[[ASGIApp], Awaitable[None]]] = {"plain": plain, "optional": optional, "task": task}


async def measure(target: ASGIApp, operation: Callable[[ASGIApp], Awaitable[None]], n: int, repeat: int) -> float:
    for _ in range(min(200, n)):
        await operation(target)
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(n):
            await operation(target)
        best = min(best, (time.process_time() - start) / n * 1e6)
    return best


async def run(works: list[str], n: int, repeat: int) -> None:
    running, inbox = await lifespan(app)
    for work in works:
        us = await measure(app, OPERATIONS[work], n, repeat)
        print(json.dumps({"work": work, "cpu_us_per_op": round(us, 1)}), flush=True)
    await inbox.put({"type": "lifespan.shutdown"})
    await running


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", default="plain,optional,task")
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3, help="report the best of this many blocks of --n")
    args = parser.parse_args()
    asyncio.run(run(args.work.split(","), args.n, args.repeat))


if __name__ == "__main__":
    main()
