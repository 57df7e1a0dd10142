"""A call that reports progress and then notifies, in a 2025-era session, to its last event.

A call's stream is written while the call keeps running: its response may be appended while an
earlier event is still being sent, whenever a send yields to the loop: a socket that pushes back,
the stdio pipe, a middleware such as ``@app.middleware("http")`` (Starlette's ``BaseHTTPMiddleware``
hands each response message to another task; the app here has one). ``SlowLink`` makes every event
take a while to send, so the tools below end while their last progress is on the wire. Each stream
must still end with the call's response (and a stream the server cut must resume to it): through
the official client (mcp 2.3.0, ``mode="legacy"``, a progress callback), this project's client,
and raw HTTP. The tool's ``tools/list_changed`` goes to the session's GET stream, where the 2025
era sends a server's notifications unrelated to a request.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import httpx
import httpx2
import pytest
from fastapi import FastAPI, Request, Response
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fastapi_mrtr import MCP, Context, ServerOptions
from fastapi_mrtr.client import ClientOptions, MrtrClient, ProgressNotification
from fastapi_mrtr.transport.legacy.events import RETRY_MS
from fastapi_mrtr.wire.protocol import JSONRPCNotification
from tests.legacy.conftest import STATE_KEY, App
from tests.legacy.peer import Event, LegacyPeer, messages
from tests.support import running_server

pytestmark = pytest.mark.anyio

LIST_CHANGED = "notifications/tools/list_changed"
CLOSE_AFTER = 0.3  # the server cuts a call's stream after this long (legacy_sse_close_after)
# A client resumes a cut stream after the priming event's retry interval; poke_later sleeps longer,
# so its last events reach the resumed stream as they come, not before it opens.
RESUMED_BY = CLOSE_AFTER + RETRY_MS / 1000 + 0.5
SEND_TIME = 0.1  # how long each SSE event takes to go out (SlowLink); the call goes on meanwhile


class SlowLink:
    """Each SSE event takes SEND_TIME to go out, as on a link that pushes back."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_slowly(message: Message) -> None:
            if message["type"] == "http.response.body" and message.get("body", b"").startswith(b"id: "):
                await asyncio.sleep(SEND_TIME)
            await send(message)

        await self.app(scope, receive, send_slowly)


