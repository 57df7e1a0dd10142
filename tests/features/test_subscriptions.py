"""``subscriptions/listen``: the long-lived notification stream and ``mcp.notify_*``.

The stream never ends on its own, and ``httpx.ASGITransport`` buffers whole responses, so most
tests drive the ASGI app directly with their own ``receive``/``send``; one runs a real uvicorn
server on 127.0.0.1 to check streaming and disconnect handling over a socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from starlette.types import Message

from fastapi_mrtr import MCP, ServerOptions
from tests.mcp_helpers import CAPS_KEY, PROTOCOL, VERSION_KEY, connect, make_headers, make_meta, make_server, rpc_error

pytestmark = pytest.mark.anyio

SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
ACK = "notifications/subscriptions/acknowledged"
INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601


class Listen:
    """One ``subscriptions/listen`` request sent straight to the ASGI app."""

    def __init__(
        self,
        app: FastAPI,
        notifications: Any,
        request_id: int | str = 1,
        accept: str | None = None,
        *,
        client: tuple[str, int] = ("127.0.0.1", 50000),
        authorization: str | None = None,
    ) -> None:
        params = {"_meta": make_meta(), "notifications": notifications}
        body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "subscriptions/listen", "params": params})
        headers = make_headers("subscriptions/listen", **({"accept": accept} if accept else {}))
        if authorization is not None:
            headers["authorization"] = authorization
        self._body = body.encode()
        self._scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": "/mcp",
            "raw_path": b"/mcp",
            "root_path": "",
            "query_string": b"",
            "headers": [(b"host", b"localhost")] + [(k.encode(), v.encode()) for k, v in headers.items()],
            "client": client,
            "server": ("localhost", 80),
        }
        self._app = app
        self._gone = asyncio.Event()
        self._read = False
        self.messages: asyncio.Queue[Message] = asyncio.Queue()
        self.status: int | None = None
        self.finished = False
        self._buffer = b""
        self.comments: list[bytes] = []
        self.task: asyncio.Task[None] | None = None

    async def _receive(self) -> Message:
        if not self._read:
            self._read = True
            return {"type": "http.request", "body": self._body, "more_body": False}
        await self._gone.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: Message) -> None:
        await self.messages.put(message)

    def start(self) -> Listen:
        self.task = asyncio.ensure_future(self._app(self._scope, self._receive, self._send))
        return self

    async def response_start(self) -> int:
        message = await asyncio.wait_for(self.messages.get(), 5)
        assert message["type"] == "http.response.start"
        status: int = message["status"]
        self.status = status
        return status

    async def frame(self, timeout: float = 5) -> dict[str, Any]:
        """The next JSON-RPC message on the stream (keep-alive comments are collected aside)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            if b"\n\n" in self._buffer:
                event, self._buffer = self._buffer.split(b"\n\n", 1)
                if event.startswith(b":"):
                    self.comments.append(event)
                    continue
                data = b"".join(line[5:].strip() for line in event.split(b"\n") if line.startswith(b"data:"))
                parsed: dict[str, Any] = json.loads(data)
                return parsed
            assert not self.finished, "the stream ended"
            message = await asyncio.wait_for(self.messages.get(), max(deadline - loop.time(), 0))
            assert message["type"] == "http.response.body"
            self._buffer += message.get("body", b"")
            self.finished = not message.get("more_body", False)

    async def no_frame(self, wait: float = 0.2) -> None:
        with pytest.raises(asyncio.TimeoutError):
            await self.frame(timeout=wait)

    async def body(self) -> dict[str, Any]:
        """For a non-stream answer: the JSON body."""
        message = await asyncio.wait_for(self.messages.get(), 5)
        parsed: dict[str, Any] = json.loads(message["body"])
        return parsed

    async def disconnect(self) -> None:
        self._gone.set()
        assert self.task is not None
        await asyncio.wait_for(self.task, 5)


@contextlib.asynccontextmanager
async def listening(app: FastAPI, notifications: Any, request_id: int | str = 1) -> AsyncIterator[Listen]:
    stream = Listen(app, notifications, request_id).start()
    try:
        assert await stream.response_start() == 200
        yield stream
    finally:
        if stream.task is not None and not stream.task.done():
            await stream.disconnect()


def _full_server(**options: Any) -> tuple[FastAPI, MCP]:
    app, mcp = make_server(**options)

    @mcp.prompt()
    def hello() -> str:
        return "hello"

    @mcp.resource("test://a")
    def a() -> str:
        return "a"

    return app, mcp


async def test_first_frame_acknowledges_the_honoured_subset() -> None:
    app, _ = make_server()  # tools only: no prompts, no resources
    requested = {"toolsListChanged": True, "promptsListChanged": True, "resourceSubscriptions": ["test://a"]}
    async with listening(app, requested, request_id="sub-1") as stream:
        ack = await stream.frame()
    assert ack == {
        "jsonrpc": "2.0",
        "method": ACK,
        "params": {"notifications": {"toolsListChanged": True}, "_meta": {SUBSCRIPTION_ID: "sub-1"}},
    }


