"""``subscriptions/listen``: a long-lived SSE stream of list-changed and resource-updated notifications.

The client POSTs ``{"notifications": {"toolsListChanged": true, "resourceSubscriptions": [uri]...}}``.
The first message is ``notifications/subscriptions/acknowledged`` with the subset the server
honours; every message carries ``_meta["io.modelcontextprotocol/subscriptionId"]`` (the listen
request's id), and only the kinds the client asked for are sent.

Publishing (``mcp.notify_tools_changed()`` and friends) is cheap, never blocks and works from any
thread. Streams are bounded: at most ``subscription_max_streams`` at once, at most
``subscription_max_streams_per_caller`` of them for one caller (its client address, however many
``Authorization`` values it makes up: :mod:`~fastapi_mrtr.transport.callers`), each open for at most
``subscription_max_seconds`` (then the server ends it gracefully with the listen result), each with
a small coalescing queue. A stream ends as soon as its client disconnects.

The hub lives in one process: with several workers or replicas, each notifies only its own
listeners (publish from every process, e.g. after a shared change is observed).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from starlette.types import Send

from fastapi_mrtr.transport.callers import caller_key
from fastapi_mrtr.transport.endpoint import error_body
from fastapi_mrtr.transport.http import SSE_HEADERS, send_json, sse_event, wait_disconnect
from fastapi_mrtr.transport.request import RpcRequest
from fastapi_mrtr.wire.errors import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST
from fastapi_mrtr.wire.protocol import META_SERVER_INFO, META_SUBSCRIPTION_ID, JSONObject, RequestId

logger = logging.getLogger("fastapi_mrtr")

TOOLS_LIST_CHANGED = "notifications/tools/list_changed"
PROMPTS_LIST_CHANGED = "notifications/prompts/list_changed"
RESOURCES_LIST_CHANGED = "notifications/resources/list_changed"
RESOURCE_UPDATED = "notifications/resources/updated"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"

# filter flag -> (capability, the capability's flag, the notification it enables)
LIST_FILTERS = {
    "toolsListChanged": ("tools", "listChanged", TOOLS_LIST_CHANGED),
    "promptsListChanged": ("prompts", "listChanged", PROMPTS_LIST_CHANGED),
    "resourcesListChanged": ("resources", "listChanged", RESOURCES_LIST_CHANGED),
}
MAX_RESOURCE_SUBSCRIPTIONS = 1000
QUEUE_SIZE = 256


@dataclass(eq=False)  # identity semantics: listeners live in a set
class _Listener:
    subscription_id: RequestId
    caller: str
    loop: asyncio.AbstractEventLoop
    methods: frozenset[str]
    uris: frozenset[str]
    queue: deque[JSONObject] = field(default_factory=deque)
    queued: set[tuple[str, str]] = field(default_factory=set)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    overflowed: bool = False

    def wants(self, method: str, uri: str | None) -> bool:
        if method == RESOURCE_UPDATED:
            return uri is not None and uri in self.uris
        return method in self.methods

    def offer(self, method: str, params: JSONObject) -> None:
        """Runs on the listener's loop. Equal pending notifications are coalesced into one."""
        key = (method, str(params.get("uri", "")))
        if key in self.queued:
            return
        if len(self.queue) >= QUEUE_SIZE:
            self.overflowed = True
            return
        self.queued.add(key)
        self.queue.append({"method": method, "params": params})
        self.wake.set()

    def take(self) -> JSONObject | None:
        if not self.queue:
            self.wake.clear()
            return None
        item = self.queue.popleft()
        self.queued.discard((item["method"], str(item["params"].get("uri", ""))))
        return item