def build(close_after: float) -> MCP:
    app = FastAPI()
    app.add_middleware(SlowLink)  # added first: it sits inside the middleware below, next to the endpoint

    @app.middleware("http")
    async def passthrough(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        return await call_next(request)

    mcp = MCP(
        app,
        options=ServerOptions(name="progress-streams", request_state_key=STATE_KEY, legacy_sse_close_after=close_after),
    )

    # Each tool ends while its last progress event is on the wire: a stream opens with a priming
    # event (one SEND_TIME), then sends the progress (another); a resumed stream is open already.

    @mcp.tool()
    @app.post("/poke")
    async def poke(ctx: Context) -> dict[str, bool]:
        await ctx.report_progress(1, 2, "halfway")
        await asyncio.sleep(SEND_TIME * 1.5)
        mcp.notify_tools_changed()
        return {"poked": True}

    @mcp.tool()
    @app.post("/poke_later")
    async def poke_later(ctx: Context) -> dict[str, bool]:
        """Outlives its first stream: the rest, the response too, reaches a resumed one."""
        await ctx.report_progress(1, 2, "halfway")
        await asyncio.sleep(RESUMED_BY)
        await ctx.report_progress(2, 2, "done")
        await asyncio.sleep(SEND_TIME * 0.5)
        mcp.notify_tools_changed()
        return {"poked": True}

    app.mount("/mcp", mcp)
    return mcp


@pytest.fixture(scope="module")
def whole() -> Iterator[App]:
    """Streams stay open until their call ends."""
    mcp = build(close_after=0)
    with running_server(mcp.app) as base:
        yield App(mcp, f"{base}/mcp")


@pytest.fixture(scope="module")
def cut() -> Iterator[App]:
    """Streams are cut after CLOSE_AFTER seconds; the client resumes them with Last-Event-ID."""
    mcp = build(close_after=CLOSE_AFTER)
    with running_server(mcp.app) as base:
        yield App(mcp, f"{base}/mcp")


async def get_stream_open(served: App) -> None:
    """Wait until a session of ``served`` reads its GET stream (a notification sent before is lost)."""
    legacy = served.mcp._endpoint.legacy
    assert legacy is not None
    for _ in range(200):
        if any(live.notification_reader for live in legacy.live):
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the client never opened its session's GET stream")


async def until(seen: list[Any], count: int = 1) -> None:
    for _ in range(250):
        if len(seen) >= count:
            return
        await asyncio.sleep(0.02)


# --- raw HTTP --------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def session(served: App) -> AsyncIterator[tuple[LegacyPeer, list[Any]]]:
    """A raw 2025-era session whose GET stream is open; yields the peer and what the GET brought."""
    async with httpx.AsyncClient(timeout=10) as http:
        peer = LegacyPeer(http, served.url)
        await peer.initialize()
        notes: list[Any] = []

        async def listen() -> None:
            async with peer.get() as (response, stream):
                assert response.status_code == 200
                async for message in messages(stream):
                    notes.append(message)

        listening = asyncio.ensure_future(listen())
        try:
            await get_stream_open(served)
            yield peer, notes
        finally:
            listening.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await listening


def is_message(event: Event, method: str) -> bool:
    return isinstance(event.data, dict) and event.data.get("method") == method


def progress_of(events: list[Event]) -> list[tuple[Any, ...]]:
    notes = [
        e.data["params"]
        for e in events
        if isinstance(e.data, dict) and e.data.get("method") == "notifications/progress"
    ]
    return [(note["progressToken"], note["progress"], note["total"], note["message"]) for note in notes]


def results_of(events: list[Event]) -> list[Any]:
    return [e.data["result"]["structuredContent"] for e in events if isinstance(e.data, dict) and "result" in e.data]


async def test_a_call_stream_ends_with_the_response_after_progress(whole: App) -> None:
    async with session(whole) as (peer, notes):
        async with peer.call("poke", meta={"progressToken": "p1"}) as (response, stream):
            assert response.headers["content-type"].startswith("text/event-stream")
            events = [event async for event in stream]
        await until(notes)
    assert progress_of(events) == [("p1", 1, 2, "halfway")]
    assert results_of(events) == [{"poked": True}]
    assert events[-1].data["id"] == peer.next_id  # the response is the stream's last event
    assert [note["method"] for note in notes] == [LIST_CHANGED]  # on the GET stream, not the call's


async def test_a_cut_call_stream_resumes_to_the_response(cut: App) -> None:
    async with session(cut) as (peer, notes):
        async with peer.call("poke_later", meta={"progressToken": "p2"}) as (_, stream):
            first = [event async for event in stream]  # the server cuts it while the tool sleeps
        assert progress_of(first) == [("p2", 1, 2, "halfway")] and results_of(first) == []
        last_id = [event.id for event in first if event.id is not None][-1]
        rest: list[Event] = []
        while not results_of(rest):  # each resumed stream may be cut too: resume from its last id
            async with peer.get(**{"last-event-id": last_id}) as (response, stream):
                assert response.status_code == 200, await response.aread()
                more = [event async for event in stream]
            assert more, "a resumed stream brought nothing"
            rest += more
            last_id = [event.id for event in more if event.id is not None][-1]
        await until(notes)
    assert progress_of(rest) == [("p2", 2, 2, "done")]
    assert results_of(rest) == [{"poked": True}]
    assert [note["method"] for note in notes] == [LIST_CHANGED]


# --- this project's client -------------------------------------------------------------------


@pytest.mark.parametrize(("server", "tool"), [("whole", "poke"), ("cut", "poke_later")])
async def test_the_project_client_gets_the_result_and_the_progress(
    request: pytest.FixtureRequest, server: str, tool: str
) -> None:
    served: App = request.getfixturevalue(server)
    progress: list[ProgressNotification] = []
    notes: list[JSONRPCNotification] = []
    async with MrtrClient(
        served.url, options=ClientOptions(mode="legacy"), on_progress=progress.append, on_notification=notes.append
    ) as client:
        await client.connect()
        await get_stream_open(served)
        result = await asyncio.wait_for(client.call_tool(tool), 10)
        await until(notes)
    assert result.structured_content == {"poked": True}
    assert [note.progress for note in progress] == ([1] if tool == "poke" else [1, 2])
    assert progress[0].message == "halfway"
    assert [note.method for note in notes] == [LIST_CHANGED]


# --- the official client ---------------------------------------------------------------------


@pytest.mark.parametrize(("server", "tool"), [("whole", "poke"), ("cut", "poke_later")])
async def test_the_official_client_gets_the_result_and_the_progress(
    request: pytest.FixtureRequest, server: str, tool: str
) -> None:
    served: App = request.getfixturevalue(server)
    progress: list[tuple[float, float | None, str | None]] = []
    notes: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async def on_message(message: Any) -> None:
        method = getattr(message, "method", None)
        if method is not None and method != "notifications/progress":  # progress also reaches its callback
            notes.append(method)

    async with (
        httpx2.AsyncClient() as http,
        Client(
            streamable_http_client(served.url, http_client=http), mode="legacy", message_handler=on_message
        ) as client,
    ):
        assert client.protocol_version == "2025-11-25"
        await get_stream_open(served)
        result = await asyncio.wait_for(client.call_tool(tool, {}, progress_callback=on_progress), 10)
        await until(notes)
    assert result.is_error is False
    assert result.structured_content == {"poked": True}
    expected = [(1, 2, "halfway")] if tool == "poke" else [(1, 2, "halfway"), (2, 2, "done")]
    assert progress == expected
    assert notes == [LIST_CHANGED]