async def test_notifications_carry_the_subscription_id_and_respect_the_filter() -> None:
    app, mcp = _full_server()
    requested = {"toolsListChanged": True, "resourceSubscriptions": ["test://a"], "promptsListChanged": False}
    async with listening(app, requested, request_id=41) as stream:
        ack = await stream.frame()
        assert ack["params"]["notifications"] == {"toolsListChanged": True, "resourceSubscriptions": ["test://a"]}
        mcp.notify_prompts_changed()  # not asked for
        mcp.notify_resources_changed()  # not asked for
        mcp.notify_resource_updated("test://b")  # another resource
        mcp.notify_tools_changed()
        mcp.notify_resource_updated("test://a")
        tools = await stream.frame()
        updated = await stream.frame()
        await stream.no_frame()
    assert tools == {
        "jsonrpc": "2.0",
        "method": "notifications/tools/list_changed",
        "params": {"_meta": {SUBSCRIPTION_ID: 41}},
    }
    assert updated == {
        "jsonrpc": "2.0",
        "method": "notifications/resources/updated",
        "params": {"uri": "test://a", "_meta": {SUBSCRIPTION_ID: 41}},
    }


async def test_each_stream_gets_only_its_kinds() -> None:
    app, mcp = _full_server()
    async with (
        listening(app, {"promptsListChanged": True}, request_id=1) as prompts,
        listening(app, {"toolsListChanged": True, "resourcesListChanged": True}, request_id=2) as lists,
    ):
        await prompts.frame()
        await lists.frame()
        mcp.notify_tools_changed()
        mcp.notify_prompts_changed()
        mcp.notify_resources_changed()
        assert (await prompts.frame())["method"] == "notifications/prompts/list_changed"
        assert (await lists.frame())["method"] == "notifications/tools/list_changed"
        assert (await lists.frame())["method"] == "notifications/resources/list_changed"
        await prompts.no_frame()
        await lists.no_frame()


async def test_pending_duplicates_are_coalesced() -> None:
    app, mcp = make_server()
    async with listening(app, {"toolsListChanged": True}) as stream:
        await stream.frame()
        for _ in range(5):  # published before the stream gets to run: one notification is enough
            mcp.notify_tools_changed()
        assert (await stream.frame())["method"] == "notifications/tools/list_changed"
        await stream.no_frame()


async def test_registering_a_tool_later_notifies_listeners() -> None:
    app, mcp = make_server()
    async with listening(app, {"toolsListChanged": True}) as stream:
        await stream.frame()

        @mcp.tool()
        @app.get("/late")
        async def late_tool() -> dict[str, str]:
            return {"ok": "yes"}

        assert (await stream.frame())["method"] == "notifications/tools/list_changed"


async def test_publishing_from_another_thread() -> None:
    app, mcp = make_server()
    async with listening(app, {"toolsListChanged": True}) as stream:
        await stream.frame()
        worker = threading.Thread(target=mcp.notify_tools_changed)
        worker.start()
        worker.join()
        assert (await stream.frame())["method"] == "notifications/tools/list_changed"


async def test_the_stream_ends_when_the_client_disconnects() -> None:
    app, mcp = make_server()
    stream = Listen(app, {"toolsListChanged": True}).start()
    assert await stream.response_start() == 200
    await stream.frame()
    assert mcp.subscriptions.active_streams == 1
    await stream.disconnect()
    assert stream.task is not None and stream.task.done()
    assert mcp.subscriptions.active_streams == 0
    mcp.notify_tools_changed()  # nobody left: a no-op


async def test_the_server_ends_a_stream_after_its_maximum_duration() -> None:
    app, _ = make_server(subscription_max_seconds=0.3)
    stream = Listen(app, {"toolsListChanged": True}, request_id=12).start()
    assert await stream.response_start() == 200
    await stream.frame()
    final = await stream.frame(timeout=3)
    assert final["id"] == 12
    assert final["result"]["resultType"] == "complete"
    assert final["result"]["_meta"][SUBSCRIPTION_ID] == 12
    assert stream.finished
    assert stream.task is not None
    await asyncio.wait_for(stream.task, 2)


async def test_idle_streams_get_keepalive_comments() -> None:
    app, _ = make_server(subscription_keepalive_seconds=0.05)
    async with listening(app, {"toolsListChanged": True}) as stream:
        await stream.frame()
        await stream.no_frame(wait=0.3)
        assert stream.comments and all(comment.startswith(b":") for comment in stream.comments)


async def test_the_number_of_streams_is_bounded() -> None:
    app, _ = make_server(subscription_max_streams=1)
    async with listening(app, {"toolsListChanged": True}) as first:
        await first.frame()
        second = Listen(app, {"toolsListChanged": True}, request_id=2).start()
        assert await second.response_start() == 503
        body = await second.body()
        assert body["id"] == 2 and body["error"]["code"] == -32603


