"""Drive an ASGI app in-process with the rig's requests: CPU per operation and a profile.

This leaves out uvicorn and the socket (a fixed cost, the same for every server), so it shows
what the application itself costs per echo call and per two-round MRTR flow. Used while
optimising; the published figures come from the shared rig (``python -m bench``).

    python -m bench.inproc bench.app:app --work mrtr --n 2000 [--profile out.pstats]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import importlib
import json
import pstats
import time
from typing import Any

from starlette.types import ASGIApp, Message, Scope

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}


def call_body(request_id: int, tool: str, arguments: dict[str, Any], **extra: Any) -> str:
    """A ``tools/call`` body shaped like the rig's (compact JSON, ``_meta`` last)."""
    params = {"name": tool, "arguments": arguments, **extra, "_meta": META}
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}, separators=(",", ":")
    )


ECHO = call_body(1, "echo", {"text": "hello"})
FIRST = call_body(1, "confirm", {"item": "book"})


def retry_body(key: str, state: str) -> str:
    answer = {key: {"action": "accept", "content": {"ok": True}}}
    return call_body(2, "confirm", {"item": "book"}, inputResponses=answer, requestState=state)


def headers_for(tool: str, body: bytes, method: str = "tools/call") -> list[tuple[bytes, bytes]]:
    return [
        (b"host", b"127.0.0.1:18400"),
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (b"mcp-protocol-version", b"2026-07-28"),
        (b"mcp-method", method.encode()),
        (b"mcp-name", tool.encode()),
        (b"content-length", str(len(body)).encode()),
    ]


async def post(app: ASGIApp, path: str, tool: str, text: str, method: str = "tools/call") -> tuple[int, bytes]:
    body = text.encode()
    scope: Scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "server": ("127.0.0.1", 18400),
        "client": ("127.0.0.1", 50000),
        "scheme": "http",
        "method": "POST",
        "root_path": "",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": headers_for(tool, body, method),
        "state": {},
    }
    sent = False
    status = 0
    out = bytearray()

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            out.extend(message.get("body", b""))

    await app(scope, receive, send)
    return status, bytes(out)


async def echo(app: ASGIApp, path: str) -> None:
    status, body = await post(app, path, "echo", ECHO)
    if status != 200 or b'"complete"' not in body or b"hello" not in body:
        raise RuntimeError(f"echo failed: {status} {body[:300]!r}")


async def flow(app: ASGIApp, path: str) -> None:
    status, body = await post(app, path, "confirm", FIRST)
    result = json.loads(body).get("result", {})
    if status != 200 or result.get("resultType") != "input_required":
        raise RuntimeError(f"first round failed: {status} {body[:300]!r}")
    key = next(iter(result["inputRequests"]))
    status, body = await post(app, path, "confirm", retry_body(key, result["requestState"]))
    if status != 200 or b'"complete"' not in body:
        raise RuntimeError(f"retry failed: {status} {body[:300]!r}")


async def lifespan(app: ASGIApp) -> tuple[asyncio.Task[None], asyncio.Queue[Message]]:
    """Start the app's lifespan (the SDK's session manager needs it); returns how to stop it."""
    inbox: asyncio.Queue[Message] = asyncio.Queue()
    started = asyncio.get_running_loop().create_future()

    async def send(message: Message) -> None:
        if message["type"].startswith("lifespan.startup") and not started.done():
            started.set_result(message["type"])

    async def serve() -> None:
        await app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, inbox.get, send)

    task = asyncio.create_task(serve())
    await inbox.put({"type": "lifespan.startup"})
    # An app without lifespan support returns at once: nothing to wait for then.
    await asyncio.wait({task, started}, return_when=asyncio.FIRST_COMPLETED)
    return task, inbox


async def measure(app: ASGIApp, path: str, work: str, n: int, repeat: int = 1) -> float:
    """CPU microseconds per operation: the best of ``repeat`` blocks of ``n`` (noise only adds)."""
    op = echo if work == "echo" else flow
    for _ in range(min(200, n)):  # warm-up: lazy resolution, caches
        await op(app, path)
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(n):
            await op(app, path)
        best = min(best, (time.process_time() - start) / n * 1e6)
    return best


async def run(app: ASGIApp, path: str, works: list[str], n: int, repeat: int, profile: str | None) -> None:
    task, inbox = await lifespan(app)
    for work in works:
        profiler = cProfile.Profile() if profile else None
        if profiler is not None:
            profiler.enable()
        us = await measure(app, path, work, n, repeat)
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(f"{profile}.{work}")
            pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
        print(json.dumps({"work": work, "cpu_us_per_op": round(us, 1)}), flush=True)
    await inbox.put({"type": "lifespan.shutdown"})
    await task


def load(target: str) -> ASGIApp:
    module, _, attr = target.partition(":")
    app: ASGIApp = getattr(importlib.import_module(module), attr or "app")
    return app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("target", help="MODULE:APP")
    parser.add_argument("--path", default="/mcp")
    parser.add_argument("--work", default="echo,mrtr")
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=1, help="report the best of this many blocks of --n")
    parser.add_argument("--profile", help="write a cProfile of the run here and print its top entries")
    args = parser.parse_args()
    asyncio.run(run(load(args.target), args.path, args.work.split(","), args.n, args.repeat, args.profile))


if __name__ == "__main__":
    main()