class SubscriptionHub:
    """The listen streams of one ``MCP`` endpoint, and the notifications published to them."""

    def __init__(
        self,
        capabilities: JSONObject,
        server_info: JSONObject,
        *,
        max_streams: int,
        max_seconds: float,
        keepalive_seconds: float,
        max_streams_per_caller: int | None = None,
    ) -> None:
        self._capabilities = capabilities  # the live dict served by server/discover
        self._server_info = server_info
        self.max_streams = max_streams
        self.max_streams_per_caller = max_streams_per_caller or max_streams
        self.max_seconds = max_seconds
        self.keepalive_seconds = keepalive_seconds
        self._listeners: set[_Listener] = set()
        self._streams_of: dict[str, int] = {}  # caller -> its open streams
        self._lock = threading.Lock()

    @property
    def active_streams(self) -> int:
        return len(self._listeners)

    # --- publishing ---------------------------------------------------------------------------

    def publish(self, method: str, params: JSONObject | None = None) -> int:
        """Queue ``method`` for every stream that asked for it; returns how many streams get it."""
        params = dict(params or {})
        uri = params.get("uri") if method == RESOURCE_UPDATED else None
        with self._lock:
            targets = [listener for listener in self._listeners if listener.wants(method, uri)]
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        for listener in targets:
            if listener.loop is running:
                listener.offer(method, params)
            else:  # another thread (a sync route in the thread pool, a background worker)
                with contextlib.suppress(RuntimeError):  # that loop has already closed
                    listener.loop.call_soon_threadsafe(listener.offer, method, params)
        return len(targets)

    # --- the stream ---------------------------------------------------------------------------

    def honoured(self, requested: JSONObject) -> JSONObject:
        """The subset of the client's filter this server delivers (false flags are left out)."""
        honoured: JSONObject = {}
        for flag, (capability, capability_flag, _) in LIST_FILTERS.items():
            served = self._capabilities.get(capability)
            if requested.get(flag) is True and isinstance(served, dict) and served.get(capability_flag):
                honoured[flag] = True
        uris = requested.get("resourceSubscriptions")
        resources = self._capabilities.get("resources")
        if uris and isinstance(resources, dict) and resources.get("subscribe"):
            honoured["resourceSubscriptions"] = list(dict.fromkeys(uris))
        return honoured

    async def listen(self, rpc: RpcRequest, send: Send) -> None:
        """Serve one ``subscriptions/listen`` request until the client leaves or the stream times out."""
        requested = rpc.params.get("notifications")
        problem = _filter_problem(requested)
        if problem is not None:
            await send_json(send, 400, error_body(rpc.id, INVALID_PARAMS, f"Invalid params: {problem}"))
            return
        if "text/event-stream" not in rpc.headers.get("accept", ""):
            message = "subscriptions/listen answers with a stream: accept text/event-stream"
            body = error_body(rpc.id, INVALID_PARAMS, message)
            await send_json(send, 406, body)
            return
        assert isinstance(requested, dict)
        honoured = self.honoured(requested)
        methods = frozenset(LIST_FILTERS[flag][2] for flag in LIST_FILTERS if honoured.get(flag))
        listener = _Listener(
            subscription_id=rpc.id,
            caller=self._caller(rpc),
            loop=asyncio.get_running_loop(),
            methods=methods,
            uris=frozenset(honoured.get("resourceSubscriptions", [])),
        )
        refusal = self._admit(listener)
        if refusal is not None:
            status, code, message = refusal
            await send_json(send, status, error_body(rpc.id, code, message), [(b"retry-after", b"5")])
            return
        try:
            await self._stream(rpc, send, listener, honoured)
        finally:
            self._release(listener)

    def _caller(self, rpc: RpcRequest) -> str:
        """Who holds a stream: its client address (an unverified Authorization names nobody)."""
        return caller_key(rpc.scope)

    def _admit(self, listener: _Listener) -> tuple[int, int, str] | None:
        """Take a slot for ``listener``, or say why not: the server is full, or its caller is."""
        with self._lock:
            if len(self._listeners) >= self.max_streams:
                return 503, INTERNAL_ERROR, "Too many subscription streams; retry later"
            held = self._streams_of.get(listener.caller, 0)
            if held >= self.max_streams_per_caller:
                limit = self.max_streams_per_caller
                message = f"Too many subscription streams for this caller (at most {limit}); close one first"
                return 429, INVALID_REQUEST, message
            self._streams_of[listener.caller] = held + 1
            self._listeners.add(listener)
        return None

    def _release(self, listener: _Listener) -> None:
        with self._lock:
            self._listeners.discard(listener)
            left = self._streams_of.pop(listener.caller, 1) - 1
            if left > 0:
                self._streams_of[listener.caller] = left

    async def _stream(self, rpc: RpcRequest, send: Send, listener: _Listener, honoured: JSONObject) -> None:
        meta = {META_SUBSCRIPTION_ID: rpc.id}

        async def emit(message: JSONObject, more: bool = True) -> None:
            await send({"type": "http.response.body", "body": sse_event(message), "more_body": more})

        await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
        await emit({"jsonrpc": "2.0", "method": ACKNOWLEDGED, "params": {"notifications": honoured, "_meta": meta}})
        deadline = time.monotonic() + self.max_seconds
        disconnected = asyncio.ensure_future(wait_disconnect(rpc.receive))
        try:
            while True:
                item = listener.take()
                if item is not None:
                    params = {**item["params"], "_meta": {**item["params"].get("_meta", {}), **meta}}
                    await emit({"jsonrpc": "2.0", "method": item["method"], "params": params})
                    continue
                if listener.overflowed:
                    logger.warning("subscription %r fell behind; some notifications were dropped", rpc.id)
                    listener.overflowed = False
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    result = {"resultType": "complete", "_meta": {**meta, META_SERVER_INFO: self._server_info}}
                    await emit({"jsonrpc": "2.0", "id": rpc.id, "result": result}, more=False)
                    return
                woken = asyncio.ensure_future(listener.wake.wait())
                done, _ = await asyncio.wait(
                    {woken, disconnected},
                    timeout=min(remaining, self.keepalive_seconds),
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if not woken.done():
                    woken.cancel()
                if disconnected in done:
                    return  # the client left: nothing more may be sent for this request
                if not done:
                    await send({"type": "http.response.body", "body": b": keepalive\n\n", "more_body": True})
        finally:
            disconnected.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await disconnected


def _filter_problem(requested: Any) -> str | None:
    if not isinstance(requested, dict):
        return "subscriptions/listen needs a notifications object"
    for flag in LIST_FILTERS:
        if flag in requested and not isinstance(requested[flag], bool):
            return f"notifications.{flag} must be a boolean"
    uris = requested.get("resourceSubscriptions")
    if uris is not None:
        if not isinstance(uris, list) or not all(isinstance(uri, str) for uri in uris):
            return "notifications.resourceSubscriptions must be a list of URIs"
        if len(uris) > MAX_RESOURCE_SUBSCRIPTIONS:
            return f"at most {MAX_RESOURCE_SUBSCRIPTIONS} resourceSubscriptions per stream"
    return None