async def test_one_caller_cannot_take_every_stream() -> None:
    """A client is counted by its address; another address has slots of its own."""
    app, _ = make_server(subscription_max_streams=10, subscription_max_streams_per_caller=2)
    flags = {"toolsListChanged": True}
    async with (
        listening(app, flags, 1) as first,
        listening(app, flags, 2) as second,
    ):
        await first.frame()
        await second.frame()
        third = Listen(app, flags, request_id=3).start()
        assert await third.response_start() == 429
        body = await third.body()
        assert body["id"] == 3 and body["error"]["code"] == -32600
        assert "at most 2" in body["error"]["message"]
        other = Listen(app, flags, request_id=4, client=("127.0.0.2", 40000)).start()
        assert await other.response_start() == 200
        await other.disconnect()
        await first.disconnect()
        # A closed stream gives its caller's slot back.
        again = Listen(app, flags, request_id=6).start()
        assert await again.response_start() == 200
        await again.disconnect()


async def test_made_up_authorization_values_are_not_new_callers() -> None:
    """Issue 27: the header is not verified, so each invented value must not open a new bucket
    (one client took all 1,000 slots with 63 fake values); the address bounds them all."""
    app, _ = make_server(subscription_max_streams=50, subscription_max_streams_per_caller=2)
    flags = {"toolsListChanged": True}
    held = [Listen(app, flags, request_id=n, authorization=f"Bearer fake-{n}").start() for n in range(2)]
    for listen in held:
        assert await listen.response_start() == 200
    for n in range(2, 6):
        refused = Listen(app, flags, request_id=n, authorization=f"Bearer fake-{n}").start()
        assert await refused.response_start() == 429
        assert (await refused.body())["error"]["code"] == -32600
    # A real user elsewhere is not affected.
    other = Listen(app, flags, request_id=9, authorization="Bearer alice", client=("10.0.0.9", 1234)).start()
    assert await other.response_start() == 200
    for listen in [*held, other]:
        await listen.disconnect()


def test_the_per_caller_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match="per_caller"):
        ServerOptions(subscription_max_streams_per_caller=0)


@pytest.mark.parametrize(
    "notifications",
    [None, [], {"toolsListChanged": "yes"}, {"resourceSubscriptions": "test://a"}, {"resourceSubscriptions": [1]}],
)
async def test_invalid_filters_are_invalid_params(notifications: Any) -> None:
    app, _ = _full_server()
    stream = Listen(app, notifications, request_id=5).start()
    assert await stream.response_start() == 400
    body = await stream.body()
    assert body["id"] == 5 and body["error"]["code"] == INVALID_PARAMS


async def test_listen_needs_an_event_stream_accept() -> None:
    app, _ = make_server()
    stream = Listen(app, {"toolsListChanged": True}, accept="application/json").start()
    assert await stream.response_start() == 406


async def test_without_subscriptions_listen_is_not_served() -> None:
    app, _ = make_server(subscriptions=False)
    async with connect(app) as client:
        discovered = await client.result("server/discover")
        response = await client.post(
            "subscriptions/listen", {"notifications": {"toolsListChanged": True}}, request_id=3
        )
    assert discovered["capabilities"] == {"tools": {}}
    rpc_error(response, 404, METHOD_NOT_FOUND, 3)


async def test_over_a_real_socket() -> None:
    app, mcp = make_server()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off"))
    serving = asyncio.ensure_future(server.serve())
    try:
        for _ in range(200):
            if server.started:
                break
            await asyncio.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        body = {
            "jsonrpc": "2.0",
            "id": 77,
            "method": "subscriptions/listen",
            "params": {"_meta": {VERSION_KEY: PROTOCOL, CAPS_KEY: {}}, "notifications": {"toolsListChanged": True}},
        }
        async with (
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=5) as http,
            http.stream("POST", "/mcp", json=body, headers=make_headers("subscriptions/listen")) as response,
        ):
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            lines = response.aiter_lines()
            frames: list[dict[str, Any]] = []
            async for line in lines:
                if line.startswith("data:"):
                    frames.append(json.loads(line[5:]))
                    if len(frames) == 1:
                        mcp.notify_tools_changed()
                    else:
                        break
        assert [frame["method"] for frame in frames] == [ACK, "notifications/tools/list_changed"]
        assert all(frame["params"]["_meta"][SUBSCRIPTION_ID] == 77 for frame in frames)
        for _ in range(200):  # the server notices the closed connection and drops the stream
            if mcp.subscriptions.active_streams == 0:
                break
            await asyncio.sleep(0.02)
        assert mcp.subscriptions.active_streams == 0
    finally:
        server.should_exit = True
        await asyncio.wait_for(serving, 10)
